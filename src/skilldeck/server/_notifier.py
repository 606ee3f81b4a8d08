"""Telling connected clients that the catalog (or what they may call) changed, in both protocol eras.

2026-07-28 sessions listen on ``subscriptions/listen``: a :class:`ChangeNotifier` publishes on the
server's subscription bus. Legacy (2025-11-25) sessions get ``notifications/resources/list_changed``
(and ``tools/list_changed``) pushed on each live connection, which the middleware hands over once
the client says ``notifications/initialized``.
"""

from __future__ import annotations

import logging

from mcp.server.session import ServerSession
from mcp.server.subscriptions import SubscriptionBus

from skilldeck.serving._api import LegacyConnections, scoped_events

__all__ = ["ChangeNotifier", "LegacyConnections"]

logger = logging.getLogger(__name__)


class ChangeNotifier:
    """Publishes catalog changes on ``subscriptions`` and to every remembered legacy session.

    ``legacy`` is the process's table of legacy connections when it has one (the gateway's); else the
    notifier keeps its own.
    """

    def __init__(self, subscriptions: SubscriptionBus, legacy: LegacyConnections | None = None) -> None:
        self.subscriptions = subscriptions
        self.legacy = legacy if legacy is not None else LegacyConnections()

    async def notify_changed(self, *, tools: bool = False, names: set[str] | None = None) -> None:
        """Tell every connected client that the catalog changed (both eras); ``tools`` also for tool lists.

        ``names``, the skills concerned, go with the 2026-07-28 events (see :mod:`skilldeck.serving._scoping`).
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
