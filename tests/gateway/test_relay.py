"""What an upstream does while serving a proxied call reaches the client that made it, and only that one.

Upstreams are real in-process ``MCPServer`` instances whose tools report progress or wait until
they are cancelled (and record that they saw it); clients are the official Python SDK client in
both protocol eras. Issue 15, item 1 (progress, cancellation, log messages).
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer

from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.host import Host, HttpServer, ServerSpec

from ..host.hostile_http import serving_in_thread
from .gateway_clients_support import client, open_gateway
from .relay_upstream import hold_until_cancelled

pytestmark = [
    pytest.mark.anyio,
    # notifications/message is deprecated as of 2026-07-28; these tests exercise it on purpose
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

ERAS = ["modern", "legacy"]


class SlowUpstream:
    """``slow``: ``work`` reports progress step by step; ``wait`` runs until it is cancelled."""

    def __init__(self) -> None:
        self.server: MCPServer[Any] = MCPServer("slow")
        self.started = anyio.Event()
        self.cancelled = anyio.Event()

        @self.server.tool()
        async def work(steps: int, ctx: Context) -> str:
            """Do some steps, reporting progress after each."""
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}")
            return f"did {steps} steps"

        @self.server.tool()
        async def wait(ctx: Context) -> str:
            """Wait until cancelled."""
            self.started.set()
            await hold_until_cancelled(self.cancelled)

        self.holding = 0
        self.all_holding = anyio.Event()

        @self.server.tool()
        async def chatty(ctx: Context) -> str:
            """Log at two levels."""
            await ctx.log("debug", "chatty: detail")
            await ctx.log("info", "chatty: working", logger_name="slow")
            return "said it"

        @self.server.tool()
        async def hold(tag: str, ctx: Context) -> str:
            """Wait until two calls hold, then log the tag."""
            self.holding += 1
            if self.holding == 2:
                self.all_holding.set()
            await self.all_holding.wait()
            await ctx.log("info", f"hold: {tag}")
            return tag


Progress = list[tuple[float, float | None, str | None]]


def recorder(into: Progress) -> Any:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        into.append((progress, total, message))

    return on_progress


def notification_recorder(into: list[str]) -> Any:
    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if isinstance(method, str):
            into.append(method)

    return on_message


EXPECTED: Progress = [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


@pytest.mark.parametrize("era", ERAS)
async def test_progress_of_a_pinned_tool_reaches_the_caller_with_its_token(era: str) -> None:
    slow = SlowUpstream()
    async with open_gateway({"slow": slow.server}, pinned=[("slow", "work")]) as gw:
        other_seen: list[str] = []
        async with client(gw, era) as c, client(gw, era, message_handler=notification_recorder(other_seen)) as other:
            await other.list_tools()
            got: Progress = []
            result = await c.call_tool("slow__work", {"steps": 3}, progress_callback=recorder(got))
            assert not result.is_error, result
            assert got == EXPECTED
            # without a progress token, the call still works and nothing is relayed anywhere
            result = await c.call_tool("slow__work", {"steps": 2})
            assert not result.is_error, result
        assert "notifications/progress" not in other_seen, other_seen


@pytest.mark.parametrize("era", ERAS)
async def test_progress_of_the_call_meta_tool_reaches_only_the_caller(era: str) -> None:
    slow = SlowUpstream()
    async with open_gateway({"slow": slow.server}) as gw:
        other_seen: list[str] = []
        async with client(gw, era) as c, client(gw, era, message_handler=notification_recorder(other_seen)) as other:
            other_got: Progress = []
            for who in (c, other):
                loaded = await who.call_tool("load", {"ids": ["slow/work"]})
                assert not loaded.is_error, loaded
            got: Progress = []
            result = await c.call_tool(
                "call", {"tool": "slow/work", "arguments": {"steps": 3}}, progress_callback=recorder(got)
            )
            assert not result.is_error, result
            assert got == EXPECTED
            assert "notifications/progress" not in other_seen, other_seen
            # the other client's own call gets its own progress, and the first client's count is unchanged
            result = await other.call_tool(
                "call", {"tool": "slow/work", "arguments": {"steps": 1}}, progress_callback=recorder(other_got)
            )
            assert not result.is_error, result
            assert other_got == [(1.0, 1.0, "step 1")]
            assert got == EXPECTED


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("via", ["call", "pinned"])
async def test_a_cancelled_call_is_cancelled_upstream(era: str, via: str) -> None:
    slow = SlowUpstream()
    async with open_gateway({"slow": slow.server}, pinned=[("slow", "wait")]) as gw, client(gw, era) as c:
        if via == "call":
            assert not (await c.call_tool("load", {"ids": ["slow/wait"]})).is_error
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:

                async def calling() -> None:
                    if via == "call":
                        await c.call_tool("call", {"tool": "slow/wait", "arguments": {}})
                    else:
                        await c.call_tool("slow__wait", {})

                tg.start_soon(calling)
                await slow.started.wait()
                tg.cancel_scope.cancel()
            await slow.cancelled.wait()  # the upstream handler saw the cancellation
        # the gateway and the upstream session still serve calls afterwards
        assert not (await c.call_tool("find", {"query": "wait"})).is_error


def log_recorder(into: list[tuple[str, Any]]) -> Any:
    async def on_log(params: Any) -> None:
        into.append((params.level, params.data))

    return on_log


@pytest.mark.parametrize("era", ERAS)
async def test_log_messages_during_a_call_reach_only_the_caller(era: str) -> None:
    slow = SlowUpstream()
    mine: list[tuple[str, Any]] = []
    theirs: list[tuple[str, Any]] = []
    async with (
        open_gateway({"slow": slow.server}, pinned=[("slow", "chatty")]) as gw,
        client(gw, era, logging_callback=log_recorder(mine), log_level="info") as c,
        client(gw, era, logging_callback=log_recorder(theirs), log_level="info") as other,
    ):
        await other.list_tools()
        result = await c.call_tool("slow__chatty", {})
        assert not result.is_error, result
        assert ("info", "chatty: working") in mine, mine
        if era == "modern":  # the request opted in at info: debug is not delivered
            assert mine == [("info", "chatty: working")], mine
        else:  # a 2025-11-25 session hears every level, as from any server of its era
            assert mine == [("debug", "chatty: detail"), ("info", "chatty: working")], mine
        assert theirs == []


async def test_a_modern_call_that_did_not_opt_in_gets_no_log_messages() -> None:
    slow = SlowUpstream()
    heard: list[tuple[str, Any]] = []
    async with (
        open_gateway({"slow": slow.server}, pinned=[("slow", "chatty")]) as gw,
        client(gw, "modern", logging_callback=log_recorder(heard)) as c,
    ):
        assert not (await c.call_tool("slow__chatty", {})).is_error
        assert heard == []


@pytest.mark.parametrize("era", ERAS)
async def test_log_messages_of_concurrent_calls_reach_each_caller_only(era: str) -> None:
    """Two calls wait on one in-process upstream: each log message arrives in the task serving its call,
    so each caller hears its own and not the other's (over stdio, neither would: see test_relay_requests)."""
    slow = SlowUpstream()
    heard: dict[str, list[tuple[str, Any]]] = {"a": [], "b": []}
    async with (
        open_gateway({"slow": slow.server}, pinned=[("slow", "hold")]) as gw,
        client(gw, era, logging_callback=log_recorder(heard["a"]), log_level="info") as a,
        client(gw, era, logging_callback=log_recorder(heard["b"]), log_level="info") as b,
    ):
        results: dict[str, Any] = {}

        async def calling(tag: str, c: Any) -> None:
            results[tag] = await c.call_tool("slow__hold", {"tag": tag})

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(calling, "a", a)
                tg.start_soon(calling, "b", b)
        assert not results["a"].is_error
        assert not results["b"].is_error
        assert heard == {"a": [("info", "hold: a")], "b": [("info", "hold: b")]}


