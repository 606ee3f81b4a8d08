"""Activations in Redis, shared by gateway replicas behind a load balancer (``skilldeck[redis]``).

A client may ``load`` through one replica and ``call`` through another. Each replica keeps its own
:class:`~skilldeck.gateway._activation.ActivationTable` (the verified skills it loaded itself) and
writes what a client loaded to Redis; a replica that meets a client it has not served reads the
record back. Per client key (hashed, so its length never reaches Redis) one hash holds:

* ``s:<skill id>`` -> the ``SKILL.md`` digest the loading replica verified;
* ``t:["<label>","<tool>"]`` -> ``""`` for each active tool.

With a usage ledger (:mod:`skilldeck.learning`) the client's path from a question to a successful
call is kept beside it, so a ``find``, a ``load`` and a ``call`` taken by three replicas still
teach the ledger, once:

* ``<record>:q``: a list of the last :data:`~skilldeck.gateway._activation.FINDS_KEPT`
  ``["<question>",["<card id>",...]]`` (each question cut to :data:`MAX_QUESTION_CHARS`);
* ``<record>:p``: a hash, card id -> ``["<question>",[["<label>","<tool>"],...]]``, the cards
  loaded after a question that showed them, at most
  :data:`~skilldeck.gateway._activation.PENDING_KEPT` (``<record>:o`` orders them, oldest out first),
  each naming as many of the card's tools as fit in :data:`MAX_PENDING_CHARS`.

So a client's path holds at most about 1.3 MB, beside its activation's record.

The replica whose call of one of a pending card's tools succeeds takes the entry out in the same
script that reads it, so no other replica records it again.

Bounds, as for the in-process table: at most ``max_clients`` records (an index sorted by last use;
beyond it the least recently used record, and its path, is deleted), at most ``max_entries`` entries
in one record, every field and value of bounded length, and every record expires ``ttl`` seconds
after its last use. Each operation is one script run on the Redis server, so two replicas writing
for one client at once cannot lose each other's entries or overrun a bound.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import anyio

from skilldeck._redis import RedisConnection
from skilldeck.errors import GateRefused
from skilldeck.gateway._activation import FINDS_KEPT, PENDING_KEPT, SharedActivation
from skilldeck.gateway._meta import MAX_FIND_LIMIT, MAX_ID_CHARS

__all__ = ["DEFAULT_TTL", "MAX_ENTRIES", "MAX_PENDING_CHARS", "MAX_QUESTION_CHARS", "RedisActivationStore"]

DEFAULT_TTL: Final = 86_400
"""Seconds a client's shared activation lives after its last use."""
MAX_ENTRIES: Final = 1_024
"""Skills and tools one client may have loaded at once in the shared store."""
MAX_FIELD_CHARS: Final = 2 * MAX_ID_CHARS + 16
MAX_VALUE_CHARS: Final = 128
MAX_QUESTION_CHARS: Final = 2_000
"""A question kept on a client's shared path is cut to this many characters (the ledger keeps fewer)."""
MAX_PENDING_CHARS: Final = 16_384
"""The tools a pending card's entry on a shared path names, at most (as JSON; a call of a tool beyond teaches nothing)."""

# the record's key is last used now: index it, and delete the least recently used beyond max clients
# (ARGV[1..5]: ttl, max clients, now, record prefix, member; KEYS[2]: the index)
_TOUCH = """
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[2])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #old, 2 do
    local gone = ARGV[4] .. old[i]
    redis.call('DEL', gone, gone .. ':q', gone .. ':p', gone .. ':o')
  end
end
"""

# KEYS: record, index, questions. ARGV: ttl, max clients, now, record prefix, member, kept, question entry.
_FOUND = (
    """
redis.call('RPUSH', KEYS[3], ARGV[7])
redis.call('LTRIM', KEYS[3], -tonumber(ARGV[6]), -1)
redis.call('EXPIRE', KEYS[3], ARGV[1])
"""
    + _TOUCH
)

