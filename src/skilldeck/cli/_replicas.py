"""``--redis``: what ``serve`` and ``gateway`` replicas behind a load balancer share (see docs/deploy.md).

Replicas share two things and nothing else: the change-event bus (Redis pub/sub, so a change on
one replica reaches every replica's ``subscriptions/listen`` streams) and the key that seals
multi-round-trip ``requestState`` (so a follow-up round may land on any replica). The key comes
from ``SKILLDECK_STATE_KEY`` when set (with or without ``--redis``), else from Redis, where the
first replica to start stores a random one; every few seconds each replica puts its key back and
takes up the keys of the others (:mod:`skilldeck.serving._state_keys`), so a Redis that restarted
empty cannot leave two replicas sealing with keys the other refuses. The server name (``--name``) is
the sealed state's audience and the channel's namespace: replicas of one service must use the same name.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

import anyio

from skilldeck.errors import UsageError

if TYPE_CHECKING:
    from skilldeck.serving._api import KeyRing, RedisSubscriptionBus

__all__ = ["Replicas", "add_replica_arguments", "replica_setup"]

logger = logging.getLogger(__name__)

STATE_KEY_ENV = "SKILLDECK_STATE_KEY"
MAX_URL = 2048
KEY_SYNC_SECONDS: Final = 5.0
"""How often a replica puts its request-state key back in Redis and takes up the others'."""


def add_replica_arguments(parser: argparse.ArgumentParser, *, gateway: bool = False) -> None:
    """``--redis``; a gateway shares activations through it instead of change events (each replica follows its upstreams)."""
    shared = (
        "share activations through Redis at URL (redis://HOST:6379/0) "
        if gateway
        else "fan change events out through Redis at URL (redis://HOST:6379/0) "
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help=f"run as one of several replicas: {shared}and share the request-state key (from {STATE_KEY_ENV}, "
        "else stored in Redis); needs skilldeck[redis]",
    )
    if not gateway:
        parser.add_argument(
            "--settle",
            metavar="SECONDS",
            type=float,
            default=None,
            help="with --redis: how long a replica gathers the change events of all replicas after telling its "
            "listeners the first at once, before telling each one gathered once more, so an edit to a folder "
            "several replicas watch is announced twice, not once per replica "
            "(default 0.5; raise it when the replicas' watchers poll a network folder)",
        )


@dataclass(frozen=True)
class Replicas:
    """What a server command runs with: the shared bus (``None``: in process) and request-state keys."""

    bus: RedisSubscriptionBus | None = None
    state_keys: list[str] | None = None
    redis_url: str | None = None
    ring: KeyRing | None = None
    """With ``--redis`` and no ``SKILLDECK_STATE_KEY``: the keys that seal and unseal ``requestState``."""
    name: str = ""

    def start_note(self) -> str:
        """What a start line says of replication: `` (replica 'NAME', Redis HOST:PORT/DB)``; empty without ``--redis``.

        The URL is shown without its user name or password.
        """
        if self.redis_url is None:
            return ""
        parts = urlsplit(self.redis_url)
        where = parts.path if parts.scheme == "unix" else f"{parts.hostname or 'localhost'}:{parts.port or 6379}"
        db = parts.path.strip("/") if parts.scheme != "unix" else ""
        return f" (replica {self.name!r}, Redis {where}{'/' + db if db else ''})"

    async def around(self, serve: Callable[[], Awaitable[None]]) -> None:
        """Run ``serve()`` with the bus connected (when there is one); a Redis out of reach stops it here."""
        async with self.keys_in_step():
            if self.bus is None:
                await serve()
                return
            async with self.bus:
                await serve()

    @asynccontextmanager
    async def keys_in_step(self, every: float = KEY_SYNC_SECONDS) -> AsyncIterator[None]:
        """While the block runs, keep :attr:`ring` in step with the other replicas' keys (when there is one)."""
        if self.ring is None or self.redis_url is None:
            yield
            return
        import redis.asyncio as aioredis

        from skilldeck.serving._api import sync_state_keys

        client = aioredis.Redis.from_url(self.redis_url, socket_connect_timeout=2.0, socket_timeout=2.0)
        ring, name = self.ring, self.name

        async def follow() -> None:
            while True:
                try:
                    await sync_state_keys(client, name, ring)
                except Exception as exc:  # Redis out of reach: the bus and the store say so; try again
                    logger.debug("could not keep the request-state keys in step: %s", exc)
                await anyio.sleep(every)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(follow)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()


def replica_setup(redis_url: str | None, name: str, *, bus: bool = True, settle: float | None = None) -> Replicas:
    """The bus and keys for ``--redis URL`` (or none), for the server called ``name``.

    Without ``bus`` no change-event bus is made (the gateway: each replica hears its upstreams itself).
    ``settle`` is the bus's gathering window in seconds (``None``: its default).

    Raises:
        UsageError: the ``redis`` extra is missing, the URL is not a Redis URL, the key in
            ``SKILLDECK_STATE_KEY`` is shorter than 32 characters, or ``settle`` is given without
            ``redis_url`` or outside 0–60 seconds.
        ServeError: Redis cannot be reached to read or store the shared key.
    """
    env_key = os.environ.get(STATE_KEY_ENV) or None
    if env_key is not None and len(env_key.encode()) < 32:
        raise UsageError(
            f"{STATE_KEY_ENV} must hold at least 32 bytes of secret randomness; "
            'make one with: python -c "import secrets; print(secrets.token_hex(32))"'
        )
    if settle is not None and redis_url is None:
        raise UsageError("--settle needs --redis (it is how long a replica gathers the other replicas' change events)")
    if redis_url is None:
        return Replicas(state_keys=[env_key] if env_key else None)
    if len(redis_url) > MAX_URL or not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise UsageError(f"--redis takes a redis://HOST:PORT/DB (or rediss://, unix://) URL, got {redis_url[:80]!r}")
    try:
        import redis.asyncio  # noqa: F401 - only to say what is missing now rather than at the first connection
    except ImportError:
        raise UsageError("--redis needs the redis client: pip install 'skilldeck[redis]'") from None
    from skilldeck.serving._api import MAX_SETTLE, KeyRing, RedisSubscriptionBus, shared_state_key

    gathering = {} if settle is None else {"settle": settle}
    try:
        shared = RedisSubscriptionBus(redis_url, channel=f"skilldeck:{name}:events", **gathering) if bus else None
    except ValueError:  # the bus's own bound on its window
        raise UsageError(f"--settle takes 0 to {MAX_SETTLE:g} seconds, got {settle:g}") from None
    if env_key is not None:
        return Replicas(bus=shared, state_keys=[env_key], redis_url=redis_url, name=name)
    ring = KeyRing(anyio.run(shared_state_key, redis_url, f"skilldeck:{name}:state-key"))
    return Replicas(bus=shared, redis_url=redis_url, ring=ring, name=name)
