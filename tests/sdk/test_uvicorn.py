"""Canaries of uvicorn and sse-starlette as the SDK serves with them, and of the SDK's listen streams: what
``serving/_shutdown.py`` and ``serving/_connections.py`` correct or rely on.

uvicorn's protocol runs in process on a socket pair, its server's signal handling in a child process; nothing
of skilldeck is in the path. A failure names the module to revisit and its entry in ``docs/sdk-workarounds.md``.
"""

from __future__ import annotations

import asyncio
import inspect
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import uvicorn
from mcp import Client
from mcp.server.subscriptions import ListenHandler
from sse_starlette import sse
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from .sdk_support import UVICORN_PROTOCOL_HOOKS, echo_server, revisit, settled

pytestmark = pytest.mark.anyio

SHUTDOWN = "serving/_shutdown.py"
CONNECTIONS = "serving/_connections.py"


class _Streaming:
    """An ASGI app whose response starts and then waits for whatever ``receive()`` says next."""

    def __init__(self) -> None:
        self.heard: list[dict[str, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await receive()  # the request's (empty) body
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        self.heard.append(dict(await receive()))


async def _answer(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@asynccontextmanager
async def _connection(app: Any) -> AsyncIterator[tuple[HttpToolsProtocol, socket.socket]]:
    """uvicorn's httptools protocol serving ``app`` on one end of a socket pair; the client's end."""
    config = uvicorn.Config(app, http="httptools", log_level="warning", lifespan="off")
    config.load()
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_accepted_socket(
        lambda: HttpToolsProtocol(config, ServerState(), app_state={}), ours
    )
    try:
        yield protocol, theirs
    finally:
        transport.close()
        theirs.close()
        await anyio.lowlevel.checkpoint()


async def _read(client: socket.socket) -> bytes:
    return await asyncio.get_running_loop().sock_recv(client, 65536)


# -- serving/_connections.py ---------------------------------------------------------------------------------


async def test_uvicorn_sets_no_timer_on_a_connection_until_it_has_answered_a_request() -> None:
    async with _connection(_answer) as (protocol, client):
        assert protocol in protocol.connections
        assert protocol.timeout_keep_alive_task is None, revisit(
            "its protocol: a connection that has sent nothing now has a timer (a request timeout?)",
            CONNECTIONS,
            "connections",
            who="uvicorn",
        )
        await asyncio.get_running_loop().sock_sendall(client, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        assert (await _read(client)).startswith(b"HTTP/1.1 200")
        assert await settled(lambda: protocol.timeout_keep_alive_task is not None), revisit(
            "its protocol: no keep-alive timer after an answer", CONNECTIONS, "connections", who="uvicorn"
        )


async def test_uvicorn_protocol_has_the_hooks_and_state_the_bounded_protocol_uses() -> None:
    for hook in UVICORN_PROTOCOL_HOOKS:
        assert callable(getattr(HttpToolsProtocol, hook, None)), revisit(
            f"HttpToolsProtocol.{hook}", CONNECTIONS, "connections", who="uvicorn"
        )
    async with _connection(_answer) as (protocol, client):
        await asyncio.get_running_loop().sock_sendall(client, b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        await _read(client)
        state = {
            "connections": isinstance(protocol.connections, set),
            "loop": protocol.loop is asyncio.get_running_loop(),
            "client": protocol.client is not None or protocol.client is None,
            "app": callable(protocol.app),
            "parser": hasattr(protocol.parser, "get_method"),
            "url": protocol.url == b"/healthz",
            "headers": (b"host", b"x") in protocol.headers,
            "cycle": hasattr(protocol.cycle, "keep_alive"),
            "transport": hasattr(protocol.transport, "is_closing"),
        }
    assert all(state.values()), revisit(
        f"the state of HttpToolsProtocol ({[k for k, ok in state.items() if not ok]})",
        CONNECTIONS,
        "connections",
        who="uvicorn",
    )


# -- serving/_shutdown.py ------------------------------------------------------------------------------------


def test_uvicorn_waits_for_every_connection_by_default() -> None:
    assert uvicorn.Config(_answer).timeout_graceful_shutdown is None, revisit(
        "its default graceful shutdown timeout (it no longer waits for every connection)",
        SHUTDOWN,
        "shutdown",
        who="uvicorn",
    )


async def test_uvicorn_shutting_a_connection_down_leaves_a_response_in_progress_running() -> None:
    app = _Streaming()
    async with _connection(app) as (protocol, client):
        await asyncio.get_running_loop().sock_sendall(client, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        assert b"first" in await _read(client)
        protocol.shutdown()  # what uvicorn's Server.shutdown does to each connection
        told = await settled(lambda: bool(app.heard), passes=200)
        state = (told, protocol.transport.is_closing(), protocol.cycle.disconnected)
        assert state == (False, False, False), revisit(
            f"what shutting a connection down does to a response in progress (the app heard {app.heard}; "
            f"closing: {protocol.transport.is_closing()})",
            SHUTDOWN,
            "shutdown",
            who="uvicorn",
        )


def test_uvicorn_server_has_what_the_graceful_server_overrides_and_reads() -> None:
    server = uvicorn.Server(uvicorn.Config(_answer))
    shutdown = list(inspect.signature(uvicorn.Server.shutdown).parameters)
    found = {
        "capture_signals": callable(getattr(server, "capture_signals", None)),
        "shutdown(sockets)": shutdown == ["self", "sockets"],
        "server_state.connections": isinstance(server.server_state.connections, set),
        "server_state.tasks": isinstance(server.server_state.tasks, set),
        "should_exit": server.should_exit is False,
        "force_exit": server.force_exit is False,
        "started": server.started is False,
        "lifespan (set at startup)": "self.lifespan =" in inspect.getsource(uvicorn.Server),
        "servers (set at startup)": "self.servers" in inspect.getsource(uvicorn.Server),
    }
    assert all(found.values()), revisit(
        f"uvicorn.Server ({[k for k, ok in found.items() if not ok]})", SHUTDOWN, "shutdown", who="uvicorn"
    )


def test_uvicorn_raises_a_signal_it_captured_again_once_it_has_served() -> None:
    script = textwrap.dedent(
        """
        import os, signal, sys
        import uvicorn
        import mcp.server.streamable_http  # imports sse-starlette, which patches uvicorn's handle_exit
        server = uvicorn.Server(uvicorn.Config(lambda *a: None))
        with server.capture_signals():
            os.kill(os.getpid(), signal.SIGTERM)
        print("returned normally")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (-signal.SIGTERM, ""), revisit(
        f"what capture_signals does after a SIGTERM (exit {done.returncode}, {done.stdout!r} {done.stderr[-300:]!r})",
        SHUTDOWN,
        "shutdown",
        who="uvicorn",
    )


def test_sse_starlette_finds_a_server_through_a_bound_sigterm_handler_and_only_so() -> None:
    assert threading.current_thread() is threading.main_thread()  # signal handlers are set in the main thread
    server = uvicorn.Server(uvicorn.Config(_answer))

    def plain(signum: int, frame: object) -> None:
        """A handler that is no method of a server (the graceful server's)."""

    before = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, server.handle_exit)
        found = sse._get_uvicorn_server()
        signal.signal(signal.SIGTERM, plain)
        unseen = sse._get_uvicorn_server()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert (found, unseen) == (server, None), revisit(
        "how it finds the uvicorn server whose should_exit cancels every SSE response (the graceful server's "
        "plain handler hides it no longer, or the lookup moved)",
        SHUTDOWN,
        "shutdown",
        who="sse-starlette",
    )


async def test_closing_the_listen_handler_ends_each_listen_stream_gracefully() -> None:
    server = echo_server()
    entry = server._lowlevel_server.get_request_handler("subscriptions/listen")
    assert isinstance(getattr(entry, "handler", None), ListenHandler), revisit(
        "where MCPServer's listen handler is (not the low-level server's subscriptions/listen entry)",
        SHUTDOWN,
        "shutdown",
    )
    handler = entry.handler
    ended_gracefully = False
    async with Client(server, cache=None) as client, client.listen(tools_list_changed=True) as stream:
        assert len(handler._streams) == 1, revisit(
            f"ListenHandler._streams (holds {handler._streams!r} for one open stream)", SHUTDOWN, "shutdown"
        )
        handler.close()
        with anyio.fail_after(60):  # a safety net: the stream ends as soon as its result is sent
            async for _ in stream:
                pass
        ended_gracefully = True
    assert ended_gracefully, revisit("ListenHandler.close", SHUTDOWN, "shutdown")