# KEYS: record, index, questions, pending, order.
# ARGV: ttl, max clients, now, record prefix, member, kept, then card / tools (JSON) pairs.
_LOADED = (
    """
local finds = {}
local asked = redis.call('LRANGE', KEYS[3], 0, -1)
for i = #asked, 1, -1 do
  local ok, e = pcall(cjson.decode, asked[i])
  if ok and type(e) == 'table' and type(e[1]) == 'string' and type(e[2]) == 'table' then finds[#finds + 1] = e end
end
local followed = 0
for i = 7, #ARGV, 2 do
  local question, place = nil, nil
  for _, e in ipairs(finds) do
    for j, shown in ipairs(e[2]) do
      if shown == ARGV[i] then
        if place == nil or j < place then question, place = e[1], j end
        break
      end
    end
  end
  if question then
    redis.call('HSET', KEYS[4], ARGV[i], '[' .. cjson.encode(question) .. ',' .. ARGV[i + 1] .. ']')
    local top = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')
    redis.call('ZADD', KEYS[5], (#top > 0) and (tonumber(top[2]) + 1) or 1, ARGV[i])
    followed = followed + 1
  end
end
if followed > 0 then
  local over = redis.call('ZCARD', KEYS[5]) - tonumber(ARGV[6])
  if over > 0 then
    local old = redis.call('ZPOPMIN', KEYS[5], over)
    for i = 1, #old, 2 do redis.call('HDEL', KEYS[4], old[i]) end
  end
  redis.call('EXPIRE', KEYS[4], ARGV[1])
  redis.call('EXPIRE', KEYS[5], ARGV[1])
end
"""
    + _TOUCH
    + """
return followed
"""
)

# KEYS: pending, order. ARGV: label, tool. Returns question / card pairs, each taken out.
_SUCCEEDED = """
local done = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local ok, e = pcall(cjson.decode, all[i + 1])
  if ok and type(e) == 'table' and type(e[1]) == 'string' and type(e[2]) == 'table' then
    for _, t in ipairs(e[2]) do
      if type(t) == 'table' and t[1] == ARGV[1] and t[2] == ARGV[2] then
        done[#done + 1] = e[1]
        done[#done + 1] = all[i]
        redis.call('HDEL', KEYS[1], all[i])
        redis.call('ZREM', KEYS[2], all[i])
        break
      end
    end
  end
end
return done
"""

# KEYS: record, index. ARGV: ttl, max clients, now, record prefix, member, max entries, field/value pairs...
_ADD = (
    """
local n = redis.call('HLEN', KEYS[1])
for i = 7, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then n = n + 1 end
end
if n > tonumber(ARGV[6]) then return -1 end
for i = 7, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
"""
    + _TOUCH
    + """
return n
"""
)

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

    def _touch(self, member: str) -> list[Any]:
        """The arguments every script that writes a record starts with (see ``_TOUCH``)."""
        return [self.ttl, self.max_clients, time.time(), f"{self.prefix}:", member]

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
        args = [*self._touch(member), self.max_entries, *fields]
        if await self._run(_ADD, [record, index], args) == -1:
            raise GateRefused(
                f"this client has {self.max_entries} skills and tools loaded, the most the gateway keeps; "
                "start a new conversation (another dev.skilldeck/conversation id) to load more"
            )

    async def found(self, key: str, question: str, cards: Sequence[str]) -> None:
        shown = [c for c in cards if len(c) <= MAX_ID_CHARS][:MAX_FIND_LIMIT]
        entry = json.dumps([question[:MAX_QUESTION_CHARS], shown], ensure_ascii=False, separators=(",", ":"))
        record, index, member = self._keys(key)
        await self._run(_FOUND, [record, index, f"{record}:q"], [*self._touch(member), FINDS_KEPT, entry])

    async def loaded(self, key: str, cards: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        pairs: list[str] = []
        for card, tools in cards.items():
            named, size = [], 2
            for label, tool in tools:  # as many of the card's tools as fit in MAX_PENDING_CHARS
                size += len(json.dumps([label, tool], ensure_ascii=False)) + 1
                if size > MAX_PENDING_CHARS:
                    break
                named.append([label, tool])
            if named and len(card) <= MAX_ID_CHARS:
                pairs += [card, json.dumps(named, ensure_ascii=False, separators=(",", ":"))]
        if not pairs:
            return
        record, index, member = self._keys(key)
        keys = [record, index, f"{record}:q", f"{record}:p", f"{record}:o"]
        await self._run(_LOADED, keys, [*self._touch(member), PENDING_KEPT, *pairs])

    async def succeeded(self, key: str, tool: tuple[str, str]) -> list[tuple[str, str]]:
        record, _, _ = self._keys(key)
        found = await self._run(_SUCCEEDED, [f"{record}:p", f"{record}:o"], list(tool))
        texts = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in found or ()]
        return [
            (question, card)
            for question, card in zip(texts[0::2], texts[1::2], strict=False)
            if len(question) <= MAX_QUESTION_CHARS and len(card) <= MAX_ID_CHARS  # written by a gateway, or left out
        ]
