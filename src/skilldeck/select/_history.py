"""A usage history read by the ranker: each card's past questions, indexed on their own. Pure.

A *history* maps a card's key (:attr:`~skilldeck.select._cards.Card.key`) to the questions that
led to it before (a question whose ``find`` chose the card, then a ``load`` and a successful
``call``; the ledger that records them is the gateway's). The ranker reads them as

* **a lexical field of their own**: one BM25 document per card holding its past questions, and
  one per server holding every past question of its cards, each scored like the card's own
  fields (same ``k1`` and ``b``; term rarity from the catalog's documents and the shipped
  background, so a word common in tool prose stays cheap) and added to the card's (or the
  server's) own BM25F score with the weight :attr:`~skilldeck.select._config.RankConfig.history_weight`
  (:attr:`~skilldeck.select._config.RankConfig.history_server_weight` for servers);
* **a semantic view**: the normalised mean of a card's past-question vectors; the question's
  cosine to it lifts the card's own cosine (:attr:`~skilldeck.select._config.RankConfig.history_semantic_weight`).

Both lifts are **capped** (:func:`cap`): history adds at most ``history_cap_ratio`` times a card's
own evidence for the question plus ``history_cap_floor`` times the best own evidence of any card.
A card whose own text shares nothing with the question (no term, a near-zero cosine) can so be
lifted to at most ``history_cap_floor`` of the best real match, whatever was taught to it: a
flood of crafted uses on an unrelated card cannot make it overtake a card with real evidence.

Kept apart from the catalog's indexes so a new history (the gateway records a use) is swapped in
without rebuilding them: only the history's own small indexes are built, and only the past
questions not seen before are encoded (by content, through the ranker's vector cache).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from skilldeck.select._bm25f import BM25Index, bag
from skilldeck.select._config import RankConfig
from skilldeck.select._text import tokens

__all__ = ["History", "HistoryIndex", "cap", "history_terms"]

History = Mapping[str, Sequence[str]]
"""A card's key -> its past questions (oldest first or newest first: the order is not read)."""

MATCH_TERMS = 2
"""A past question *matched* a question when it holds at least this many of the question's own
terms (all of them for a shorter question): what :attr:`~skilldeck.select._decide.Decision.history` counts."""


def history_terms(question: str) -> list[str]:
    """The index terms of a past question (request words left out, as in a question)."""
    return tokens(question, request_stopwords=True)


def cap(lift: np.ndarray, own: np.ndarray, ratio: float, floor: float) -> np.ndarray:
    """``lift`` held to at most ``ratio * own + floor * max(own)``, elementwise (never below 0)."""
    peak = float(own.max()) if len(own) else 0.0
    bound = np.maximum(ratio * own + floor * peak, 0.0)
    out: np.ndarray = np.minimum(np.maximum(lift, 0.0), bound)
    return out


