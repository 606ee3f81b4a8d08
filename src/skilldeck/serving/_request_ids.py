"""A legacy (2025-11-25) request whose ``id`` is not a string or an integer is answered ``-32600``, not dropped.

JSON-RPC allows a request id to be a string or a number (MCP: a string or an integer, never
``null``); anything else makes the message an invalid request, which the server must answer with
an error whose ``id`` is ``null``. The SDK's 2026-07-28 path does; its legacy session transport
reads such a message as a notification, answers ``202 Accepted`` and never replies, so the
client waits out its own timeout. :func:`answer_invalid_ids` puts that right in front of the SDK,
for POSTs that name a session (every legacy request after ``initialize``).

Cost: the body is looked at as bytes first; only a body where some ``"id":`` is followed by
something other than a string or an integer is parsed, so an ordinary request is not decoded twice.

A stop-gap for the SDK: ``docs/sdk-workarounds.md#request-ids`` says what it corrects and what
change to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it relies on.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp_types import INVALID_REQUEST
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["INVALID_ID_MESSAGE", "answer_invalid_ids", "has_invalid_id"]

INVALID_ID_MESSAGE = "Invalid request: a JSON-RPC id is a string or an integer"
"""What a request with an id of another type is told (HTTP 400, JSON-RPC ``-32600``, ``id: null``)."""

_ANY_ID = re.compile(rb'"id"\s*:')
_PLAIN_ID = re.compile(rb'"id"\s*:\s*(?:"|-?\d+\s*[,}])')


def has_invalid_id(body: bytes) -> bool:
    """Whether ``body`` is one JSON-RPC request or response whose ``id`` is neither a string nor an integer.

    An error response with ``id: null`` is valid (a peer answering a message it could not read).
    """
    if len(_ANY_ID.findall(body)) == len(_PLAIN_ID.findall(body)):
        return False  # every "id": in the body is followed by a string or an integer
    try:
        message: Any = json.loads(body)
    except ValueError:
        return False  # not JSON: the SDK answers that itself
    if not isinstance(message, dict) or "id" not in message:
        return False
    value = message["id"]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return False
    return not (value is None and "error" in message)


def answer_invalid_ids(app: ASGIApp) -> ASGIApp:
    """``app``, answering a session's POST whose message has an invalid ``id`` with ``-32600`` (see the module docs)."""
    header = MCP_SESSION_ID_HEADER.lower().encode("latin-1")

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not any(k == header for k, _ in scope["headers"]):
            await app(scope, receive, send)
            return
        body = bytearray()
        last: Message = {"type": "http.request", "body": b"", "more_body": False}
        while True:
            last = await receive()
            if last["type"] != "http.request":
                break  # the client left mid-body: the SDK hears it as it would have
            body += last.get("body", b"")
            if not last.get("more_body", False):
                break
        whole = bytes(body)
        if last["type"] == "http.request" and has_invalid_id(whole):
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": INVALID_ID_MESSAGE}}
            await JSONResponse(error, status_code=400)(scope, receive, send)
            return
        pending: list[Message] = [{"type": "http.request", "body": whole, "more_body": False}]
        if last["type"] != "http.request":
            pending.append(last)

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        await app(scope, replay, send)

    return answer
