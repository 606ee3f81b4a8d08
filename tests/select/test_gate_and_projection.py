"""The tool gate, skill-to-tool mapping and the History A/B renderings."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from skilldeck.errors import GateRefused
from skilldeck.select._cards import build_cards, skill_tools
from skilldeck.select._gate import InvalidArguments, ToolGate, ToolNotActive, ToolNotListed
from skilldeck.select._project import (
    count_tokens,
    history_a,
    history_b,
    render_cards,
    render_tools,
    token_summary,
    tool_function_name,
)
from skilldeck.select._snapshot import parse_snapshot

SEARCH = {
    "name": "search_jobs",
    "description": "Search job postings.",
    "inputSchema": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["query"],
    },
}
GET = {
    "name": "get_job",
    "description": "One posting.",
    "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
}
NOSCHEMA = {"name": "ping", "description": "Ping."}


def skill_entry(name: str, tools: str | None) -> dict[str, Any]:
    fm: dict[str, Any] = {"name": name, "description": f"{name} skill"}
    if tools is not None:
        fm["metadata"] = {"dev.skilldeck/tools": tools}
    uri = f"skill://{name}/SKILL.md"
    return {"uri": uri, "frontmatter": fm, "resources": [{"uri": uri, "digest": "sha256:" + "0" * 64, "size": 1}]}


def catalog() -> Any:
    return build_cards(
        parse_snapshot(
            {
                "servers": [
                    {
                        "label": "jobs",
                        "tools": [SEARCH, GET],
                        "skills": [
                            skill_entry("job-search", "search_jobs missing_tool"),
                            skill_entry("ghost", "nope also_nope"),
                            {**skill_entry("quoted", None), "body": "---\n---\nCall `get_job` then `unknown`."},
                            skill_entry("cross", "files/read_file search_jobs"),
                        ],
                    },
                    {"label": "files", "tools": [{"name": "read_file", "description": "Read."}, NOSCHEMA]},
                ]
            }
        )
    )


def test_skill_tools_from_metadata_body_and_other_servers() -> None:
    cards = catalog()
    by_name = {c.name: c for c in cards.skill_cards}
    assert by_name["job-search"].tools == (("jobs", "search_jobs"),)
    assert by_name["job-search"].missing_tools == ("missing_tool",)  # reported on the card
    assert by_name["quoted"].tools == (("jobs", "get_job"),)
    assert by_name["cross"].tools == (("files", "read_file"), ("jobs", "search_jobs"))
    assert "ghost" not in by_name  # every named tool missing: not offered
    assert cards.not_offered == ["[jobs] skill://ghost/SKILL.md: every tool it names is missing from its server"]
    found, missing = skill_tools(
        "jobs", {"name": "x"}, "use `search_jobs` and `get_job`", {"jobs": ["search_jobs", "get_job"]}
    )
    assert found == [("jobs", "search_jobs"), ("jobs", "get_job")]
    assert missing == []


def test_skill_tools_fallback_order_key_then_allowed_tools_then_backticks() -> None:
    """``dev.skilldeck/tools``, else ``allowed-tools`` entries naming the skill's own server's tools, else
    backticked names in the body; the reserved ``io.modelcontextprotocol/tools`` key means nothing."""
    tools = {"jobs": ["search_jobs", "get_job", "apply"], "files": ["read_file"]}
    body = 'Call `apply` first; the "search_jobs" tool comes later.'

    def found(frontmatter: dict[str, Any], text: str | None = body) -> list[tuple[str, str]]:
        return skill_tools("jobs", {"name": "x", "description": "d", **frontmatter}, text, tools)[0]

    allowed = {"allowed-tools": "Read Bash(git:*) get_job files/read_file search_jobs get_job"}
    assert found({"metadata": {"dev.skilldeck/tools": "apply"}, **allowed}) == [("jobs", "apply")]
    # present but empty (a policy routed no tools): no tools, and no fallback that would add some back
    assert found({"metadata": {"dev.skilldeck/tools": ""}, **allowed}) == []
    # only the server's own tool names count, in their order; host tools and qualified names do not
    assert found(allowed) == [("jobs", "get_job"), ("jobs", "search_jobs")]
    assert found({"metadata": {"io.modelcontextprotocol/tools": "apply"}, **allowed}) == found(allowed)
    # no matching allowed-tools entry: backticked names of the body (a double-quoted name is prose)
    assert found({"allowed-tools": "Read Write"}) == [("jobs", "apply")]
    assert found({"metadata": {"io.modelcontextprotocol/tools": "get_job"}}) == [("jobs", "apply")]
    assert found({}, None) == []


def test_gate_refuses_unlisted_inactive_and_invalid_before_sending() -> None:
    gate = ToolGate(catalog().tools, [("jobs", "search_jobs")])
    assert gate.check("search_jobs", {"query": "java"}) == ("jobs", "search_jobs")
    assert gate.check("jobs/search_jobs", {"query": "java", "limit": 3}) == ("jobs", "search_jobs")
    assert gate.check("jobs__search_jobs", {"query": "java"}) == ("jobs", "search_jobs")
    with pytest.raises(
        ToolNotListed, match=r"no server lists a tool named 'delete_everything'; active tools: jobs/search_jobs"
    ):
        gate.check("delete_everything", {})
    with pytest.raises(ToolNotActive, match="jobs/get_job is not in the active skill's tools"):
        gate.check("get_job", {"id": "1"})
    with pytest.raises(InvalidArguments, match="'query' is a required property"):
        gate.check("search_jobs", {})
    with pytest.raises(InvalidArguments, match="limit: 0 is less than the minimum of 1"):
        gate.check("search_jobs", {"query": "x", "limit": 0})
    with pytest.raises(ToolNotListed):
        gate.activate([("jobs", "not_listed")])


def test_gate_follows_a_relisting() -> None:
    gate = ToolGate(catalog().tools, [("jobs", "search_jobs"), ("jobs", "get_job")])
    gate.update_listing("jobs", [SEARCH])
    assert gate.active == [("jobs", "search_jobs")]
    with pytest.raises(ToolNotListed):
        gate.check("get_job", {"id": "1"})


def test_a_relisted_schema_is_the_one_arguments_are_checked_against() -> None:
    """A server re-lists ``search_jobs`` with another schema: a call is checked against the new one (the
    validator of the old one, kept for speed, is not used for it)."""
    gate = ToolGate(catalog().tools, [("jobs", "search_jobs")])
    assert gate.check("search_jobs", {"query": "java"}) == ("jobs", "search_jobs")  # the old schema's validator
    renamed = {**SEARCH, "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
    gate.update_listing("jobs", [renamed])
    with pytest.raises(InvalidArguments, match="'q' is a required property"):
        gate.check("search_jobs", {"query": "java"})
    assert gate.check("search_jobs", {"q": "java"}) == ("jobs", "search_jobs")


def test_a_bare_name_several_servers_list_is_refused_unless_one_is_active() -> None:
    """``read`` listed by two servers: refused bare, naming both and how to qualify it; with one of them active,
    the bare name is that one's; qualified, each is its own."""
    read = {"name": "read", "description": "Read.", "inputSchema": {"type": "object"}}
    tools = build_cards(
        parse_snapshot({"servers": [{"label": "a", "tools": [read]}, {"label": "b", "tools": [read]}]})
    ).tools
    gate = ToolGate(tools, [])
    with pytest.raises(GateRefused, match=r"'read' is listed by several servers \(a, b\); qualify it as label/read"):
        gate.resolve("read")
    assert gate.resolve("b/read") == ("b", "read")
    assert gate.with_active([("b", "read")]).resolve("read") == ("b", "read")


OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_openai_and_anthropic_shapes() -> None:
    tools = [("jobs", SEARCH), ("files", NOSCHEMA), ("a server.with:odd/chars" * 3, GET)]
    openai = render_tools(tools, "openai")
    assert isinstance(openai, list)
    for item in openai:
        assert set(item) == {"type", "function"}
        assert item["type"] == "function"
        fn = item["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert OPENAI_NAME.match(fn["name"]), fn["name"]
        assert fn["parameters"]["type"] == "object"
        assert isinstance(fn["parameters"]["properties"], dict)
        assert "$schema" not in fn["parameters"]
    anthropic = render_tools(tools, "anthropic")
    assert isinstance(anthropic, list)
    for item in anthropic:
        assert set(item) == {"name", "description", "input_schema"}
        assert OPENAI_NAME.match(item["name"])
        assert item["input_schema"]["type"] == "object"
    assert anthropic[0]["input_schema"]["required"] == ["query"]
    assert tool_function_name("jobs", "search_jobs") == "jobs__search_jobs"
    json.dumps(openai)
    json.dumps(anthropic)


def test_history_b_carries_only_the_chosen_tools_and_is_smaller() -> None:
    cards = catalog()
    a = history_a(cards, "anthropic")
    b = history_b(
        cards, cards.cards[:3], [("jobs", "search_jobs")], "anthropic", skill_text="<skill-content>hi</skill-content>"
    )
    assert a.tool_count == 4
    assert b.tool_count == 1
    assert isinstance(b.tools, list)
    assert b.tools[0]["name"] == "jobs__search_jobs"
    assert "<skill-content>hi</skill-content>" in b.system
    assert a.tokens == count_tokens(json.dumps(a.tools, ensure_ascii=False))
    text = render_tools([("jobs", SEARCH)], "text")
    assert isinstance(text, str)
    assert text.startswith("## jobs/search_jobs")


def test_token_summary_says_what_history_b_holds_and_never_a_ratio_below_one() -> None:
    cards = catalog()
    a = history_a(cards)
    shown = cards.cards[:3]
    small = history_b(cards, shown, [("jobs", "search_jobs")], skill_text="<skill-content>hi</skill-content>")
    line = token_summary(a, small, abstained=False, skill=True)
    assert small.tokens < a.tokens
    assert f"History A (every schema of every server, 4 tool schemas) {a.tokens:,}" in line
    assert f"History B (cards, this skill, 1 tool schema) {small.tokens:,}" in line
    assert line.endswith(f"{a.tokens / small.tokens:.1f}x fewer")
    # a long skill over a catalog with few schemas: History B is larger, and the line says so
    big = history_b(cards, shown, [("jobs", "search_jobs")], skill_text="word " * 2000)
    line = token_summary(a, big, abstained=False, skill=True)
    assert big.tokens > a.tokens
    assert "x fewer" not in line
    assert "History B is larger here: the skill text and the cards outweigh a 4-tool catalog" in line
    # an abstention holds the cards only: no skill, no schema
    cards_only = history_b(cards, shown, [])
    line = token_summary(a, cards_only, abstained=True, skill=False)
    assert "History B (the cards only: it abstained)" in line
    assert "this skill" not in line
    assert "tool schema)" not in line


def _listed(*names: str) -> dict[str, dict[str, Any]]:
    return {name: {"name": name, "description": f"{name}.", "inputSchema": {"type": "object"}} for name in names}


def test_a_listed_tool_whose_own_name_holds_a_separator_stays_callable() -> None:
    """``fs__read`` and ``docs/search`` are tool names, not ``server__tool`` or ``server/tool``."""
    gate = ToolGate({"files": _listed("fs__read", "docs/search"), "jobs": _listed("search_jobs")})
    gate.activate([("files", "fs__read"), ("files", "docs/search")])
    assert gate.check("fs__read", {}) == ("files", "fs__read")
    assert gate.check("docs/search", {}) == ("files", "docs/search")
    assert gate.check("files/fs__read", {}) == ("files", "fs__read")
    assert gate.check("files__docs/search", {}) == ("files", "docs/search")
    with pytest.raises(ToolNotActive):
        gate.check("jobs__search_jobs", {})


def test_a_tool_called_by_the_name_history_b_rendered_for_it_is_the_listed_tool() -> None:
    """``docs/search`` and ``fs.read`` are rendered ``files__docs_search`` / ``files__fs_read`` for the APIs."""
    listed = {"files": _listed("docs/search", "fs.read", "fs_read"), "jobs": _listed("search_jobs")}
    gate = ToolGate(listed)
    gate.activate([("files", "docs/search"), ("files", "fs.read")])
    rendered = render_tools([("files", listed["files"]["docs/search"])], "anthropic")
    assert isinstance(rendered, list)
    assert rendered[0]["name"] == "files__docs_search"
    assert gate.check("files__docs_search", {}) == ("files", "docs/search")
    assert gate.check("docs_search", {}) == ("files", "docs/search")
    # ``files__fs_read`` is both the rendering of ``fs.read`` and the qualified ``fs_read``: the listed name wins
    assert gate.check("files__fs.read", {}) == ("files", "fs.read")
    with pytest.raises(ToolNotActive):
        gate.check("files__fs_read", {})
    with pytest.raises(ToolNotListed):
        gate.check("files__nothing_like_it", {})


def test_a_rendered_name_that_stands_for_two_tools_is_refused() -> None:
    gate = ToolGate({"files": _listed("a.b", "a/b")})
    gate.activate([("files", "a.b"), ("files", "a/b")])
    with pytest.raises(GateRefused, match="stands for several tools"):
        gate.check("files__a_b", {})


def test_a_tool_named_after_another_server_is_still_found() -> None:
    """The server ``fs`` lists ``write`` but not ``read``: ``fs__read`` is the tool ``files`` lists under that name.

    A name that is both ``label__tool`` of a listed tool and a listed tool name goes to the qualified
    reading; a misspelt qualified name is refused naming the server it qualifies.
    """
    gate = ToolGate({"files": _listed("fs__read", "fs__write"), "fs": _listed("write")})
    gate.activate([("files", "fs__read"), ("files", "fs__write"), ("fs", "write")])
    assert gate.check("fs__read", {}) == ("files", "fs__read")
    assert gate.check("fs__write", {}) == ("fs", "write")
    assert gate.check("files__fs__write", {}) == ("files", "fs__write")
    with pytest.raises(ToolNotListed, match="'fs' never listed a tool named 'delete'"):
        gate.check("fs__delete", {})


SKILL_TEXT = (
    '<skill-content origin="mcp" server="jobs" uri="skill://job-search/SKILL.md" verified="true">\n'
    "---\nname: job-search\ndescription: job-search skill\n---\n# Job search\nCall `search_jobs` with the query.\n"
    "</skill-content>"
)


@pytest.mark.parametrize(
    ("render", "a_tokens", "b_tokens", "b_schema_tokens"),
    [("openai", 205, 195, 73), ("anthropic", 170, 187, 65), ("text", 122, 174, 52)],
)
def test_history_a_and_b_token_counts_on_a_known_catalog(
    render: Any, a_tokens: int, b_tokens: int, b_schema_tokens: int
) -> None:
    """History B counts its system prompt (the shortlist's cards and the chosen SKILL.md) and its one schema."""
    cards = catalog()
    shown = cards.cards[:3]
    a = history_a(cards, render)
    b = history_b(cards, shown, [("jobs", "search_jobs")], render, skill_text=SKILL_TEXT)
    assert a.system == ""
    assert a.tokens == a_tokens
    assert count_tokens(render_cards(shown)) == 64
    assert count_tokens(SKILL_TEXT) == 57
    assert count_tokens(b.system) == 122  # the cards, a blank line, the tagged SKILL.md
    assert b.tokens == 122 + b_schema_tokens == b_tokens
    assert b.to_json()["tokens"] == b_tokens
    assert history_b(cards, shown, [("jobs", "search_jobs")], render).tokens == 64 + b_schema_tokens


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/schema.json"}}},
        {"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}},
    ],
)
def test_a_hostile_input_schema_refuses_the_call_instead_of_crashing(schema: dict[str, object]) -> None:
    gate = ToolGate({"s": {"t": {"name": "t", "inputSchema": schema}}}, [("s", "t")])
    with pytest.raises(InvalidArguments, match="cannot be used"):
        gate.check("t", {"x": "y"})
