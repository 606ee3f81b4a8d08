"""A ``SubscriptionBus`` over Redis pub/sub: change events reach every replica's listeners (``skilldeck[redis]``).

The SDK's ``subscriptions/listen`` handler delivers what a :class:`~mcp.server.subscriptions.SubscriptionBus`
hands it; its ``InMemorySubscriptionBus`` reaches only the listeners of one process. Behind a load
balancer a 2026-07-28 client's listen stream is held by whichever replica took it, while the
change (a reload, a policy swap, an upstream change in the gateway) happens on another.
:class:`RedisSubscriptionBus` publishes each event on one Redis channel, and every replica's bus,
subscribed to that channel, hands it to its own listeners: each listener hears each event once,
whichever replica published it (a publisher hears its own events back through Redis, never also
directly).

A gap is never silent. Redis pub/sub keeps nothing for a subscriber that is not connected, so:

- when the subscription comes back (after Redis restarted, or the connection dropped, whether the
  client library reconnected or this bus did), the bus tells its own listeners that *everything*
  may have changed: ``resources``, ``tools`` and ``prompts`` list-changed, the full re-announce;
- a publish that fails (Redis unreachable) is delivered to this replica's listeners at once, and a
  re-announce is published to every replica as soon as Redis takes publishes again.

Events are level triggers ("this list changed; refetch if you care"), so a re-announce costs a
client one refetch and can never show it something wrong. After a gap delivery is at least once.

One edit, at most two events. Replicas watching one shared folder each reload an edit and each
publish its event, a few hundred milliseconds apart. A bus delivers the event that opens a window at
once, gathers what arrives on the channel for ``settle`` seconds, and then delivers each distinct
event gathered once more: a listener hears the edit twice, not once per replica, and the last
delivery comes after every replica has the edit (a replica whose event arrives after the window
closed opens a new one, delivered at once). Replicas that each watch a folder of their own publish
one event per edit: it is delivered at once and nothing follows, so no one waits for ``settle``.

Tenant scoping is the in-memory bus's: an event names no skill, tool or caller, only the kind of
list that changed (a ``ResourceUpdated`` names the URI its publisher gave it, as in process; skilldeck
itself publishes none). Each listener then refetches with its own credentials and sees only its
own view, so no event can tell a caller about a skill it may not see. On the channel a message is
the event's JSON-RPC method (and a URI for ``ResourceUpdated``); anything else — another program's
traffic, an oversized or malformed message — is dropped and logged, never delivered.

Use it as an async context manager around serving (it connects and subscribes on entry, and
raises :class:`~skilldeck.errors.ServeError` when Redis cannot be reached at start-up)::

    bus = RedisSubscriptionBus("redis://redis:6379/0", channel="skilldeck:docs:events")
    server, ext = create_server("skills/", subscriptions=bus)
    async with bus:
        await serve_http(server, ext, ...)
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
    event_from_wire,
)

from skilldeck._redis import redacted_url
from skilldeck.errors import ServeError
from skilldeck.serving._scoping import event_names, with_names

__all__ = [
    "DEFAULT_SETTLE",
    "FULL_REANNOUNCE",
    "MAX_BATCH",
    "MAX_GATHERED",
    "MAX_MESSAGE_BYTES",
    "MAX_SETTLE",
    "RedisSubscriptionBus",
    "encode_event",
    "shared_state_key",
]

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 4096
"""A channel message longer than this is dropped unread: events are a method name and at most one URI."""

MAX_BATCH = 4096
"""Channel messages read, at most, before the distinct events among them are delivered."""

MAX_GATHERED = 4096
"""Distinct events held, at most, while a bus gathers; past it they collapse into :data:`FULL_REANNOUNCE`."""

MAX_SETTLE = 60.0
"""The longest gathering window a bus takes, in seconds."""

DEFAULT_SETTLE = 0.5
"""Seconds a bus gathers change events before delivering each distinct one once (replicas' reloads of one
edit land within the watcher's 200 ms debounce of each other)."""

FULL_REANNOUNCE: tuple[ServerEvent, ...] = (ResourcesListChanged(), ToolsListChanged(), PromptsListChanged())
"""What a bus tells its listeners after a gap in which events may have been missed."""

_METHODS: dict[type, str] = {
    ResourcesListChanged: "notifications/resources/list_changed",
    ToolsListChanged: "notifications/tools/list_changed",
    PromptsListChanged: "notifications/prompts/list_changed",
    ResourceUpdated: "notifications/resources/updated",
}


def encode_event(event: ServerEvent) -> str:
    """The channel message for ``event``: its notification method, the URI of a ``ResourceUpdated``,
    and the skill names a scoped event concerns (dropped, so everyone is told, when they would not fit)."""
    kind = next(k for k in _METHODS if isinstance(event, k))
    message: dict[str, Any] = {"method": _METHODS[kind]}
    if isinstance(event, ResourceUpdated):
        message["uri"] = event.uri
    names = event_names(event)
    if names is not None:
        scoped = json.dumps({**message, "names": sorted(names)}, separators=(",", ":"))
        if len(scoped.encode()) <= MAX_MESSAGE_BYTES:
            return scoped
    return json.dumps(message, separators=(",", ":"))


def decode_event(data: bytes | str) -> ServerEvent | None:
    """The event a channel message announces, or ``None`` (logged) for anything that is not one of ours."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_MESSAGE_BYTES:
        logger.warning("dropped a %d-byte message on the events channel (at most %d)", len(raw), MAX_MESSAGE_BYTES)
        return None
    try:
        message = json.loads(raw)
        method = message["method"]
        event = event_from_wire(method, {"uri": message.get("uri")}) if isinstance(method, str) else None
        names = message.get("names")
        if event is not None and isinstance(names, list) and all(isinstance(n, str) for n in names):
            event = with_names(event, names)
    except (ValueError, TypeError, KeyError, AttributeError):
        event = None
    if event is None:
        logger.warning("dropped a message on the events channel that is not a change event: %.80r", raw)
    return event


class RedisSubscriptionBus:
    """The SDK's ``SubscriptionBus`` over one Redis pub/sub channel (see the module docstring).

    Args:
        url: a ``redis://`` (or ``rediss://``, ``unix://``) URL, as ``redis.asyncio.Redis.from_url`` takes.
        channel: the channel every replica of one service shares; servers of different services
            on one Redis need different channels.
        reconnect_delay: seconds between attempts to subscribe (or to publish the pending
            re-announce) while Redis is unreachable.
        timeout: seconds a publish or a connection attempt may take before it counts as failed.
        settle: seconds the bus gathers events from the channel after delivering the first at once,
            before it delivers each distinct one gathered once more (0: deliver each batch read as it is read).
    """

    def __init__(
        self,
        url: str,
        *,
        channel: str = "skilldeck:events",
        reconnect_delay: float = 0.5,
        timeout: float = 2.0,
        settle: float = DEFAULT_SETTLE,
    ) -> None:
        if not 0 <= settle <= MAX_SETTLE:  # nan is refused too
            raise ValueError(f"settle must be between 0 and {MAX_SETTLE:g} seconds, got {settle!r}")
        if not (math.isfinite(reconnect_delay) and reconnect_delay > 0):
            raise ValueError(f"reconnect_delay must be a positive number of seconds, got {reconnect_delay!r}")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.url = url
        self.channel = channel
        self.reconnect_delay = reconnect_delay
        self.timeout = timeout
        self.settle = settle
        self._gathered: dict[ServerEvent, None] = {}
        """Events read off the channel and not yet delivered, each once, in the order first read."""
        self._gathering = anyio.Event()
        """Set when the first event of a window is gathered."""
        self._listeners: dict[object, Callable[[ServerEvent], None]] = {}
        self._redis: Any = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._pending = anyio.Event()
        """Set when a publish failed: a re-announce is owed to every replica."""
        self.reannounced = 0
        """How many times this bus re-announced to its listeners after a gap (for tests and logs)."""
        self.coalesced = 0
        """Channel messages not delivered because an identical event was delivered with them (same batch or window)."""
        self.subscribed = anyio.Event()
        """Set once the channel subscription is live (the first time)."""
        self.outage = False
        """The subscription was lost and is not back yet (its loss was said once)."""

    # -- SubscriptionBus ------------------------------------------------------------------------

    async def publish(self, event: ServerEvent) -> None:
        """Publish ``event`` to every replica; when Redis cannot take it, deliver it here and owe a re-announce."""
        if self._redis is None:
            raise RuntimeError("RedisSubscriptionBus.publish before `async with bus:` started it")
        try:
            with anyio.fail_after(self.timeout):
                await self._redis.publish(self.channel, encode_event(event))
        except Exception as exc:  # any failure to reach Redis: never lose the event, never fail the reload
            logger.warning("could not publish a change event to Redis (%s); re-announcing once it is back", exc)
            self._deliver(event)
            self._pending.set()
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        """Register ``listener`` for events from every replica; returns an idempotent unsubscribe."""
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    # -- running --------------------------------------------------------------------------------

    async def __aenter__(self) -> RedisSubscriptionBus:
        import redis.asyncio as aioredis

        self._redis = aioredis.Redis.from_url(
            self.url, socket_connect_timeout=self.timeout, socket_keepalive=True, health_check_interval=5
        )
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        try:
            with anyio.fail_after(self.timeout * 2):
                await self._redis.ping()
            await self._task_group.start(self._follow)
        except BaseException as exc:
            self._task_group.cancel_scope.cancel()
            await self._task_group.__aexit__(None, None, None)
            await self._redis.aclose()
            self._redis = None
            if isinstance(exc, Exception):
                raise ServeError(
                    f"cannot reach Redis at {redacted_url(self.url)}: {exc}; start Redis or fix --redis"
                ) from None
            raise
        self._task_group.start_soon(self._settle_pending)
        self._task_group.start_soon(self._deliver_gathered)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
        try:
            await self._task_group.__aexit__(exc_type, exc, tb)
        finally:
            self._task_group = None
            with anyio.CancelScope(shield=True):
                await self._redis.aclose()
            self._redis = None

    def _deliver(self, event: ServerEvent) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # fan-out boundary: one bad listener must not starve the others
                logger.exception("subscription listener raised; continuing")

    async def _deliver_batch(self, pubsub: Any, first: dict[str, Any]) -> None:
        """Gather ``first`` and the messages already waiting behind it: each distinct event is delivered once.

        Events are level triggers, so a burst of identical ones (5,000 in a row filled every listen
        stream's backlog, 1,024 events, and the SDK ended the streams) says no more than one of them.
        At most :data:`MAX_BATCH` messages are read before delivering; a subscription confirmation
        among them (a re-subscribe after a gap) ends the batch and re-announces.
        """
        message: dict[str, Any] | None = first
        read = events = 0
        while message is not None:
            read += 1
            if message["type"] == "message":
                event = decode_event(message["data"])
                if event is not None:
                    events += 1
                    self._gather(event)
            elif message["type"] == "subscribe":
                self._reannounce()
            if read >= MAX_BATCH or message["type"] == "subscribe":
                break
            message = await pubsub.get_message(timeout=0)
        self.coalesced += read - events  # what was no event at all is not delivered either

    def _gather(self, event: ServerEvent) -> None:
        """Hold ``event`` until the window closes; one already held is counted as coalesced."""
        if event in self._gathered:
            self.coalesced += 1
        else:
            self._gathered[event] = None
        if len(self._gathered) > MAX_GATHERED:  # level triggers: "everything changed" says it all, in three
            self.coalesced += len(self._gathered) - len(FULL_REANNOUNCE)
            self._gathered = dict.fromkeys(FULL_REANNOUNCE)
        self._gathering.set()

    async def _deliver_gathered(self) -> None:
        """Each window: deliver what opened it at once, gather for :attr:`settle` seconds, then deliver each
        distinct event that came meanwhile once more (none came: nothing more is delivered)."""
        while True:
            await self._gathering.wait()
            self._deliver_held()  # the leading edge: a change on one replica is told at once
            if self.settle:
                await anyio.sleep(self.settle)
                self._deliver_held()  # the trailing edge: other replicas' events for it, after the last of them

    def _deliver_held(self) -> None:
        self._gathering = anyio.Event()
        events, self._gathered = self._gathered, {}
        for event in events:
            self._deliver(event)

    def _reannounce(self) -> None:
        self.reannounced += 1
        self.outage = False
        logger.warning("Redis subscription restored after a gap: re-announcing every list to this replica's listeners")
        for event in FULL_REANNOUNCE:
            self._deliver(event)

    async def _follow(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the channel subscription, handing each event to the listeners; re-subscribe after any gap."""
        started = False
        while True:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=False)
            try:
                await pubsub.subscribe(self.channel)
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        # The first confirmation is the start; any later one is the client library
                        # re-subscribing after a dropped connection: what was sent meanwhile is lost.
                        if not started:
                            started = True
                            self.subscribed.set()
                            task_status.started()
                        else:
                            self._reannounce()
                    elif message["type"] == "message":
                        await self._deliver_batch(pubsub, message)
            except Exception as exc:
                if not started:
                    raise
                if self.outage:  # said once per outage: an attempt every reconnect_delay would flood the log
                    logger.debug("the Redis subscription is still down (%s)", exc)
                else:
                    self.outage = True
                    logger.warning(
                        "lost the Redis subscription (%s); re-subscribing every %gs, said again once it is back",
                        exc,
                        self.reconnect_delay,
                    )
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await pubsub.aclose()
                    except Exception:
                        logger.debug("closing a broken pub/sub connection", exc_info=True)
            await anyio.sleep(self.reconnect_delay)

    async def _settle_pending(self) -> None:
        """Once a publish failed, publish a full re-announce to every replica as soon as Redis takes it."""
        while True:
            await self._pending.wait()
            self._pending = anyio.Event()  # a publish failing from here on owes another one
            try:
                with anyio.fail_after(self.timeout):
                    for event in FULL_REANNOUNCE:
                        await self._redis.publish(self.channel, encode_event(event))
            except Exception:
                self._pending.set()
                await anyio.sleep(self.reconnect_delay)


async def shared_state_key(url: str, key: str, *, wait: float = 5.0) -> str:
    """The request-state sealing key every replica using Redis at ``url`` shares, stored under ``key``.

    The first replica to start writes a fresh random key (``SET NX``: one writer wins, the others
    read it back), so multi-round-trip state sealed by one replica unseals on any other. Where Redis
    is not trusted with secrets, give every replica the key from a secret store instead.

    Raises:
        ServeError: Redis cannot be reached, or holds something under ``key`` that is not a key.
    """
    import secrets

    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, socket_connect_timeout=wait)
    try:
        with anyio.fail_after(wait):
            await client.set(key, secrets.token_hex(32), nx=True)
            value = await client.get(key)
    except Exception as exc:
        raise ServeError(f"cannot reach Redis at {redacted_url(url)}: {exc}; start Redis or fix --redis") from None
    finally:
        await client.aclose()
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else ""
    if len(text) < 32:
        raise ServeError(
            f"Redis key {key!r} does not hold a request-state key of at least 32 characters; delete it "
            "(a replica writes a new one) or give the replicas a key of their own"
        )
    return text
