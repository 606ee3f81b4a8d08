"""The ranker's replaceable steps (:class:`RankSteps`) and what a step is given.

:class:`~skilldeck.select._rank.Ranker` takes a :class:`RankSteps`; the defaults are the shipped
choice of each step. The benchmark's ablation (``bench/selection/ablation.py``) passes a subclass
to measure the variants the product does not ship. A step is given what it reads as arguments --
the BM25F index, the cards' server groups, the catalog's vectors -- never the ranker itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from skilldeck.select import _bm25f
from skilldeck.select._bm25f import Background, BM25Index
from skilldeck.select._cards import Card
from skilldeck.select._query import implied_needs, path_words, split_jobs
from skilldeck.select._results import Evidence
from skilldeck.select._text import semantic_text, server_text, tokens

__all__ = ["VIEWS", "Fusion", "RankSteps", "SemanticVectors", "ServerGroups", "zscore"]

VIEWS = ("lexical", "best_bm25", "top2_cosine", "centroid_cosine", "label_cosine")
"""The five per-server views fused when an encoder is given (see :mod:`skilldeck.select._rank`)."""


def zscore(x: np.ndarray) -> np.ndarray:
    """``x`` less its mean, over its standard deviation, along its last axis (each row of a matrix on its
    own); all zeros where it is flat (divided by infinity)."""
    sd = x.std(axis=-1, keepdims=True)
    z: np.ndarray = x - x.mean(axis=-1, keepdims=True)
    z /= np.where(sd > 1e-12, sd, np.inf)
    return z


@dataclass(frozen=True, eq=False)
class ServerGroups:
    """Which server each card is on, and the cards sorted by server (for per-server maxima)."""

    card_server: np.ndarray
    """Per card, the index of its server."""
    order: np.ndarray
    """Card indices sorted by server (stable)."""
    starts: np.ndarray
    """Where each server's cards start in ``order``."""
    sorted_server: np.ndarray
    """``card_server[order]``."""

    @classmethod
    def of(cls, card_server: np.ndarray, n_servers: int) -> ServerGroups:
        """The groups of ``n_servers`` servers, card ``i`` on server ``card_server[i]``."""
        order = np.argsort(card_server, kind="stable")
        sorted_server = card_server[order]
        return cls(card_server, order, np.searchsorted(sorted_server, np.arange(n_servers)), sorted_server)

    @property
    def n_servers(self) -> int:
        """How many servers."""
        return len(self.starts)

    def per_server_max(self, card_scores: np.ndarray) -> np.ndarray:
        """Per server, the best of its cards' scores."""
        return np.maximum.reduceat(card_scores[self.order], self.starts)


@dataclass(frozen=True, eq=False)
class SemanticVectors:
    """The catalog's L2-normalised float32 vectors, set together once every card has one."""

    cards: np.ndarray
    """Per card."""
    centroids: np.ndarray
    """Per server: the normalised mean of its cards' vectors."""
    labels: np.ndarray
    """Per server: of its ``label: description`` text."""


@dataclass(frozen=True, eq=False)
class Fusion:
    """One query unit's fusion of the five views, as :meth:`RankSteps.fuse` is given it."""

    mixed: np.ndarray
    """The lexical card ranking (server mix, jobs and skills applied)."""
    evidence: Evidence
    """The unit's lexical evidence."""
    vectors: SemanticVectors
    groups: ServerGroups
    run: Callable[[np.ndarray], tuple[np.ndarray, Evidence]]
    """Fuse the views for a query vector: (card scores, the evidence told about them)."""


