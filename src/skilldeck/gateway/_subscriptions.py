"""Upstream resources subscribed to through the gateway: who holds which, within bounds, and their updates.

One upstream subscription serves every subscriber of a resource: a 2025-11-25 client's legacy
connection (``resources/subscribe``) or a 2026-07-28 client's listen stream. What is new to the
gateway is subscribed upstream (``resources/subscribe`` on a 2025-11-25 upstream, one listen stream
per 2026-07-28 upstream: :mod:`skilldeck.gateway._resource_listen`), and released when its last
subscriber leaves. An update reaches the resource's subscribers, in both eras, as the gateway's URI,
and nobody else. The bounds: :data:`MAX_CLIENT_SUBSCRIPTIONS` per client, :data:`MAX_SUBSCRIPTIONS`
for the gateway, :data:`MAX_SUBSCRIBERS` per resource, counted with the subscriptions being made.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import ResourceUpdatedNotification
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skilldeck.errors import shorten
from skilldeck.gateway._resource_listen import UpstreamResourceListen
from skilldeck.gateway._upstream_answers import answer, invalid
from skilldeck.host import Connected, Host
from skilldeck.serving._api import LegacyConnections

__all__ = [
    "MAX_CLIENT_SUBSCRIPTIONS",
    "MAX_SUBSCRIBERS",
    "MAX_SUBSCRIPTIONS",
    "ResourceSubscriptions",
    "tell",
    "within",
]

logger = logging.getLogger(__name__)

MAX_SUBSCRIPTIONS = 1_024
"""Upstream resources subscribed to at once (for all clients together)."""
MAX_CLIENT_SUBSCRIPTIONS = 64
"""Resources one legacy connection (or one 2026-07-28 listen stream) may subscribe to through the gateway."""
MAX_SUBSCRIBERS = 256
"""Subscribers (legacy connections and 2026-07-28 listen streams) of one resource."""


def within(uri: str, subscribed: str) -> bool:
    """Whether ``uri`` is ``subscribed`` or a sub-resource of it (below it after a ``/``, ``?`` or ``#``)."""
    if not uri.startswith(subscribed):
        return False
    return len(uri) == len(subscribed) or subscribed.endswith("/") or uri[len(subscribed)] in "/?#"


class ResourceSubscriptions:
    """The gateway's subscriptions to upstream resources (see the module docs).

    Args:
        host: the host the upstreams run on (their sessions, its task group, its message listeners).
        bus: the ``subscriptions/listen`` bus the gateway serves (2026-07-28 listen streams).
        legacy: the process's table of live legacy connections.
        public_uri: the gateway URI of an upstream's resource (``label``, ``uri``).
    """

    def __init__(
        self, host: Host, bus: SubscriptionBus, legacy: LegacyConnections, public_uri: Callable[[str, str], str]
    ) -> None:
        self.host = host
        self.bus = bus
        self.legacy = legacy
        self.public_uri = public_uri
        self._subscribers: dict[tuple[str, str], set[Any]] = {}
        """Per upstream resource ``(label, uri)``: who subscribed (a legacy connection key, or a listen stream)."""
        self._pending: dict[tuple[str, str], set[Any]] = {}
        """Resources being subscribed to now, and by whom: counted against the limits as if held (so
        concurrent requests cannot overshoot them), and not released upstream meanwhile."""
        self._streams: dict[str, UpstreamResourceListen] = {}
        """Per 2026-07-28 upstream: the one listen stream for its subscribed resources."""
        self._listening = False

    async def subscribe(self, target: tuple[Connected, str], subscriber: Any) -> None:
        """Subscribe ``subscriber`` to ``target``; raised, the reason it was refused."""
        refused = await self.subscribe_all([target], subscriber)
        if refused:
            raise refused[0][1]

    async def subscribe_all(
        self, targets: list[tuple[Connected, str]], subscriber: Any
    ) -> list[tuple[tuple[Connected, str], MCPError]]:
        """Subscribe ``subscriber`` to each of ``targets``; the ones refused, each with why.

        What is new to the gateway is subscribed upstream: one ``resources/subscribe`` each on a
        2025-11-25 upstream, one reopened listen stream per 2026-07-28 upstream for all of them.
        """
        refused: list[tuple[tuple[Connected, str], MCPError]] = []
        held = sum(1 for key, who in [*self._subscribers.items(), *self._pending.items()] if subscriber in who)
        gateway_wide = len(self._subscribers.keys() | self._pending.keys())
        accepted: list[tuple[Connected, str]] = []
        seen: set[tuple[str, str]] = set()
        for target in targets:
            key = (target[0].label, target[1])
            subscribers = self._subscribers.get(key, set()) | self._pending.get(key, set())
            if key in seen or subscriber in subscribers:
                continue
            if held >= MAX_CLIENT_SUBSCRIPTIONS:
                why = f"a client may hold {MAX_CLIENT_SUBSCRIPTIONS} resource subscriptions; unsubscribe one first"
            elif not subscribers and gateway_wide >= MAX_SUBSCRIPTIONS:
                why = f"the gateway holds {MAX_SUBSCRIPTIONS} resource subscriptions already; unsubscribe one first"
            elif len(subscribers) >= MAX_SUBSCRIBERS:
                why = f"{MAX_SUBSCRIBERS} clients subscribe to this resource already"
            else:
                seen.add(key)
                held += 1
                gateway_wide += not subscribers
                accepted.append(target)
                continue
            refused.append((target, invalid(why)))
        self._listen_upstreams()
        # Reserved before the first await: a concurrent request counts these against the limits.
        for key in seen:
            self._pending.setdefault(key, set()).add(subscriber)
        try:
            subscribed, failed = await self._subscribe_upstream(
                [t for t in accepted if self._subscribers.get((t[0].label, t[1])) is None]
            )
        finally:
            for key in seen:
                self._pending[key].discard(subscriber)
                if not self._pending[key]:
                    del self._pending[key]
        refused += failed
        for target in accepted:
            key = (target[0].label, target[1])
            if key in self._subscribers or target in subscribed:
                self._subscribers.setdefault(key, set()).add(subscriber)
        return refused

    async def _subscribe_upstream(
        self, targets: list[tuple[Connected, str]]
    ) -> tuple[list[tuple[Connected, str]], list[tuple[tuple[Connected, str], MCPError]]]:
        """Subscribe upstream to resources no client subscribed to yet: those subscribed, those refused with why."""
        subscribed: list[tuple[Connected, str]] = []
        refused: list[tuple[tuple[Connected, str], MCPError]] = []
        modern: dict[str, list[tuple[Connected, str]]] = {}
        for target in targets:
            connected, upstream = target
            if connected.protocol_version in MODERN_PROTOCOL_VERSIONS:
                modern.setdefault(connected.label, []).append(target)
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)  # the upstream speaks 2025-11-25
                    await answer(connected, connected.client.subscribe_resource(upstream))
            except MCPError as exc:
                refused.append((target, exc))
                continue
            subscribed.append(target)
        for group in modern.values():
            connected = group[0][0]
            listen = self._resource_listen(connected)
            uris = {upstream for _, upstream in group}
            added = uris - listen.wanted
            listen.wanted |= uris
            try:
                honored = await answer(connected, listen.sync())
            except MCPError as exc:
                listen.wanted -= added
                refused += [(target, exc) for target in group]
                continue
            for target in group:
                if target[1] in honored:
                    subscribed.append(target)
                else:
                    listen.wanted.discard(target[1])
                    why = f"{connected.label!r} did not accept a subscription to {shorten(target[1])!r}"
                    refused.append((target, invalid(why)))
        return subscribed, refused

    def _resource_listen(self, connected: Connected) -> UpstreamResourceListen:
        """The listen stream of a 2026-07-28 upstream's subscribed resources (a new one for a new session)."""
        listen = self._streams.get(connected.label)
        if listen is None or listen.connected is not connected:
            if listen is not None:
                listen.close()  # the session it listened on is gone
            listen = UpstreamResourceListen(connected, self.host.start_soon, self._updated)
            self._streams[connected.label] = listen
        return listen

    async def _release(self, keys: list[tuple[str, str]]) -> None:
        """Nobody subscribes to ``keys`` any more: the upstreams stop telling the gateway of them.

        A 2025-11-25 upstream is sent ``resources/unsubscribe`` for each; a 2026-07-28 upstream's
        stream is reopened once without them (or closed, when they were its last).
        """
        released: dict[str, list[str]] = {}
        for key in keys:
            if key not in self._subscribers and key not in self._pending:  # else subscribed again meanwhile
                released.setdefault(key[0], []).append(key[1])
        for label, uris in released.items():
            listen = self._streams.get(label)
            connected = self.host.sessions.get(label)
            try:
                if listen is not None and listen.wanted & set(uris):
                    listen.wanted -= set(uris)
                    await listen.sync()
                elif connected is not None and connected.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                    for upstream in uris:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", MCPDeprecationWarning)  # the upstream speaks 2025-11-25
                            await connected.client.unsubscribe_resource(upstream)
            except Exception as exc:  # the upstream may be gone: nobody is told of its updates any more
                logger.debug("unsubscribing %d resources of %r failed: %s", len(uris), label, exc)

    def _listen_upstreams(self) -> None:
        if not self._listening:
            self.host.add_message_listener(self._upstream_message)
            self._listening = True

    async def _upstream_message(self, label: str, message: Any) -> None:
        """A 2025-11-25 upstream's ``notifications/resources/updated`` (a 2026-07-28 one's come on its listen stream)."""
        if not isinstance(message, ResourceUpdatedNotification):
            return
        connected = self.host.sessions.get(label)
        if connected is None or connected.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        await self._updated(label, str(message.params.uri))

    async def _updated(self, label: str, upstream: str) -> None:
        """An update of a subscribed resource: to its subscribers (both eras) as the gateway URI, to nobody else.

        A 2025-11-25 upstream may name a sub-resource of the one subscribed to (``file:///logs/a.txt``
        for ``file:///logs``). A legacy subscriber is told of it as it came; a listen stream, whose
        filter holds exact URIs only, is told that the resource it subscribed to was updated.
        """
        told: set[Any] = set()
        sessions = dict(self.legacy.items())
        uri = self.public_uri(label, upstream)
        for (owner, subscribed), subscribers in list(self._subscribers.items()):
            if owner != label or not within(upstream, subscribed):
                continue
            await self.bus.publish(ResourceUpdated(uri=self.public_uri(label, subscribed)))
            for subscriber in list(subscribers):
                session = sessions.get(subscriber) if isinstance(subscriber, int) else None
                if session is not None and subscriber not in told:
                    told.add(subscriber)
                    await tell(self.legacy, subscriber, session.send_resource_updated(uri))

    async def unsubscribe(self, target: tuple[Connected, str], subscriber: Any) -> None:
        """``subscriber`` no longer subscribes to ``target`` (the upstream is told when it was the last)."""
        await self.unsubscribe_all([target], subscriber)

    async def unsubscribe_all(self, targets: list[tuple[Connected, str]], subscriber: Any) -> None:
        """``subscriber`` no longer subscribes to any of ``targets``."""
        emptied = []
        for connected, upstream in targets:
            key = (connected.label, upstream)
            subscribers = self._subscribers.get(key)
            if subscribers is None:
                continue
            subscribers.discard(subscriber)
            if not subscribers:
                del self._subscribers[key]
                emptied.append(key)
        await self._release(emptied)

    def forget(self, connection: int) -> None:
        """A legacy connection closed: it subscribes to nothing any more (the upstream is told in the background)."""
        emptied = []
        for key in [k for k, subscribers in self._subscribers.items() if connection in subscribers]:
            self._subscribers[key].discard(connection)
            if not self._subscribers[key]:
                del self._subscribers[key]
                emptied.append(key)
        if emptied:
            with contextlib.suppress(RuntimeError):  # RuntimeError: the upstream connections are closed
                self.host.start_soon(self._release, emptied)


async def tell(legacy: LegacyConnections, key: int, sending: Awaitable[None]) -> None:
    """Send a notification to legacy connection ``key``; one that cannot be notified is dropped."""
    try:
        await sending
    except Exception:  # a gone session must not stop the others
        logger.debug("dropping a legacy session that could not be notified", exc_info=True)
        legacy.forget(key)
