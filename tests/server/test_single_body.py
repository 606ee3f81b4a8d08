"""A legacy request whose SSE stream carries only its response goes out as one JSON body (``_single_body``).

The wrapper is driven with a stand-in app that sends what the SDK's SSE response sends (a start
with ``text/event-stream``, a priming event, then events, then the end); what reaches the server
is recorded. The same over the wire, through the gateway, is in
``tests/gateway/test_gateway_http_protocol.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from skilldeck.serving._single_body import single_body_replies, sse_event

pytestmark = pytest.mark.anyio

SESSION = [(b"mcp-session-id", b"abc"), (b"content-type", b"application/json")]
SSE_START: Message = {
    "type": "http.response.start",
    "status": 200,
    "headers": [
        (b"cache-control", b"no-cache, no-transform"),
        (b"connection", b"keep-alive"),
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"mcp-session-id", b"abc"),
        (b"x-accel-buffering", b"no"),
    ],
}
PRIMING = b"id: 1-0\r\ndata: \r\nretry: 1000\r\n\r\n"
REPLY = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hi"}]}}
NOTE = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}


def event(message: dict[str, Any], event_id: str = "1-1") -> bytes:
    return f"id: {event_id}\r\nevent: message\r\ndata: {json.dumps(message, separators=(',', ':'))}\r\n\r\n".encode()


def body(chunk: bytes, more: bool = True) -> Message:
    return {"type": "http.response.body", "body": chunk, "more_body": more}


async def run(sent: list[Message], method: str = "POST", headers: list[tuple[bytes, bytes]] = SESSION) -> list[Message]:
    """What the server is handed when an app sends ``sent`` through the wrapper."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        for message in sent:
            await send(message)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    out: list[Message] = []

    async def send(message: Message) -> None:
        out.append(message)

    scope = {"type": "http", "method": method, "headers": headers}
    await single_body_replies(app)(scope, receive, send)
    return out


async def test_a_stream_with_only_its_response_goes_as_one_json_body() -> None:
    out = await run([SSE_START, body(PRIMING), body(event(REPLY)), body(b"", more=False)])
    assert len(out) == 2
    start, whole = out
    headers = dict(start["headers"])
    data = json.dumps(REPLY, separators=(",", ":")).encode()
    assert start["status"] == 200
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"content-length"] == str(len(data)).encode()
    assert headers[b"mcp-session-id"] == b"abc"  # the session's header kept
    assert b"x-accel-buffering" not in headers
    assert b"cache-control" not in headers
    assert whole == {"type": "http.response.body", "body": data, "more_body": False}


async def test_an_error_response_goes_as_one_body_too() -> None:
    error = {"jsonrpc": "2.0", "id": "x-1", "error": {"code": -32602, "message": "bad"}}
    out = await run([SSE_START, body(PRIMING), body(event(error)), body(b"", more=False)])
    assert json.loads(out[-1]["body"]) == error
    assert dict(out[0]["headers"])[b"content-type"] == b"application/json"


@pytest.mark.parametrize(
    "first",
    [
        event(NOTE),  # progress on the request's stream
        event({"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {}}),  # a question
        b": ping - 2026-12-02 00:00:00\r\n\r\n",  # the keep-alive after 15 s of silence
        b'event: message\r\ndata: {"jsonrpc":"2.0",',  # not one whole event
    ],
)
async def test_a_stream_that_carries_anything_else_first_stays_sse_byte_for_byte(first: bytes) -> None:
    sent = [SSE_START, body(PRIMING), body(first), body(event(REPLY, "1-2")), body(b"", more=False)]
    assert await run(sent) == sent


async def test_a_stream_ended_before_any_event_is_sent_as_it_was() -> None:
    sent = [SSE_START, body(PRIMING), body(b"", more=False)]  # close_sse_stream: the client resumes with GET
    assert await run(sent) == sent


async def test_what_is_held_goes_out_when_the_app_returns_without_ending_its_stream() -> None:
    sent = [SSE_START, body(PRIMING)]  # e.g. its task cancelled: the client sees what it saw before
    assert await run(sent) == sent


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("POST", [(b"content-type", b"application/json")]),  # initialize, or a 2026-07-28 request: no session
        ("GET", SESSION),  # a legacy session's own stream
    ],
)
async def test_only_a_sessions_posts_are_looked_at(method: str, headers: list[tuple[bytes, bytes]]) -> None:
    sent = [SSE_START, body(PRIMING), body(event(REPLY)), body(b"", more=False)]
    assert await run(sent, method, headers) == sent


async def test_a_json_reply_passes_untouched() -> None:
    start: Message = {"type": "http.response.start", "status": 202, "headers": [(b"content-type", b"application/json")]}
    sent = [start, body(b"", more=False)]
    assert await run(sent) == sent


def test_one_whole_event_is_read_as_its_name_and_data() -> None:
    assert sse_event(PRIMING) == (None, b"")
    assert sse_event(b"event: message\r\ndata: a\r\ndata: b\r\n\r\n") == (b"message", b"a\nb")
    assert sse_event(b"event: message\r\ndata: a\r\n") is None  # not ended
    assert sse_event(b": ping\r\n\r\n") is None  # a comment
    assert sse_event(b"event: message\r\nfoo: 1\r\n\r\n") is None  # a field it does not know