@dataclass(frozen=True, eq=False)
class HistoryIndex:
    """One history, indexed for one catalog: built whole and swapped in whole (never changed)."""

    n_cards: int
    questions: dict[int, tuple[str, ...]]
    """Card index -> its past questions (each once)."""
    terms: dict[int, tuple[frozenset[str], ...]]
    """Card index -> each past question's terms (for counting the ones a question matched)."""
    cards: BM25Index | None = None
    card_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per document of :attr:`cards`, its card's index."""
    servers: BM25Index | None = None
    server_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per document of :attr:`servers`, its server's index."""
    vectors: np.ndarray | None = None
    """Per document of :attr:`cards`: the normalised mean of its past questions' vectors (with an encoder)."""

    @property
    def size(self) -> int:
        """How many past questions in all."""
        return sum(len(q) for q in self.questions.values())

    def __bool__(self) -> bool:
        return bool(self.questions)

    @classmethod
    def empty(cls, n_cards: int) -> HistoryIndex:
        return cls(n_cards, {}, {})

    @classmethod
    def build(
        cls,
        history: History,
        keys: Mapping[str, int],
        card_server: Sequence[int],
        n_servers: int,
        *,
        config: RankConfig,
        background: tuple[int, Mapping[str, int]] | None,
        server_background: tuple[int, Mapping[str, int]] | None,
        previous: HistoryIndex | None = None,
        encode: Callable[[list[str]], np.ndarray] | None = None,
    ) -> HistoryIndex:
        """Index ``history`` for the cards ``keys`` (card key -> index; keys of other cards are
        ignored). ``previous``: the history indexed before, whose per-card vectors are reused for
        cards whose past questions did not change; ``encode``: vectors of texts (``None``: no
        semantic view)."""
        questions: dict[int, tuple[str, ...]] = {}
        for key, past in history.items():
            card = keys.get(key)
            if card is None:
                continue
            unique = tuple(dict.fromkeys(q for q in past if q and q.strip()))
            if unique:
                questions[card] = unique
        if not questions:
            return cls.empty(len(card_server))
        rows = sorted(questions)
        terms = {c: tuple(frozenset(history_terms(q)) for q in questions[c]) for c in rows}
        card_docs = [bag([(history_terms(q), 1.0) for q in questions[c]]) for c in rows]
        server_docs: dict[int, dict[str, float]] = {}
        for c, doc in zip(rows, card_docs, strict=True):
            merged = server_docs.setdefault(int(card_server[c]), {})
            for t, w in doc.items():
                merged[t] = merged.get(t, 0.0) + w
        server_rows = sorted(server_docs)
        vectors = None
        if encode is not None:
            vectors = _mean_vectors(rows, questions, previous, encode)
        return cls(
            n_cards=len(card_server),
            questions=questions,
            terms=terms,
            cards=BM25Index(card_docs, config.k1, config.b, background),
            card_rows=np.array(rows, dtype=np.int64),
            servers=BM25Index([server_docs[s] for s in server_rows], config.k1, config.server_b, server_background),
            server_rows=np.array(server_rows, dtype=np.int64),
            vectors=vectors,
        )

    def card_scores(self, query: Mapping[str, float]) -> np.ndarray:
        """Every card's BM25 score of its past questions (0 without any)."""
        out = np.zeros(self.n_cards)
        if self.cards is not None:
            out[self.card_rows] = self.cards.scores(query)
        return out

    def server_scores(self, query: Mapping[str, float], n_servers: int) -> np.ndarray:
        """Every server's BM25 score of its cards' past questions (0 without any)."""
        out = np.zeros(n_servers)
        if self.servers is not None:
            out[self.server_rows] = self.servers.scores(query)
        return out

    def cosines(self, qvec: np.ndarray) -> np.ndarray:
        """Every card's cosine to the mean of its past questions' vectors (0 without any)."""
        out = np.zeros(self.n_cards)
        if self.vectors is not None and len(self.card_rows):
            out[self.card_rows] = np.einsum("ij,j->i", self.vectors, qvec)
        return out

    def matched(self, card: int, terms: Sequence[str]) -> int:
        """How many of ``card``'s past questions hold at least :data:`MATCH_TERMS` of ``terms``
        (all of them when there are fewer)."""
        past = self.terms.get(card)
        if not past or not terms:
            return 0
        need = min(MATCH_TERMS, len(terms))
        return sum(sum(t in held for t in terms) >= need for held in past)


def _mean_vectors(
    rows: list[int],
    questions: Mapping[int, tuple[str, ...]],
    previous: HistoryIndex | None,
    encode: Callable[[list[str]], np.ndarray],
) -> np.ndarray:
    """Per card of ``rows``, the normalised mean of its past questions' vectors; a card whose past
    questions are those of ``previous`` keeps its vector there, the rest are encoded in one call."""
    reused: dict[int, np.ndarray] = {}
    if previous is not None and previous.vectors is not None:
        at = {int(c): i for i, c in enumerate(previous.card_rows)}
        for c in rows:
            if c in at and previous.questions.get(c) == questions[c]:
                reused[c] = previous.vectors[at[c]]
    todo = [c for c in rows if c not in reused]
    texts = list(dict.fromkeys(q for c in todo for q in questions[c]))
    found = dict(zip(texts, np.asarray(encode(texts), dtype=np.float32), strict=True)) if texts else {}
    out: list[np.ndarray] = []
    for c in rows:
        if c in reused:
            out.append(reused[c])
            continue
        mean = np.mean([found[q] for q in questions[c]], axis=0)
        norm = float(np.linalg.norm(mean))
        out.append((mean / norm if norm > 0 else mean).astype(np.float32))
    return np.ascontiguousarray(np.stack(out), dtype=np.float32)
