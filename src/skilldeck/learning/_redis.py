"""The usage ledger in Redis, shared by gateway replicas (``skilldeck gateway --redis``, ``skilldeck[redis]``).

Every replica records the uses it sees here, and reads every audience's uses back when its
version changed, so each replica learns from the uses of all. Per audience (named by a hash, so
a tenant's length never reaches Redis):

* ``<prefix>:uses:<audience hash>``: a hash, field ``["<card>","<question>","<origin>"]`` (a use recorded
  before origins were kept: ``["<card>","<question>"]``, read as origin ``""``) -> ``["<caller>",<time>]``;
* ``<prefix>:version:<audience hash>``: the audience's version, raised by every change;
* ``<prefix>:audiences``: audience hash -> the audience's name (what ``skilldeck history`` lists),
  for the audiences holding uses: at most ``max_audiences`` (a use of a new audience beyond is
  refused, see :mod:`skilldeck.learning._stores`).

A change is one script run on the Redis server that applies it only when the audience is still at
the version its writer read (see :mod:`skilldeck.learning._stores`). What is read back is checked:
a field or value of the wrong shape or length is left out, never trusted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import anyio

from skilldeck._redis import RedisConnection, redacted_url
from skilldeck.learning._ledger import Change, LedgerLimits, Use
from skilldeck.learning._stores import MAX_AUDIENCES, LedgerFull

__all__ = ["RedisLedgerStore"]

# KEYS: uses, version, audiences.
# ARGV: base version, removed count, audience hash, audience, max audiences, removed..., field/value...
_APPLY = """
local v = tonumber(redis.call('GET', KEYS[2]) or '0')
if v ~= tonumber(ARGV[1]) then return -1 end
local n = tonumber(ARGV[2])
if #ARGV > 5 + n and redis.call('HEXISTS', KEYS[3], ARGV[3]) == 0
    and redis.call('HLEN', KEYS[3]) >= tonumber(ARGV[5]) then
  return -2
end
for i = 6, 5 + n do redis.call('HDEL', KEYS[1], ARGV[i]) end
for i = 6 + n, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
if redis.call('HLEN', KEYS[1]) > 0 then
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
else
  redis.call('HDEL', KEYS[3], ARGV[3])
end
return redis.call('INCR', KEYS[2])
"""

# KEYS: uses, version, audiences. ARGV: audience hash, filter: JSON {"cards": [...] or null, "questions": [...] or null}
_CLEAR = """
local gone = 0
local filter = cjson.decode(ARGV[2])
local cards, questions = nil, nil
if type(filter.cards) == 'table' then
  cards = {}
  for _, c in ipairs(filter.cards) do cards[c] = true end
end
if type(filter.questions) == 'table' then
  questions = {}
  for _, q in ipairs(filter.questions) do questions[q] = true end
end
if cards == nil and questions == nil then
  gone = redis.call('HLEN', KEYS[1])
  redis.call('DEL', KEYS[1])
else
  local fields = redis.call('HKEYS', KEYS[1])
  for _, f in ipairs(fields) do
    local ok, pair = pcall(cjson.decode, f)
    if ok and type(pair) == 'table' and (cards == nil or cards[pair[1]]) and (questions == nil or questions[pair[2]]) then
      redis.call('HDEL', KEYS[1], f)
      gone = gone + 1
    end
  end
