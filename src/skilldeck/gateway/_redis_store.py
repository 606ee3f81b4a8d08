"""Activations in Redis, shared by gateway replicas behind a load balancer (``skilldeck[redis]``).

A client may ``load`` through one replica and ``call`` through another. Each replica keeps its own
:class:`~skilldeck.gateway._activation.ActivationTable` (the verified skills it loaded itself) and
writes what a client loaded to Redis; a replica that meets a client it has not served reads the
record back. Per client key (hashed, so its length never reaches Redis) one hash holds:

* ``s:<skill id>`` -> the ``SKILL.md`` digest the loading replica verified;
* ``t:["<label>","<tool>"]`` -> ``""`` for each active tool.

Bounds, as for the in-process table: at most ``max_clients`` records (an index sorted by last use;
beyond it the least recently used record is deleted), at most ``max_entries`` entries in one
record, every field and value of bounded length, and every record expires ``ttl`` seconds after
its last use. Each operation is one script run on the Redis server, so two replicas writing for
one client at once cannot lose each other's entries or overrun a bound.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import anyio

from skilldeck.errors import GateRefused
from skilldeck.gateway._activation import SharedActivation
from skilldeck.gateway._meta import MAX_ID_CHARS
from skilldeck.server._redis_bus import RedisConnection

__all__ = ["DEFAULT_TTL", "MAX_ENTRIES", "RedisActivationStore"]

DEFAULT_TTL: Final = 86_400
"""Seconds a client's shared activation lives after its last use."""
MAX_ENTRIES: Final = 1_024
"""Skills and tools one client may have loaded at once in the shared store."""
MAX_FIELD_CHARS: Final = 2 * MAX_ID_CHARS + 16
MAX_VALUE_CHARS: Final = 128

# KEYS: record, index. ARGV: ttl, max entries, max clients, now, record prefix, member, field/value pairs...
_ADD = """
local n = redis.call('HLEN', KEYS[1])
for i = 7, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then n = n + 1 end
end
if n > tonumber(ARGV[2]) then return -1 end
for i = 7, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[3])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #old, 2 do redis.call('DEL', ARGV[5] .. old[i]) end
end
return n
"""

# KEYS: record, index. ARGV: ttl, now, member.
_FETCH = """
local found = redis.call('HGETALL', KEYS[1])
if #found > 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
end
return found
"""


class RedisActivationStore(RedisConnection):
    """The :class:`~skilldeck.gateway._activation.ActivationStore` of gateway replicas (see the module docs).

    Args:
        url: a ``redis://`` (or ``rediss://``, ``unix://``) URL.
        prefix: the namespace of this gateway's keys (``skilldeck:<name>:activation``): replicas of
            one gateway share it, two gateways on one Redis need different ones.
        ttl: seconds a record lives after its last use.
        max_clients: records kept at once (least recently used deleted first).
        max_entries: skills and tools in one record.
        timeout: seconds one operation may take before it counts as failed.
    """

    purpose = "shared activations"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "skilldeck:gateway:activation",
        ttl: int = DEFAULT_TTL,
        max_clients: int = 100_000,
        max_entries: int = MAX_ENTRIES,
        timeout: float = 2.0,
    ) -> None:
        if ttl < 1 or max_clients < 1 or max_entries < 1:
            raise ValueError("ttl, max_clients and max_entries must each be at least 1")
        self.url = url
        self.prefix = prefix
        self.ttl = ttl
        self.max_clients = max_clients
        self.max_entries = max_entries
        self.timeout = timeout
        self._redis = None

    def _keys(self, key: str) -> tuple[str, str, str]:
        member = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return f"{self.prefix}:{member}", f"{self.prefix}:index", member

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        if self._redis is None:
            raise RuntimeError("RedisActivationStore used before `async with store:` started it")
        try:
            with anyio.fail_after(self.timeout):
                return await self._redis.eval(script, len(keys), *keys, *args)
        except Exception as exc:
            raise GateRefused(
                f"the gateway cannot reach its shared activations in Redis ({type(exc).__name__}); "
                "nothing was done, try again shortly"
            ) from None

    async def fetch(self, key: str) -> SharedActivation | None:
        record, index, member = self._keys(key)
        found = await self._run(_FETCH, [record, index], [self.ttl, time.time(), member])
        if not found:
            return None
        shared = SharedActivation()
        pairs = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in found]
        for name, value in zip(pairs[0::2], pairs[1::2], strict=False):
            if len(name) > MAX_FIELD_CHARS or len(value) > MAX_VALUE_CHARS:
                continue  # not written by a gateway: never trusted
            if name.startswith("s:"):
                shared.skills[name[2:]] = value
            elif name.startswith("t:"):
                try:
                    label, tool = json.loads(name[2:])
                except (ValueError, TypeError):
                    continue
                if isinstance(label, str) and isinstance(tool, str):
                    shared.tools.append((label, tool))
        return shared

    async def add(self, key: str, skills: Mapping[str, str], tools: Sequence[tuple[str, str]]) -> None:
        fields: list[str] = []
        for skill, digest in skills.items():
            fields += [f"s:{skill}", digest]
        for label, tool in tools:
            fields += ["t:" + json.dumps([label, tool], ensure_ascii=False, separators=(",", ":")), ""]
        if not fields:
            return
        if any(len(f) > MAX_FIELD_CHARS for f in fields[0::2]) or any(len(v) > MAX_VALUE_CHARS for v in fields[1::2]):
            raise GateRefused("a skill or tool id is too long to share between gateway replicas; nothing was loaded")
        record, index, member = self._keys(key)
        args = [self.ttl, self.max_entries, self.max_clients, time.time(), f"{self.prefix}:", member, *fields]
        if await self._run(_ADD, [record, index], args) == -1:
            raise GateRefused(
                f"this client has {self.max_entries} skills and tools loaded, the most the gateway keeps; "
                "start a new conversation (another dev.skilldeck/conversation id) to load more"
            )
