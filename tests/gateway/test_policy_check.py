"""A gateway policy's ids against what real upstreams (in process) serve: prompts, resources,
templates and ``LABEL/*`` as well as skills and tools; an id that matches nothing is named, once."""

from __future__ import annotations

import pytest

from skilldeck.gateway._app import follow_upstreams
from skilldeck.gateway._policy_check import check_policy, pending_names, upstream_ids
from skilldeck.gateway._reload import GatewayConfig
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.serving._policy import parse_policy

from .gateway_clients_support import jobs_upstream, open_gateway
from .test_forward import docs_upstream

pytestmark = pytest.mark.anyio

RIGHT = {
    "skills": {
        "docs/greet": {"admit": {"roles": ["admin"]}},  # a prompt
        "docs/note://readme": {"admit": {"roles": ["admin"]}},  # a resource
        "docs/note://pages/{page}": {"admit": {"roles": ["admin"]}},  # a template
        "docs/note://pages/7": {"admit": {"roles": ["admin"]}},  # what the template expands to
        "docs/*": {"admit": {"roles": ["staff"]}},
        "jobs/job-search": {"tools": ["jobs/search_jobs"]},  # a skill and its tool
    },
    "public_tools": ["jobs/delete_job"],
}


async def test_every_kind_of_id_is_matched_and_each_near_miss_is_named() -> None:
    specs = [
        ServerSpec("docs", InProcessServer(docs_upstream("docs")), timeout=10),
        ServerSpec("jobs", InProcessServer(jobs_upstream().server), timeout=10),
    ]
    async with Host(specs) as host:
        right = parse_policy(RIGHT)
        ids = {label: await upstream_ids(host, label, right) for label in ("docs", "jobs")}
        assert check_policy(right, ["docs", "jobs"], ids).errors == []

        wrong = parse_policy(
            {
                "skills": {
                    "docs/greeet": {},  # the prompt greet, misspelt
                    "docs/note://readme.md": {},  # no such resource
                    "docs/note://page/7": {},  # no template expands to it
                    "jobs/job-search": {"tools": ["jobs/search-jobs"]},
                },
                "public_tools": ["docs/greet"],  # a prompt is no tool
            }
        )
        ids = {label: await upstream_ids(host, label, wrong) for label in ("docs", "jobs")}
        errors = check_policy(wrong, ["docs", "jobs"], ids).errors
        kinds = "no such skill, prompt, resource or resource template of 'docs' is served"
        assert errors == [
            f"skills.docs/greeet: {kinds} (did you mean 'docs/greet'?)",
            f"skills.docs/note://readme.md: {kinds} (did you mean 'docs/note://readme'?)",
            f"skills.docs/note://page/7: {kinds} (did you mean 'docs/note://pages/{{page}}'?)",
            "skills.jobs/job-search.tools: no such tool 'jobs/search-jobs' (did you mean 'jobs/search_jobs'?)",
            "public_tools: no such tool 'docs/greet'",
        ], errors

        # an upstream not connected: its ids wait for it, none is an error yet
        pending = check_policy(wrong, ["docs", "jobs"], {"jobs": ids["jobs"]})
        assert sorted(n.name for n in pending.pending["docs"]) == [
            "docs/greeet",
            "docs/greet",
            "docs/note://page/7",
            "docs/note://readme.md",
        ]
        assert pending.errors == [errors[3]]


async def test_a_pending_upstream_relisted_by_the_watcher_is_checked_before_it_is_followed() -> None:
    """The path an upstream takes when it connects after the start: its re-list reaches
    ``follow_upstreams``, whose ``admit`` checks the pending ids first and keeps it out if one fails."""
    lines: list[tuple[str, str]] = []
    for policy, kept in ((RIGHT, True), ({"skills": {"jobs/job-serch": {"admit": {"roles": ["admin"]}}}}, False)):
        async with open_gateway({"jobs": jobs_upstream(), "docs": docs_upstream("docs")}) as gateway:
            gateway.service.policy = parse_policy(policy)
            config = GatewayConfig(
                gateway.service,
                gateway.host,
                [],
                config_path="mcp.json",
                policy_path="policy.yaml",
                timeout=10,
                report=lambda level, text: lines.append((level, text)),
            )
            config.pending = pending_names(gateway.service.policy, ["jobs"])  # as if jobs had been down at start
            changed = follow_upstreams(gateway.service, gateway.middleware, admit=config.admit)
            await changed(await gateway.host.relist("jobs", ("reconnected",)))
            assert ("jobs" in gateway.host.connections.connected) is kept, lines
            assert config.pending == {}
            if not kept:
                assert [t.name for t in gateway.host.registry.tools("jobs")] == []
                assert gateway.host.failures["jobs"].reason == (
                    "kept out of service: the policy names what it does not serve (jobs/job-serch)"
                )
    assert lines[-2] == (
        "error",
        "policy policy.yaml: skills.jobs/job-serch: no such skill, prompt, resource or resource template of 'jobs' "
        "is served (did you mean 'jobs/job-search'?)",
    ), lines
