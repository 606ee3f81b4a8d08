"""Bounded legacy (2025-11-25) sessions on streamable HTTP: a full table evicts, it does not refuse.

The SDK's ``StreamableHTTPSessionManager`` keeps one transport per stateful session, ends a
session once no request has been in flight for ``session_idle_timeout`` seconds, and at
``max_sessions`` answers ``503`` to every request that would open one more. Opening a session
needs no more than an ``initialize`` request, so anyone who opens ``max_sessions`` of them and
walks away locks every new legacy client out for the whole idle timeout.

:func:`evict_idle_when_full` changes only that last rule: when the table is full, the least
recently used *idle* session (no request being served, no open GET stream) is ended the way
its idle timeout would end it, and the new session is admitted. A session with a request in
flight is a live client and is never evicted. When no session is idle, the oldest session whose
only open request is its GET stream is ended (its stream closed; the client reconnects and
re-initializes): otherwise 1,000 anonymous sessions each holding a GET stream gave every new
legacy client ``503`` for as long as they stayed open. When every session is serving a request,
the SDK's ``503`` stands.

Why this reaches into the manager: the SDK offers ``max_sessions`` and ``session_idle_timeout``
as constructor arguments but no hook for what happens at the limit, and ``streamable_http_app()``
builds its manager itself (it cannot be handed a subclass). So the manager's admission step
(``_admit_session``, called under its session-creation lock) is wrapped on that one instance,
and the session table (``_server_instances``, ``_session_owners``) is read and trimmed in the
same synchronous step, so a slot is freed exactly when a new session needs it. Each session's
``idle_scope`` (a public attribute of the transport) tells whether it is idle and since when: its
deadline is the end of its last request plus the idle timeout. Everything else is the SDK's own
path: cancelling that scope is what the idle timeout does, and the SDK then terminates the
transport and forgets the session.

A stop-gap for the SDK: ``docs/sdk-workarounds.md`` (``#sessions`` and ``#unknown-sessions``) says
what it corrects and what change to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it
relies on.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from mcp.server.streamable_http import GET_STREAM_KEY, MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import INVALID_REQUEST
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from skilldeck.serving._counts import HttpCounts

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "UNKNOWN_SESSION_MESSAGE",
    "answer_unknown_sessions",
    "evict_idle_when_full",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_SESSIONS = 1_000
"""Legacy sessions held at once by ``skilldeck serve --http`` (each costs tens of KiB)."""

DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
"""Seconds a legacy session may go without a request in flight (or an open GET stream) before it ends."""


def evict_idle_when_full(manager: StreamableHTTPSessionManager, counts: HttpCounts | None = None) -> None:
    """Make ``manager`` end its least recently used idle session instead of refusing a new one at the limit.

    Each session ended to make room is counted in ``counts`` (``sessions_evicted``), for metrics.

    Call it once, after ``streamable_http_app()`` built the manager and before it serves. Needs
    ``session_idle_timeout`` set (it is what tells idle sessions apart); without one, or in
    stateless mode, the manager is left as it is.
    """
    if manager.stateless or manager.max_sessions is None or manager.session_idle_timeout is None:
        return
    admit = manager._admit_session
    limit = manager.max_sessions

    def admit_evicting(requestor: Any) -> StreamableHTTPServerTransport | None:
        if len(manager._server_instances) >= limit:
            evicted = _evict_least_recently_used(manager) or _evict_oldest_streaming(manager)
            if evicted and counts is not None:
                counts.refused["sessions_evicted"] += 1
        return admit(requestor)

    manager._admit_session = admit_evicting  # type: ignore[method-assign]


def _evict_least_recently_used(manager: StreamableHTTPSessionManager) -> bool:
    """End the idle session whose last request ended longest ago; ``False`` if every session is busy."""
    oldest: tuple[str, Any] | None = None
    for session_id, transport in manager._server_instances.items():
        scope = transport.idle_scope
        if scope is None or scope.cancel_called or not math.isfinite(scope.deadline):
            continue  # still opening, already ending, or a request (or GET stream) in flight
        if oldest is None or scope.deadline < oldest[1].deadline:
            oldest = (session_id, scope)
    if oldest is None:
        return False
    session_id, scope = oldest
    # Forgotten now, so the slot is free for the session being admitted and the old ID answers 404;
    # cancelling the idle scope then ends its message loop, and the SDK terminates the transport.
    manager._server_instances.pop(session_id, None)
    manager._session_owners.pop(session_id, None)
    scope.cancel()
    logger.info("session table full: ended idle session %s, the least recently used", session_id[:64])
    return True


def _evict_oldest_streaming(manager: StreamableHTTPSessionManager) -> bool:
    """End the oldest session whose one request in flight is its GET stream; ``False`` if there is none."""
    for session_id, transport in manager._server_instances.items():  # oldest first
        scope = transport.idle_scope
        if scope is None or scope.cancel_called:
            continue
        if transport._requests_in_flight == 1 and GET_STREAM_KEY in transport._request_streams:
            manager._server_instances.pop(session_id, None)
            manager._session_owners.pop(session_id, None)
            scope.cancel()
            logger.warning(
                "legacy session table full (--max-sessions), no session idle: ended the oldest one holding only "
                "its GET stream (%s)",
                session_id[:64],
            )
            return True
    return False


UNKNOWN_SESSION_MESSAGE = (
    "Session not found on this server: a legacy (2025-11-25) session lives on the server process that "
    "opened it, and it ended or this request reached another replica. Start a new session (initialize); "
    "behind a load balancer, route on the Mcp-Session-Id header (sticky sessions) or use protocol 2026-07-28"
)
"""What a request naming a session this process does not hold is told (HTTP 404, as the SDK answers)."""


def answer_unknown_sessions(app: ASGIApp, manager: StreamableHTTPSessionManager) -> ASGIApp:
    """``app``, answering a request that names a legacy session ``manager`` does not hold with a clear 404.

    The SDK already answers such a request ``404`` ("Session not found") without waiting; this says
    why and what to do, which matters behind a load balancer: a legacy session is held by one
    replica, and a balancer that does not route on ``Mcp-Session-Id`` sends its next request elsewhere.
    A session the manager holds, and every request naming none (2026-07-28 requests, ``initialize``),
    go to ``app`` untouched.
    """
    header = MCP_SESSION_ID_HEADER.lower().encode("latin-1")

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not manager.stateless:
            session_id = next((v.decode("latin-1") for k, v in scope["headers"] if k == header), None)
            if session_id is not None and session_id not in manager._server_instances:
                logger.info("request for a session this process does not hold: %s", session_id[:64])
                body = {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": INVALID_REQUEST, "message": UNKNOWN_SESSION_MESSAGE},
                }
                await JSONResponse(body, status_code=404)(scope, receive, send)
                return
        await app(scope, receive, send)

    return answer
