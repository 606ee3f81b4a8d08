"""Part 3 of ``skilldeck demo``: the same loop through ``skilldeck gateway``, as any MCP client sees it.

The three demo servers are fronted by the gateway (in-process); a real SDK client in each protocol
era lists the gateway's tools (four meta-tools instead of every schema), finds a skill for the
question, loads it (verified instructions and exactly its tool's schema), calls that tool, and has
a call of a tool it never loaded refused — nothing of it reaches the upstream. On the 2025-11-25
session the loaded tool is injected into ``tools/list`` and announced with ``list_changed``.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import Client
from rich.console import Console
from rich.markup import escape

from skilldeck.select import CatalogSnapshot, build_cards
from skilldeck.select._api import count_tokens
from skilldeck.select._api import history_a as history_a_of

__all__ = ["gateway_tour"]

QUESTION = "Find senior Java roles in Costa Rica"


async def gateway_tour(console: Console, at_scale: CatalogSnapshot) -> None:
    """Run the gateway over the demo servers and drive it with a real client in both eras.

    ``at_scale`` is the catalog the gateway's list is compared with (LiveMCPBench's in the demo).
    """
    from skilldeck.demo._servers import demo_servers
    from skilldeck.gateway import GatewayService, create_gateway
    from skilldeck.host import Host, InProcessServer, ServerSpec
    from skilldeck.serving._api import Caller

    console.rule("[bold]3. The gateway: one MCP server in front of many, for any MCP client")
    specs = [ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()]
    async with Host(specs) as host:
        service = GatewayService(host)
        server, _ = create_gateway(service)
        history_a = service.history_a_tokens(Caller())  # the measure the decision log records, as the demo's part 1
        scale_tokens = history_a_of(build_cards(at_scale)).tokens
        for mode in ("auto", "legacy"):
            changed = anyio.Event()

            async def on_message(message: Any, _event: anyio.Event = changed) -> None:
                if getattr(message, "method", None) == "notifications/tools/list_changed":
                    _event.set()

            async with Client(server, mode=mode, cache=None, message_handler=on_message) as client:
                console.rule(f"{client.protocol_version} session")
                listed = await client.list_tools()
                names = [t.name for t in listed.tools]
                start = count_tokens(
                    json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools])
                )
                console.print(
                    f"tools/list: {names} — {start:,} tokens, whatever the catalog size; History A (every schema "
                    f"as OpenAI tools) of these {len(specs)} servers is {history_a:,} tokens, of LiveMCPBench's "
                    f"{len(at_scale.servers)} servers {scale_tokens:,} ({scale_tokens / start:.0f}x the gateway's list)",
                    highlight=False,
                )
                found = (await client.call_tool("find", {"query": QUESTION})).structured_content or {}
                top = found["cards"][0]
                console.print(
                    f"find {QUESTION!r} → {top['id']} ({top['kind']}, confidence {found['confidence']:.2f})",
                    highlight=False,
                )
                loaded = (await client.call_tool("load", {"ids": [top["id"]]})).structured_content or {}
                skill = loaded["skills"][0] if loaded["skills"] else None
                tools = [t["name"] for t in loaded["tools"]]
                console.print(
                    f"load → {skill['uri'] if skill else 'no skill'} (verified: {skill['verified'] if skill else '—'}), "
                    f"tools now active: {tools}",
                    highlight=False,
                )
                if mode == "legacy":
                    with anyio.move_on_after(2):
                        await changed.wait()
                    after = [t.name for t in (await client.list_tools()).tools]
                    console.print(
                        f"notifications/tools/list_changed received: {changed.is_set()}; tools/list now: {after}",
                        highlight=False,
                    )
                call = await client.call_tool(
                    "call",
                    {"tool": tools[0], "arguments": {"query": "Java", "location": "Costa Rica", "seniority": "senior"}},
                )
                first = call.content[0].text if call.content and hasattr(call.content[0], "text") else ""
                console.print(f"call {tools[0]} → isError={call.is_error}: {escape(first[:120])}…", highlight=False)
                refused = await client.call_tool("call", {"tool": "tracker/close_issue", "arguments": {"issue_id": 1}})
                text = refused.content[0].text if refused.content and hasattr(refused.content[0], "text") else ""
                console.print(
                    f"call tracker/close_issue (never loaded) → isError={refused.is_error}: {escape(text)}",
                    highlight=False,
                )
    console.print("[green]done[/]: the same History B loop, served to any MCP client by `skilldeck gateway`.")
