"""The gateway's security cases: every refusal is a tool result with a reason, and NOTHING reaches an upstream.

Each upstream is a real in-process ``MCPServer`` that records every request it receives
(:func:`~.gateway_clients_support.recording_upstream`); the tests count its ``tools/call``
requests. Clients are the official Python SDK client, in both protocol eras where it matters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from skilldeck.gateway._activation import MAX_CONVERSATION_CHARS
from skilldeck.gateway._meta import MAX_ID_CHARS, MAX_LOAD_IDS, MAX_QUERY_CHARS
from skilldeck.gateway._server import CONVERSATION_META_KEY
from skilldeck.host._wire import SkillsWire
from skilldeck.serving._policy import load_policy
from skilldeck.skill._manifest import digest_of

from .gateway_clients_support import (
    ToolSkill,
    check_structured,
    client,
    east_upstream,
    files_upstream,
    jobs_upstream,
    open_gateway,
    recording_upstream,
    refusal,
    tool_calls,
    west_upstream,
)

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]
NOT_ACTIVE = "is not in the active skill's tools"
BAD_ARGUMENTS = "do not match its input schema"


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_never_activated_is_refused_by_call_and_by_injected_name(era: str) -> None:
    jobs, files = jobs_upstream(), files_upstream()
    async with open_gateway({"jobs": jobs, "files": files}) as gw, client(gw, era) as c:
        for name in ("jobs/search_jobs", "files/read_file"):
            text = refusal(
                await c.call_tool("call", {"tool": name, "arguments": {"query": "x", "path": "a"}}), NOT_ACTIVE
            )
            assert "active tools: none" in text, text
        text = refusal(await c.call_tool("jobs__search_jobs", {"query": "python"}), NOT_ACTIVE)
        assert "active tools: none" in text, text
        refusal(await c.call_tool("files__read_file", {"path": "notes.txt"}), NOT_ACTIVE)
        # loading the skill activates exactly its tool: its neighbour stays refused, both ways
        loaded = check_structured("load", await c.call_tool("load", {"ids": ["jobs/job-search"]}))
        assert [t["name"] for t in loaded["tools"]] == ["jobs/search_jobs"], loaded
        text = refusal(
            await c.call_tool("call", {"tool": "jobs/delete_job", "arguments": {"job_id": "J-1"}}), NOT_ACTIVE
        )
        assert "active tools: jobs/search_jobs" in text, text
        refusal(await c.call_tool("jobs__delete_job", {"job_id": "J-1"}), NOT_ACTIVE)
        assert tool_calls(jobs) == []
        assert tool_calls(files) == []
        result = await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}})
        assert not result.is_error, result
        assert [p["name"] for p in tool_calls(jobs)] == ["search_jobs"]


NO_SERVER = "no server lists a tool named"


@pytest.mark.parametrize(
    ("guess", "reason"),
    [
        ("search_jobs", NOT_ACTIVE),  # the bare name of an inactive tool
        ("jobs/delete_job", NOT_ACTIVE),
        ("jobs__delete_job", NOT_ACTIVE),
        ("jobs.delete_job", NO_SERVER),
        ("jobs/nuke_everything", "'jobs' never listed a tool named 'nuke_everything'"),  # never listed
        ("jobs__nuke_everything", "'jobs' never listed a tool named 'nuke_everything'"),
        ("files__read_file", NOT_ACTIVE),
        ("files/../jobs/delete_job", "'files' never listed a tool named '../jobs/delete_job'"),
        ("Jobs__Delete_Job", NO_SERVER),
        ("jobs__search_jobs/../delete_job", "'jobs' never listed a tool named 'search_jobs/../delete_job'"),
        ("call", NO_SERVER),  # a meta-tool's name, through call
    ],
)
async def test_guessed_names_are_refused(guess: str, reason: str) -> None:
    jobs, files = jobs_upstream(), files_upstream()
    async with open_gateway({"jobs": jobs, "files": files}) as gw, client(gw, "legacy") as c:
        await c.call_tool("load", {"ids": ["files/write_file"]})  # something is active, not what is guessed
        refusal(await c.call_tool("call", {"tool": guess, "arguments": {}}), reason)
        if "/" not in guess and guess not in ("call",):
            refusal(await c.call_tool(guess, {}), reason)
        assert tool_calls(jobs) == []
        assert tool_calls(files) == []


@pytest.mark.parametrize("era", ERAS)
async def test_one_tool_name_on_two_servers_is_the_loaded_ones_and_refused_when_both_are(era: str) -> None:
    """``east`` and ``west`` both list ``search``: a bare name goes to the one server whose skill was loaded,
    a qualified name to its own server, and once both are loaded the bare name is refused, never guessed."""
    east, west = east_upstream(), west_upstream()
    async with open_gateway({"east": east, "west": west}) as gw, client(gw, era) as c:
        check_structured("load", await c.call_tool("load", {"ids": ["west/west-search"]}))
        bare = {"tool": "search", "arguments": {"query": "maps", "region": "south"}}
        assert text_of(await c.call_tool("call", bare)) == "west found maps in south"
        refusal(await c.call_tool("call", {"tool": "east/search", "arguments": {"query": "x"}}), NOT_ACTIVE)
        refusal(await c.call_tool("east__search", {"query": "x"}), NOT_ACTIVE)
        check_structured("load", await c.call_tool("load", {"ids": ["east/east-search"]}))
        refusal(await c.call_tool("call", bare), "'search' is listed by several servers (east, west)")
        assert text_of(await c.call_tool("east__search", {"query": "letters"})) == "east found letters"
        assert text_of(await c.call_tool("call", {**bare, "tool": "west/search"})) == "west found maps in south"
    assert [c["arguments"] for c in tool_calls(west)] == [{"query": "maps", "region": "south"}] * 2
    assert [c["arguments"] for c in tool_calls(east)] == [{"query": "letters"}]


def text_of(result: Any) -> str:
    assert not result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_a_tool_of_another_label_named_by_a_skill_needs_a_grant() -> None:
    def upstreams() -> dict[str, Any]:
        reporter = recording_upstream(
            "reports", ToolSkill("weekly-report", "files/read_file", "Write the weekly report from the notes file.")
        )
        return {"reports": reporter, "files": files_upstream()}

    ups = upstreams()
    async with open_gateway(ups) as gw, client(gw, "legacy") as c:
        loaded = check_structured("load", await c.call_tool("load", {"ids": ["reports/weekly-report"]}))
        assert [s["id"] for s in loaded["skills"]] == ["reports/weekly-report"]
        assert loaded["tools"] == [], loaded
        (refused,) = loaded["refused"]
        assert refused["id"] == "files/read_file", refused
        assert "--grant reports:files" in refused["reason"], refused
        refusal(await c.call_tool("call", {"tool": "files/read_file", "arguments": {"path": "notes.txt"}}), NOT_ACTIVE)
        refusal(await c.call_tool("files__read_file", {"path": "notes.txt"}), NOT_ACTIVE)
        assert tool_calls(ups["files"]) == []

    ups = upstreams()
    async with open_gateway(ups, grants=[("reports", "files")]) as gw, client(gw, "legacy") as c:
        loaded = check_structured("load", await c.call_tool("load", {"ids": ["reports/weekly-report"]}))
        assert [t["name"] for t in loaded["tools"]] == ["files/read_file"], loaded
        result = await c.call_tool("files__read_file", {"path": "notes.txt"})
        assert not result.is_error, result
        assert [p["name"] for p in tool_calls(ups["files"])] == ["read_file"]


@pytest.mark.parametrize(
    "arguments",
    [
        {},  # a required argument missing
        {"query": 42},
        {"query": "python", "limit": "five"},
        {"query": ["a", "list"]},
    ],
)
@pytest.mark.parametrize("era", ERAS)
async def test_arguments_failing_the_upstream_schema_are_refused(era: str, arguments: dict[str, Any]) -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw, client(gw, era) as c:
        await c.call_tool("load", {"ids": ["jobs/job-search"]})
        refusal(await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": arguments}), BAD_ARGUMENTS)
        refusal(await c.call_tool("jobs__search_jobs", arguments), BAD_ARGUMENTS)
        assert tool_calls(jobs) == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_skill_whose_bytes_changed_after_listing_is_refused_and_activates_nothing(era: str) -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw, client(gw, era) as c:
        found = check_structured("find", await c.call_tool("find", {"query": "find job openings in a city"}))
        assert "jobs/job-search" in [card["id"] for card in found["cards"]], found
        # the upstream now serves other bytes, of the same size, under the entry it listed
        uri = "skill://job-search/SKILL.md"
        jobs.files[uri] = jobs.files[uri].replace(b"city", b"town")
        result = await c.call_tool("load", {"ids": ["jobs/job-search"]})
        refusal(result, "Refused jobs/job-search: ")  # nothing loaded: an error result
        loaded = result.structured_content
        assert isinstance(loaded, dict)
        assert loaded["skills"] == [], loaded
        assert loaded["tools"] == [], loaded
        (refused,) = loaded["refused"]
        assert refused["id"] == "jobs/job-search", refused
        assert "digest" in refused["reason"].lower(), refused
        refusal(await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}}), NOT_ACTIVE)
        refusal(await c.call_tool("jobs__delete_job", {"job_id": "J-1"}), NOT_ACTIVE)
        assert tool_calls(jobs) == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_skill_changed_upstream_is_loaded_as_it_is_now_not_from_the_bytes_verified_before(era: str) -> None:
    """The upstream re-lists ``job-search`` with a new ``SKILL.md`` of the same size (a new digest): the next load
    verifies and serves the new bytes; nothing held from the first load stands in for them."""
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw, client(gw, era) as c:
        first = check_structured("load", await c.call_tool("load", {"ids": ["jobs/job-search"]}))
        assert "# job-search" in first["skills"][0]["content"], first
        uri = "skill://job-search/SKILL.md"
        jobs.files[uri] = jobs.files[uri].replace(b"# job-search", b"# JOB-SEARCH")
        (entry,) = jobs.entries
        entry["resources"][0] = {"uri": uri, "digest": digest_of(jobs.files[uri]), "size": len(jobs.files[uri])}
        await gw.host.relist("jobs")
        gw.service.reindex("jobs")
        again = check_structured("load", await c.call_tool("load", {"ids": ["jobs/job-search"]}))
        content = again["skills"][0]["content"]
        assert "# JOB-SEARCH" in content, again
        assert "# job-search" not in content, again
        read = check_structured(
            "read_skill_file", await c.call_tool("read_skill_file", {"skill": "jobs/job-search", "path": "SKILL.md"})
        )
        assert "# JOB-SEARCH" in read["text"], read


ROUTES_NONE = """\
default_identity: {subject: intern, tenant: acme, roles: [reader]}
public_tools: [files/read_file]
skills:
  jobs/job-search:
    tools: [jobs/search_jobs]
    routes:
      - when: {roles: [admin]}
        allow: all
