"""A request to an HTTP server whose connection breaks fails that request alone, not the session.

The SDK's streamable HTTP transport (``mcp`` 2.3, ``mcp.client.streamable_http``) sends each
request's POST in a task of the transport's own task group (``post_writer`` starts
``_run_request_post``), and catches only what goes wrong with an answer it already holds. An HTTP
error raised by ``client.send`` in ``_handle_post_request`` (the connection reset or closed before the
answer's head arrived, a read or write timeout, no free connection in the pool) or while a JSON body
is read (``_handle_json_response`` catches ``httpx2.StreamError``, not ``httpx2.TransportError``)
escapes that task and ends the group, and with it the session: every other request in flight on it
fails with "Connection closed". Under heavy load one reset POST cost the gateway every call in
flight through that upstream.

Our HTTP client for a server contains it: :class:`RequestScopedClient` answers a POST whose
connection broke with a JSON-RPC error for the request it carried (the SDK hands it to that request's
caller alone), or with ``202 Accepted`` for a notification or response, which has no caller; and a
JSON answer whose body breaks off fails as a read error of that answer (:class:`AnswerBroke`), which
the SDK turns into an error for that request. Nothing is sent again: a request the connection broke
under may have reached the server and run, so its caller is told that and decides.

A connection that cannot be opened (``ConnectError``, ``ConnectTimeout``) still ends the session:
the server is unreachable, which is how a supervised server that stopped is noticed and connected
again. (The fix in the SDK would be for ``_run_request_post`` to catch ``httpx2.TransportError`` from
the POST and resolve that request with ``_resolve_abandoned_request``, as it does for an SSE answer
that ends early.)

A stop-gap for the SDK: ``docs/sdk-workarounds.md#broken-request`` says what it corrects and what
change to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it relies on.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx2
from mcp_types import CONNECTION_CLOSED

__all__ = ["AnswerBroke", "RequestScopedClient", "broke_reason", "broken_answer_said", "tell_broken"]

logger = logging.getLogger(__name__)

BROKE = "the connection broke before the answer arrived"
"""How every reason of this module starts, so the error the SDK wraps around it can be told apart."""

MID_REQUEST_ERRORS: tuple[type[httpx2.TransportError], ...] = (
    httpx2.ReadError,
    httpx2.WriteError,
    httpx2.RemoteProtocolError,
    httpx2.ReadTimeout,
    httpx2.WriteTimeout,
    httpx2.PoolTimeout,
)
"""Errors of one request on a connection that was open (or of waiting for one): not a sign the server is gone."""


def broke_reason(exc: httpx2.TransportError) -> str:
    """What the caller of a request whose connection broke is told: what happened, and what to do."""
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, httpx2.PoolTimeout):
        return f"{BROKE}: it was not sent, every connection to the server stayed busy ({detail}); it is safe to retry"
    return f"{BROKE} ({detail}); the server may have run it, so retry it only if running it twice is harmless"


class AnswerBroke(httpx2.StreamError):
    """The body of a JSON answer broke off. The SDK fails the request it answered with this reason
    ("Failed to parse JSON response: ..."), and the session goes on."""


def broken_answer_said(message: str) -> str | None:
    """The reason in the SDK's error for a request whose answer broke off (:class:`AnswerBroke`), else ``None``."""
    _, found, reason = message.partition(BROKE)
    return found + reason if found else None


def _jsonrpc(request: httpx2.Request) -> dict[str, Any] | None:
    """The JSON-RPC message a POST carries, ``None`` for any other request."""
    if request.method != "POST":
        return None
    try:
        message = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return None
    return message if isinstance(message, dict) else None


def tell_broken(label: str, request: httpx2.Request, reason: str) -> None:
    """Log that the connection of ``request`` to ``label``'s server broke: which message failed, and why."""
    message = _jsonrpc(request) or {}
    method = message.get("method")
    if method is None or "id" not in message:  # a notification, or our answer to the server's request
        logger.warning("[%s] %s not delivered: %s", label, method or "a response", reason)
    else:
        logger.warning("[%s] %s failed: %s", label, method, reason)


class RequestScopedClient(httpx2.AsyncClient):
    """An HTTP client on which a POST whose connection breaks (see the module) is answered in its place."""

    def __init__(self, label: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._label = label

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        try:
            return await super().send(request, **kwargs)
        except MID_REQUEST_ERRORS as exc:
            message = _jsonrpc(request)
            if message is None:
                raise
            reason = broke_reason(exc)
            tell_broken(self._label, request, reason)
            if message.get("method") is None or "id" not in message:  # nobody waits for an answer to it
                return httpx2.Response(202, request=request)
            error = {"code": CONNECTION_CLOSED, "message": reason}
            return httpx2.Response(200, json={"jsonrpc": "2.0", "id": message["id"], "error": error}, request=request)