class HttpUpstream:
    """``work``, ``wait`` and ``chatty`` of :class:`SlowUpstream`, served over streamable HTTP from a thread."""

    def __init__(self) -> None:
        self.server: MCPServer[Any] = MCPServer("slow")
        self.started = threading.Event()
        self.cancelled = threading.Event()

        @self.server.tool()
        async def work(steps: int, ctx: Context) -> str:
            """Do some steps, reporting progress after each."""
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}")
            return f"did {steps} steps"

        @self.server.tool()
        async def wait(ctx: Context) -> str:
            """Wait until cancelled."""
            self.started.set()
            await hold_until_cancelled(self.cancelled)

        @self.server.tool()
        async def chatty(ctx: Context) -> str:
            """Log at info."""
            await ctx.log("info", "chatty: working")
            return "said it"


@pytest.mark.parametrize("era", ERAS)
async def test_relay_over_an_http_upstream(era: str) -> None:
    """The same relays when the upstream is across the wire (progress tokens, notifications/cancelled)."""
    upstream = HttpUpstream()
    app = upstream.server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    pins = [("slow", "work"), ("slow", "wait"), ("slow", "chatty")]
    heard: list[tuple[str, Any]] = []
    with serving_in_thread(app) as url:
        async with Host([ServerSpec("slow", HttpServer(url), timeout=10)]) as host:
            server, _ = create_gateway(GatewayService(host, pinned=pins))
            async with Client(
                server,
                mode="auto" if era == "modern" else "legacy",
                cache=None,
                logging_callback=log_recorder(heard),
                log_level="info",
            ) as c:
                got: Progress = []
                result = await c.call_tool("slow__work", {"steps": 3}, progress_callback=recorder(got))
                assert not result.is_error, result
                assert got == EXPECTED
                assert not (await c.call_tool("slow__chatty", {})).is_error
                assert heard == [("info", "chatty: working")]
                with anyio.fail_after(20):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(c.call_tool, "slow__wait", {})
                        assert await anyio.to_thread.run_sync(upstream.started.wait, 10)
                        tg.cancel_scope.cancel()
                assert await anyio.to_thread.run_sync(upstream.cancelled.wait, 10)
