"""Hostile streamable HTTP servers on loopback: a real ``MCPServer`` whose answer to one method is replaced.

:func:`hostile_app` wraps the SDK's streamable HTTP app of a :class:`~tests.host.hostile.HostileServer`
(or any ``MCPServer``): the handshake and every other request are answered by the real server, and a
POST calling ``method`` gets whatever ``answer`` sends instead — an endless JSON body, an endless
SSE event, bytes that are not JSON. :func:`serving_in_thread` runs an ASGI app with uvicorn in a thread
of its own (an endless sender in the test's own event loop would compete with the host under test
for that loop), which also suits tests that call the CLI's ``main``.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.lowlevel
import uvicorn
from mcp.server.mcpserver import MCPServer

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Answer = Callable[[Any, Receive, Send], Awaitable[None]]
"""Answers one intercepted request: called with its JSON-RPC id, the ASGI ``receive`` and ``send``."""

CHUNK = 64 * 1024
SAFETY_STOP = 4 * 1024 * 1024 * 1024
"""An endless body stops here in any case (a host without a limit would otherwise never finish)."""


def hostile_app(server: MCPServer[Any], method: str, answer: Answer) -> App:
    inner = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        body = await read_body(receive)
        request = json.loads(body)
        if isinstance(request, dict) and request.get("method") == method:
            await answer(request.get("id"), receive, send)
            return
        await inner(scope, replaying(body, receive), send)

    return app


async def read_body(receive: Receive) -> bytes:
    """The whole body of the request ``receive`` belongs to."""
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app ``body`` (read already) first, then what ``receive`` brings."""
    replayed = False

    async def replay() -> dict[str, Any]:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _start(send: Send, content_type: bytes) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", content_type)]})


async def _endless(receive: Receive, send: Send, head: bytes, chunk: bytes) -> None:
    """Send ``head`` then ``chunk`` over and over, until the client goes away."""
    gone = anyio.Event()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        sent = len(head)
        await send({"type": "http.response.body", "body": head, "more_body": True})
        while not gone.is_set() and sent < SAFETY_STOP:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            sent += len(chunk)
            await anyio.lowlevel.checkpoint()  # a send to a gone client may not yield
        tg.cancel_scope.cancel()


def _result_head(request_id: Any) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":{"skills":[],"x":"'


async def endless_json(request_id: Any, receive: Receive, send: Send) -> None:
    """A JSON response body that never ends: one string value, chunked forever."""
    await _start(send, b"application/json")
    await _endless(receive, send, _result_head(request_id), b"a" * CHUNK)


async def endless_sse_event(request_id: Any, receive: Receive, send: Send) -> None:
    """An SSE response whose first event never ends: one ``data:`` line that goes on forever."""
    await _start(send, b"text/event-stream")
    await _endless(receive, send, b"event: message\ndata: " + _result_head(request_id), b"a" * CHUNK)


async def endless_sse_lines(request_id: Any, receive: Receive, send: Send) -> None:
    """An SSE event made of ``data:`` lines that never reaches its blank line."""
    await _start(send, b"text/event-stream")
    await _endless(receive, send, b"event: message\n", b"data: " + b"a" * (CHUNK - 7) + b"\n")


async def not_json(request_id: Any, receive: Receive, send: Send) -> None:
    await _start(send, b"application/json")
    await send({"type": "http.response.body", "body": b"{not json"})


async def not_utf8(request_id: Any, receive: Receive, send: Send) -> None:
    await _start(send, b"application/json")
    await send({"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":\xff\xfe}'})


def _config(app: App) -> uvicorn.Config:
    return uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
    )


def _url(server: uvicorn.Server, path: str) -> str:
    port = server.servers[0].sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


@contextmanager
def serving_in_thread(app: App, path: str = "/mcp", sock: socket.socket | None = None) -> Iterator[str]:
    """``app`` on a free loopback port (or on ``sock``, bound already) for the block, in a thread of its own;
    yields the URL."""
    server = uvicorn.Server(_config(app))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock] if sock else None}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            thread.join(0.02)
        assert server.started, "the test server did not start"
        yield _url(server, path)
    finally:
        server.should_exit = True
        thread.join(10)
