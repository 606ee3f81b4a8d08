"""The usage ledger of one audience: which questions led to a successful use of which card. Pure.

A :class:`Use` is one question whose ``find`` led, in one client's activation, to a ``load`` of a
card and then to a ``call`` of one of that card's tools that came back without ``isError`` (the
gateway decides that; see :mod:`skilldeck.learning`). A :class:`Ledger` holds one audience's uses
and keeps them bounded (:class:`LedgerLimits`):

* per card, at most ``per_card`` questions (newest kept; an exact repeat of a question replaces
  the older entry, so it counts once; the same caller's repeat within ``refresh_after`` seconds
  changes nothing, so an agent asking one question in a loop does not rewrite the store and make
  every ranker read the card again on each call);
* one caller's share of a card's questions is at most half once another caller has taught that
  card too (a caller alone on a card, such as a desktop's only user, teaches it fully);
* a card's questions are *trusted* (:class:`~skilldeck.select.Taught`) when two distinct callers
  or more taught it, or when the audience has a single caller: the ranker lifts trusted questions
  further (``RankConfig.history_trusted_floor``), so one caller among several cannot; callers the
  gateway cannot identify are one caller, :data:`ANONYMOUS`, that is never counted towards trust;
* uses older than ``max_age`` seconds are dropped;
* per audience at most ``max_entries`` uses and ``max_bytes`` of text (oldest dropped first), and a
  question is cut to ``max_question_chars``;
* uses of a card that is no longer listed are dropped when the catalog is indexed again
  (:meth:`Ledger.prune`), by the gateway whose configuration holds the upstream that taught them.

**A use belongs to the upstream that taught it.** Besides the card's id as ``find`` showed it
(``LABEL/NAME``), a use keeps the upstream's *origin*: its identity whatever label a configuration
gives it (a stdio server's command line, an HTTP server's URL:
:attr:`~skilldeck.host.ServerSpec.identity`). A card is one ``(origin, card)`` pair (:data:`CardRef`),
so two gateways on one home, each with its own configuration, share what their upstreams have in
common and never prune what the other's upstreams taught. A use recorded before origins were kept
has the origin ``""`` and is adopted by the first gateway that holds an upstream under its label.

Every change is returned as a :class:`Change` (uses written, uses removed) that a store applies,
so the same rules hold in memory, in SQLite and in Redis. Nothing here does I/O or reads a clock:
the time of every operation is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from skilldeck.select import Taught

__all__ = [
    "ANONYMOUS",
    "CardRef",
    "Change",
    "Ledger",
    "LedgerLimits",
    "Use",
    "balanced",
    "history_by_key",
    "normalise_question",
]

DAY = 86_400.0

ANONYMOUS = "~anonymous"
"""The caller every use of a caller the gateway cannot identify is recorded under (HTTP without a token
verifier, when the operator lets them teach): one caller however many clients they are, so they hold at
most half of a card's questions once an identified caller taught it too, and never trusted: their questions
never count as a second caller's, nor make a single-caller audience (see :meth:`Ledger.questions_of`)."""

CardRef = tuple[str, str]
"""A card as the ledger keeps it: ``(origin, card id)`` (see the module docs)."""


@dataclass(frozen=True)
class LedgerLimits:
    """How much one audience's ledger holds (see the module docs)."""

    per_card: int = 20
    """Questions kept per card (newest first)."""
    max_question_chars: int = 500
    """A longer question is cut to this many characters."""
    max_entries: int = 250_000
    """Uses kept per audience (enough for 20 questions on each of 10,000 cards, and more)."""
    max_bytes: int = 32 * 1024 * 1024
    """UTF-8 bytes of question, card and caller text kept per audience."""
    max_age: float = 180 * DAY
    """Seconds after which a use is forgotten."""
    refresh_after: float = 3_600.0
    """Seconds before the same caller's exact repeat of a use (question, card) is recorded again (its
    time refreshed); sooner, it changes nothing. ``0``: every repeat is recorded."""

    def __post_init__(self) -> None:
        for name in ("per_card", "max_question_chars", "max_entries", "max_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"LedgerLimits.{name} must be at least 1")
        if self.max_age <= 0:
            raise ValueError("LedgerLimits.max_age must be a positive number of seconds")
        if not 0 <= self.refresh_after < self.max_age:
            raise ValueError("LedgerLimits.refresh_after must be 0 or more seconds, and less than max_age")


@dataclass(frozen=True)
class Use:
    """One question that led to a successful use of a card."""

    question: str
    card: str
    """The card's id as ``find`` shows it (``LABEL/NAME``)."""
    caller: str
    """Who asked: the verified token's subject (or client id); ``""`` for the default identity."""
    at: float
    """When, in seconds since the epoch."""
    origin: str = ""
    """The identity of the upstream that taught it (``""``: recorded before origins were kept)."""

    @property
    def ref(self) -> CardRef:
        """The card this use teaches: its upstream's origin and its id."""
        return self.origin, self.card

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two uses the same entry: the card (with its origin) and the exact question."""
        return self.origin, self.card, self.question

    @property
    def size(self) -> int:
        """The bytes this use counts against the audience's ``max_bytes``."""
        return (
            len(self.question.encode())
            + len(self.card.encode())
            + len(self.caller.encode())
            + len(self.origin.encode())
        )


@dataclass
class Change:
    """What one operation wrote and removed: a store applies it as one transaction."""

    written: list[Use] = field(default_factory=list)
    removed: list[Use] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.written or self.removed)


