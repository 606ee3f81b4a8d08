"""What a ranking produces: scored cards, what each query unit found, how far the card vectors are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skilldeck.select._cards import Card
from skilldeck.select._neighbours import Neighbour

__all__ = ["Evidence", "IndexingState", "Ranking", "Scored", "Unit"]


@dataclass(frozen=True)
class Scored:
    """A card with its score for one question (in [0, 1], higher is closer)."""

    card: Card
    score: float
    lexical: float
    semantic: float | None = None
    matched_terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexingState:
    """How many of the catalog's texts (cards and server labels) have vectors, of how many."""

    done: int
    total: int
    error: str | None = None
    """Why encoding stopped (the ranking then stays lexical)."""
    cached: int = 0
    """How many of them the vector cache held at the start (``done - cached`` were encoded here)."""

    def to_json(self) -> dict[str, Any]:
        """``{"encoded", "total"}`` and, when encoding stopped, ``"error"``: how a decision reports it."""
        out: dict[str, Any] = {"encoded": self.done, "total": self.total}
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class Unit:
    """What one query unit (the whole question, or one of its jobs) found, in catalog-independent terms.

    Everything is told about one card -- the unit's best card after ranking, which is what a
    decision chooses -- and that card's server, so a confidence built on it rests on the choice."""

    text: str
    terms: tuple[str, ...]
    """The unit's own terms (expansions left out)."""
    card: int
    """Index of its best card (for the whole question: the top-ranked card)."""
    server: str
    """The server of that card."""
    lexical: float
    """Raw BM25 of that card (a skill: at least that of the best tool it names)."""
    server_lexical: float
    """Raw BM25 of that card's server's document."""
    coverage: float
    """Share of ``terms`` found in that server's document."""
    idf_coverage: float
    """IDF-weighted share of ``terms`` found in the top three servers' documents together."""
    matched: tuple[str, ...]
    """``terms`` found in that server's document."""
    semantic: float | None = None
    """Cosine similarity of that card (``None`` without an encoder)."""
    server_semantic: float | None = None
    """Cosine similarity of the centroid of that card's server (``None`` without an encoder)."""
    fused: float | None = None
    """The fused score (sum of five z-scores) of that card's server (``None`` without an encoder)."""
    fused_margin: float | None = None
    """That fused score minus the best fused score of any other server."""
    agreement: float | None = None
    """Share of the five views that rank that card's server first."""
    label_semantic: float | None = None
    """Cosine similarity of that card's server's ``label: description`` text."""
    history_lexical: float = 0.0
    """What that card's past questions added to its raw BM25 (after the cap; 0 without a history)."""
    history_semantic: float | None = None
    """What they added to its cosine (after the cap; ``None`` without a history's vectors)."""
    history: int = 0
    """How many of that card's past questions the unit matched (:meth:`~skilldeck.select._history.HistoryIndex.matched`)."""


@dataclass(frozen=True)
class Evidence:
    """A query unit's raw scores over the whole catalog, before it is told about one card."""

    text: str
    terms: tuple[str, ...]
    card_raw: np.ndarray
    server_raw: np.ndarray
    card_sem: np.ndarray | None
    server_sem: np.ndarray | None
    idf_coverage: float
    fused: np.ndarray | None = None
    """Per server: the sum of the five views' z-scores (with an encoder)."""
    view_top: np.ndarray | None = None
    """Per view: the index of the server it ranks first."""
    label_sem: np.ndarray | None = None
    card_history: np.ndarray | None = None
    """Per card: what its past questions added to ``card_raw`` (``None`` without a history)."""
    server_history: np.ndarray | None = None
    """Per server: what its cards' past questions added to ``server_raw`` (``None`` without a history)."""
    sem_history: np.ndarray | None = None
    """Per card: what its past questions added to ``card_sem`` (``None`` without a history's vectors)."""
    folded: bool = True
    """Whether ``card_history`` and ``server_history`` were added into ``card_raw`` and ``server_raw``
    (``False``: kept apart, for a fusion that reads history as a view of its own)."""
    neighbour: Neighbour | None = None
    """The trusted past question like this one whose server the history view put first, if any."""


@dataclass
class Ranking:
    """Everything one question's ranking produced."""

    question: str
    scored: list[Scored]
    """The best cards, best first (cut at the ``limit`` asked for)."""
    servers: list[tuple[str, float]]
    """Every server, best first, scored by its best card."""
    units: list[Unit] = field(default_factory=list)
    """``units[0]`` is the whole question; the rest are its jobs (:func:`~skilldeck.select._rank.split_jobs`)."""
    implied: list[tuple[str, str]] = field(default_factory=list)
    """(need, server) for each need the question implies (:func:`~skilldeck.select._rank.implied_needs`) and the server
    that need ranks first, which was given a place among the first :data:`~skilldeck.select._rank.IMPLIED_SLOT` + 1 servers."""
    implied_units: list[Unit] = field(default_factory=list)
    """For each of ``implied``: what that need's own ranking found, told about its best card (how well
    the catalog serves the need; the decision's confidence reads the weakest)."""
    semantic: bool = False
    """Whether the encoder's views were fused (``False``: lexical, e.g. while card vectors are encoded)."""
    indexing: IndexingState | None = None
    """How far the ranker's card vectors were when it ranked."""
    history: int = 0
    """How many past questions (of every card) the ranking read: 0 without a usage history."""
    neighbour: Neighbour | None = None
    """The trusted past question like the question whose server was put first
    (:meth:`~skilldeck.select._history_view.HistoryView.neighbour`), if any."""
