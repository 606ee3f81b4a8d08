"""Telling connected clients that the catalog (or what they may call) changed, in both protocol eras.

2026-07-28 sessions listen on ``subscriptions/listen``: a :class:`ChangeNotifier` publishes on the
server's subscription bus. Legacy (2025-11-25) sessions get ``notifications/resources/list_changed``
(and ``tools/list_changed``) pushed on each live connection, which the middleware hands over once
the client says ``notifications/initialized``.
"""

from __future__ import annotations

import logging

from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourcesListChanged, SubscriptionBus, ToolsListChanged

__all__ = ["ChangeNotifier"]

logger = logging.getLogger(__name__)

MAX_LEGACY_SESSIONS = 10_000
"""Legacy connections remembered at once: a hard bound even if a transport never cleans up."""


class ChangeNotifier:
    """Publishes catalog changes on ``subscriptions`` and to every remembered legacy session."""

    def __init__(self, subscriptions: SubscriptionBus) -> None:
        self.subscriptions = subscriptions
        self._legacy_sessions: dict[int, ServerSession] = {}

    async def notify_changed(self, *, tools: bool = False) -> None:
        """Tell every connected client that the catalog changed (both eras); ``tools`` also for tool lists."""
        await self.subscriptions.publish(ResourcesListChanged())
        if tools:
            await self.subscriptions.publish(ToolsListChanged())
        for session in list(self._legacy_sessions.values()):
            try:
                await session.send_resource_list_changed()
                if tools:
                    await session.send_tool_list_changed()
            except Exception:  # a gone session must not stop the others
                logger.debug("dropping a legacy session that could not be notified", exc_info=True)
                self._legacy_sessions.pop(id(session), None)

    def remember_legacy_session(self, session: ServerSession) -> None:
        """Keep one session per live legacy connection, forgotten when the connection closes.

        The SDK builds a ``ServerSession`` per request, so the session must be tied to its
        connection's lifetime: the connection's ``exit_stack`` is the SDK's documented place for
        per-connection cleanup from middleware. (It is reached through the session until the SDK's
        pending context rework exposes the connection on the request context.)
        """
        connection = getattr(session, "_connection", None)
        key = id(connection if connection is not None else session)
        if key in self._legacy_sessions:
            return
        if len(self._legacy_sessions) >= MAX_LEGACY_SESSIONS:
            self._legacy_sessions.pop(next(iter(self._legacy_sessions)))
        self._legacy_sessions[key] = session
        exit_stack = getattr(connection, "exit_stack", None)
        if exit_stack is not None:
            exit_stack.callback(self._legacy_sessions.pop, key, None)

    @property
    def legacy_session_count(self) -> int:
        """Legacy (2025-11-25) connections that will be told of catalog changes."""
        return len(self._legacy_sessions)
