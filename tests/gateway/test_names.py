"""``--names upstream``: upstream names kept where no other upstream lists the same, the label form for the rest.

Two real in-process upstreams, ``a`` and ``b``, both list a tool ``search``, a prompt ``greet``, a
resource ``note://readme`` and a template ``note://pages/{page}`` (test_forward's docs upstream) (each of those collides, and
keeps its label form); ``a`` alone lists a tool ``whoami``, a tool ``find`` (named like the
gateway's meta-tool), a prompt ``intro``, a resource ``note://a-only`` and a template
``a://items/{id}``; ``b`` alone a tool ``lookup``. Every upstream tool is pinned. Each test runs
the official Python client in both eras.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp.client import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent, TextResourceContents

from skilldeck.cli._gateway import upstream_names_lines
from skilldeck.gateway._names import UpstreamNames, kept_tool_names, template_pattern, tool_collisions

from .gateway_clients_support import client, open_gateway
from .test_forward import docs_upstream, every_page

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

ERAS = ["modern", "legacy"]
META = {"find", "load", "read_skill_file", "call"}


def upstream(label: str, *, alone: bool) -> MCPServer[Any]:
    """test_forward's docs upstream (``note://readme``, ``note://pages/{page}``, ``greet``) with the tools and
    the names of the module docs."""
    server = docs_upstream(label)
    server.add_tool(lambda query: f"{label} searched {query}", name="search", description="Searches.")
    if not alone:
        server.add_tool(lambda key: f"{label} looked up {key}", name="lookup", description="Looks a key up.")
        return server
    server.add_tool(lambda: label, name="whoami", description="Says which upstream answers.")
    server.add_tool(lambda query: f"{label}'s own find", name="find", description="Named like a meta-tool.")
    server.prompt(name="intro", description="Introduces the upstream.")(lambda: f"intro of {label}")
    server.resource("note://a-only", name="only", mime_type="text/plain")(lambda: f"only in {label}")
    server.resource("a://items/{id}", name="item", mime_type="text/plain")(lambda id: f"item {id} of {label}")
    return server


PINNED = [("a", "search"), ("a", "whoami"), ("a", "find"), ("b", "search"), ("b", "lookup")]


@asynccontextmanager
async def names_gateway(era: str, names: str = "upstream") -> AsyncIterator[tuple[Client, Any]]:
    upstreams = {"a": upstream("a", alone=True), "b": upstream("b", alone=False)}
    async with open_gateway(upstreams, pinned=PINNED, names=names) as gw, client(gw, era) as c:  # type: ignore[arg-type]
        yield c, gw


def text(result: Any) -> str:
    assert not result.is_error, result.content
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.mark.parametrize("era", ERAS)
async def test_tools_keep_their_names_unless_they_collide(era: str) -> None:
    async with names_gateway(era) as (c, _):
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == META | {"whoami", "lookup", "a__search", "b__search", "a__find"}, sorted(tools)
        assert "a's own" not in (tools["find"].description or "")  # the meta-tool, not the upstream's
        assert text(await c.call_tool("whoami", {})) == "a"
        assert text(await c.call_tool("lookup", {"key": "k"})) == "b looked up k"
        assert text(await c.call_tool("a__search", {"query": "q"})) == "a searched q"
        assert text(await c.call_tool("b__search", {"query": "q"})) == "b searched q"
        assert text(await c.call_tool("a__find", {"query": "q"})) == "a's own find"
        found = await c.call_tool("find", {"query": "look a key up"})
        assert isinstance(found.structured_content, dict), found
        assert "cards" in found.structured_content, found
        refused = await c.call_tool("search", {"query": "q"})  # listed by both: only the label form names one
        reason = "".join(block.text for block in refused.content if isinstance(block, TextContent))
        assert refused.is_error, reason
        assert "listed by several servers (a, b)" in reason, reason


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_keep_their_names_unless_they_collide(era: str) -> None:
    async with names_gateway(era) as (c, _):
        prompts = sorted(p.name for p in await every_page(c.list_prompts, "prompts"))
        assert prompts == ["a__greet", "b__greet", "intro"], prompts
        [message] = (await c.get_prompt("intro")).messages
        assert isinstance(message.content, TextContent)
        assert message.content.text == "intro of a"
        [message] = (await c.get_prompt("b__greet", {"who": "x"})).messages
        assert isinstance(message.content, TextContent)
        assert message.content.text == "Hello x from b"
        with pytest.raises(MCPError, match="unknown prompt 'greet'"):
            await c.get_prompt("greet", {"who": "x"})


@pytest.mark.parametrize("era", ERAS)
async def test_resources_keep_their_uris_unless_they_collide(era: str) -> None:
    async with names_gateway(era) as (c, _):
        uris = sorted(r.uri for r in await every_page(c.list_resources, "resources"))
        assert uris == ["note://a-only", "upstream://a/note://readme", "upstream://b/note://readme"], uris
        templates = sorted(t.uri_template for t in await every_page(c.list_resource_templates, "resource_templates"))
        assert templates == ["a://items/{id}", "upstream://a/note://pages/{page}", "upstream://b/note://pages/{page}"]
        [only] = (await c.read_resource("note://a-only")).contents
        assert isinstance(only, TextResourceContents)
        assert (only.uri, only.text) == ("note://a-only", "only in a")
        [item] = (await c.read_resource("a://items/7")).contents  # a kept template's expansion
        assert isinstance(item, TextResourceContents)
        assert (item.uri, item.text) == ("a://items/7", "item 7 of a")
        [readme] = (await c.read_resource("upstream://b/note://readme")).contents
        assert isinstance(readme, TextResourceContents)
        assert readme.text == "readme of b"
        with pytest.raises(MCPError, match=r"(?i)unknown resource"):
            await c.read_resource("note://readme")  # two upstreams list it


async def test_the_label_form_is_the_default() -> None:
    async with names_gateway("modern", names="label") as (c, _):
        tools = {t.name for t in (await c.list_tools()).tools}
        assert tools == META | {"a__whoami", "b__lookup", "a__search", "b__search", "a__find"}, sorted(tools)
        assert sorted(p.name for p in await every_page(c.list_prompts, "prompts")) == [
            "a__greet",
            "a__intro",
            "b__greet",
        ]
        assert "upstream://a/note://a-only" in {r.uri for r in await every_page(c.list_resources, "resources")}


async def test_start_up_names_every_collision() -> None:
    async with names_gateway("modern") as (_, gw):
        lines = await upstream_names_lines(gw.middleware)
    assert lines[0].startswith("names: the upstreams' own names, but 5 collide"), lines
    assert [line.strip() for line in lines[1:]] == [
        "tool find (a: a meta-tool's name)",
        "tool search (a, b: listed by several)",
        "prompt greet (a, b)",
        "resource note://readme (a, b)",
        "template note://pages/{page} (a, b)",
    ], lines


def test_a_name_that_reads_as_another_tools_label_form_is_not_kept() -> None:
    listed = {"docs": ["search", "docs__search_all"], "web": ["docs__search", "fetch"]}
    assert kept_tool_names(listed, META) == {"search", "docs__search_all", "fetch"}
    assert tool_collisions(listed, META) == ["tool docs__search (web: a label form)"]


def test_a_kept_template_routes_its_expansions_only() -> None:
    names = UpstreamNames()
    names.add("templates", "a", ["a://items/{id}", "shared://{+path}"])
    names.add("templates", "b", ["shared://{+path}"])
    names.add("resources", "b", ["a://items/fixed"])
    assert names.uri_owner("a://items/7") == "a"
    assert names.uri_owner("a://items/fixed") == "b"  # listed as a resource: its lister
    assert names.uri_owner("a://items/7/more") is None  # a simple expression stays in its segment
    assert names.uri_owner("shared://x/y") is None  # the template collides
    assert names.uri_owner("upstream://a/a://items/7") is None  # the gateway's own form
    pattern = template_pattern("x://{+path}{?q}")
    assert pattern is not None
    assert pattern.fullmatch("x://a/b?q=1")


def test_a_prompt_that_reads_as_another_prompts_label_form_is_not_kept() -> None:
    names = UpstreamNames()
    names.add("prompts", "docs", ["search", "intro"])
    names.add("prompts", "web", ["docs__search", "intro"])
    assert names.keeps_prompt("docs", "search")
    assert not names.keeps_prompt("web", "docs__search")  # docs__search is docs's search in its label form
    assert names.prompt_owner("docs__search") is None
    assert names.prompt_owner("intro") is None  # listed by both
    assert names.collisions() == ["prompt intro (docs, web)"]