end
if redis.call('HLEN', KEYS[1]) == 0 then redis.call('HDEL', KEYS[3], ARGV[1]) end
redis.call('INCR', KEYS[2])
return gone
"""

_LOAD = """
return {redis.call('GET', KEYS[2]) or '0', redis.call('HGETALL', KEYS[1])}
"""


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class RedisLedgerStore(RedisConnection):
    """The :class:`~skilldeck.learning._stores.LedgerStore` of gateway replicas (see the module docs).

    Args:
        url: a ``redis://`` (or ``rediss://``, ``unix://``) URL.
        prefix: the namespace of this gateway's keys (``skilldeck:<name>:ledger``): replicas of one
            gateway share it.
        limits: the ledger's bounds, to check what is read back against.
        timeout: seconds one operation may take.
        max_audiences: audiences with uses held at most (a new one beyond:
            :class:`~skilldeck.learning._stores.LedgerFull`; see :mod:`skilldeck.learning._stores`).
    """

    purpose = "the usage ledger"
    fix = "start Redis, fix --redis, or pass --no-learning"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "skilldeck:gateway:ledger",
        limits: LedgerLimits | None = None,
        timeout: float = 2.0,
        max_audiences: int = MAX_AUDIENCES,
    ) -> None:
        if max_audiences < 1:
            raise ValueError("max_audiences must be at least 1")
        self.max_audiences = max_audiences
        self.url = url
        self.prefix = prefix
        self.limits = limits or LedgerLimits()
        self.timeout = timeout
        self._redis = None

    @property
    def where(self) -> str:
        return f"{redacted_url(self.url)} (keys {self.prefix}:*)"

    def _keys(self, audience: str) -> tuple[list[str], str]:
        member = hashlib.sha256(audience.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        keys = [f"{self.prefix}:uses:{member}", f"{self.prefix}:version:{member}", f"{self.prefix}:audiences"]
        return keys, member

    async def _run(self, script: str, keys: list[str], args: Sequence[Any]) -> Any:
        if self._redis is None:
            raise RuntimeError("RedisLedgerStore used before `async with store:` started it")
        with anyio.fail_after(self.timeout):
            return await self._redis.eval(script, len(keys), *keys, *args)

    async def version(self, audience: str) -> int:
        if self._redis is None:
            raise RuntimeError("RedisLedgerStore used before `async with store:` started it")
        keys, _ = self._keys(audience)
        with anyio.fail_after(self.timeout):
            found = await self._redis.get(keys[1])
        return int(found or 0)

    def _use(self, field: str, value: str) -> Use | None:
        """A use read back, or ``None`` when the entry is not one a gateway wrote."""
        limit = self.limits.max_question_chars + 1_024
        if len(field) > limit or len(value) > 1_024:
            return None
        try:
            parts = json.loads(field)
            caller, at = json.loads(value)
        except (ValueError, TypeError):
            return None
        if not isinstance(parts, list) or len(parts) not in (2, 3):
            return None
        card, question, origin = (*parts, "") if len(parts) == 2 else parts
        if not all(isinstance(x, str) for x in (card, question, caller, origin)) or not isinstance(at, int | float):
            return None
        return Use(question, card, caller, float(at), origin)

    async def load(self, audience: str) -> tuple[int, list[Use]]:
        keys, _ = self._keys(audience)
        version, found = await self._run(_LOAD, keys, [])
        pairs = [_text(x) for x in found]
        uses = [u for f, v in zip(pairs[0::2], pairs[1::2], strict=False) if (u := self._use(f, v)) is not None]
        return int(_text(version)), uses

    @staticmethod
    def _field(use: Use) -> str:
        parts = [use.card, use.question, use.origin] if use.origin else [use.card, use.question]
        return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))

    async def apply(self, audience: str, change: Change, base: int) -> int | None:
        keys, member = self._keys(audience)
        args: list[Any] = [base, len(change.removed), member, audience, self.max_audiences]
        args += [self._field(u) for u in change.removed]
        for use in change.written:
            args += [self._field(use), json.dumps([use.caller, use.at], ensure_ascii=False, separators=(",", ":"))]
        version = int(await self._run(_APPLY, keys, args))
        if version == -2:
            raise LedgerFull(audience, self.max_audiences, self.where)
        return None if version == -1 else version

    async def audiences(self) -> list[str]:
        if self._redis is None:
            raise RuntimeError("RedisLedgerStore used before `async with store:` started it")
        with anyio.fail_after(self.timeout):
            found = await self._redis.hvals(f"{self.prefix}:audiences")
        return sorted(_text(a) for a in found)

    async def clear(
        self, audience: str, cards: Sequence[str] | None = None, questions: Sequence[str] | None = None
    ) -> int:
        keys, member = self._keys(audience)
        if (cards is not None and not cards) or (questions is not None and not questions):
            return 0
        chosen = {
            "cards": None if cards is None else list(cards),
            "questions": None if questions is None else list(questions),
        }
        return int(await self._run(_CLEAR, keys, [member, json.dumps(chosen, ensure_ascii=False)]))