def normalise_question(text: str, limits: LedgerLimits) -> str:
    """``text`` as the ledger keeps it: whitespace runs as one space, at most ``max_question_chars``."""
    return " ".join(text.split())[: limits.max_question_chars].strip()


def balanced(uses: Iterable[Use], per_card: int) -> list[Use]:
    """At most ``per_card`` of one card's ``uses``, newest first, no caller over half once several taught it.

    Newest first, a use is taken while its caller holds at most half (rounded up) of what is taken;
    then a caller over half of the result gives up its oldest entries until it holds half. Uses of
    :data:`ANONYMOUS` never displace an identified caller's: the identified callers' uses are balanced
    among themselves first, then anonymous ones fill what is left, newest first, while they are no more
    than the identified ones (all of it, when no identified caller taught the card).
    """
    every = list(uses)
    anonymous = sorted((u for u in every if u.caller == ANONYMOUS), key=lambda u: u.at, reverse=True)
    if not anonymous:
        return _balanced(every, per_card)
    identified = _balanced([u for u in every if u.caller != ANONYMOUS], per_card)
    room = per_card - len(identified)
    share = room if not identified else min(room, len(identified))
    kept = [*identified, *anonymous[: max(share, 0)]]
    return sorted(kept, key=lambda u: u.at, reverse=True)


def _balanced(uses: Iterable[Use], per_card: int) -> list[Use]:
    """:func:`balanced` among identified callers."""
    ordered = sorted(uses, key=lambda u: u.at, reverse=True)
    if per_card < 2 or len({u.caller for u in ordered}) <= 1:  # one question cannot be shared: the newest
        return ordered[:per_card]
    taken: list[Use] = []
    counts: dict[str, int] = {}
    for use in ordered:
        if len(taken) >= per_card:
            break
        mine = counts.get(use.caller, 0) + 1
        if mine <= (len(taken) + 2) // 2:  # at most half of the taken, this one included, rounded up
            taken.append(use)
            counts[use.caller] = mine
    top, most = max(counts.items(), key=lambda item: item[1])
    excess = most - (len(taken) - most)
    if excess > 0:
        for use in reversed(list(taken)):
            if excess == 0:
                break
            if use.caller == top:
                taken.remove(use)
                excess -= 1
    return taken


