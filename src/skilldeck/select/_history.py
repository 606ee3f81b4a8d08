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
  cosine to it orders a server's cards (:attr:`~skilldeck.select._config.RankConfig.history_semantic_weight`),
  and, folded with the card's own vector, gives the server view of past questions that the ranker
  adds to its fused views (:meth:`~skilldeck.select._rank.Ranker._history_view`).

Without an encoder the lexical field is added into the cards' own scores; with one, it is part of
that server view, and the catalog's own views keep the first place.

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

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from skilldeck.select._bm25f import BM25Index
from skilldeck.select._config import RankConfig
from skilldeck.select._text import tokens

__all__ = ["History", "HistoryIndex", "cap", "history_terms"]

History = Mapping[str, Sequence[str]]
"""A card's key -> its past questions (oldest first or newest first: the order is not read)."""

MATCH_TERMS = 2
"""A past question *matched* a question when it holds at least this many of the question's own
terms (all of them for a shorter question): what :attr:`~skilldeck.select._decide.Decision.history` counts."""


MIN_IDF = 1.0
"""Query terms more common than this among past questions (with the catalog's documents; IDF ~1: in
about a third of them) are not looked up in the history: they tell little, and their long posting
lists are most of the cost of a full ledger."""


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
class _CardTerms:
    """One card's past questions as postings: term ids (of the history's vocabulary) and counts, and
    each question's terms (for :meth:`HistoryIndex.matched`)."""

    ids: np.ndarray
    counts: np.ndarray
    each: tuple[frozenset[str], ...]


