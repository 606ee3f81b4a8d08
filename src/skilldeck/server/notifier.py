"""Telling connected clients that the catalog (or what they may call) changed, in both protocol eras.

2026-07-28 sessions listen on ``subscriptions/listen``: a :class:`ChangeNotifier` publishes on the
server's subscription bus. Legacy (2025-11-25) sessions get ``notifications/resources/list_changed``
(and ``tools/list_changed``) pushed on each live connection, which the middleware hands over once
the client says ``notifications/initialized``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mcp.server.session import ServerSession
from mcp.server.subscriptions import SubscriptionBus

from skilldeck.server.scoping import scoped_events

__all__ = ["ChangeNotifier", "LegacyConnections"]

logger = logging.getLogger(__name__)

MAX_LEGACY_SESSIONS = 10_000
"""Legacy connections remembered at once: a hard bound even if a transport never cleans up."""


class LegacyConnections:
    """Live legacy (2025-11-25) connections, one session each, forgotten when the connection closes.

    The SDK builds a ``ServerSession`` per request, so a session kept for later notices must be
    tied to its connection's lifetime: the connection's ``exit_stack`` is the SDK's documented place
    for per-connection cleanup from middleware. (It is reached through the session until the SDK's
    pending context rework exposes the connection on the request context.) At most ``limit`` are
    held, the oldest forgotten first, a hard bound even if a transport never cleans up;
    ``on_forget`` hears of every connection forgotten.
    """

    def __init__(self, limit: int = MAX_LEGACY_SESSIONS, on_forget: Callable[[int], None] | None = None) -> None:
        self.limit = limit
        self._sessions: dict[int, ServerSession] = {}
        self._on_forget = on_forget

    def remember(self, session: ServerSession) -> int:
        """Keep ``session`` for its connection (once); returns the connection's key."""
        connection = getattr(session, "_connection", None)
        key = id(connection if connection is not None else session)
        if key in self._sessions:
            return key
        if len(self._sessions) >= self.limit:
            self.forget(next(iter(self._sessions)))
        self._sessions[key] = session
        exit_stack = getattr(connection, "exit_stack", None)
        if exit_stack is not None:
            exit_stack.callback(self.forget, key)
        return key

    def forget(self, key: int) -> None:
        if self._sessions.pop(key, None) is not None and self._on_forget is not None:
            self._on_forget(key)

    def items(self) -> list[tuple[int, ServerSession]]:
        return list(self._sessions.items())

    def __len__(self) -> int:
        return len(self._sessions)


class ChangeNotifier:
    """Publishes catalog changes on ``subscriptions`` and to every remembered legacy session."""

    def __init__(self, subscriptions: SubscriptionBus) -> None:
        self.subscriptions = subscriptions
        self.legacy = LegacyConnections()

    async def notify_changed(self, *, tools: bool = False, names: set[str] | None = None) -> None:
        """Tell every connected client that the catalog changed (both eras); ``tools`` also for tool lists.

        ``names``, the skills concerned, go with the 2026-07-28 events (see :mod:`skilldeck.server.scoping`).
        """
        for event in scoped_events(names, tools=tools):
            await self.subscriptions.publish(event)
        for key, session in self.legacy.items():
            try:
                await session.send_resource_list_changed()
                if tools:
                    await session.send_tool_list_changed()
            except Exception:  # a gone session must not stop the others
                logger.debug("dropping a legacy session that could not be notified", exc_info=True)
                self.legacy.forget(key)

    def remember_legacy_session(self, session: ServerSession) -> None:
        """Keep one session per live legacy connection, forgotten when the connection closes."""
        self.legacy.remember(session)

    @property
    def legacy_session_count(self) -> int:
        """Legacy (2025-11-25) connections that will be told of catalog changes."""
        return len(self.legacy)
