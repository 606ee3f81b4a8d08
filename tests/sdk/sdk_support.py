"""What the canaries of ``tests/sdk`` share: the failure message naming the stop-gap to revisit, the SDK's own
streamable HTTP app driven in process with raw ASGI messages, and uvicorn's protocol hooks the server overrides.

A canary runs the SDK (or uvicorn, Starlette, sse-starlette and httpx2 as the SDK uses them) with nothing of
skilldeck in the path, and pins the bare behaviour one of skilldeck's stop-gaps corrects or relies on; when an
``mcp`` upgrade changes that behaviour, the canary that fails says which module to look at again and where
``docs/sdk-workarounds.md`` explains it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Message

DOC = "docs/sdk-workarounds.md"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
POST = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
"""The headers of a raw streamable HTTP POST."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "canary", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
UVICORN_PROTOCOL_HOOKS = (
    "connection_made",
    "on_message_begin",
    "on_headers_complete",
    "on_message_complete",
    "on_response_complete",
    "connection_lost",
)
"""The hooks of uvicorn's httptools protocol ``serving/_connections.py`` overrides."""


def revisit(changed: str, module: str, anchor: str, who: str = "the SDK") -> str:
    """A canary's failure message: what changed under a stop-gap, the module to look at again, and its doc entry."""
    return f"{who} changed {changed}; revisit {module} ({DOC}#{anchor})"


@dataclass
class Reply:
    """What the app sent for one request: its status, headers (names in lower case) and body chunks."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


async def asgi_request(
    app: ASGIApp,
    method: str,
    headers: dict[str, str],
    body: bytes = b"",
    *,
    leave_after: int | None = None,
    until: Callable[[Reply], bool] | None = None,
) -> Reply:
    """One HTTP request through ``app`` in process, as uvicorn would hand it over.

    ``leave_after``: the client sends that many bytes of ``body`` (announcing more), then hangs up.
    ``until``: for a response that does not end by itself (a GET stream), the client hangs up once it holds
    true of what arrived; otherwise the client waits for the app to return.
    """
    reply = Reply()
    done = anyio.Event()
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            if leave_after is not None:
                return {"type": "http.request", "body": body[:leave_after], "more_body": True}
            return {"type": "http.request", "body": body, "more_body": False}
        if leave_after is None:
            await done.wait()  # the client stays until the answer is over
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            reply.status = int(message["status"])
            reply.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            reply.chunks.append(message.get("body", b""))
            if until is not None and until(reply):
                done.set()

    raw_headers = [(b"host", b"127.0.0.1:8000"), *((k.lower().encode(), v.encode()) for k, v in headers.items())]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": raw_headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            try:
                await app(scope, receive, send)
            finally:
                done.set()

        tg.start_soon(run)
        await done.wait()
        if until is not None:
            tg.cancel_scope.cancel()  # the client hangs up on a stream that would go on
    return reply


def echo_server(name: str = "bare") -> MCPServer[Any]:
    """A bare SDK server with one tool, ``echo``."""
    server: MCPServer[Any] = MCPServer(name)

    @server.tool()
    def echo(text: str) -> str:
        """Return ``text`` unchanged."""
        return text

    return server


@asynccontextmanager
async def serving(server: MCPServer[Any], **options: Any) -> AsyncIterator[ASGIApp]:
    """``server``'s own streamable HTTP app at ``/mcp`` (``options`` as ``streamable_http_app`` takes them), its
    session manager running for the block."""
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1", **options)
    async with server.session_manager.run():
        yield app


async def open_legacy_session(app: ASGIApp) -> dict[str, str]:
    """Open a 2025-11-25 session on ``app`` (``initialize``, then ``notifications/initialized``): the headers of
    its later requests."""
    opened = await asgi_request(app, "POST", POST, json.dumps(INITIALIZE).encode())
    assert opened.status == 200, opened
    headers = {**POST, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
    acknowledged = await asgi_request(app, "POST", headers, json.dumps(INITIALIZED).encode())
    assert acknowledged.status == 202, acknowledged
    return headers


def sse_events(reply: Reply) -> list[dict[str, str]]:
    """The SSE events of ``reply``, each as its fields (``id``, ``event``, ``data``, ``retry``)."""
    events = []
    for block in reply.body.decode().replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, colon, value = line.partition(":")
            if colon and name:
                fields[name] = value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


async def settled(condition: Callable[[], bool], passes: int = 10_000) -> bool:
    """Whether ``condition`` holds within ``passes`` turns of the event loop (counted, not timed)."""
    for _ in range(passes):
        if condition():
            return True
        await anyio.lowlevel.checkpoint()
    return condition()
