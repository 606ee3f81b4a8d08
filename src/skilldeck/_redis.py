"""A Redis client for what replicas share, opened within a bound and named in its errors (``skilldeck[redis]``).

The change-event bus (:mod:`skilldeck.serving._redis_bus`), the gateway's activation store and the
usage ledger's store each hold one :class:`RedisConnection`; :func:`redacted_url` is how a Redis URL
is shown anywhere (without its password).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, ClassVar, Self

import anyio

from skilldeck.errors import ServeError

__all__ = ["RedisConnection", "connect_redis", "redacted_url"]


def redacted_url(url: str) -> str:
    """``url`` without a password (``redis://:secret@host`` → ``redis://:***@host``)."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not sep or not at:
        return url
    user = credentials.partition(":")[0]
    return f"{scheme}://{user}:***@{host}"


async def connect_redis(url: str, wait: float, purpose: str, fix: str) -> Any:
    """A ``redis.asyncio`` client on ``url`` (connect timeout ``wait``) that answered a ping within ``2 * wait`` seconds.

    Raises:
        ServeError: Redis cannot be reached; the message says it was for ``purpose`` and to ``fix`` it.
    """
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, socket_connect_timeout=wait)
    try:
        with anyio.fail_after(wait * 2):
            await client.ping()
    except Exception as exc:
        await client.aclose()
        raise ServeError(f"cannot reach Redis at {redacted_url(url)} for {purpose}: {exc}; {fix}") from None
    return client


class RedisConnection:
    """A Redis client opened by ``async with`` (:func:`connect_redis`) and closed on exit.

    A subclass sets ``url`` and ``timeout``, and names what it is for (``purpose``) and what to do
    when Redis cannot be reached (``fix``): the :class:`~skilldeck.errors.ServeError` says both.
    """

    purpose: ClassVar[str] = "shared state"
    fix: ClassVar[str] = "start Redis or fix --redis"
    url: str
    timeout: float
    _redis: Any = None

    async def __aenter__(self) -> Self:
        self._redis = await connect_redis(self.url, self.timeout, self.purpose, self.fix)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._redis is not None:
            with anyio.CancelScope(shield=True):
                await self._redis.aclose()
            self._redis = None
