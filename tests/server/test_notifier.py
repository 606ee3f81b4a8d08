"""Legacy connections kept for change notices: bounded, and forgotten when a notice cannot be sent."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.subscriptions import InMemorySubscriptionBus

from skilldeck.server._notifier import ChangeNotifier, LegacyConnections

pytestmark = pytest.mark.anyio


class _Connection:
    """A connection without an exit stack (a transport that never cleans up)."""


class _GoneSession:
    """A session whose connection went away: every notice fails."""

    def __init__(self) -> None:
        self._connection = _Connection()

    async def send_resource_list_changed(self) -> None:
        raise ConnectionError("gone")

    async def send_tool_list_changed(self) -> None:
        raise ConnectionError("gone")


async def test_a_session_that_cannot_be_notified_is_forgotten_by_its_connection() -> None:
    notifier = ChangeNotifier(InMemorySubscriptionBus())
    session: Any = _GoneSession()
    notifier.remember_legacy_session(session)
    notifier.remember_legacy_session(session)  # one entry per connection
    assert notifier.legacy_session_count == 1
    await notifier.notify_changed(tools=True)
    assert notifier.legacy_session_count == 0


def test_the_oldest_connection_gives_way_past_the_limit_and_is_reported() -> None:
    forgotten: list[int] = []
    connections = LegacyConnections(limit=2, on_forget=forgotten.append)
    sessions: list[Any] = [_GoneSession() for _ in range(3)]
    keys = [connections.remember(s) for s in sessions]
    assert len(connections) == 2
    assert forgotten == [keys[0]]
    assert [k for k, _ in connections.items()] == keys[1:]
