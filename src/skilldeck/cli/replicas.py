"""``--redis``: what ``serve`` and ``gateway`` replicas behind a load balancer share (see docs/deploy.md).

Replicas share two things and nothing else: the change-event bus (Redis pub/sub, so a change on
one replica reaches every replica's ``subscriptions/listen`` streams) and the key that seals
multi-round-trip ``requestState`` (so a follow-up round may land on any replica). The key comes
from ``SKILLDECK_STATE_KEY`` when set (with or without ``--redis``), else from Redis, where the
first replica to start stores a random one. The server name (``--name``) is the sealed state's
audience and the channel's namespace: replicas of one service must use the same name.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from skilldeck.errors import UsageError

if TYPE_CHECKING:
    from skilldeck.server.redis_bus import RedisSubscriptionBus

__all__ = ["Replicas", "add_replica_arguments", "replica_setup"]

STATE_KEY_ENV = "SKILLDECK_STATE_KEY"
MAX_URL = 2048


def add_replica_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="run as one of several replicas: fan change events out through Redis at URL (redis://HOST:6379/0) "
        f"and share the request-state key (from {STATE_KEY_ENV}, else stored in Redis); needs skilldeck[redis]",
    )


@dataclass(frozen=True)
class Replicas:
    """What a server command runs with: the shared bus (``None``: in process) and request-state keys."""

    bus: RedisSubscriptionBus | None = None
    state_keys: list[str] | None = None
    redis_url: str | None = None

    async def around(self, serve: Callable[[], Awaitable[None]]) -> None:
        """Run ``serve()`` with the bus connected (when there is one); a Redis out of reach stops it here."""
        if self.bus is None:
            await serve()
            return
        async with self.bus:
            await serve()


def replica_setup(redis_url: str | None, name: str, *, bus: bool = True) -> Replicas:
    """The bus and keys for ``--redis URL`` (or none), for the server called ``name``.

    Without ``bus`` no change-event bus is made (the gateway: each replica hears its upstreams itself).

    Raises:
        UsageError: the ``redis`` extra is missing, the URL is not a Redis URL, or the key in
            ``SKILLDECK_STATE_KEY`` is shorter than 32 characters.
        ServeError: Redis cannot be reached to read or store the shared key.
    """
    env_key = os.environ.get(STATE_KEY_ENV) or None
    if env_key is not None and len(env_key.encode()) < 32:
        raise UsageError(
            f"{STATE_KEY_ENV} must hold at least 32 bytes of secret randomness; "
            'make one with: python -c "import secrets; print(secrets.token_hex(32))"'
        )
    if redis_url is None:
        return Replicas(state_keys=[env_key] if env_key else None)
    if len(redis_url) > MAX_URL or not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise UsageError(f"--redis takes a redis://HOST:PORT/DB (or rediss://, unix://) URL, got {redis_url[:80]!r}")
    try:
        import redis.asyncio  # noqa: F401 - only to say what is missing now rather than at the first connection
    except ImportError:
        raise UsageError("--redis needs the redis client: pip install 'skilldeck[redis]'") from None
    from skilldeck.server.redis_bus import RedisSubscriptionBus, shared_state_key

    key = env_key or anyio.run(shared_state_key, redis_url, f"skilldeck:{name}:state-key")
    shared = RedisSubscriptionBus(redis_url, channel=f"skilldeck:{name}:events") if bus else None
    return Replicas(bus=shared, state_keys=[key], redis_url=redis_url)