class RankSteps:
    """The steps of a ranking that can be replaced; each method is the shipped choice.

    One instance may serve any number of rankers: these steps keep no state. A subclass that keeps
    state of a catalog (the benchmark's) belongs to one ranker."""

    def background(self) -> Background | None:
        """(cards, servers) background document frequencies added to the catalog's own for IDF.

        The shipped ones come from a 527-tool reference catalog, so that BM25 strengths -- and the
        confidence built on them -- mean the same on a 10-card catalog as on a 10,000-card one."""
        return _bm25f.background()

    def jobs(self, question: str) -> list[str]:
        """The jobs of a question, each ranked on its own (:func:`~skilldeck.select._rank.split_jobs`)."""
        return split_jobs(question)

    def query_texts(self, question: str, jobs: list[str]) -> list[str]:
        """What the encoder reads per question: the whole question only (its jobs share its vector)."""
        return [question]

    def query_terms(self, question: str) -> dict[str, float]:
        """The weighted terms a question asks for (its own words 1, words read from paths 0.5)."""
        terms = dict.fromkeys(tokens(question, request_stopwords=True), 1.0)
        for t in tokens(path_words(question)):
            terms.setdefault(t, 0.5)
        return terms

    def card_scores(self, index: BM25Index, bags: Sequence[Mapping[str, float]], terms: dict[str, float]) -> np.ndarray:
        """Raw BM25F scores of every card for the query terms (``bags``: each card's document)."""
        return index.scores(terms)

    def server_lexical(self, server_raw: np.ndarray, card_raw: np.ndarray, groups: ServerGroups) -> np.ndarray:
        """A server's lexical score: the BM25F score of its document (``card_raw`` is for variants)."""
        return server_raw

    def mix(self, lexical: np.ndarray, semantic: np.ndarray, weight: float) -> np.ndarray:
        """Lexical and semantic scores (each in [0, 1]) mixed, ``weight`` the semantic share."""
        return (1 - weight) * lexical + weight * semantic

    def merge_job(self, mixed: np.ndarray, job: np.ndarray, n_jobs: int) -> None:
        """Add one job's ranking (peak-normalised, ``job.max() > 0``) into the question's, in place:
        each of ``n_jobs`` jobs adds ``1 / n_jobs`` of itself."""
        mixed += (1.0 / n_jobs) * job / job.max()

    def implied_needs(self, question: str) -> list[str]:
        """The needs a question implies (:func:`~skilldeck.select._rank.implied_needs`)."""
        return implied_needs(question)

    def semantic_text(self, card: Card, tool: Mapping[str, Any] | None) -> str:
        """What the encoder reads for a card (:func:`~skilldeck.select._rank.semantic_text`; ``tool``: its
        MCP Tool object, if known)."""
        return semantic_text(card)

    def label_text(self, label: str, description: str, card_names: list[str]) -> str:
        """What the encoder reads for a server's label view (:func:`~skilldeck.select._rank.server_text`)."""
        return server_text(label, description, card_names)

    def prepare_vectors(self, cards: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The card and label vectors the ranker keeps (before server centroids are taken): as given."""
        return cards, labels

    def cosines(
        self, vectors: SemanticVectors, groups: ServerGroups, qvec: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The question's cosine to every card, every server's centroid and every server's label text."""
        # einsum, not BLAS: a threaded sgemv next to the encoder's own threads oversubscribes small machines
        return (
            np.einsum("ij,j->i", vectors.cards, qvec).astype(np.float64),
            np.einsum("ij,j->i", vectors.centroids, qvec).astype(np.float64),
            np.einsum("ij,j->i", vectors.labels, qvec).astype(np.float64),
        )

    def server_card_cosine(self, card_cos: np.ndarray, groups: ServerGroups) -> np.ndarray:
        """View 3: per server, the mean of its two best card cosines (its best one when it has one card)."""
        by_server = card_cos[groups.order]
        best = np.maximum.reduceat(by_server, groups.starts)
        is_best = by_server == best[groups.sorted_server]
        ties = np.bincount(groups.sorted_server[is_best], minlength=groups.n_servers)
        second = np.maximum.reduceat(np.where(is_best, -np.inf, by_server), groups.starts)
        second = np.where((ties >= 2) | ~np.isfinite(second), best, second)
        return (best + second) / 2.0

    def combine_views(self, views: np.ndarray) -> np.ndarray:
        """The fused server score: each view (a row of ``views``) z-scored across servers, summed."""
        fused: np.ndarray = zscore(views).sum(axis=0)  # every row at once: a few array passes, not a few per view
        return fused

    def fuse(self, fusion: Fusion, qvec: np.ndarray) -> tuple[np.ndarray, Evidence]:
        """Card scores from the fused views for the question's vector ``qvec``: one pass."""
        return fusion.run(qvec)
