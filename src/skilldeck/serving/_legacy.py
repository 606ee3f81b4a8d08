"""Live legacy (2025-11-25) connections: one table per process, shared by everything that serves them.

A legacy client is told of changes on its connection (``notifications/*/list_changed``, resource
updates), and the gateway keeps per connection what it loaded and the log level it set. All of
that hangs on one :class:`LegacyConnections`: a connection is remembered once, and when it closes
(or gives way to newer ones) every listener hears it was forgotten.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcp.server.session import ServerSession

__all__ = ["MAX_LEGACY_SESSIONS", "LegacyConnection", "LegacyConnections"]

MAX_LEGACY_SESSIONS = 10_000
"""Legacy connections remembered at once: a hard bound even if a transport never cleans up."""


@dataclass(eq=False)
class LegacyConnection:
    """One live legacy connection: the session to notify it on, and what it set for itself."""

    session: ServerSession
    log_level: str | None = None
    """The level it set with ``logging/setLevel`` (``None``: it did not)."""


class LegacyConnections:
    """Live legacy (2025-11-25) connections, one session each, forgotten when the connection closes.

    The SDK builds a ``ServerSession`` per request, so a session kept for later notices must be
    tied to its connection's lifetime: the connection's ``exit_stack`` is the SDK's documented place
    for per-connection cleanup from middleware. (It is reached through the session until the SDK's
    pending context rework exposes the connection on the request context.) At most ``limit`` are
    held, the oldest forgotten first, a hard bound even if a transport never cleans up; every
    listener (``on_forget``, and each one :meth:`on_forget` added) hears of every connection forgotten.
    """

    def __init__(self, limit: int = MAX_LEGACY_SESSIONS, on_forget: Callable[[int], None] | None = None) -> None:
        self.limit = limit
        self._connections: dict[int, LegacyConnection] = {}
        self._listeners: list[Callable[[int], None]] = [] if on_forget is None else [on_forget]

    def on_forget(self, listener: Callable[[int], None]) -> None:
        """Have ``listener`` hear the key of every connection forgotten from now on."""
        self._listeners.append(listener)

    def remember(self, session: ServerSession) -> int:
        """Keep ``session`` for its connection (once); returns the connection's key."""
        return self._remember(session)[0]

    def connection(self, session: ServerSession) -> tuple[int, LegacyConnection]:
        """The connection of ``session``, remembered if new: its key and its record."""
        return self._remember(session)

    def _remember(self, session: ServerSession) -> tuple[int, LegacyConnection]:
        # The SDK keeps the connection private to the session: docs/sdk-workarounds.md#legacy-connections.
        connection = getattr(session, "_connection", None)
        key = id(connection if connection is not None else session)
        found = self._connections.get(key)
        if found is not None:
            return key, found
        if len(self._connections) >= self.limit:
            self.forget(next(iter(self._connections)))
        created = self._connections[key] = LegacyConnection(session)
        exit_stack = getattr(connection, "exit_stack", None)
        if exit_stack is not None:
            exit_stack.callback(self.forget, key)
        return key, created

    def forget(self, key: int) -> None:
        if self._connections.pop(key, None) is not None:
            for listener in self._listeners:
                listener(key)

    def items(self) -> list[tuple[int, ServerSession]]:
        return [(key, c.session) for key, c in self._connections.items()]

    def log_levels(self) -> list[str]:
        """The levels live connections set with ``logging/setLevel`` (those that set one)."""
        return [c.log_level for c in self._connections.values() if c.log_level is not None]

    def __len__(self) -> int:
        return len(self._connections)
