"""The catalog ranked for a question, and the cards ``find`` shows of it. Pure (the ranker is select's).

Every active entry is one card (its name, title and description) in a :class:`~skilldeck.select._rank.Ranker`
of its own, the same ranker ``find`` ranks upstream cards with (lexical BM25F, and the encoder's
views fused in once their vectors are encoded, kept by content in the same vector cache). A
question is ranked over the whole catalog; the cards shown are the best :data:`MAX_CATALOG_CARDS`
that share evidence with it (a term of the question, or a cosine of at least :data:`MIN_COSINE`)
and that this gateway could add for this caller (a way of running them here that the policy allows).

A card (:func:`catalog_card`) says what the server is (name, title, description: the registry's
prose, its origin tags neutralised), that it is not installed, what it would run (package, exact
version and registry type, or the URL) and what it needs (environment variables, secrets and
headers by name, arguments, a login). Nothing is run, fetched or connected to build it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from skilldeck.catalog._entries import CatalogEntry
from skilldeck.catalog._launch import Launch
from skilldeck.select import Card, Encoder, Ranker
from skilldeck.select._api import VectorCache
from skilldeck.skill._api import neutralise_tags

__all__ = ["MAX_CATALOG_CARDS", "MIN_COSINE", "CatalogIndex", "Found", "catalog_card"]

MAX_CATALOG_CARDS = 3
"""Catalog cards one ``find`` adds at most."""
MIN_COSINE = 0.3
"""With the encoder's views, the cosine from which a card with no term of the question in common is shown."""
_RANKED = 50
"""Ranked cards looked through for those this caller could add."""


@dataclass(frozen=True)
class Found:
    """A catalog card for one question: the entry, how it would run, and its score (1.0 for the best)."""

    entry: CatalogEntry
    launch: Launch
    score: float


def _card(entry: CatalogEntry) -> Card:
    text = f"{entry.title}: {entry.description}" if entry.title else entry.description
    return Card(kind="tool", server=entry.name, name=entry.short_name, description=text)


class CatalogIndex:
    """A catalog's active entries, ranked with select's ranker (see the module docs); those nothing here
    could run are ranked too (the question is ranked over the whole catalog) but never offered.

    Args:
        entries: the catalog (entries that are not ``active`` are left out).
        encoder: the encoder ``find`` fuses in (``None``: lexical only).
        cache: the vector cache shared with the upstream rankers (vectors by content).
    """

    def __init__(
        self, entries: Sequence[CatalogEntry], *, encoder: Encoder | None = None, cache: VectorCache | None = None
    ) -> None:
        self.entries = [e for e in entries if e.status == "active"]
        self.ranker = Ranker([_card(e) for e in self.entries], encoder=encoder, cache=cache, background=True)

    def __len__(self) -> int:
        return len(self.entries)

    def close(self) -> None:
        """Stop encoding vectors (the catalog was replaced)."""
        self.ranker.close()

    def search(
        self, question: str, offer: Callable[[CatalogEntry], Launch | None], *, limit: int = MAX_CATALOG_CARDS
    ) -> list[Found]:
        """The best ``limit`` entries for ``question`` that ``offer`` gives a launch for (what this caller could add)."""
        if not self.entries:
            return []
        ranking = self.ranker.rank(question, limit=_RANKED, implied=False)
        by_name = {e.name: e for e in self.entries}
        found: list[Found] = []
        for scored in ranking.scored:
            cosine = scored.semantic
            if not scored.matched_terms and (cosine is None or cosine < MIN_COSINE):
                continue
            entry = by_name[scored.card.server]
            launch = offer(entry)
            if launch is None:
                continue
            found.append(Found(entry, launch, float(scored.score)))
            if len(found) >= limit:
                break
        return found


def catalog_card(found: Found, decimals: int = 2) -> dict[str, Any]:
    """One catalog card as ``find`` shows it (see the module docs)."""
    entry, launch = found.entry, found.launch
    card: dict[str, Any] = {
        "id": entry.id,
        "kind": "server",
        "installed": False,
        "name": entry.name,
        "description": neutralise_tags(entry.description),
        "score": round(found.score, decimals),
        "runs": launch.runs(),
        "needs": launch.needs(),
    }
    if entry.title:
        card["title"] = neutralise_tags(entry.title)
    return card
