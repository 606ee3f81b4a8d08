"""The resources the gateway's clients subscribe to on a 2026-07-28 upstream: one ``subscriptions/listen`` stream.

A 2026-07-28 server has no ``resources/subscribe``: a client names the resources it wants to hear
about in the filter of a ``subscriptions/listen`` request, and the filter is fixed for the life of
that stream. :class:`UpstreamResourceListen` holds one such stream per upstream for every resource
any downstream client subscribed to there (a legacy ``resources/subscribe`` or a 2026-07-28 listen
filter, see :mod:`skilldeck.gateway._forward`). When the set changes it opens a stream with the new
set, waits for the upstream's acknowledgment, and only then closes the old stream, so an update is
never missed while the set changes (it may be heard twice then: updates are level triggers). When
the last resource goes, the stream is closed and nothing is left open upstream.

A stream the upstream ends while resources are still wanted is reopened (at most
:data:`MAX_RELISTENS` times in a row, backing off); events of the gap cannot be replayed, so after a
reopen every resource of the set is announced as updated (clients read it again). When the
upstream cannot be listened to again, the stream is given up with a warning; the next subscription
change tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from mcp.client.subscriptions import ResourceUpdated

from skilldeck.host import Connected
from skilldeck.host._api import request_error

__all__ = ["MAX_RELISTENS", "UpstreamResourceListen"]

logger = logging.getLogger(__name__)

MAX_RELISTENS = 3
"""Times in a row a stream the upstream ended is reopened before it is given up."""
CLOSE_SECONDS = 5.0
"""How long a change of the set waits for the replaced stream's end to be sent upstream."""

OnUpdate = Callable[[str, str], Awaitable[None]]
"""Hears ``(label, upstream URI)`` of every ``notifications/resources/updated`` the upstream sends."""
StartSoon = Callable[..., None]


class _Opened:
    """What opening one stream came to: the URIs the upstream honored, or why it failed."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.ended = anyio.Event()
        """Set once the stream's task is over (the upstream was sent its cancellation)."""
        self.honored: frozenset[str] = frozenset()
        self.error: BaseException | None = None


class UpstreamResourceListen:
    """One 2026-07-28 upstream's ``subscriptions/listen`` stream for the resources clients want (see the module docs).

    Args:
        connected: the upstream's session.
        start_soon: runs a task for as long as the upstream connections are open.
        on_update: hears each resource update the upstream sends on the stream.
        backoff: seconds before the first reopen of a stream the upstream ended (doubled each time).
    """

    def __init__(
        self, connected: Connected, start_soon: StartSoon, on_update: OnUpdate, *, backoff: float = 0.05
    ) -> None:
        self.connected = connected
        self.wanted: set[str] = set()
        """The upstream URIs clients want now (the stream follows it at each :meth:`sync`)."""
        self.honored: frozenset[str] = frozenset()
        """The URIs the open stream's acknowledgment honored (empty: no stream open)."""
        self._start_soon = start_soon
        self._on_update = on_update
        self._backoff = backoff
        self._lock = anyio.Lock()
        self._scope: anyio.CancelScope | None = None
        self._ended: anyio.Event | None = None
        self._opening: anyio.CancelScope | None = None
        self._requested: frozenset[str] = frozenset()
        """The URIs the open stream was opened with (the upstream may honor fewer)."""

    @property
    def label(self) -> str:
        return self.connected.label

    @property
    def open(self) -> bool:
        """Whether a stream is open upstream."""
        return self._scope is not None

    async def sync(self) -> frozenset[str]:
        """Make the upstream stream cover :attr:`wanted` (none wanted: no stream); the URIs it honors.

        Raises what opening the stream raised (an ``MCPError`` from the upstream, a timeout ...);
        the stream open before, if any, is then kept.
        """
        async with self._lock:
            wanted = frozenset(self.wanted)
            if self._scope is not None and wanted == self._requested:
                return self.honored
            previous, previous_ended = self._scope, self._ended
            if not wanted:
                self._clear()
            else:
                scope = self._opening = anyio.CancelScope()
                opened = _Opened()
                installed = False
                try:
                    self._start_soon(self._hold, wanted, scope, opened)
                    await opened.done.wait()
                    if opened.error is not None:
                        raise opened.error
                    self._scope, self.honored, self._requested = scope, opened.honored, wanted
                    self._ended = opened.ended
                    installed = True
                finally:
                    self._opening = None
                    if not installed:  # failed, or the caller gave up waiting: no stream is left open
                        scope.cancel()
            if previous is not None:
                previous.cancel()  # after the new stream was acknowledged: no update falls between the two
                if previous_ended is not None:
                    with anyio.move_on_after(CLOSE_SECONDS):  # the upstream is told before this returns
                        await previous_ended.wait()
            return self.honored

    def close(self) -> None:
        """Close the stream now (the upstream is gone, or the gateway is closing)."""
        self.wanted.clear()
        if self._scope is not None:
            self._scope.cancel()
        self._clear()

    def _clear(self) -> None:
        self._scope, self._ended = None, None
        self.honored, self._requested = frozenset(), frozenset()

    async def _hold(self, wanted: frozenset[str], scope: anyio.CancelScope, opened: _Opened) -> None:
        """Open the stream and relay its updates until cancelled; reopen it (bounded) when the upstream ends it."""
        try:
            await self._relay(wanted, scope, opened)
        finally:
            opened.ended.set()

    async def _tell(self, uri: str) -> None:
        try:
            await self._on_update(self.label, uri)
        except Exception:  # one failed relay must not end the stream for every subscriber
            logger.exception("relaying an update of %s from %r failed", uri, self.label)

    async def _relay(self, wanted: frozenset[str], scope: anyio.CancelScope, opened: _Opened) -> None:
        ended = 0
        with scope:
            while True:
                try:
                    async with self.connected.client.listen(resource_subscriptions=sorted(wanted)) as sub:
                        honored = frozenset(sub.honored.resource_subscriptions or ())
                        if not opened.done.is_set():
                            opened.honored = honored
                            opened.done.set()
                        else:  # reopened: what changed in the gap cannot be told, so all of it may have
                            if self._scope is scope:
                                self.honored = honored
                            for uri in sorted(honored):
                                await self._tell(uri)
                        ended = 0
                        async for event in sub:
                            if isinstance(event, ResourceUpdated):
                                await self._tell(event.uri)
                    reason = "the upstream ended the subscription"
                except Exception as exc:
                    if not opened.done.is_set():
                        opened.error = exc
                        opened.done.set()
                        return
                    reason = request_error(exc)
                if scope is not self._scope and scope is not self._opening:
                    return  # replaced by a stream with another set: nothing to reopen
                ended += 1
                if ended > MAX_RELISTENS:
                    break
                logger.info("resource subscriptions of %r ended (%s); listening again", self.label, reason)
                await anyio.sleep(self._backoff * 2**ended)
            logger.warning(
                "resource subscriptions of %r ended (%s) and could not be opened again; "
                "their updates are not relayed until a client subscribes or unsubscribes there",
                self.label,
                reason,
            )
        if self._scope is scope:
            self._clear()
