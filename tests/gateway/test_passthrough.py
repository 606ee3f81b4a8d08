"""What an upstream tool declares and returns reaches the client unchanged, on every path through the gateway.

The upstream is a real in-process ``MCPServer`` whose tool declares an ``outputSchema`` (with a
nullable required field), annotations, a ``title``, ``icons`` and ``_meta``, and returns
``structuredContent`` and a result ``_meta``. The paths: the ``load`` result's tool entry, the
legacy injected ``label__tool`` listing and call, a ``--pin``\\ ned tool, and the ``call`` result —
driven by the official Python client in both eras (which checks ``structuredContent`` against the
``outputSchema`` of the tool named in ``tools/call``).
"""

from __future__ import annotations

from typing import Annotated, Any

import jsonschema
import pytest
from mcp.client import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, Icon, TextContent, ToolAnnotations
from pydantic import BaseModel

from skilldeck.gateway._service import ORIGIN_META, SERVER_INFO_META

from .gateway_clients_support import check_structured, client, open_gateway

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]
TOOL_META = {"com.example/tier": "gold", "com.example/nested": {"a": None, "b": [1, 2]}}
RESULT_META = {"com.example/trace": "t-1"}
ICONS = [Icon(src="https://example.com/quote.png", mime_type="image/png", sizes=["48x48"])]


class Quote(BaseModel):
    symbol: str
    price: float
    note: str | None


def quotes_upstream() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("quotes")

    @server.tool(
        title="Stock quote",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
        icons=ICONS,
        meta=TOOL_META,
    )
    def quote(symbol: str) -> Annotated[CallToolResult, Quote]:
        """A quote for a symbol."""
        return CallToolResult(
            content=[TextContent(type="text", text=f"{symbol}: 1.5")],
            structured_content={"symbol": symbol, "price": 1.5, "note": None},
            _meta=RESULT_META,
        )

    return server


async def upstream_view() -> tuple[dict[str, Any], dict[str, Any]]:
    """The tool as the upstream lists it, and its call result, both as a client reads them directly."""
    async with Client(quotes_upstream(), cache=None) as direct:
        listed = (await direct.list_tools()).tools[0].model_dump(by_alias=True, mode="json", exclude_none=True)
        result = await direct.call_tool("quote", {"symbol": "ACME"})
    return listed, result.model_dump(by_alias=True, mode="json", exclude_none=True)


def check_result(result: CallToolResult, upstream: dict[str, Any]) -> None:
    """The gateway's result is the upstream's: content, structuredContent, _meta (stamp replaced by origin)."""
    assert not result.is_error, result.content
    got = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert got["content"] == upstream["content"]
    assert got["structuredContent"] == {"symbol": "ACME", "price": 1.5, "note": None} == upstream["structuredContent"]
    expected_meta = {k: v for k, v in upstream["_meta"].items() if k != SERVER_INFO_META}
    assert got["_meta"] == {**expected_meta, ORIGIN_META: "q"}
    assert RESULT_META.items() <= got["_meta"].items()


def check_listed(tool: dict[str, Any], upstream: dict[str, Any], name: str, description: str) -> None:
    assert tool == {**upstream, "name": name, "description": description}
    assert tool["title"] == "Stock quote"
    assert tool["_meta"] == TOOL_META
    assert tool["icons"] == [{"src": "https://example.com/quote.png", "mimeType": "image/png", "sizes": ["48x48"]}]
    assert tool["annotations"] == {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}
    assert tool["outputSchema"]["required"] == ["symbol", "price", "note"]


@pytest.mark.parametrize("era", ERAS)
async def test_load_result_carries_the_upstream_tool_entry_unchanged(era: str) -> None:
    listed, _ = await upstream_view()
    async with open_gateway({"q": quotes_upstream()}) as gw, client(gw, era) as c:
        loaded = check_structured("load", await c.call_tool("load", {"ids": ["q/quote"]}))
        [tool] = loaded["tools"]
        check_listed(tool, listed, "q/quote", "A quote for a symbol.")


@pytest.mark.parametrize("era", ERAS)
async def test_call_result_keeps_structured_content_and_meta(era: str) -> None:
    listed, upstream = await upstream_view()
    async with open_gateway({"q": quotes_upstream()}) as gw, client(gw, era) as c:
        check_structured("load", await c.call_tool("load", {"ids": ["q/quote"]}))
        result = await c.call_tool("call", {"tool": "q/quote", "arguments": {"symbol": "ACME"}})
        check_result(result, upstream)
        jsonschema.validate(result.structured_content, listed["outputSchema"])


async def test_injected_tool_is_listed_and_answers_as_the_upstream() -> None:
    listed, upstream = await upstream_view()
    async with open_gateway({"q": quotes_upstream()}) as gw, client(gw, "legacy") as c:
        check_structured("load", await c.call_tool("load", {"ids": ["q/quote"]}))
        [tool] = [t for t in (await c.list_tools()).tools if t.name == "q__quote"]
        dumped = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
        check_listed(dumped, listed, "q__quote", "[q] A quote for a symbol.")
        # the client checks structuredContent against the outputSchema listed for q__quote
        check_result(await c.call_tool("q__quote", {"symbol": "ACME"}), upstream)


@pytest.mark.parametrize("era", ERAS)
async def test_pinned_tool_is_listed_and_answers_as_the_upstream(era: str) -> None:
    listed, upstream = await upstream_view()
    async with open_gateway({"q": quotes_upstream()}, pinned=[("q", "quote")]) as gw, client(gw, era) as c:
        [tool] = [t for t in (await c.list_tools()).tools if t.name == "q__quote"]
        dumped = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
        check_listed(dumped, listed, "q__quote", "[q] A quote for a symbol.")
        check_result(await c.call_tool("q__quote", {"symbol": "ACME"}), upstream)
        check_result(await c.call_tool("call", {"tool": "q/quote", "arguments": {"symbol": "ACME"}}), upstream)