class Ledger:
    """One audience's uses, bounded (see the module docs). Build it from a store's uses; apply its changes there."""

    def __init__(self, uses: Iterable[Use] = (), limits: LedgerLimits | None = None) -> None:
        self.limits = limits or LedgerLimits()
        self._cards: dict[CardRef, dict[str, Use]] = {}
        self._read: dict[CardRef, tuple[float, list[str], bool]] = {}
        """Per card, its oldest use's time, its questions newest first and whether they are trusted, made again only
        when the card changed (a change of the audience's callers clears it all: see :meth:`_put`)."""
        self._callers: dict[str, int] = {}
        """Per caller, its uses in the audience (on any card)."""
        self._bytes = 0
        self._count = 0
        for use in uses:
            self._put(use)

    def __len__(self) -> int:
        return self._count

    @property
    def size(self) -> int:
        """The bytes this audience's uses count against ``max_bytes``."""
        return self._bytes

    def uses(self, card: CardRef | None = None) -> list[Use]:
        """Every use (of ``card`` only, when given), newest first."""
        cards = [self._cards.get(card, {})] if card is not None else self._cards.values()
        return sorted((u for entries in cards for u in entries.values()), key=lambda u: u.at, reverse=True)

    def cards(self) -> list[CardRef]:
        """The cards with at least one question."""
        return sorted(self._cards)

    @property
    def callers(self) -> int:
        """How many distinct callers the audience's uses have."""
        return len(self._callers)

    def questions(self, now: float) -> dict[CardRef, Taught]:
        """Per card, its questions newest first, leaving out uses older than ``max_age`` at ``now``."""
        found: dict[CardRef, Taught] = {}
        for card in self._cards:
            if asked := self.questions_of(card, now):
                found[card] = asked
        return found

    def questions_of(self, card: CardRef, now: float) -> Taught:
        """The card's questions newest first, leaving out uses older than ``max_age`` at ``now`` (none: ``[]``);
        trusted (:class:`~skilldeck.select.Taught`) when two distinct identified callers or more taught them,
        or when the audience has a single identified caller and no :data:`ANONYMOUS` use is among them (a flood
        of anonymous uses leaves the single user's other cards trusted, and the card it flooded capped)."""
        entries = self._cards.get(card)
        if not entries:
            return Taught()
        read = self._read.get(card)
        if read is None:
            ordered = sorted(entries.values(), key=lambda u: u.at, reverse=True)
            read = self._read[card] = (ordered[-1].at, [u.question for u in ordered], self._trusted(ordered))
        if read[0] >= now - self.limits.max_age:
            return Taught(read[1], read[2])
        kept = [u for u in sorted(entries.values(), key=lambda u: -u.at) if u.at >= now - self.limits.max_age]
        return Taught([u.question for u in kept], self._trusted(kept))

    def _trusted(self, uses: list[Use]) -> bool:
        callers = {u.caller for u in uses}
        identified = callers - {ANONYMOUS}
        if len(identified) > 1:
            return True
        alone = len(set(self._callers) - {ANONYMOUS}) <= 1
        return alone and bool(identified) and ANONYMOUS not in callers

    def add(self, question: str, card: str, caller: str, now: float, origin: str = "") -> Change:
        """Record that ``question`` led to a successful use of ``card`` (of the upstream ``origin``) by
        ``caller`` at ``now``."""
        text = normalise_question(question, self.limits)
        if not text or not card:
            return Change()
        use = Use(text, card, caller, now, origin)
        change = Change()
        old = self._cards.get(use.ref, {})
        known = old.get(text)
        if known is not None and known.caller == caller and 0 <= now - known.at < self.limits.refresh_after:
            return change  # the same use, recorded a moment ago: nothing to learn, nothing to write
        candidates = [u for u in old.values() if u.question != text]
        kept = balanced([*candidates, use], self.limits.per_card)
        if use not in kept:  # the caller already holds its share of this card
            return change
        kept_keys = {u.question for u in kept}
        for gone in [u for u in old.values() if u.question not in kept_keys]:
            self._drop(gone)
            change.removed.append(gone)
        replaced = old.get(text)
        if replaced is not None:
            self._drop(replaced)
        self._put(use)
        change.written.append(use)
        change.removed.extend(self._expire(now, use.ref))
        change.removed.extend(self._over_audience_bounds())
        change.written = [u for u in change.written if u not in change.removed]
        return change

    def prune(self, listed: Callable[[CardRef], bool], now: float) -> Change:
        """Drop the uses of cards ``listed`` says are gone, and the uses older than ``max_age``."""
        change = Change(removed=self._expire(now))
        for card in [c for c in self._cards if not listed(c)]:
            for use in list(self._cards[card].values()):
                self._drop(use)
                change.removed.append(use)
        return change

    def adopt(self, adopted: Callable[[CardRef], CardRef | None]) -> Change:
        """Give the uses recorded before origins were kept (origin ``""``) the key ``adopted`` names for their
        card (``None``: left as they are); an entry already under that key keeps the newer of the two."""
        change = Change()
        for ref in [r for r in self._cards if not r[0]]:
            new = adopted(ref)
            if new is None or new == ref:
                continue
            for use in list(self._cards[ref].values()):
                self._drop(use)
                change.removed.append(use)
                existing = self._cards.get(new, {}).get(use.question)
                if existing is not None and existing.at >= use.at:
                    continue
                if existing is not None:
                    self._drop(existing)
                    change.removed.append(existing)
                moved = Use(use.question, new[1], use.caller, use.at, new[0])
                self._put(moved)
                change.written.append(moved)
        return change

    def _put(self, use: Use) -> None:
        self._read.pop(use.ref, None)
        entries = self._cards.setdefault(use.ref, {})
        if use.question in entries:
            self._drop(entries[use.question])
            entries = self._cards.setdefault(use.ref, {})
        entries[use.question] = use
        if use.caller not in self._callers:
            self._read.clear()  # every card's trust reads how many callers the audience has
        self._callers[use.caller] = self._callers.get(use.caller, 0) + 1
        self._count += 1
        self._bytes += use.size

    def _drop(self, use: Use) -> None:
        entries = self._cards.get(use.ref)
        if entries is None or entries.pop(use.question, None) is None:
            return
        self._read.pop(use.ref, None)
        if not entries:
            del self._cards[use.ref]
        left = self._callers.pop(use.caller) - 1
        if left:
            self._callers[use.caller] = left
        else:
            self._read.clear()
        self._count -= 1
        self._bytes -= use.size

    def _expire(self, now: float, card: CardRef | None = None) -> list[Use]:
        oldest = now - self.limits.max_age
        cards = [self._cards.get(card, {})] if card is not None else list(self._cards.values())
        gone = [u for entries in cards for u in entries.values() if u.at < oldest]
        for use in gone:
            self._drop(use)
        return gone

    def _over_audience_bounds(self) -> list[Use]:
        if self._count <= self.limits.max_entries and self._bytes <= self.limits.max_bytes:
            return []
        gone = []
        for use in sorted(self.uses(), key=lambda u: u.at):
            if self._count <= self.limits.max_entries and self._bytes <= self.limits.max_bytes:
                break
            self._drop(use)
            gone.append(use)
        return gone


def history_by_key(questions: Mapping[str, list[str]], keys: Mapping[str, str]) -> dict[str, list[str]]:
    """``questions`` (by card id) keyed by what a ranker reads (``keys``: card id -> ``Card.key``) for the cards it has."""
    return {keys[card]: asked for card, asked in questions.items() if card in keys}
