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
that server view, and the catalog's own views keep the first place unless a trusted past question
like the question says otherwise (:mod:`skilldeck.select._neighbours`, whose table of the trusted
past questions' own vectors a history index keeps beside its mean vectors).

Both lifts are **capped** (:func:`cap`): history adds at most ``history_cap_ratio`` times a card's
own evidence for the question plus ``history_cap_floor`` times the best own evidence of any card.
A card whose own text shares nothing with the question (no term, a near-zero cosine) can so be
lifted to at most ``history_cap_floor`` of the best real match, whatever was taught to it: a
flood of crafted uses on an unrelated card cannot make it overtake a card with real evidence.
The server view of past questions is capped with no floor (``history_view_floor``), except for
**trusted** past questions (:class:`Taught`: taught by two distinct callers or more, or in an
audience with a single caller), which get ``history_trusted_floor``: one caller's flood in an
audience of several stays in proportion to the card's own evidence.

Kept apart from the catalog's indexes so a new history (the gateway records a use) is swapped in
without rebuilding them, and **updated, not rebuilt**: a new history is compared with the one
indexed (by card), and only the cards whose past questions changed are read again: their terms
move in the card field's postings and in their server's, and only their mean vectors are made
again (their questions encoded through the ranker's vector cache, so only new ones are). The BM25
weights, which depend on every document's length and every term's frequency, are computed at
query time from the postings (term counts), the documents' lengths and their mean, for the few
rare terms a question looks up: so an index updated use by use scores exactly as one built whole
from the same history (the counts are whole numbers, their sums exact). A history is indexed whole
only when a ranker is built, that is when the catalog is indexed again.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from skilldeck.select._config import RankConfig
from skilldeck.select._neighbours import Neighbours
from skilldeck.select._taught import Taught, trusted
from skilldeck.select._text import tokens

__all__ = ["History", "HistoryIndex", "Taught", "cap", "history_terms", "trusted"]

History = Mapping[str, Sequence[str]]
"""A card's key -> its past questions (oldest first or newest first: the order is not read); a
:class:`Taught` value also says whether they are trusted (a plain sequence: not)."""


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


def cap(lift: np.ndarray, own: np.ndarray, ratio: float, floor: float | np.ndarray) -> np.ndarray:
    """``lift`` held to at most ``ratio * own + floor * max(own)``, elementwise (never below 0;
    ``floor``: one for all, or one per element)."""
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


_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_COUNTS = np.zeros(0, dtype=np.float64)
_Delta = tuple[np.ndarray, np.ndarray]
"""How a document's term counts move: term ids, and the change of each."""


@dataclass(frozen=True, eq=False)
class _Field:
    """One BM25 field of the history, over rows (cards, or servers): per term id its postings (rows,
    sorted, and term counts), per row its document's length (0: none). Weighted at query time
    (:meth:`scores`), so that changing one document leaves every other posting as it was."""

    postings: dict[int, tuple[np.ndarray, np.ndarray]]
    lengths: np.ndarray
    docs: int
    """How many rows hold a document (the N of the IDF)."""
    avg: float
    """The documents' mean length."""
    k1: float
    b: float
    weighted: dict[int, np.ndarray] = field(default_factory=dict)
    """Per term id, its postings' BM25 weights (IDF in), made at the first question that reads the
    term and kept for the next (at most one per posting; a changed field starts without)."""

    @classmethod
    def empty(cls, rows: int, k1: float, b: float) -> _Field:
        return cls({}, np.zeros(rows), 0, 1.0, k1, b)

    def changed(self, deltas: Mapping[int, _Delta], docs: int) -> _Field:
        """This field with each row's term counts moved by ``deltas`` (row -> (term ids, changes); whole
        numbers, so the sums are exact), ``docs`` documents in all."""
        lengths = self.lengths.copy()
        postings = dict(self.postings)  # a copy: an index in use keeps its own
        moved = [(row, ids, changes) for row, (ids, changes) in deltas.items() if len(ids)]
        if moved:
            rows = np.concatenate([np.full(len(ids), row, dtype=np.int64) for row, ids, _ in moved])
            terms = np.concatenate([ids for _, ids, _ in moved])
            changes = np.concatenate([c for _, _, c in moved])
            np.add.at(lengths, rows, changes)
            order = np.lexsort((rows, terms))  # by term, then row
            rows, terms, changes = rows[order], terms[order], changes[order]
            starts = np.flatnonzero(np.concatenate([[True], terms[1:] != terms[:-1]]))
            for term, a, z in zip(
                terms[starts].tolist(), starts.tolist(), [*starts[1:].tolist(), len(terms)], strict=True
            ):
                found = _moved(postings.get(term), rows[a:z], changes[a:z])
                if found is None:
                    postings.pop(term, None)
                else:
                    postings[term] = found
        total = float(lengths.sum())
        return _Field(postings, lengths, docs, total / docs if docs and total > 0 else 1.0, self.k1, self.b)

    def idf(self, term: int, background: tuple[int, np.ndarray]) -> float:
        """The term's IDF among this field's documents and ``background`` ((documents, df per term id))."""
        found = self.postings.get(term)
        df = (len(found[0]) if found is not None else 0) + float(background[1][term])
        n = self.docs + background[0]
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: Sequence[tuple[int, float, float]]) -> np.ndarray:
        """Every row's BM25 score for ``query``: (term id, weight, IDF) in the order given."""
        out = np.zeros(len(self.lengths))
        if not self.docs:
            return out
        for term, weight, idf in query:
            found = self.postings.get(term)
            if found is not None:  # a term's rows are distinct: added in place, term by term, in order
                out[found[0]] += weight * self._weights(term, idf)
        return out

    def _weights(self, term: int, idf: float) -> np.ndarray:
        found = self.weighted.get(term)
        if found is None:  # two rankings at once may both make it: the same array, one kept
            rows, tf = self.postings[term]
            k1, b = self.k1, self.b
            found = idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * self.lengths[rows] / self.avg))
            self.weighted[term] = found
        return found


