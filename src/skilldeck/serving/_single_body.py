"""A legacy (2025-11-25) request whose SSE stream carries nothing but its response is answered with one JSON body.

The SDK's legacy session transport answers request POSTs either all with SSE streams or all with
one JSON body each (``json_response``, for the whole app); it cannot choose per response. A server
whose handlers may send something during a request (the gateway relays an upstream's progress, log
messages and questions on the stream of the call they belong to) must keep SSE, yet most of its
requests send nothing but their response, and for those the stream is pure overhead: a priming
event, chunked encoding and four writes where one would do, and SSE parsing in the client.

:func:`single_body_replies` sits in front of the app (``run_http(json_when_silent=True)``, what the
gateway runs), for POSTs that name a session (every legacy request after ``initialize``). When the response is an SSE stream it holds the stream's start
(status and headers) and its priming event (event id, ``retry``) until the stream shows what it
carries:

* a JSON-RPC response (the request's own: the SDK routes nothing else there as a response): the
  reply is that response as one ``application/json`` body with a ``Content-Length``, the other
  headers as the stream had them (``Mcp-Session-Id`` included); the stream's end is not sent;
* anything else (a notification, a request to the client, a keep-alive comment: ``sse_starlette``
  pings after 15 s of silence, a stream closed early by ``close_sse_stream``): everything held is
  sent as it was, and the stream goes on as SSE, unchanged.

The 2026-07-28 path in the SDK makes the same choice itself (it commits to SSE only once a handler
sends something, or its keep-alive is due), so a client of either era sees the same behaviour.
What a held stream changes: its headers leave with its first event rather than at once (at most
one ping interval later), and a client that loses the connection before the response cannot
resume a stream whose priming event it never saw (it has not seen any event, so nothing is lost
that a retry would not redo). The events are stored for resumption as before.

Cost: one look at each held chunk (a few bytes of field names and a prefix match on the data);
a response already in JSON, and every message after the choice, is passed on untouched. What it
saves is on the wire (one write of one body instead of four chunked writes, and the client's SSE
parsing); the SDK still runs its SSE machinery for the request (its task group, memory streams and
``sse_starlette`` tasks), which only a choice inside the SDK's transport could skip.

A stop-gap for the SDK: ``docs/sdk-workarounds.md#single-body`` says what it corrects and what
change to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it relies on.
"""

from __future__ import annotations

import re
from typing import Final

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["single_body_replies", "sse_event"]

_SEP: Final = b"\r\n"  # what sse_starlette (the SDK's SSE response) ends each line with
_REPLY: Final = re.compile(rb'\{"jsonrpc":"2\.0","id":(?:-?\d+|"(?:[^"\\]|\\.)*"),"(?:result|error)":')
"""The start of a JSON-RPC response as the SDK serializes one: jsonrpc, id, then result or error."""
_DROPPED_HEADERS: Final = frozenset({b"content-type", b"content-length", b"cache-control", b"x-accel-buffering"})


def single_body_replies(app: ASGIApp) -> ASGIApp:
    """``app``, answering a session's POST whose SSE stream carries only its response with one JSON body."""
    header = MCP_SESSION_ID_HEADER.lower().encode("latin-1")

    async def reply(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not any(k == header for k, _ in scope["headers"]):
            await app(scope, receive, send)
            return
        stream = _HeldStream(send)
        await app(scope, receive, stream.send)
        await stream.release()

    return reply


def sse_event(chunk: bytes) -> tuple[bytes | None, bytes] | None:
    """The event name and data of ``chunk`` when it is exactly one whole SSE event; else None.

    A comment line (a keep-alive ping) or a field other than ``event``, ``data``, ``id`` and
    ``retry`` makes it None too. Data lines are joined with ``\\n``, as a client joins them.
    """
    if not chunk.endswith(_SEP + _SEP):
        return None
    name: bytes | None = None
    data: list[bytes] = []
    for line in chunk[: -2 * len(_SEP)].split(_SEP):
        field, colon, value = line.partition(b":")
        if not colon:
            return None
        value = value.removeprefix(b" ")
        if field == b"event":
            name = value
        elif field == b"data":
            data.append(value)
        elif field not in (b"id", b"retry"):
            return None  # b"" is a comment
    return name, b"\n".join(data)


class _HeldStream:
    """One POST's reply on its way out: held while its SSE stream has shown only its priming event."""

    __slots__ = ("_done", "_held", "_passing", "_send")

    def __init__(self, send: Send) -> None:
        self._send = send
        self._held: list[Message] = []
        self._passing = False
        self._done = False

    async def send(self, message: Message) -> None:
        if self._passing:
            await self._send(message)
            return
        if self._done:
            return  # the rest of a stream whose response went out as one body: its end
        if message["type"] == "http.response.start" and not self._held and _is_sse(message):
            self._held.append(message)
            return
        if self._held and message["type"] == "http.response.body" and message.get("more_body", False):
            event = sse_event(message.get("body", b""))
            if event is not None:
                name, data = event
                if name is None and not data:  # the priming event: an id (and retry), no data
                    self._held.append(message)
                    return
                if name == b"message" and _REPLY.match(data):
                    self._done = True
                    start, self._held = self._held[0], []
                    await self._send(_json_start(start, len(data)))
                    await self._send({"type": "http.response.body", "body": data, "more_body": False})
                    return
        await self.release()
        await self._send(message)

    async def release(self) -> None:
        """Send what is held, as it was, and pass everything after it on (also when the app returns holding it)."""
        self._passing = True
        held, self._held = self._held, []
        for earlier in held:
            await self._send(earlier)


def _is_sse(start: Message) -> bool:
    return any(k.lower() == b"content-type" and v.startswith(b"text/event-stream") for k, v in start["headers"])


def _json_start(start: Message, length: int) -> Message:
    headers = [(k, v) for k, v in start["headers"] if k.lower() not in _DROPPED_HEADERS]
    headers += [(b"content-type", b"application/json"), (b"content-length", str(length).encode("ascii"))]
    return {**start, "headers": headers}