@dataclass(frozen=True, eq=False)
class HistoryIndex:
    """One history, indexed for one catalog: built whole and swapped in whole (never changed).

    A new history reuses what the previous one computed for every card whose past questions did not
    change (their terms, postings and mean vector), so recording one use re-reads one card; the
    BM25 weights (which depend on every document's length and every term's frequency) are then
    recomputed over the postings, in numpy."""

    n_cards: int
    questions: dict[int, tuple[str, ...]]
    """Card index -> its past questions (each once)."""
    per_card: dict[int, _CardTerms] = field(default_factory=dict)
    vocab: dict[str, int] = field(default_factory=dict)
    """Term -> id, for this index and the ones built from it (a new history adds its new terms)."""
    background: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (np.zeros(0), np.zeros(0)))
    """Per term id, its background document frequency among cards and among servers."""
    cards: BM25Index | None = None
    card_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per document of :attr:`cards`, its card's index."""
    servers: BM25Index | None = None
    server_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per document of :attr:`servers`, its server's index."""
    vectors: np.ndarray | None = None
    """Per document of :attr:`cards`: the normalised mean of its past questions' vectors (with an encoder)."""

    @functools.cached_property
    def size(self) -> int:
        """How many past questions in all."""
        return sum(len(q) for q in self.questions.values())

    def __bool__(self) -> bool:
        return bool(self.questions)

    @classmethod
    def empty(cls, n_cards: int) -> HistoryIndex:
        return cls(n_cards, {})

    @classmethod
    def build(
        cls,
        history: History,
        keys: Mapping[str, int],
        card_server: np.ndarray,
        *,
        config: RankConfig,
        background: tuple[int, Mapping[str, int]] | None,
        server_background: tuple[int, Mapping[str, int]] | None,
        previous: HistoryIndex | None = None,
        encode: Callable[[list[str]], np.ndarray] | None = None,
    ) -> HistoryIndex:
        """Index ``history`` for the cards ``keys`` (card key -> index; keys of other cards are
        ignored; ``card_server``: each card's server index). ``previous``: the history indexed
        before, whose per-card work is reused for cards whose past questions did not change;
        ``encode``: vectors of texts (``None``: no semantic view)."""
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
        previous = previous or cls.empty(len(card_server))
        vocab = dict(previous.vocab)  # a copy: an index in use keeps its own
        per_card: dict[int, _CardTerms] = {}
        for card, past in questions.items():
            known = previous.per_card.get(card)
            per_card[card] = (
                known if known is not None and previous.questions.get(card) == past else _terms(past, vocab)
            )
        bg_cards, bg_servers = _extend(previous.background, vocab, background, server_background)
        rows = np.array(sorted(questions), dtype=np.int64)
        ids = [per_card[int(c)].ids for c in rows]
        cols = np.concatenate(ids)
        counts = np.concatenate([per_card[int(c)].counts for c in rows])
        docs = np.repeat(np.arange(len(rows)), [len(x) for x in ids])
        cards = BM25Index.from_postings(
            (docs, cols, counts), len(rows), vocab, config.k1, config.b, _bg(background, bg_cards)
        )
        # a server's document: every past question of its cards (each (server, term) summed once)
        width = max(len(vocab), 1)
        joint, at = np.unique(card_server[rows][docs] * width + cols, return_inverse=True)
        server_rows, server_docs = np.unique(joint // width, return_inverse=True)
        servers = BM25Index.from_postings(
            (server_docs, joint % width, np.bincount(at, weights=counts)),
            len(server_rows),
            vocab,
            config.k1,
            config.server_b,
            _bg(server_background, bg_servers),
        )
        vectors = None
        if encode is not None:
            vectors = _mean_vectors(rows.tolist(), questions, previous, encode)
        return cls(
            n_cards=len(card_server),
            questions=questions,
            per_card=per_card,
            vocab=vocab,
            background=(bg_cards, bg_servers),
            cards=cards,
            card_rows=rows,
            servers=servers,
            server_rows=server_rows.astype(np.int64),
            vectors=vectors,
        )

    def card_scores(self, query: Mapping[str, float]) -> np.ndarray:
        """Every card's BM25 score of its past questions (0 without any)."""
        out = np.zeros(self.n_cards)
        if self.cards is not None:
            out[self.card_rows] = self.cards.scores(_rare(self.cards, query))
        return out

    def server_scores(self, query: Mapping[str, float], n_servers: int) -> np.ndarray:
        """Every server's BM25 score of its cards' past questions (0 without any)."""
        out = np.zeros(n_servers)
        if self.servers is not None:
            out[self.server_rows] = self.servers.scores(_rare(self.servers, query))
        return out

    def lead(self, qvec: np.ndarray, card_cos: np.ndarray, past: np.ndarray | None = None) -> np.ndarray:
        """Per card, how much closer to the question its past questions are (the cosine to their mean
        vector) than the card's own text (``card_cos``); 0 when not closer, or without a history.

        (Measured and not kept: this lead less the median lead over the cards with a history, as a
        question is nearer other questions than tool prose -- LiveMCPBench halves, server R@5 0.844 ->
        0.822 on half B; the max cosine to each past question instead of the mean vector -- no better,
        and 20 times the vectors.)"""
        out = np.zeros(self.n_cards)
        if self.vectors is None or not len(self.card_rows):
            return out
        past = self.past_cosines(qvec) if past is None else past  # ``past``: those cosines, if known
        out[self.card_rows] = np.maximum(past - card_cos[self.card_rows], 0.0)
        return out

    def past_cosines(self, qvec: np.ndarray) -> np.ndarray:
        """Per card of :attr:`card_rows`, the question's cosine to its past questions' mean vector."""
        assert self.vectors is not None
        out: np.ndarray = np.einsum("ij,j->i", self.vectors, qvec).astype(np.float64)
        return out

    def matched(self, card: int, terms: Sequence[str]) -> int:
        """How many of ``card``'s past questions hold at least :data:`MATCH_TERMS` of ``terms``
        (all of them when there are fewer)."""
        known = self.per_card.get(card)
        if known is None or not terms:
            return 0
        need = min(MATCH_TERMS, len(terms))
        return sum(len(held.intersection(terms)) >= need for held in known.each)


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


def _rare(index: BM25Index, query: Mapping[str, float]) -> dict[str, float]:
    """The query terms whose IDF in ``index`` is at least :data:`MIN_IDF`."""
    vocab, idf = index.vocab, index.idf
    return {t: w for t, w in query.items() if t in vocab and idf[vocab[t]] >= MIN_IDF}


def _terms(past: tuple[str, ...], vocab: dict[str, int]) -> _CardTerms:
    """A card's past questions as postings (new terms added to ``vocab``)."""
    each = [history_terms(q) for q in past]
    counts: dict[int, float] = {}
    for terms in each:
        for t in terms:
            i = vocab.setdefault(t, len(vocab))
            counts[i] = counts.get(i, 0.0) + 1.0
    return _CardTerms(
        np.fromiter(counts.keys(), dtype=np.int32, count=len(counts)),
        np.fromiter(counts.values(), dtype=np.float64, count=len(counts)),
        tuple(frozenset(terms) for terms in each),
    )


def _extend(
    known: tuple[np.ndarray, np.ndarray],
    vocab: Mapping[str, int],
    cards: tuple[int, Mapping[str, int]] | None,
    servers: tuple[int, Mapping[str, int]] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Background document frequencies per term id, the ones already known kept, new terms' looked up."""
    new = list(itertools.islice(vocab, len(known[0]), None))  # ids are given in insertion order

    def more(old: np.ndarray, bg: tuple[int, Mapping[str, int]] | None) -> np.ndarray:
        return np.concatenate([old, np.array([bg[1].get(t, 0) if bg else 0 for t in new], dtype=np.float64)])

    return more(known[0], cards), more(known[1], servers)


def _bg(background: tuple[int, Mapping[str, int]] | None, df: np.ndarray) -> tuple[int, np.ndarray]:
    return (background[0] if background else 0, df)