def _moved(
    found: tuple[np.ndarray, np.ndarray] | None, rows: np.ndarray, changes: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """One term's postings with ``changes`` added at ``rows`` (each row once); ``None`` when none is left."""
    old_rows, old_counts = found if found is not None else (_NO_ROWS, _NO_COUNTS)
    at = np.searchsorted(old_rows, rows)
    hit = old_rows[np.minimum(at, len(old_rows) - 1)] == rows if len(old_rows) else np.zeros(len(rows), dtype=bool)
    counts = old_counts.copy()
    counts[at[hit]] += changes[hit]
    new_rows, new_counts = old_rows, counts
    if not hit.all():
        new_rows = np.concatenate([old_rows, rows[~hit]])
        new_counts = np.concatenate([counts, changes[~hit]])
        order = np.argsort(new_rows, kind="stable")
        new_rows, new_counts = new_rows[order], new_counts[order]
    kept = new_counts > 0
    if not kept.all():
        new_rows, new_counts = new_rows[kept], new_counts[kept]
    return (new_rows, new_counts) if len(new_rows) else None


@dataclass(frozen=True, eq=False)
class HistoryIndex:
    """One history, indexed for one catalog: swapped in whole, never changed; the next one is made
    from it by :meth:`build` (only the cards whose past questions changed are read again)."""

    n_cards: int
    questions: dict[int, tuple[str, ...]]
    """Card index -> its past questions (each once)."""
    given: dict[str, tuple[tuple[str, ...], bool]] = field(default_factory=dict)
    """The history as given, by card key, and whether it is trusted (what the next one is compared with)."""
    trusted: frozenset[int] = frozenset()
    """The cards with past questions that are trusted (:class:`Taught`)."""
    per_card: dict[int, _CardTerms] = field(default_factory=dict)
    vocab: dict[str, int] = field(default_factory=dict)
    """Term -> id, for this index and the ones built from it (a new history adds its new terms)."""
    background: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (_NO_COUNTS, _NO_COUNTS))
    """Per term id, its background document frequency among cards and among servers."""
    background_docs: tuple[int, int] = (0, 0)
    """The background's documents: cards, servers."""
    cards: _Field | None = None
    """The cards' field (rows: card indexes)."""
    servers: _Field | None = None
    """The servers' field (rows: server indexes): every past question of a server's cards."""
    server_cards: np.ndarray = field(default_factory=lambda: _NO_ROWS)
    """Per server, how many of its cards have past questions."""
    card_rows: np.ndarray = field(default_factory=lambda: _NO_ROWS)
    """The cards with past questions, sorted (the rows of :attr:`vectors`)."""
    vectors: np.ndarray | None = None
    """Per card of :attr:`card_rows`: the normalised mean of its past questions' vectors (with an encoder)."""
    size: int = 0
    """How many past questions in all."""
    neighbours: Neighbours | None = None
    """The trusted past questions' own vectors, for the nearest one to a question (with an encoder)."""

    def recall(self, question: str) -> list[tuple[int, str]]:
        """The cards whose *trusted* past questions hold this very question, in other words order or
        inflection (the same index terms), each with that past question. Empty without one."""
        return list(self._recall_table.get(frozenset(tokens(question)), ()))

    @functools.cached_property
    def _recall_table(self) -> dict[frozenset[str], list[tuple[int, str]]]:
        """The trusted past questions by their index terms (built once per index: an index never changes)."""
        table: dict[frozenset[str], list[tuple[int, str]]] = {}
        for card in sorted(self.trusted):
            for past in self.questions.get(card, ()):
                terms = frozenset(tokens(past))
                if terms:
                    table.setdefault(terms, []).append((card, past))
        return table

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
        partial: bool = False,
    ) -> HistoryIndex:
        """Index ``history`` for the cards ``keys`` (card key -> index; keys of other cards are
        ignored; ``card_server``: each card's server index). ``previous``: the history indexed
        before, updated where the two differ (without one, the whole history is indexed); ``encode``:
        vectors of texts (``None``: no semantic view); ``partial``: ``history`` holds only the cards
        that changed (an empty list: the card has no past question now), the others are as before."""
        previous = previous if previous is not None else cls.empty(len(card_server))
        given, changes = previous._changed(history, keys, partial)
        index = previous._updated(changes, given, card_server, config, (background, server_background), encode)
        trust = frozenset(keys[key] for key, (_, sure) in given.items() if sure and keys[key] in index.questions)
        if trust != index.trusted:
            index = replace(index, trusted=trust)
        if encode is None:
            return index
        moved = {  # per card whose trusted questions changed: them before, and now
            card: (
                previous.questions.get(card, ()) if card in previous.trusted else (),
                index.questions.get(card, ()) if card in trust else (),
            )
            for card in changes.keys() | (trust ^ previous.trusted)
        }
        moved = {card: both for card, both in moved.items() if both[0] != both[1]}
        neighbours = previous.neighbours
        if neighbours is None and trust:  # made whole: a first history, or one read before without vectors
            neighbours = Neighbours.build(index.questions, trust, card_server, encode)
        elif neighbours is not None and moved:  # the changed cards' questions only
            neighbours = neighbours.updated(moved, card_server, encode)
        return index if neighbours is index.neighbours else replace(index, neighbours=neighbours)

    def _changed(
        self, history: History, keys: Mapping[str, int], partial: bool
    ) -> tuple[dict[str, tuple[tuple[str, ...], bool]], dict[int, tuple[str, ...]]]:
        """The history as given after ``history`` (see :meth:`build`), and per card whose past
        questions differ from this index's, its new ones (each once; none: ``()``)."""
        given: dict[str, tuple[tuple[str, ...], bool]] = dict(self.given) if partial else {}
        changes: dict[int, tuple[str, ...]] = {}
        for key, past in history.items():
            card = keys.get(key)
            if card is None:
                continue
            as_given = tuple(past)
            if partial and not as_given:
                given.pop(key, None)
            else:
                given[key] = (as_given, trusted(past))
            if self.given.get(key, ((), False))[0] != as_given:
                unique = tuple(dict.fromkeys(q for q in as_given if q and q.strip()))
                if unique != self.questions.get(card, ()):
                    changes[card] = unique
        for key in () if partial else self.given.keys() - given.keys():
            if keys[key] in self.questions:
                changes[keys[key]] = ()
        return given, changes

    def trusted_cards(self) -> np.ndarray:
        """Per card, whether its past questions are trusted (see :class:`Taught`)."""
        out = np.zeros(self.n_cards, dtype=bool)
        out[np.fromiter(self.trusted, dtype=np.int64, count=len(self.trusted))] = True
        return out

    def _updated(
        self,
        changes: Mapping[int, tuple[str, ...]],
        given: dict[str, tuple[tuple[str, ...], bool]],
        card_server: np.ndarray,
        config: RankConfig,
        backgrounds: tuple[tuple[int, Mapping[str, int]] | None, tuple[int, Mapping[str, int]] | None],
        encode: Callable[[list[str]], np.ndarray] | None,
    ) -> HistoryIndex:
        """This index with each card of ``changes`` holding its new past questions (none: out)."""
        if not changes and (encode is None or self.vectors is not None or not self.questions):
            return replace(self, given=given)
        questions, per_card, vocab = dict(self.questions), dict(self.per_card), dict(self.vocab)
        n_servers = int(card_server.max()) + 1 if len(card_server) else 0
        server_cards = self.server_cards.copy() if len(self.server_cards) else np.zeros(n_servers, dtype=np.int64)
        card_deltas: dict[int, _Delta] = {}
        by_server: dict[int, list[_Delta]] = {}
        read: dict[str, list[str]] = {}  # a question's terms, once per update (a question asked of several cards)
        for card, past in changes.items():
            old = per_card.pop(card, None)
            questions.pop(card, None)
            new = _terms(past, vocab, read) if past else None
            if new is not None:
                questions[card], per_card[card] = past, new
            delta = card_deltas[card] = _card_delta(old, new)
            server = int(card_server[card])
            by_server.setdefault(server, []).append(delta)
            server_cards[server] += (new is not None) - (old is not None)
        server_deltas = {server: _delta(*moved) for server, moved in by_server.items()}
        size = self.size + sum(len(questions.get(c, ())) - len(self.questions.get(c, ())) for c in changes)
        bg = _extend(self.background, vocab, *backgrounds)
        cards = self.cards or _Field.empty(self.n_cards, config.k1, config.b)
        servers = self.servers or _Field.empty(n_servers, config.k1, config.server_b)
        rows = np.array(sorted(questions), dtype=np.int64)
        vectors = None
        if encode is not None and len(rows):
            vectors = _mean_vectors(rows, questions, self, set(changes), encode)
        return HistoryIndex(
            n_cards=self.n_cards,
            questions=questions,
            given=given,
            per_card=per_card,
            vocab=vocab,
            background=bg,
            background_docs=(_docs(backgrounds[0]), _docs(backgrounds[1])),
            trusted=self.trusted,
            cards=cards.changed(card_deltas, len(questions)),
            servers=servers.changed(server_deltas, int(np.count_nonzero(server_cards))),
            server_cards=server_cards,
            card_rows=rows,
            vectors=vectors,
            size=size,
        )

    def card_scores(self, query: Mapping[str, float]) -> np.ndarray:
        """Every card's BM25 score of its past questions (0 without any)."""
        if self.cards is None:
            return np.zeros(self.n_cards)
        return self.cards.scores(self._rare(self.cards, query, 0))

    def server_scores(self, query: Mapping[str, float], n_servers: int) -> np.ndarray:
        """Every server's BM25 score of its cards' past questions (0 without any)."""
        out = np.zeros(n_servers)
        if self.servers is not None:
            found = self.servers.scores(self._rare(self.servers, query, 1))
            out[: len(found)] = found[:n_servers]
        return out

    def _rare(self, index: _Field, query: Mapping[str, float], which: int) -> list[tuple[int, float, float]]:
        """The query's terms whose IDF in ``index`` is at least :data:`MIN_IDF`: (id, weight, IDF)."""
        background = (self.background_docs[which], self.background[which])
        out = []
        for term, weight in query.items():
            i = self.vocab.get(term)
            if i is not None and i in index.postings and (idf := index.idf(i, background)) >= MIN_IDF:
                out.append((i, weight, idf))
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
        asked = frozenset(terms)
        return sum(len(held & asked) >= need for held in known.each)  # a set's & walks the smaller one


