"""What a gateway policy hides is said: ``LABEL/*`` in ``public_tools``, the start line's count for the
default identity, and "hidden by the policy" in refusals, to the stdio caller and to no one else."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.stdio import stdio_client

from skilldeck.gateway._policy_check import check_policy, upstream_ids
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.serving._policy import Caller, parse_policy

from ..server.helpers import REPO, cli_env
from .gateway_clients_support import check_structured, client, files_upstream, jobs_upstream, open_gateway, refusal

pytestmark = pytest.mark.anyio

# jobs: the skill job-search (naming search_jobs), the tools search_jobs and delete_job; files: read_file, write_file
POLICY = {
    "skills": {"jobs/job-search": {"admit": {"roles": ["admin"]}, "tools": ["jobs/search_jobs"]}},
    "public_tools": ["files/*"],
}
ADMIN = Caller(subject="ada", roles=frozenset({"admin"}), authenticated=True)


async def test_label_star_in_public_tools_is_checked_against_the_upstreams() -> None:
    specs = [
        ServerSpec("jobs", InProcessServer(jobs_upstream().server), timeout=10),
        ServerSpec("files", InProcessServer(files_upstream().server), timeout=10),
    ]
    async with Host(specs) as host:
        policy = parse_policy(POLICY)
        ids = {label: await upstream_ids(host, label, policy) for label in ("jobs", "files")}
        assert check_policy(policy, ["jobs", "files"], ids).errors == []
        assert policy.public_labels == frozenset({"files"})
        wrong = parse_policy({"public_tools": ["file/*"], "skills": {"jobs/job-search": {"tools": ["jobs/*"]}}})
        errors = check_policy(wrong, ["jobs", "files"], ids).errors
        assert errors[0].startswith("skills.jobs/job-search.tools: no such tool 'jobs/*'"), errors
        assert errors[1].startswith("public_tools: 'file/*' names no configured upstream"), errors
    assert parse_policy({"public_tools": ["/*", "a/b/*", "x/*"]}).public_labels == frozenset({"x"})


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_every_tool_of_a_label_star_upstream_is_public_and_the_rest_stay_hidden(era: str) -> None:
    async with (
        open_gateway({"jobs": jobs_upstream(), "files": files_upstream()}, policy=parse_policy(POLICY)) as gw,
        client(gw, era) as c,
    ):
        loaded = check_structured("load", await c.call_tool("load", {"ids": ["files/read_file", "files/write_file"]}))
        assert [t["name"] for t in loaded["tools"]] == ["files/read_file", "files/write_file"], loaded
        written = await c.call_tool("call", {"tool": "files/write_file", "arguments": {"path": "a", "content": "b"}})
        assert not written.is_error, written
        assert gw.service.hidden_from(gw.service.policy.default_identity) == (2, 1)  # type: ignore[union-attr]
        assert gw.service.hidden_from(ADMIN) == (1, 0)  # delete_job: routed by no rule, public for no one


def refused(result: Any) -> dict[str, str]:
    """A load that loaded nothing: each id it refused, with the reason (from the text a model reads)."""
    assert result.is_error, result
    text = " ".join(getattr(x, "text", "") for x in result.content)
    return dict(line.removeprefix("Refused ").split(": ", 1) for line in text.split("\n\n"))


@pytest.mark.parametrize("explain", [False, True])
async def test_hidden_by_the_policy_is_said_only_where_the_gateway_explains(explain: bool) -> None:
    """On stdio (``explain``) the caller wrote the policy and is told; elsewhere a hidden id reads as one
    that does not exist. An id that is nothing reads so either way; an admitted caller is served."""
    async with (
        open_gateway(
            {"jobs": jobs_upstream(), "files": files_upstream()}, policy=parse_policy(POLICY), explain_hidden=explain
        ) as gw,
        client(gw, "modern") as c,
    ):
        reasons = refused(await c.call_tool("load", {"ids": ["jobs/job-search", "jobs/search_jobs"]}))
        if explain:
            assert reasons == {
                "jobs/job-search": "jobs/job-search is hidden by the policy: its rule's admit: does not include you; "
                "nothing was loaded",
                "jobs/search_jobs": "jobs/search_jobs is hidden by the policy: no rule of a skill admitted to you "
                "routes it to you, and public_tools does not list it; nothing was loaded",
            }, reasons
        else:
            assert reasons == {
                i: f"no card has the id {i!r}; ids come from find (LABEL/NAME)"
                for i in ("jobs/job-search", "jobs/search_jobs")
            }, reasons
        called = await c.call_tool("call", {"tool": "jobs/delete_job", "arguments": {"job_id": "1"}})
        if explain:
            refusal(called, "jobs/delete_job is hidden by the policy: no rule of a skill admitted to you routes it")
        else:
            refusal(called, "never listed a tool named 'delete_job'")
            assert "policy" not in " ".join(getattr(x, "text", "") for x in called.content)
        nothing = refused(await c.call_tool("load", {"ids": ["jobs/no_such_tool"]}))
        assert nothing == {
            "jobs/no_such_tool": "no card has the id 'jobs/no_such_tool'; ids come from find (LABEL/NAME)"
        }
        admin = await gw.service.load(ADMIN, "admin-client", ["jobs/job-search"])
        assert [s["id"] for s in admin["skills"]] == ["jobs/job-search"]
        assert [t["name"] for t in admin["tools"]] == ["jobs/search_jobs"]


async def test_the_stdio_gateway_says_at_start_what_the_policy_hides_and_tells_its_caller(tmp_path: Path) -> None:
    config = tmp_path / "upstreams.json"
    jobs = "from skilldeck.demo._servers import jobs_server; jobs_server().run()"
    config.write_text(json.dumps({"mcpServers": {"jobs": {"command": sys.executable, "args": ["-c", jobs]}}}))
    policy = tmp_path / "policy.yaml"
    policy.write_text("skills:\n  jobs/job-search:\n    admit: {roles: [admin]}\n")
    args = ["-m", "skilldeck.cli", "gateway", "--config", str(config), "--policy", str(policy), "--lexical"]
    params = StdioServerParameters(command=sys.executable, args=args, env=cli_env(), cwd=str(REPO))
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as c:
            assert sorted(t.name for t in (await c.list_tools()).tools) == ["call", "find", "load", "read_skill_file"]
            loaded = refused(await c.call_tool("load", {"ids": ["jobs/search_jobs"]}))
            assert loaded["jobs/search_jobs"].startswith("jobs/search_jobs is hidden by the policy: "), loaded
    lines = errors.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("skilldeck gateway:"))
    assert lines[start].endswith("(1 skills, 2 tools) over stdio"), lines
    assert lines[start + 1] == (
        "the policy hides 2 tools and 1 skill of the upstreams from the default identity (stdio, or HTTP without "
        "a token); public_tools: [LABEL/*] makes every tool of a server public"
    ), lines
