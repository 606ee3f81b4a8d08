"""What one gateway's configuration makes of the usage ledger's cards. Pure.

The ledger keys a card by the upstream that taught it, not by the label a configuration gives that
upstream (:mod:`skilldeck.learning._ledger`): ``(origin, card id as find showed it)``. A gateway reads
it through a :class:`LedgerView` built from its own upstreams (label -> origin), so that:

* a card taught through an upstream this gateway also has, under any label, ranks here under this
  gateway's id for it (``memory/add_observations`` taught as ``mem/add_observations`` elsewhere);
* a card whose upstream is not in this configuration is none of this gateway's business: it is not
  ranked here, and never pruned here (another gateway on the same home taught it);
* a card whose upstream is here is pruned when that upstream, up, no longer lists it (an upstream
  that is down keeps its cards);
* a use recorded before origins were kept (origin ``""``) is read as this gateway's when a label of
  its id is configured here, and adopted: rewritten with that upstream's origin.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from skilldeck.learning._api import CardRef
from skilldeck.select import Taught

__all__ = ["LedgerView"]


class LedgerView:
    """The ledger's cards as this gateway sees them.

    Args:
        origins: label -> origin of every upstream in this gateway's configuration.
        listed: the card ids listed now.
        down: the labels of the upstreams that are down (their cards count as listed).
    """

    def __init__(self, origins: Mapping[str, str], listed: Collection[str] = (), down: Collection[str] = ()) -> None:
        self.origins = dict(origins)
        self._labels: dict[str, str] = {}
        for label, origin in self.origins.items():
            self._labels.setdefault(origin, label)  # one server configured twice: its first label
        self.listed = frozenset(listed)
        self.down = frozenset(down)

    def here(self, ref: CardRef) -> str | None:
        """The id this gateway shows ``ref`` under; ``None`` when its upstream is not configured here."""
        origin, card = ref
        label, _, rest = card.partition("/")
        if not origin:
            return card if label in self.origins else None
        mine = self._labels.get(origin)
        return None if mine is None else f"{mine}/{rest}"

    def ref(self, card: str) -> CardRef:
        """The ledger's key for the card this gateway shows as ``card``."""
        label = card.partition("/")[0]
        return self.origins.get(label, ""), card

    def is_listed(self, ref: CardRef) -> bool:
        """Whether the ledger keeps ``ref``'s uses: true unless its upstream is here, up, and no longer lists it."""
        here = self.here(ref)
        if here is None:
            return True
        return here in self.listed or here.partition("/")[0] in self.down

    def adopted(self, ref: CardRef) -> CardRef | None:
        """For a use recorded before origins were kept whose label is configured here: its key now."""
        origin, card = ref
        if origin:
            return None
        label = card.partition("/")[0]
        found = self.origins.get(label)
        return None if found is None else (found, card)

    def questions(self, taught: Mapping[CardRef, Taught]) -> dict[str, Taught]:
        """The ledger's questions by the ids this gateway shows (cards of two origins under one id merged)."""
        found: dict[str, Taught] = {}
        for ref, asked in taught.items():
            here = self.here(ref)
            if here is None:
                continue
            known = found.get(here)
            found[here] = asked if known is None else Taught([*known, *asked], known.trusted or asked.trusted)
        return found
