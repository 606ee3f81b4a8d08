"""The request-state keys of replicas that share Redis, kept in step when Redis forgets them.

A multi-round-trip request's ``requestState`` is sealed by the replica that answered the first round
and must unseal on whichever replica takes the next. Without ``SKILLDECK_STATE_KEY`` the replicas
agree on a key through Redis: the first to start stores a random one (``SET NX``), the others read it.
Redis may restart empty; a replica started afterwards then stores a key of its own while the running
ones keep theirs, and state sealed by one is refused by the other, silently.

So each replica holds a :class:`KeyRing`: it seals with its own key and unseals with every key of
its service it has seen. :func:`sync_state_keys`, run every few seconds, puts the replica's key back
(``SET NX`` of the agreed key, and the key in the set ``skilldeck:<name>:state-keys``), reads every
member of that set into the ring, and says in one line when the agreed key is not this replica's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from mcp.server.request_state import AESGCMRequestStateCodec

__all__ = ["MAX_RING_KEYS", "MIN_KEY_BYTES", "KeyRing", "sync_state_keys"]

logger = logging.getLogger(__name__)

MAX_RING_KEYS: Final = 16
"""Keys a ring holds at most: its own and the 15 most recently seen others."""
MIN_KEY_BYTES: Final = 32


class KeyRing:
    """A request-state codec (the SDK's AES-256-GCM) that seals with ``own`` and unseals with every key accepted."""

    def __init__(self, own: str) -> None:
        if len(own.encode()) < MIN_KEY_BYTES:
            raise ValueError(f"a request-state key has at least {MIN_KEY_BYTES} bytes")
        self.own = own
        self.others: list[str] = []
        self._codec = AESGCMRequestStateCodec([own])

    def seal(self, payload: bytes) -> str:
        return self._codec.seal(payload)

    def unseal(self, token: str) -> bytes:
        return self._codec.unseal(token)

    def accept(self, keys: Iterable[str]) -> list[str]:
        """Unseal with ``keys`` too (too short ones are passed over); returns those that are new."""
        new = [k for k in dict.fromkeys(keys) if k != self.own and k not in self.others and len(k.encode()) >= 32]
        if new:
            self.others = [*self.others, *new][-(MAX_RING_KEYS - 1) :]
            self._codec = AESGCMRequestStateCodec([self.own, *self.others])
        return new


async def sync_state_keys(client: Any, name: str, ring: KeyRing) -> list[str]:
    """One round of keeping ``ring`` in step with the other replicas of ``name`` through Redis (see the module docs).

    ``client`` is a ``redis.asyncio`` client. Returns the keys newly accepted for unsealing.
    """
    agreed, members = f"skilldeck:{name}:state-key", f"skilldeck:{name}:state-keys"
    await client.set(agreed, ring.own, nx=True)  # back in place after Redis restarted empty
    await client.sadd(members, ring.own)
    seen = [m.decode("ascii", "replace") if isinstance(m, bytes) else str(m) for m in await client.smembers(members)]
    current = await client.get(agreed)
    new = ring.accept(seen[: MAX_RING_KEYS * 4])
    if new:
        stored = current.decode("ascii", "replace") if isinstance(current, bytes) else ""
        logger.warning(
            "another replica of %r seals request state with a key this one did not start with "
            "(Redis was emptied while replicas ran?); accepted for unsealing%s",
            name,
            "" if stored == ring.own else "; this replica still seals with its own key",
        )
    return new
