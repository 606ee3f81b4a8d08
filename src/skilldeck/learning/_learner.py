"""A process's view of the usage ledger: each audience's uses in memory, kept in step with its store.

:class:`Learner` holds a :class:`~skilldeck.learning._ledger.Ledger` per audience it has met,
read from a :class:`~skilldeck.learning._stores.LedgerStore`, and the version it read. Before a
decision reads an audience's questions the owner calls :meth:`Learner.refresh` (one version read:
another replica's use, or ``skilldeck history --clear``, is read in when the version moved);
:meth:`Learner.record` computes a change on the ledger in memory and has the store apply it on the
version it was computed on, reading the audience again and retrying when another writer came first.
A use the store refuses because it holds its most audiences (:class:`~skilldeck.learning._stores.LedgerFull`)
is not recorded, and logged at most once an hour with how many were refused.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable

from skilldeck.learning._ledger import CardRef, Change, Ledger, LedgerLimits
from skilldeck.learning._stores import LedgerFull, LedgerStore
from skilldeck.select import Taught

__all__ = ["Learner"]

MAX_AUDIENCES = 32
"""Audiences whose ledgers are held in memory at once (the least recently used is read again when needed)."""
RETRIES = 5
"""Times a change is computed again when another writer changed the audience first."""
WARN_EVERY = 3_600.0
"""Seconds between two warnings that uses of a new audience were refused (the store holds its most audiences)."""

logger = logging.getLogger(__name__)


class Learner:
    """Each audience's ledger in memory, in step with ``store`` (see the module docs).

    Args:
        store: where every audience's uses are kept.
        limits: the bounds of each audience's ledger.
        clock: the time of each use, in seconds since the epoch.
        max_audiences: audiences held in memory at once (least recently used out first).
    """

    def __init__(
        self,
        store: LedgerStore,
        *,
        limits: LedgerLimits | None = None,
        clock: Callable[[], float] = time.time,
        max_audiences: int = MAX_AUDIENCES,
    ) -> None:
        if max_audiences < 1:
            raise ValueError("max_audiences must be at least 1")
        self.store = store
        self.limits = limits or LedgerLimits()
        self.clock = clock
        self.max_audiences = max_audiences
        self._ledgers: OrderedDict[str, tuple[int, Ledger]] = OrderedDict()
        self.refused = 0
        """Uses refused because the store held its most audiences (:class:`~skilldeck.learning._stores.LedgerFull`)."""
        self._refused_told = 0
        self._warned: float | None = None
        self.failures: dict[str, int] = {}
        """Per operation (``read``, ``write``), how many times the store failed it (see :meth:`failed`)."""
        self._failure_told: dict[str, tuple[float, int]] = {}

    def callers(self, audience: str) -> int:
        """How many distinct callers the audience's uses have, as last read."""
        found = self._ledgers.get(audience)
        return found[1].callers if found is not None else 0

    def questions(self, audience: str) -> dict[CardRef, Taught]:
        """Per card, the audience's past questions as last read (newest first; none too old)."""
        found = self._ledgers.get(audience)
        return found[1].questions(self.clock()) if found is not None else {}

    def questions_of(self, audience: str, card: CardRef) -> Taught:
        """The card's past questions in the audience as last read (newest first; none too old)."""
        found = self._ledgers.get(audience)
        return found[1].questions_of(card, self.clock()) if found is not None else Taught()

    async def refresh(self, audience: str) -> bool:
        """Read the audience in again if its version moved since it was read; whether it did."""
        found = self._ledgers.get(audience)
        if found is not None and found[0] == await self.store.version(audience):
            self._ledgers.move_to_end(audience)
            return False
        version, uses = await self.store.load(audience)
        self._ledgers[audience] = (version, Ledger(uses, self.limits))
        self._ledgers.move_to_end(audience)
        while len(self._ledgers) > self.max_audiences:
            self._ledgers.popitem(last=False)
        return True

    async def record(self, audience: str, question: str, card: str, caller: str, origin: str = "") -> Change:
        """Record one use of ``card`` of the upstream ``origin``; the change to the ledger (empty, so false,
        when nothing changed: a caller over its share of the card), whose uses name the cards whose questions moved."""
        return await self._change(audience, lambda ledger: ledger.add(question, card, caller, self.clock(), origin))

    async def adopt(self, audience: str, adopted: Callable[[CardRef], CardRef | None]) -> bool:
        """Give the audience's uses recorded before origins were kept their origin (:meth:`Ledger.adopt`); whether any moved."""
        return bool(await self._change(audience, lambda ledger: ledger.adopt(adopted)))

    async def prune(self, audience: str, listed: Callable[[CardRef], bool]) -> bool:
        """Drop the audience's uses of cards ``listed`` says are gone (and those too old); whether any went."""
        return bool(await self._change(audience, lambda ledger: ledger.prune(listed, self.clock())))

    def failed(self, what: str, exc: BaseException) -> None:
        """The store could not ``what`` (``read``, ``write``): the use is dropped, serving goes on. Said in one
        log line the first time, then at most once every :data:`WARN_EVERY` seconds with how many since."""
        self.failures[what] = self.failures.get(what, 0) + 1
        now = time.monotonic()
        told = self._failure_told.get(what)
        if told is not None and now - told[0] < WARN_EVERY:
            return
        since = self.failures[what] - (told[1] if told is not None else 0)
        self._failure_told[what] = (now, self.failures[what])
        logger.warning(
            "the usage ledger at %s cannot be %s (%d time%s since the last warning): %s; serving goes on "
            "without it (`skilldeck history` says what is wrong with it)",
            self.store.where,
            "read" if what == "read" else "written",
            since,
            "" if since == 1 else "s",
            str(exc)[:300],
        )

    def _refused(self, full: LedgerFull) -> None:
        """A use of a new audience was refused: say so at most once every :data:`WARN_EVERY` seconds."""
        self.refused += 1
        now = time.monotonic()
        if self._warned is not None and now - self._warned < WARN_EVERY:
            return
        self._warned = now
        logger.warning("%s (%d refused since the last warning)", full, self.refused - self._refused_told)
        self._refused_told = self.refused

    async def _change(self, audience: str, change_of: Callable[[Ledger], Change]) -> Change:
        for _ in range(RETRIES):
            await self.refresh(audience)
            version, ledger = self._ledgers[audience]
            change = change_of(ledger)  # the ledger in memory has the change already
            if not change:
                return change
            try:
                applied = await self.store.apply(audience, change, version)
            except LedgerFull as full:
                self._ledgers.pop(audience, None)  # the change is in memory only: read the audience again
                self._refused(full)
                return Change()
            except BaseException:
                self._ledgers.pop(audience, None)  # the change is in memory, maybe not in the store: read it again
                raise
            if applied is not None:
                self._ledgers[audience] = (applied, ledger)
                return change
            del self._ledgers[audience]  # another writer came first: read the audience again
        return Change()