def _delta(*parts: tuple[np.ndarray, np.ndarray]) -> _Delta:
    """The term counts of ``parts`` ((term ids, counts) each) summed per term: (ids, changes), no zero change."""
    kept = [p for p in parts if len(p[0])]
    if not kept:
        return np.zeros(0, dtype=np.int64), _NO_COUNTS
    ids, at = np.unique(np.concatenate([p[0] for p in kept]).astype(np.int64), return_inverse=True)
    sums = np.bincount(at, weights=np.concatenate([p[1] for p in kept]), minlength=len(ids))
    moved = sums != 0
    return ids[moved], sums[moved]


def _card_delta(old: _CardTerms | None, new: _CardTerms | None) -> _Delta:
    """How a card's term counts move from ``old`` to ``new`` past questions (either may be none)."""
    parts = [] if old is None else [(old.ids, -old.counts)]
    return _delta(*parts, *([] if new is None else [(new.ids, new.counts)]))


def _mean_vectors(
    rows: np.ndarray,
    questions: Mapping[int, tuple[str, ...]],
    previous: HistoryIndex,
    changed: set[int],
    encode: Callable[[list[str]], np.ndarray],
) -> np.ndarray:
    """Per card of ``rows``, the normalised mean of its past questions' vectors: a card not
    ``changed`` keeps its vector in ``previous``, the rest are encoded in one call."""
    reusable = previous.vectors is not None and len(previous.card_rows) > 0
    keep = np.zeros(len(rows), dtype=bool)
    if reusable:
        keep = np.isin(rows, previous.card_rows) & ~np.isin(rows, np.fromiter(changed, dtype=np.int64))
    made = _means([int(c) for c in rows[~keep]], questions, encode)
    if reusable and np.array_equal(rows, previous.card_rows):  # the same cards: one copy, then the changed rows
        assert previous.vectors is not None
        out = previous.vectors.copy()
    else:
        dim = len(made[0]) if made else previous.vectors.shape[1]  # type: ignore[union-attr]
        out = np.zeros((len(rows), dim), dtype=np.float32)
        if keep.any():
            assert previous.vectors is not None
            out[keep] = previous.vectors[np.searchsorted(previous.card_rows, rows[keep])]
    if made:
        out[~keep] = np.stack(made)
    return out


