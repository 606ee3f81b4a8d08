"""Ranking cards for a question: lexical BM25F always, semantic embeddings when installed. Pure.

What is indexed (every choice below was measured on LiveMCPBench; see ``bench/selection``):

* **Cards** (a tool, or a skill): a BM25F document with weighted fields -- the name as words
  (``search_jobs`` -> ``search jobs``), the description, the input schema's property names and
  descriptions when the schemas are known, and the server's label and description.
* **Servers**: one BM25F document per server holding all of its cards. A card's score mixes its
  own match with its server's, so a question phrased in one tool's words still ranks the server
  that holds the neighbouring tools it will need, and servers come out grouped.
* Skills also inherit the best score of the tools they name (a little discounted).

What is asked:

* the question, with file paths and extensions it mentions also read as words
  (``/root/ppt/apple.pptx`` -> ``powerpoint presentation slides file``) and a small stop list of
  request words ("please", "help me", ...);
* each job of a multi-job question (:func:`split_jobs`) on its own; each job's normalised ranking
  adds ``1 / n_jobs`` of itself to the question's, so every job can pull its own server up.

Text is tokenised without any catalog-specific rule: lower case, camelCase and snake_case split,
English stemming (``PyStemmer``), and runs of CJK characters as character bigrams (so Chinese
descriptions match Chinese questions; English questions against Chinese descriptions can only
match through tool names, which are nearly always English).

With an :class:`Encoder` (the default install's int8 MiniLM, :mod:`skilldeck.select._encoders`),
servers are ranked by **multi-view fusion**: five views per server, each z-scored across the
servers and summed --

1. the lexical server score above (its best card after the server mix, jobs and skills);
2. the best BM25F score of its cards;
3. the mean of the cosines of its two best cards;
4. the cosine to the centroid of its card vectors;
5. the cosine to its ``label: description`` text.

A card's score is then mostly its server's fused score (rescaled to [0, 1]) and a little its own (lexical
and cosine, half each), so cards come out grouped by server in the fused order. Card and server
vectors can be cached by content (:class:`~skilldeck.select._vectors.VectorCache`).

The module is split by job: text and tokens (``_text``), reading a question (``_query``), BM25F
(``_bm25f``), the replaceable steps (``_steps``, :class:`RankSteps`), what a ranking produces
(``_results``) and the weights (``_config``); this module holds the :class:`Ranker` and re-exports
the public names.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from skilldeck.select._bm25f import Background, BM25Index, CatalogIndex
from skilldeck.select._card_vectors import BACKGROUND_CHUNK, CardVectors, Encoder
from skilldeck.select._cards import Card
from skilldeck.select._config import SMALL_CATALOG_SERVERS, RankConfig
from skilldeck.select._history import History, HistoryIndex, cap
from skilldeck.select._history_view import HistoryView
from skilldeck.select._needs import NeedRankings
from skilldeck.select._query import IMPLIED_NEEDS, IMPLIED_SLOT, implied_needs, split_jobs
from skilldeck.select._results import Evidence, IndexingState, Ranking, Scored, Unit
from skilldeck.select._steps import VIEWS, Fusion, RankSteps, SemanticVectors, ServerGroups
from skilldeck.select._text import semantic_text, server_text, tokens
from skilldeck.select._tool_hints import ToolHints
from skilldeck.select._units import CardPlace, anchored, idf_coverage
from skilldeck.select._vectors import VectorCache

__all__ = [
    "BACKGROUND_CHUNK",
    "IMPLIED_NEEDS",
    "IMPLIED_SLOT",
    "VIEWS",
    "BM25Index",
    "Background",
    "CatalogIndex",
    "Encoder",
    "Evidence",
    "Fusion",
    "History",
    "HistoryIndex",
    "IndexingState",
    "RankConfig",
    "RankSteps",
    "Ranker",
    "Ranking",
    "Scored",
    "SemanticVectors",
    "ServerGroups",
    "Unit",
    "implied_needs",
    "semantic_text",
    "server_text",
    "split_jobs",
    "tokens",
]


class Ranker:
    """An index over cards.

    Args:
        cards: every card to choose from.
        encoder: an optional semantic encoder; ``None`` means lexical only.
        semantic_weight: the share of the semantic score in the mix (0..1); overrides ``config``.
        schemas: ``label -> tool name -> MCP Tool object`` (e.g. ``CardSet.tools``), to index
            input-schema property names and descriptions too.
        config: the ranking knobs (:class:`RankConfig`).
        vectors: precomputed card vectors (rows in card order, from ``encoder`` over
            :func:`semantic_text`), to skip encoding the catalog.
        cache_dir: a folder where card and server vectors are kept by content
            (:class:`~skilldeck.select._vectors.VectorCache`); ``None`` writes nothing.
        background: encode the card vectors the cache lacks on a thread of their own, so the ranker
            answers at once: lexically (as without an encoder) until every vector is ready, then with
            the fused views (:attr:`semantic`, :attr:`indexing`, :meth:`wait`). Vectors all in the
            cache are read at once, as without ``background``.
        cache: a :class:`~skilldeck.select._vectors.VectorCache` to use instead of one on
            ``cache_dir`` (e.g. one kept in memory and shared by the rankers that follow a changing
            catalog, so each encodes only the cards that changed).
        steps: the ranking's replaceable steps (:class:`RankSteps`; the default is the shipped one
            of each; the benchmark's ablation passes its variants).
        history: each card's past questions, by :attr:`~skilldeck.select._cards.Card.key`
            (:mod:`skilldeck.select._history`); replace it later with :meth:`set_history`.
    """

    def __init__(
        self,
        cards: Sequence[Card],
        *,
        encoder: Encoder | None = None,
        semantic_weight: float | None = None,
        schemas: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
        config: RankConfig | None = None,
        vectors: np.ndarray | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        background: bool = False,
        cache: VectorCache | None = None,
        steps: RankSteps | None = None,
        history: History | None = None,
    ) -> None:
        config = config or RankConfig()
        if semantic_weight is not None:
            config = replace(config, semantic_weight=semantic_weight)
        self.config = config
        self.steps = steps or RankSteps()
        self.cards = list(cards)
        self.encoder = encoder
        self.semantic_weight = config.semantic_weight if encoder is not None else 0.0
        schemas = schemas or {}
        self.server_labels: list[str] = list(dict.fromkeys(card.server for card in self.cards))
        self._labels = np.array(self.server_labels, dtype=object)  # indexable by an array of server ids
        server_id = {label: i for i, label in enumerate(self.server_labels)}
        card_server = np.array([server_id[card.server] for card in self.cards], dtype=np.int64)
        self.groups = ServerGroups.of(card_server, len(self.server_labels))
        """Which server each card is on (:class:`ServerGroups`)."""
        self._card_server = card_server
        self.small = len(self.server_labels) <= SMALL_CATALOG_SERVERS
        """A small catalog (:data:`~skilldeck.select._config.SMALL_CATALOG_SERVERS`): a need that names what
        the question is about (:data:`~skilldeck.select._query.LEADING_NEEDS`: a file, a URL, a sum) moves
        its server to the first place, not the fifth (everyday questions: first card right 85.1% -> 87.6% on
        the five-server catalog); in a large one (LiveMCPBench) a file is most often a task's second job."""
        self.index = CatalogIndex.build(
            self.cards,
            card_server.tolist(),
            len(self.server_labels),
            config=config,
            schemas=schemas,
            background=self.steps.background(),
        )
        """The catalog's BM25F indexes."""
        self._inherit = _skills_inherit(self.cards)
        self.hints = ToolHints.of(self.cards, schemas, config)
        """What the tools' annotations and schemas say they do and need (:class:`~skilldeck.select._tool_hints.ToolHints`)."""
        self._named = dict(self._inherit)
        self.needs = NeedRankings(
            self.cards,
            self.steps,
            self.small,
            lambda need: self._rank(need, limit=50, implied=False, by_own=self.small),
            lambda: self.semantic,
        )
        """Each implied need's own ranking, remembered (:class:`~skilldeck.select._needs.NeedRankings`)."""
        self._primed: dict[str, np.ndarray] = {}
        if cache is None and cache_dir is not None:
            cache = VectorCache(cache_dir)
        self.card_vectors = CardVectors(
            self.cards, self.server_labels, card_server, encoder, self.steps, cache if encoder is not None else None
        )
        """The card, server and label vectors (:class:`~skilldeck.select._card_vectors.CardVectors`)."""
        self.history_view = HistoryView(config, self.groups, card_server, len(self.server_labels))
        """What past questions add to the fused scores (:class:`~skilldeck.select._history_view.HistoryView`)."""
        self._keys = {card.key: i for i, card in enumerate(self.cards)}
        self._history = HistoryIndex.empty(len(self.cards))
        self._history_lock = threading.Lock()  # one writer at a time; a ranking reads the index it started with
        if encoder is not None and self.cards:
            self.card_vectors.start(vectors, schemas, background)
        if history:
            self.set_history(history)

    @property
    def vectors(self) -> SemanticVectors | None:
        """The catalog's vectors, set at once when every card has one (``None`` until then, or without an encoder)."""
        return self.card_vectors.vectors

    @property
    def cache(self) -> VectorCache | None:
        """Where the card vectors are kept by content (``None``: without an encoder, or kept nowhere)."""
        return self.card_vectors.cache

    @property
    def indexing(self) -> IndexingState:
        """How far the card vectors are (see :meth:`wait`); ``total`` 0 without an encoder."""
        return self.card_vectors.indexing

    @property
    def semantic(self) -> bool:
        """Whether rankings fuse the encoder's views (an encoder, and every card vector ready)."""
        return self.card_vectors.semantic

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the card vectors encoded in the background (if any); whether rankings are semantic now."""
        return self.card_vectors.wait(timeout)

    def close(self) -> None:
        """Stop encoding card vectors in the background after the chunk under way (the ranking stays lexical)."""
        self.card_vectors.close()

    # -- history --------------------------------------------------------------------------------

    @property
    def history(self) -> HistoryIndex:
        """The usage history the rankings read now (empty without one)."""
        return self._history

    def set_history(self, history: History) -> None:
        """Read ``history`` (each card's past questions, by key) from the next ranking on.

        Only the history's own indexes are updated (the catalog's are kept), only for the cards whose
        past questions differ from those indexed, and only past questions not indexed before are
        encoded (through the vector cache, by content): cheap enough to call after every recorded use
        (:meth:`update_history` does not even compare the other cards). Thread-safe: a ranking under
        way keeps the history it started with."""
        self._read_history(history, partial=False)

    def update_history(self, changes: History) -> None:
        """Read the past questions of the cards in ``changes`` (by key; an empty list: none now), the
        other cards' as they were: what one recorded use needs, without comparing every card.
        Thread-safe, as :meth:`set_history`."""
        self._read_history(changes, partial=True)

    def _read_history(self, history: History, *, partial: bool) -> None:
        with self._history_lock:
            self._history = HistoryIndex.build(
                history,
                self._keys,
                self._card_server,
                config=self.config,
                background=self._history_frequencies[0],
                server_background=self._history_frequencies[1],
                previous=self._history,
                encode=self._encode if self.encoder is not None else None,
                partial=partial,
            )
            self.needs.forget()  # a need's best server may change with the history

    @functools.cached_property
    def _history_frequencies(self) -> tuple[tuple[int, Mapping[str, int]], tuple[int, Mapping[str, int]]]:
        """Document frequencies for the past-question fields' IDF (cards, servers): the catalog's own
        documents' and the shipped background's, so a word common in tool prose stays cheap there too."""
        background = self.steps.background()
        return _frequencies(self.index.cards, background, 0), _frequencies(self.index.servers, background, 1)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self.card_vectors.encode(texts)

    # -- pieces ---------------------------------------------------------------------------------

    def query_terms(self, question: str) -> dict[str, float]:
        """The weighted terms a question asks for (its own words 1, words read from paths 0.5)."""
        return self.steps.query_terms(question)

    def card_terms(self, card: int) -> frozenset[str]:
        """Every term of a card's document (name, description, server)."""
        return self.index.card_terms[card]

    def server_terms(self, label: str) -> frozenset[str]:
        """Every term of a server's document."""
        return self.index.server_terms[self.server_labels.index(label)]

    def _unit(
        self,
        text: str,
        qvec: np.ndarray | None,
        history: HistoryIndex | None = None,
        fold: bool = True,
        terms: dict[str, float] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, Evidence]:
        """Score one query unit: (card scores, server scores), both in [0, 1], and its raw evidence.

        With ``qvec`` (a unit of its own vector, which the shipped steps never encode) each score
        mixes in its cosine; the question's own vector is fused later (:meth:`_fusion`). ``terms``:
        the unit's :meth:`query_terms`, when the caller has them already."""
        if terms is None:
            terms = self.query_terms(text)
        card_raw = self.steps.card_scores(self.index.cards, self.index.card_bags, terms)
        server_raw = self.index.servers.scores(terms)
        card_history = server_history = None
        if history:  # past questions: a field of their own, capped by the card's (server's) own evidence
            c = self.config
            ratio = c.history_cap_ratio
            card_floor, server_floor = self.history_view.floors(history) if not fold else (c.history_cap_floor,) * 2
            card_history = cap(c.history_weight * history.card_scores(terms), card_raw, ratio, card_floor)
            server_lift = c.history_server_weight * history.server_scores(terms, len(self.server_labels))
            server_history = cap(server_lift, server_raw, ratio, server_floor)
            if fold:
                card_raw = card_raw + card_history
                server_raw = server_raw + server_history
        server_lex = self.steps.server_lexical(server_raw, card_raw, self.groups)
        card = card_raw / card_raw.max() if card_raw.max() > 0 else card_raw
        server = server_lex / server_lex.max() if server_lex.max() > 0 else server_lex
        card_sem = server_sem = None
        vectors = self.vectors
        if qvec is not None and vectors is not None:
            # einsum, not BLAS: a threaded sgemv next to the encoder's own threads oversubscribes small machines
            card_sem = np.clip(np.einsum("ij,j->i", vectors.cards, qvec), 0.0, 1.0).astype(np.float64)
            server_sem = np.clip(np.einsum("ij,j->i", vectors.centroids, qvec), 0.0, 1.0).astype(np.float64)
            mix, share = self.steps.mix, self.semantic_weight
            card, server = mix(card, card_sem, share), mix(server, server_sem, share)
        own = tuple(t for t, w in terms.items() if w >= 1.0)
        evidence = Evidence(
            text,
            own,
            card_raw,
            server_raw,
            card_sem,
            server_sem,
            idf_coverage(own, server, self.index.server_terms, self.index.servers),
            card_history=card_history,
            server_history=server_history,
            folded=fold,
        )
        return card, server, evidence

    def _anchored(self, ev: Evidence, card: int, history: HistoryIndex | None = None) -> Unit:
        """What a query unit found, told about one card (the one chosen) and that card's server (:func:`anchored`)."""
        sid = int(self._card_server[card])
        where = CardPlace(card, self._named.get(card), sid, self.server_labels[sid], self.index.server_terms[sid])
        return anchored(ev, where, history)

    def _fusion(
        self,
        mixed: np.ndarray,
        card: np.ndarray,
        ev: Evidence,
        qvec: np.ndarray,
        vectors: SemanticVectors,
        history: HistoryIndex | None = None,
    ) -> tuple[np.ndarray, Evidence]:
        """Card scores from the five fused server views (module docstring), and the evidence told about
        them, as the steps fuse them (:meth:`RankSteps.fuse`; the shipped steps: one pass for ``qvec``)."""
        run = functools.partial(self._fuse_views, mixed, card, ev, vectors, history)
        return self.steps.fuse(Fusion(mixed, ev, vectors, self.groups, run), qvec)

    def _fuse_views(
        self,
        mixed: np.ndarray,
        card: np.ndarray,
        ev: Evidence,
        vectors: SemanticVectors,
        history: HistoryIndex | None,
        qvec: np.ndarray,
    ) -> tuple[np.ndarray, Evidence]:
        """One pass of :meth:`_fusion` for the query vector ``qvec``.

        ``mixed`` is the lexical card ranking (server mix, jobs, skills applied); ``card`` the
        question's own lexical card scores in [0, 1]."""
        steps = self.steps
        card_cos, centroid_cos, label_cos = steps.cosines(vectors, self.groups, qvec)
        sem_history = past = None
        if history is not None and history.vectors is not None:
            # the lead of a card's past questions' cosine over its own, capped by its own cosine: it orders
            # a server's cards (below), the views read the cards' own cosines
            c = self.config
            past = history.past_cosines(qvec)
            lead = c.history_semantic_weight * history.lead(qvec, card_cos, past)
            sem_history = cap(lead, np.clip(card_cos, 0.0, 1.0), c.history_cap_ratio, c.history_cap_floor)
        views = np.stack(
            [
                self.groups.per_server_max(mixed),
                self.groups.per_server_max(ev.card_raw),
                steps.server_card_cosine(card_cos, self.groups),
                centroid_cos,
                label_cos,
            ]
        )
        fused = steps.combine_views(views)
        own_fused = fused  # what the decision's confidence reads: the catalog's own evidence
        near = None
        if history:
            lift, near = self.history_view.lift(fused, ev, history, past, card_cos, self.vectors, qvec)
            fused = fused + lift
        if sem_history is not None:
            card_cos = card_cos + sem_history
        span = float(fused.max() - fused.min())
        fused01 = (fused - fused.min()) / span if span > 1e-12 else np.ones_like(fused)
        card_sem = np.clip(card_cos, 0.0, 1.0)
        own = steps.mix(card, card_sem, self.semantic_weight)
        w = self.config.fused_server_weight
        out = w * fused01[self._card_server] + (1.0 - w) * own
        self._inherit_named(out)
        evidence = replace(
            ev,
            card_sem=card_sem,
            server_sem=np.clip(centroid_cos, 0.0, 1.0),
            fused=own_fused,
            view_top=views.argmax(axis=1),
            label_sem=label_cos,
            sem_history=sem_history,
            neighbour=near,
        )
        return out, evidence

    def recalled(self, question: str) -> list[tuple[int, str]]:
        """The cards whose *trusted* past questions hold this very question (:meth:`HistoryIndex.recall`): a
        question that already led to a successful use, asked again (see :meth:`~skilldeck.select.Selector.decide`)."""
        history = self._history
        return history.recall(question) if history and history.trusted else []

    def _inherit_named(self, scores: np.ndarray) -> None:
        """A skill scores at least as well as the best tool it names (discounted), in place."""
        for i, named in self._inherit:
            scores[i] = max(scores[i], 0.9 * float(scores[named].max()))

    # -- the public face ------------------------------------------------------------------------

    def rank(self, question: str, *, limit: int | None = 50, implied: bool = True) -> Ranking:
        """Score every card for ``question``; keep the best ``limit`` (``None``: all); rank the servers.

        With ``implied``, each need the question implies (:func:`implied_needs`) moves its own best
        server up to the fifth place of the server list."""
        return self._rank(question, limit=limit, implied=implied)

    def _rank(self, question: str, *, limit: int | None, implied: bool, by_own: bool = False) -> Ranking:
        """:meth:`rank`; with ``by_own``, ``units[0]`` is told about the card with the best evidence of its own
        (its lexical score and cosine, mixed as a card's own score is) rather than the first card of the
        fused ranking: what an implied need, one capability, is served by (:meth:`need_unit`)."""
        jobs = self.steps.jobs(question)
        if not self.cards:
            return Ranking(question, [], [])
        vectors = self.vectors  # read once: vectors finished in the background join at the next ranking
        history = self._history  # read once: a history swapped in meanwhile joins at the next ranking
        qvecs = (
            self._query_vectors(question, jobs, implied) if self.encoder is not None and vectors is not None else None
        )
        # with an encoder, past questions join the fusion as a view of their own (:meth:`~skilldeck.select._history_view.HistoryView.lift`);
        # without one, they are added into the lexical scores
        fold = qvecs is None
        terms = self.query_terms(question)  # read twice below: tokenised once
        # lexical; the encoder's views are fused below
        card, server, evidence = self._unit(question, None, history, fold, terms)
        mixed, jobs_found = self._mix_jobs(card, server, jobs, qvecs, history, fold)
        own_share = 1.0 - self.config.fused_server_weight
        if qvecs is not None and vectors is not None:
            mixed, evidence = self._fusion(mixed, card, evidence, qvecs[0], vectors, history)
        mixed = self._with_intent(question, mixed, own_share)
        peak = mixed.max()
        if peak > 0:
            mixed = mixed / peak
        order = self._order(mixed, limit)
        scored = self._scored(terms, order, mixed, None if qvecs is None else qvecs[0], vectors)
        server_best = self.groups.per_server_max(mixed)
        s_order = np.argsort(-server_best, kind="stable")
        servers = list(zip(self._labels[s_order].tolist(), server_best[s_order].tolist(), strict=True))
        needs = self.place_implied(question, servers) if implied else []
        # the whole question is told about its top card: what a decision chooses
        top_card = int(order[0]) if len(order) else int(np.argmax(mixed))
        if by_own and evidence.card_sem is not None:
            top_card = int(np.argmax(evidence.card_sem))
        return Ranking(
            question=question,
            scored=scored,
            servers=servers,
            units=[self._anchored(evidence, top_card, history), *jobs_found],
            implied=needs,
            implied_units=[unit for unit in map(self.need_unit, (need for need, _ in needs)) if unit is not None],
            semantic=qvecs is not None,
            indexing=self.indexing,
            history=history.size,
            neighbour=evidence.neighbour,
        )

    def _with_intent(self, question: str, scores: np.ndarray, own_share: float) -> np.ndarray:
        """``scores`` moved by what the question asks to do and gives (:meth:`ToolHints.apply`)."""
        return self.hints.apply(question, scores, own_share)

    def _query_vectors(self, question: str, jobs: list[str], implied: bool) -> np.ndarray:
        """The question's vectors (:meth:`RankSteps.query_texts`): primed, or encoded with the needs it
        implies that no ranking has met yet (one pass over the model's weights, not two; their own
        rankings read them back)."""
        assert self.encoder is not None
        texts = self.steps.query_texts(question, jobs)
        primed = [self._primed.get(t) for t in texts]
        if all(v is not None for v in primed):
            return np.stack([v for v in primed if v is not None])
        fresh = self.needs.unmet([question], self._primed) if implied else []
        fresh = [need for need in fresh if need not in texts]
        vectors = np.asarray(self.encoder.encode([*texts, *fresh]), dtype=np.float32)
        if fresh:
            self._primed = {**self._primed, **dict(zip(fresh, vectors[len(texts) :], strict=True))}
        return vectors[: len(texts)]

    def _mix_jobs(
        self,
        card: np.ndarray,
        server: np.ndarray,
        jobs: list[str],
        qvecs: np.ndarray | None,
        history: HistoryIndex | None = None,
        fold: bool = True,
    ) -> tuple[np.ndarray, list[Unit]]:
        """The lexical card ranking: each card's score mixed with its server's, each job's ranking merged
        in (:meth:`RankSteps.merge_job`), skills lifted by the tools they name; and what each job found."""
        server_mix = self.config.server_mix
        mixed = (1 - server_mix) * card + server_mix * server[self._card_server]
        found: list[Unit] = []
        for j, job in enumerate(jobs):
            job_vec = None if qvecs is None or len(qvecs) < 2 else qvecs[j + 1]
            jc, js, job_evidence = self._unit(job, job_vec, history, fold)
            jm = (1 - server_mix) * jc + server_mix * js[self._card_server]
            found.append(self._anchored(job_evidence, int(np.argmax(jm)), history))  # told about the job's best card
            if jm.max() > 0:
                self.steps.merge_job(mixed, jm, len(jobs))
        self._inherit_named(mixed)
        return mixed, found

    @staticmethod
    def _order(scores: np.ndarray, limit: int | None) -> np.ndarray:
        """The best ``limit`` card indices (``None``: all), best first."""
        if limit is None or limit >= len(scores):
            return np.argsort(-scores, kind="stable")
        top = np.argpartition(-scores, limit)[:limit]
        return top[np.argsort(-scores[top], kind="stable")]

    def _scored(
        self,
        terms: dict[str, float],
        order: np.ndarray,
        mixed: np.ndarray,
        qvec: np.ndarray | None,
        vectors: SemanticVectors | None,
    ) -> list[Scored]:
        """The cards at ``order`` with their scores, raw BM25, cosine and the question's ``terms`` they match."""
        card_raw = self.index.cards.scores(terms) if len(order) else np.zeros(0)
        sem = None if qvec is None or vectors is None else np.einsum("ij,j->i", vectors.cards[order], qvec)
        # plain Python numbers in one conversion each, not one numpy scalar per card
        rows = order.tolist()
        scores, lexicals = mixed[order].tolist(), card_raw[order].tolist()
        sems: list[float | None] = [None] * len(rows) if sem is None else sem.tolist()
        card_terms = self.index.card_terms
        return [
            Scored(
                card=self.cards[i],
                score=score,
                lexical=lexical,
                semantic=cosine,
                matched_terms=tuple(filter(card_terms[i].__contains__, terms)),
            )
            for i, score, lexical, cosine in zip(rows, scores, lexicals, sems, strict=True)
        ]

    def prime(self, questions: Sequence[str]) -> None:
        """Encode several questions (the needs of one question) in one encoder call, with the needs
        they imply that no ranking has met yet; ranking each of them next reuses its vector. Only the
        last call's questions are kept."""
        if self.encoder is None or self.vectors is None:
            return
        texts = list(dict.fromkeys([*questions, *self.needs.unmet(questions, self._primed)]))
        vectors = np.asarray(self.encoder.encode(texts), dtype=np.float32)
        self._primed = dict(zip(texts, vectors, strict=True))

    def place_implied(self, question: str, servers: list[tuple[str, float]]) -> list[tuple[str, str]]:
        """Give each need ``question`` implies a place among the first ``servers`` (:meth:`NeedRankings.place`)."""
        return self.needs.place(question, servers)

    def best_server(self, need: str) -> str | None:
        """The server a need's own ranking puts first (remembered: a rule-made need's text is fixed)."""
        return self.needs.best_server(need)

    def best_card(self, need: str) -> Card | None:
        """The card a need's own ranking puts first (``None``: nothing matched it)."""
        return self.needs.best_card(need)

    def need_unit(self, need: str) -> Unit | None:
        """What a need's own ranking found, told about its best card (``None``: nothing matched it)."""
        return self.needs.unit(need)

    def score(self, question: str, *, limit: int | None = None) -> list[Scored]:
        """Cards scored for ``question``, best first (all of them unless ``limit``)."""
        return self.rank(question, limit=limit).scored


def _frequencies(index: BM25Index, background: Background | None, which: int) -> tuple[int, Mapping[str, int]]:
    """An index's own document frequencies with a background's (``which``: 0 cards, 1 servers) added."""
    n, df = (0, {}) if background is None else background[which]
    merged = dict(df)
    for term, i in index.vocab.items():
        merged[term] = merged.get(term, 0) + int(index.document_frequencies[i])
    return n + index.n, merged


def _skills_inherit(cards: Sequence[Card]) -> list[tuple[int, np.ndarray]]:
    """Each skill that names tools of the catalog, with the card indexes of those tools (a skill scores
    at least as well as the best of them, discounted)."""
    tool_index = {(card.server, card.name): i for i, card in enumerate(cards) if card.kind == "tool"}
    inherit = [
        (i, np.array([tool_index[t] for t in card.tools if t in tool_index], dtype=np.int64))
        for i, card in enumerate(cards)
        if card.kind == "skill"
    ]
    return [(i, js) for i, js in inherit if len(js)]