"""


@pytest.mark.parametrize("era", ERAS)
async def test_a_caller_whose_policy_routes_none_is_refused(era: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(ROUTES_NONE)
    jobs, files = jobs_upstream(), files_upstream()
    pinned = [("jobs", "search_jobs")]  # even a pinned tool passes the policy first
    async with (
        open_gateway({"jobs": jobs, "files": files}, policy=load_policy(path), pinned=pinned) as gw,
        client(gw, era) as c,
    ):
        # the pin routed out is not listed to this caller, and the list is not for shared caches
        listed = await c.list_tools()
        assert [t.name for t in listed.tools] == ["find", "load", "read_skill_file", "call"]
        if era == "modern":
            assert listed.cache_scope == "private"
        found = check_structured("find", await c.call_tool("find", {"query": "search jobs", "limit": 10}))
        ids = {card["id"] for card in found["cards"]}
        assert not {"jobs/search_jobs", "jobs/delete_job"} & ids, found
        loaded = check_structured("load", await c.call_tool("load", {"ids": ["jobs/job-search", "jobs/search_jobs"]}))
        assert [s["id"] for s in loaded["skills"]] == ["jobs/job-search"], loaded  # admitted: instructions only
        assert loaded["tools"] == [], loaded
        # the skill's tool is refused as not routed; the tool id is not even a card for this caller
        reasons = [(r["id"], r["reason"]) for r in loaded["refused"]]
        assert [i for i, _ in reasons] == ["jobs/search_jobs", "jobs/search_jobs"], reasons
        assert "hidden by the policy (no rule routes it to you)" in reasons[0][1], reasons
        assert "no card has the id" in reasons[1][1], reasons
        # hidden by the policy, so not in this caller's listing: refused as never listed (nothing disclosed)
        hidden = "never listed a tool named 'search_jobs'"
        refusal(await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}}), hidden)
        refusal(await c.call_tool("jobs__search_jobs", {"query": "python"}), hidden)
        refusal(
            await c.call_tool("call", {"tool": "files/write_file", "arguments": {"path": "a", "content": "b"}}),
            "never listed a tool named 'write_file'",
        )
        assert tool_calls(jobs) == []
        assert tool_calls(files) == []
        # what the policy does route (a public tool) still works
        loaded = check_structured("load", await c.call_tool("load", {"ids": ["files/read_file"]}))
        assert [t["name"] for t in loaded["tools"]] == ["files/read_file"], loaded
        assert not (await c.call_tool("call", {"tool": "files/read_file", "arguments": {"path": "a"}})).is_error
        assert [p["name"] for p in tool_calls(files)] == ["read_file"]


async def test_one_legacy_session_never_sees_another_sessions_activation() -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw, client(gw, "legacy") as first, client(gw, "legacy") as second:
        await first.call_tool("load", {"ids": ["jobs/job-search"]})
        assert "jobs__search_jobs" in [t.name for t in (await first.list_tools()).tools]
        assert "jobs__search_jobs" not in [t.name for t in (await second.list_tools()).tools]
        refusal(
            await second.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}}), NOT_ACTIVE
        )
        refusal(await second.call_tool("jobs__search_jobs", {"query": "python"}), NOT_ACTIVE)
        refusal(
            await second.call_tool("read_skill_file", {"skill": "jobs/job-search", "path": "SKILL.md"}),
            "'jobs/job-search' is not a loaded skill",
        )
        assert tool_calls(jobs) == []
        assert not (await first.call_tool("jobs__search_jobs", {"query": "python"})).is_error
        assert len(tool_calls(jobs)) == 1


async def test_modern_callers_with_different_conversations_never_share_activation() -> None:
    jobs = jobs_upstream()
    one, two = {CONVERSATION_META_KEY: "conversation-1"}, {CONVERSATION_META_KEY: "conversation-2"}
    async with open_gateway({"jobs": jobs}) as gw, client(gw, "modern") as c:
        await c.call_tool("load", {"ids": ["jobs/job-search"]}, meta=one)
        call = {"tool": "jobs/search_jobs", "arguments": {"query": "python"}}
        refusal(await c.call_tool("call", call, meta=two), NOT_ACTIVE)
        refusal(
            await c.call_tool("call", call), NOT_ACTIVE
        )  # no conversation id: the caller's shared state, also empty
        refusal(await c.call_tool("jobs__search_jobs", {"query": "python"}, meta=two), NOT_ACTIVE)
        assert tool_calls(jobs) == []
        assert not (await c.call_tool("call", call, meta=one)).is_error
        assert len(tool_calls(jobs)) == 1


# -- resource bounds -----------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_bounds_on_find_and_load_inputs(era: str) -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw, client(gw, era) as c:
        refusal(await c.call_tool("find", {"query": "x" * (MAX_QUERY_CHARS + 1)}), "at most 2,000 characters")
        check_structured("find", await c.call_tool("find", {"query": "jobs " * (MAX_QUERY_CHARS // 5)}))
        refusal(
            await c.call_tool("load", {"ids": [f"jobs/tool-{i}" for i in range(MAX_LOAD_IDS + 1)]}), "1 to 20 card ids"
        )
        refusal(await c.call_tool("find", {"query": "jobs", "limit": 51}), "limit must be a whole number from 1 to 50")
        refusal(await c.call_tool("find", {"query": "jobs", "limit": True}), "limit must be a whole number")
        assert gw.service.activations.peek("local|anonymous") is None or not gw.service.activations.values()[0].tools


@pytest.mark.parametrize("era", ERAS)
async def test_over_long_ids_and_tool_names_are_refused_without_being_echoed(era: str) -> None:
    jobs = jobs_upstream()
    long_id = "jobs/" + "x" * MAX_ID_CHARS
    async with open_gateway({"jobs": jobs}) as gw, client(gw, era) as c:
        for result in (
            await c.call_tool("load", {"ids": ["jobs/job-search", long_id]}),
            await c.call_tool("call", {"tool": long_id, "arguments": {}}),
            await c.call_tool("read_skill_file", {"skill": long_id, "path": "SKILL.md"}),
        ):
            text = refusal(result, f"at most {MAX_ID_CHARS} characters")
            assert long_id not in text
        # the over-long request loaded nothing, not even its valid id
        refusal(await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}}), NOT_ACTIVE)
        assert tool_calls(jobs) == []


async def test_an_over_long_conversation_id_is_refused_not_merged_into_shared_state() -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw, client(gw, "modern") as c:
        await c.call_tool("load", {"ids": ["jobs/job-search"]})  # the caller's shared (no conversation) state
        too_long = {CONVERSATION_META_KEY: "c" * (MAX_CONVERSATION_CHARS + 1)}
        for bad in (too_long, {CONVERSATION_META_KEY: 42}, {CONVERSATION_META_KEY: "a\nb"}):
            text = refusal(
                await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "x"}}, meta=bad),
                f"1 to {MAX_CONVERSATION_CHARS}",
            )
            assert CONVERSATION_META_KEY in text, text
            refusal(await c.call_tool("find", {"query": "jobs"}, meta=bad), f"1 to {MAX_CONVERSATION_CHARS}")
        assert tool_calls(jobs) == []
        ok = {CONVERSATION_META_KEY: "c" * MAX_CONVERSATION_CHARS}
        refusal(
            await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "x"}}, meta=ok), NOT_ACTIVE
        )
        assert tool_calls(jobs) == []


async def test_more_clients_than_max_clients_evicts_the_least_recently_used() -> None:
    jobs = jobs_upstream()
    call = {"tool": "jobs/search_jobs", "arguments": {"query": "python"}}
    async with open_gateway({"jobs": jobs}, max_clients=2) as gw, client(gw, "modern") as c:

        def conv(name: str) -> dict[str, Any]:
            return {CONVERSATION_META_KEY: name}

        await c.call_tool("load", {"ids": ["jobs/job-search"]}, meta=conv("a"))
        await c.call_tool("load", {"ids": ["jobs/job-search"]}, meta=conv("b"))
        assert not (await c.call_tool("call", call, meta=conv("a"))).is_error  # a is now the most recently used
        await c.call_tool("load", {"ids": ["jobs/job-search"]}, meta=conv("c"))  # a third: b gives way
        assert len(gw.service.activations) == 2
        assert not (await c.call_tool("call", call, meta=conv("a"))).is_error
        assert not (await c.call_tool("call", call, meta=conv("c"))).is_error
        text = refusal(await c.call_tool("call", call, meta=conv("b")), NOT_ACTIVE)
        assert "active tools: none" in text, text
        assert len(tool_calls(jobs)) == 3

        # many more clients than the bound: the table stays bounded
        async def load(name: str) -> None:
            await c.call_tool("load", {"ids": ["jobs/job-search"]}, meta=conv(name))

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(load, f"n{i}")
        assert len(gw.service.activations) == 2


async def test_legacy_connections_held_are_bounded_and_the_oldest_goes_with_its_activation() -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw:
        gw.middleware.legacy.limit = 2
        async with client(gw, "legacy") as first:
            check_structured("load", await first.call_tool("load", {"ids": ["jobs/job-search"]}))
            async with client(gw, "legacy") as second, client(gw, "legacy") as third:
                await second.call_tool("find", {"query": "python jobs"})
                await third.call_tool("find", {"query": "python jobs"})
                assert len(gw.middleware.legacy) == 2
                # the first connection was forgotten with what it loaded: its call is refused, nothing sent
                text = refusal(
                    await first.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "x"}}), NOT_ACTIVE
                )
                assert "active tools: none" in text, text
    assert tool_calls(jobs) == []


UPSTREAM_ADMINS_ONLY = """\
default_identity: {subject: local, tenant: acme, roles: [%s]}
skills:
  jobs/*:
    admit: {roles: [admin]}
"""


@pytest.mark.parametrize("era", ERAS)
async def test_a_label_rule_hides_that_upstreams_skills_from_callers_it_does_not_admit(
    era: str, tmp_path: Path
) -> None:
    """``jobs/*`` admits admins: a user can neither find, load, list nor read ``jobs/job-search`` (by its id, or
    re-published as ``skill://jobs/...``); an admin can. ``LABEL/*`` covered prompts and resources, not skills."""
    seen: dict[str, tuple[set[str], list[str], list[str]]] = {}
    for role in ("user", "admin"):
        path = tmp_path / f"{role}.yaml"
        path.write_text(UPSTREAM_ADMINS_ONLY % role)
        async with open_gateway({"jobs": jobs_upstream()}, policy=load_policy(path)) as gw, client(gw, era) as c:
            found = check_structured("find", await c.call_tool("find", {"query": "search job postings", "limit": 10}))
            result = await c.call_tool("load", {"ids": ["jobs/job-search"]})
            assert result.is_error is (role == "user"), result  # loading nothing is an error a model notices
            loaded = result.structured_content
            assert isinstance(loaded, dict), result
            listed = SkillsWire(c)
            uris = [s["uri"] for s in (await listed.list_skills())["skills"]]
            seen[role] = ({card["id"] for card in found["cards"]}, [s["id"] for s in loaded["skills"]], uris)
            if role == "user":
                assert [(r["id"], r["reason"]) for r in loaded["refused"]] == [
                    ("jobs/job-search", "no card has the id 'jobs/job-search'; ids come from find (LABEL/NAME)")
                ], loaded
                with pytest.raises(MCPError) as hidden:
                    await c.read_resource("skill://jobs/job-search/SKILL.md")
                assert hidden.value.error.code == -32602, hidden.value.error
    user, admin = seen["user"], seen["admin"]
    assert "jobs/job-search" not in user[0], user
    assert user[1] == [], user
    assert not [u for u in user[2] if u.startswith("skill://jobs/")], user
    assert "jobs/job-search" in admin[0], admin
    assert admin[1] == ["jobs/job-search"], admin
    assert "skill://jobs/job-search/SKILL.md" in admin[2], admin


@pytest.mark.parametrize("era", ERAS)
async def test_load_that_loads_nothing_is_an_error_result_and_one_known_id_is_not(era: str) -> None:
    async with open_gateway({"jobs": jobs_upstream()}) as gw, client(gw, era) as c:
        result = await c.call_tool("load", {"ids": ["jobs/no-such-skill", "nowhere/at-all"]})
        text = refusal(result, "Refused jobs/no-such-skill: ")  # isError: a model notices it loaded nothing
        assert "Refused nowhere/at-all: " in text, text
        assert isinstance(result.structured_content, dict)
        assert [r["id"] for r in result.structured_content["refused"]] == ["jobs/no-such-skill", "nowhere/at-all"]
        loaded = check_structured("load", await c.call_tool("load", {"ids": ["jobs/no-such-skill", "jobs/job-search"]}))
        assert [s["id"] for s in loaded["skills"]] == ["jobs/job-search"], loaded
        assert [r["id"] for r in loaded["refused"]] == ["jobs/no-such-skill"], loaded