def _means(
    cards: list[int], questions: Mapping[int, tuple[str, ...]], encode: Callable[[list[str]], np.ndarray]
) -> list[np.ndarray]:
    """Per card of ``cards``, the normalised mean of its past questions' vectors (encoded in one call)."""
    texts = list(dict.fromkeys(q for c in cards for q in questions[c]))
    found = dict(zip(texts, np.asarray(encode(texts), dtype=np.float32), strict=True)) if texts else {}
    made = []
    for c in cards:
        mean = np.mean([found[q] for q in questions[c]], axis=0)
        norm = float(np.linalg.norm(mean))
        made.append((mean / norm if norm > 0 else mean).astype(np.float32))
    return made


def _terms(past: tuple[str, ...], vocab: dict[str, int], read: dict[str, list[str]]) -> _CardTerms:
    """A card's past questions as postings (new terms added to ``vocab``; ``read``: each question's
    terms already read, added to)."""
    each = []
    for question in past:
        terms = read.get(question)
        if terms is None:
            terms = read[question] = history_terms(question)
        each.append(terms)
    counts: dict[int, float] = {}
    for terms in each:
        for t in terms:
            i = vocab.setdefault(t, len(vocab))
            counts[i] = counts.get(i, 0.0) + 1.0
    return _CardTerms(
        np.fromiter(counts.keys(), dtype=np.int64, count=len(counts)),
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


def _docs(background: tuple[int, Mapping[str, int]] | None) -> int:
    return background[0] if background else 0
