"""Each meta-tool declared once (its model checks arguments and gives the schema), and one request's identity.

The wire behaviour of the meta-tools is covered by the client tests (:mod:`.test_security`,
:mod:`.test_clients`); here: the models' refusals one by one, the limits the agent adapters share,
and that one gateway process keeps one table of legacy connections, remembering a connection once
per request.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from skilldeck.errors import GateRefused, InvalidArguments
from skilldeck.gateway._meta import (
    CALL,
    FIND,
    LOAD,
    MAX_FIND_LIMIT,
    MAX_ID_CHARS,
    MAX_LOAD_IDS,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    META,
    META_OUTPUT_SCHEMAS,
    META_TOOLS,
    READ_SKILL_FILE,
    CallArguments,
    FindArguments,
    LoadArguments,
    ReadSkillFileArguments,
)
from skilldeck.select._decide import MAX_NEEDS
from skilldeck.serving._legacy import LegacyConnections

from .gateway_clients_support import client, jobs_upstream, open_gateway

pytestmark = pytest.mark.anyio

LONG_ID = "jobs/" + "x" * MAX_ID_CHARS


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        (FIND, {"query": "x", "top": 3}, "find takes only limit, needs, query; unknown: top"),
        (FIND, {}, "find needs a query"),
        (FIND, {"query": "   "}, "find needs a query"),
        (FIND, {"query": 7}, "find needs a query"),
        (FIND, {"query": "x", "limit": 0}, f"limit must be a whole number from 1 to {MAX_FIND_LIMIT}"),
        (FIND, {"query": "x", "limit": "5"}, "limit must be a whole number"),
        (FIND, {"query": "x", "limit": 2.0}, "limit must be a whole number"),
        (FIND, {"query": "x", "needs": ["a"] * (MAX_NEEDS + 1)}, f"needs must be a list of 1 to {MAX_NEEDS}"),
        (FIND, {"query": "x", "needs": ["a", " "]}, "needs must be a list"),
        (LOAD, {"ids": []}, f"a list of 1 to {MAX_LOAD_IDS} card ids"),
        (LOAD, {"ids": ["a/b", 3]}, "load needs ids"),
        (LOAD, {"ids": [LONG_ID]}, f"a card id is at most {MAX_ID_CHARS} characters"),
        (LOAD, {"ids": [LONG_ID, 3]}, "load needs ids"),  # the shape is refused before the length
        (READ_SKILL_FILE, {"skill": "a/b"}, "read_skill_file needs skill"),
        (READ_SKILL_FILE, {"skill": "a/b", "path": "p" * 1_025}, "read_skill_file needs skill"),
        (READ_SKILL_FILE, {"skill": LONG_ID, "path": "SKILL.md"}, f"a skill id is at most {MAX_ID_CHARS}"),
        (CALL, {"arguments": {}}, "call needs tool"),
        (CALL, {"tool": "a/b", "arguments": []}, "arguments must be an object matching the tool's input schema"),
        (CALL, {"tool": LONG_ID}, f"a tool name is at most {MAX_ID_CHARS} characters"),
    ],
)
def test_each_model_refuses_with_what_its_tool_takes(tool: str, arguments: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidArguments) as refused:
        META[tool].arguments.parse(arguments)
    assert says in str(refused.value)
    assert LONG_ID not in str(refused.value)
    assert isinstance(refused.value, GateRefused)  # a refusal like the gate's: nothing is sent


def _at(n: int, prefix: str = "") -> str:
    """A text of exactly ``n`` characters (``prefix`` first)."""
    return prefix + "x" * (n - len(prefix))


@pytest.mark.parametrize(
    ("tool", "at_the_limit", "one_over", "says"),
    [
        (FIND, {"query": _at(MAX_QUERY_CHARS)}, {"query": _at(MAX_QUERY_CHARS + 1)}, "find needs a query"),
        (FIND, {"query": "x", "limit": MAX_FIND_LIMIT}, {"query": "x", "limit": MAX_FIND_LIMIT + 1}, "limit must be"),
        (FIND, {"query": "x", "limit": 1}, {"query": "x", "limit": 0}, "limit must be"),
        (
            FIND,
            {"query": "x", "needs": ["a"] * MAX_NEEDS},
            {"query": "x", "needs": ["a"] * (MAX_NEEDS + 1)},
            "needs must be a list",
        ),
        (
            FIND,
            {"query": "x", "needs": [_at(MAX_QUERY_CHARS)]},
            {"query": "x", "needs": [_at(MAX_QUERY_CHARS + 1)]},
            "needs must be a list",
        ),
        (LOAD, {"ids": ["a/b"] * MAX_LOAD_IDS}, {"ids": ["a/b"] * (MAX_LOAD_IDS + 1)}, "load needs ids"),
        (LOAD, {"ids": [_at(MAX_ID_CHARS, "a/")]}, {"ids": [_at(MAX_ID_CHARS + 1, "a/")]}, "a card id is at most"),
        (
            READ_SKILL_FILE,
            {"skill": _at(MAX_ID_CHARS, "a/"), "path": _at(MAX_PATH_CHARS)},
            {"skill": _at(MAX_ID_CHARS, "a/"), "path": _at(MAX_PATH_CHARS + 1)},
            "read_skill_file needs skill",
        ),
        (
            READ_SKILL_FILE,
            {"skill": _at(MAX_ID_CHARS, "a/"), "path": "SKILL.md"},
            {"skill": _at(MAX_ID_CHARS + 1, "a/"), "path": "SKILL.md"},
            "a skill id is at most",
        ),
        (CALL, {"tool": _at(MAX_ID_CHARS, "a/")}, {"tool": _at(MAX_ID_CHARS + 1, "a/")}, "a tool name is at most"),
    ],
    ids=[
        "query",
        "limit-max",
        "limit-min",
        "needs-count",
        "need-chars",
        "load-ids",
        "id-chars",
        "path-chars",
        "skill-id-chars",
        "tool-chars",
    ],
)
def test_each_limit_takes_exactly_n_and_refuses_n_plus_one(
    tool: str, at_the_limit: dict[str, Any], one_over: dict[str, Any], says: str
) -> None:
    """Every meta-tool limit at its boundary: the value at the limit is taken as it came, one past it refused,
    saying what fits."""
    model = META[tool].arguments
    taken = model.parse(at_the_limit)
    assert taken.model_dump(exclude_none=True) == at_the_limit
    with pytest.raises(InvalidArguments) as refused:
        model.parse(one_over)
    assert says in str(refused.value)
    assert isinstance(taken, FindArguments | LoadArguments | ReadSkillFileArguments | CallArguments)


def test_a_model_gives_the_arguments_typed() -> None:
    assert FindArguments.parse({"query": "jobs", "limit": 3}) == FindArguments(query="jobs", limit=3)
    assert LoadArguments.parse({"ids": "jobs/job-search"}).ids == ["jobs/job-search"]  # one id alone
    assert CallArguments.parse({"tool": "jobs/search_jobs"}).arguments is None


def test_the_listed_schemas_carry_the_models_limits() -> None:
    listed = {t["name"]: t for t in META_TOOLS}
    assert [t["name"] for t in META_TOOLS] == [FIND, LOAD, READ_SKILL_FILE, CALL]
    assert listed[LOAD]["inputSchema"]["properties"]["ids"]["maxItems"] == MAX_LOAD_IDS
    assert listed[FIND]["inputSchema"]["properties"]["limit"]["maximum"] == MAX_FIND_LIMIT
    assert listed[FIND]["inputSchema"]["properties"]["needs"]["maxItems"] == MAX_NEEDS
    assert listed[FIND]["inputSchema"]["required"] == ["query"]
    # no result schema is listed (they were half of tools/list); the result shapes are still declared
    assert not any("outputSchema" in tool for tool in META_TOOLS)
    assert sorted(META_OUTPUT_SCHEMAS) == sorted([FIND, LOAD, READ_SKILL_FILE])  # call: the upstream's, as it came


def test_the_agent_adapters_take_the_gateways_load_limit() -> None:
    langchain = pytest.importorskip("skilldeck.agents.langchain")
    openai_agents = pytest.importorskip("skilldeck.agents.openai_agents")
    assert langchain.MAX_LOAD_IDS == openai_agents.MAX_LOAD_IDS == MAX_LOAD_IDS


def test_every_listener_hears_a_connection_forgotten() -> None:
    first: list[int] = []
    second: list[int] = []
    connections = LegacyConnections(on_forget=first.append)
    connections.on_forget(second.append)
    session: Any = object()
    key, record = connections.connection(session)
    record.log_level = "warning"
    assert connections.remember(session) == key
    assert connections.log_levels() == ["warning"]
    connections.forget(key)
    assert first == second == [key]
    assert connections.log_levels() == []


async def test_one_gateway_keeps_one_table_of_legacy_connections() -> None:
    async with open_gateway({"jobs": jobs_upstream()}) as gw:
        middleware = gw.middleware
        assert middleware.forwarded is not None
        assert middleware.skills is not None
        assert middleware.forwarded.legacy is middleware.legacy
        assert middleware.skills.extension.notifier.legacy is middleware.legacy


async def test_a_legacy_call_remembers_its_connection_once(monkeypatch: pytest.MonkeyPatch) -> None:
    remembered: list[int] = []
    original = LegacyConnections._remember

    def counting(self: LegacyConnections, session: Any) -> Any:
        found = original(self, session)
        remembered.append(found[0])
        return found

    monkeypatch.setattr(LegacyConnections, "_remember", counting)
    async with open_gateway({"jobs": jobs_upstream()}) as gw, client(gw, "legacy") as c:
        assert not (await c.call_tool("load", {"ids": ["jobs/search_jobs"]})).is_error
        remembered.clear()
        result = await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}})
        assert not result.is_error, result
        assert len(remembered) == 1
        assert len(gw.middleware.legacy) == 1


def test_the_front_door_stays_under_600_tokens() -> None:
    """Every turn of every conversation pays for the meta-tools' ``tools/list``: 600 cl100k tokens at most."""
    from skilldeck.select._project import count_tokens

    assert count_tokens(json.dumps(list(META_TOOLS), ensure_ascii=False)) <= 600
    for tool in META_TOOLS:  # each still says when to use it, and what it takes
        assert len(tool["description"]) >= 80, tool["name"]
