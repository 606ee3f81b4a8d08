"""The ranking variants the ablation measures and the product does not ship.

:class:`AblationSteps` are :class:`skilldeck.select._rank.RankSteps` switched by an
:class:`AblationConfig`, and :class:`AblationRanker` is a :class:`skilldeck.select._rank.Ranker` given
them; with the default switches it ranks exactly as the shipped ranker does. ``run.py --ablation`` changes one knob at a time (:func:`configs` sends each
knob to :class:`~skilldeck.select._rank.RankConfig` or :class:`AblationConfig`), and
``background.py`` turns the background frequencies off to compute them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

import numpy as np

from skilldeck.select._cards import Card, words
from skilldeck.select._query import path_words
from skilldeck.select._rank import (
    IMPLIED_NEEDS,
    VIEWS,
    Background,
    BM25Index,
    Encoder,
    Evidence,
    Fusion,
    RankConfig,
    Ranker,
    Ranking,
    RankSteps,
    SemanticVectors,
    ServerGroups,
    tokens,
)
from skilldeck.select._steps import zscore
from skilldeck.select._text import words_of

__all__ = ["AblationConfig", "AblationRanker", "AblationSteps", "RecordingRanker", "RecordingSteps", "configs"]

CLOCK_NEED = "get the current date and time"


@dataclass(frozen=True)
class AblationConfig:
    """Switches for the variants; the defaults are what :class:`Ranker` ships."""

    server_aggregate: Literal["doc", "max"] = "doc"
    """How a server is scored lexically: ``doc`` (BM25F of its document) or ``max`` (its best card)."""
    expand_paths: bool = True
    """Read file paths and extensions in the question as words."""
    request_stopwords: bool = True
    jobs: bool = True
    job_merge: Literal["sum", "max"] = "sum"
    """How job rankings merge into the question's: ``sum`` (each adds ``job_weight / n_jobs`` of its
    normalised scores) or ``max`` (each counts ``job_weight`` of its normalised scores, max-merged)."""
    job_weight: float = 1.0
    prf_cards: int = 0
    """Pseudo-relevance feedback: terms from this many top cards are added to the query (0: off)."""
    prf_terms: int = 8
    prf_weight: float = 0.3
    semantic_jobs: bool = False
    """Encode each job too, not only the whole question (+0.03 Recall@5 on half B, about 2x the encoder time)."""
    fusion: Literal["mix", "rrf"] = "mix"
    """``mix`` (normalised score mix) or ``rrf`` (reciprocal rank fusion, k=60)."""
    background: bool = True
    """Add the shipped background document frequencies to the catalog's own when computing IDF."""
    implied: bool = True
    """Give the needs a question implies (file paths, URLs, arithmetic, relative dates) a top-5 place."""
    clock_need: bool = True
    """Among them, a date relative to today implies a clock need (off: the rules before it was added)."""
    drop_view: str | None = None
    """Leave one of the five fused views (:data:`~skilldeck.select._rank.VIEWS`) out of the sum."""
    label_tools: bool = False
    """The label view reads the server's tool names after its description (expansion with the card's tools)."""
    vector_prf: int = 0
    """Semantic pseudo-relevance feedback (Rocchio): the question's vector plus ``vector_prf_weight`` times
    the mean vector of the first fused pass's top ``vector_prf`` cards, normalised, and every view scored
    again with it (0: off). Vector arithmetic only, no second encoding."""
    vector_prf_weight: float = 0.5
    server_cosine: Literal["top2", "max", "softmax"] = "top2"
    """View 3, a server's card cosines in one number: the mean of its best two (shipped), its best one, or
    their softmax-weighted mean at temperature :data:`SOFTMAX_TEMPERATURE` (fixed a priori)."""
    view_norm: Literal["z", "robust", "rank"] = "z"
    """How each view is put on one scale before the sum: z-score (shipped), robust z ((x - median) / (1.4826
    MAD)), or its rank across servers through ``1 / (RANK_K + rank)``, then z-scored."""
    view_weights: tuple[float, ...] | None = None
    """Each view's weight in the fused sum (:data:`~skilldeck.select._rank.VIEWS` order); ``None``: equal
    (the learned-weights row fits them on one half and reports them on the other)."""
    hubness: Literal["none", "center", "csls"] = "none"
    """Hubness reduction in the cosine views: none (shipped); ``center``, every vector (cards, labels, the
    question) has the catalog's mean card vector taken off and is normalised again (so a server close to
    everything stops being close to every question); ``csls``, each card's / centroid's / label's cosine
    loses half the mean of its :data:`CSLS_K` highest cosines to other servers' (cross-domain similarity
    local scaling)."""
    no_cjk: bool = False
    """The encoder (English MiniLM) reads no CJK: runs of CJK characters are dropped from the card and label
    texts, and a label whose description is then (nearly) empty reads its card names instead."""
    path_term_weight: float = 1.0
    """Weight of the question's terms that occur only inside a local path or a URL (1: as its other words).
    A path says where the work goes; the file need it implies is ranked on its own."""
    encoder_paths: Literal["as_is", "basename"] = "as_is"
    """What the encoder reads of a local path in the question: all of it, or only its file name."""
    card_text: Literal["shipped", "split_names", "params", "split_names_params"] = "shipped"
    """What the encoder reads for a card: the shipped ``server: name: description``; with camelCase names
    split into words too; with the input schema's property names (and short descriptions) appended; both."""

    def __post_init__(self) -> None:
        # the fields are Literal; a typo that escapes the type checker must not silently pick a branch
        if (
            self.server_aggregate not in ("doc", "max")
            or self.fusion not in ("mix", "rrf")
            or self.job_merge not in ("sum", "max")
            or self.server_cosine not in ("top2", "max", "softmax")
            or self.view_norm not in ("z", "robust", "rank")
            or self.hubness not in ("none", "center", "csls")
            or self.card_text not in ("shipped", "split_names", "params", "split_names_params")
            or self.encoder_paths not in ("as_is", "basename")
        ):
            raise ValueError(
                f"unknown server_aggregate, fusion, job_merge, server_cosine, view_norm, hubness or card_text in {self}"
            )
        if self.view_weights is not None and len(self.view_weights) != len(VIEWS):
            raise ValueError(f"view_weights needs {len(VIEWS)} weights, one per view ({', '.join(VIEWS)})")
        if self.drop_view is not None and self.drop_view not in VIEWS:
            raise ValueError(f"unknown view {self.drop_view!r}; one of {', '.join(VIEWS)}")


def configs(change: Mapping[str, Any]) -> tuple[RankConfig, AblationConfig]:
    """One ablation row's knobs, split between the shipped weights and the variant switches."""
    ranked = {f.name for f in fields(RankConfig)}
    unknown = set(change) - ranked - {f.name for f in fields(AblationConfig)}
    if unknown:
        raise ValueError(f"unknown ablation knobs {sorted(unknown)}")
    return (
        RankConfig(**{k: v for k, v in change.items() if k in ranked}),
        AblationConfig(**{k: v for k, v in change.items() if k not in ranked}),
    )


class AblationSteps(RankSteps):
    """The ranker's steps as ``ablation`` switches them (the shipped steps with the defaults).

    It keeps the hubness variants' state of one catalog: one instance per ranker."""

    def __init__(self, ablation: AblationConfig) -> None:
        self.ablation = ablation
        self._mean: np.ndarray | None = None
        self._csls: tuple[SemanticVectors, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None

    def background(self) -> Background | None:
        return super().background() if self.ablation.background else None

    def jobs(self, question: str) -> list[str]:
        return super().jobs(question) if self.ablation.jobs else []

    def query_texts(self, question: str, jobs: list[str]) -> list[str]:
        if self.ablation.encoder_paths == "basename":
            question = _LOCAL_PATH.sub(lambda m: m.group(1) + m.group(2).rstrip("/").rsplit("/", 1)[-1], question)
        return [question, *jobs] if self.ablation.semantic_jobs else [question]

    def query_terms(self, question: str) -> dict[str, float]:
        terms = dict.fromkeys(tokens(question, request_stopwords=self.ablation.request_stopwords), 1.0)
        if self.ablation.path_term_weight != 1.0:
            outside = set(tokens(_PATHS.sub(" ", question), request_stopwords=self.ablation.request_stopwords))
            terms = {t: (w if t in outside else self.ablation.path_term_weight) for t, w in terms.items()}
        if self.ablation.expand_paths:
            for t in tokens(path_words(question)):
                terms.setdefault(t, 0.5)
        return terms

    def card_scores(self, index: BM25Index, bags: Sequence[Mapping[str, float]], terms: dict[str, float]) -> np.ndarray:
        card_raw = super().card_scores(index, bags, terms)
        if self.ablation.prf_cards and card_raw.max() > 0:
            card_raw = super().card_scores(index, bags, self._prf(index, bags, terms, card_raw))
        return card_raw

    def _prf(
        self, index: BM25Index, bags: Sequence[Mapping[str, float]], terms: dict[str, float], card_scores: np.ndarray
    ) -> dict[str, float]:
        a = self.ablation
        top = [i for i in np.argsort(-card_scores)[: a.prf_cards] if card_scores[i] > 0]
        gain: dict[str, float] = {}
        for i in top:
            for term, tf in bags[i].items():
                if term not in terms:
                    gain[term] = gain.get(term, 0.0) + tf * float(index.idf[index.vocab[term]])
        best = sorted(gain.items(), key=lambda kv: -kv[1])[: a.prf_terms]
        return {**terms, **{t: a.prf_weight for t, _ in best}}

    def server_lexical(self, server_raw: np.ndarray, card_raw: np.ndarray, groups: ServerGroups) -> np.ndarray:
        return server_raw if self.ablation.server_aggregate == "doc" else groups.per_server_max(card_raw)

    def implied_needs(self, question: str) -> list[str]:
        if not self.ablation.implied:
            return []
        rules = [(p, need) for p, need in IMPLIED_NEEDS if self.ablation.clock_need or need != CLOCK_NEED]
        return [need for pattern, need in rules if pattern.search(question)]

    def _view_weights(self) -> tuple[float, ...]:
        base = self.ablation.view_weights or (1.0,) * len(VIEWS)
        return tuple(0.0 if view == self.ablation.drop_view else w for view, w in zip(VIEWS, base, strict=True))

    def combine_views(self, views: np.ndarray) -> np.ndarray:
        norm = {"z": zscore, "robust": _robust_z, "rank": _rank_scale}[self.ablation.view_norm]
        return sum((w * norm(v) for w, v in zip(self._view_weights(), views, strict=True)), np.zeros(views.shape[1]))

    def server_card_cosine(self, card_cos: np.ndarray, groups: ServerGroups) -> np.ndarray:
        how = self.ablation.server_cosine
        if how == "top2":
            return super().server_card_cosine(card_cos, groups)
        best = groups.per_server_max(card_cos)
        if how == "max":
            return best
        # softmax-weighted mean of each server's card cosines (shifted by the server's best for stability)
        e = np.exp((card_cos - best[groups.card_server]) / SOFTMAX_TEMPERATURE)
        n = groups.n_servers
        return np.bincount(groups.card_server, weights=e * card_cos, minlength=n) / np.bincount(
            groups.card_server, weights=e, minlength=n
        )

    def prepare_vectors(self, cards: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.ablation.hubness == "center":
            self._mean = cards.mean(axis=0)
            return _normalised(cards - self._mean), _normalised(labels - self._mean)
        return cards, labels

    def cosines(
        self, vectors: SemanticVectors, groups: ServerGroups, qvec: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        how = self.ablation.hubness
        if how == "center":
            assert self._mean is not None
            qvec = _normalised((qvec - self._mean)[None, :])[0]
        found = super().cosines(vectors, groups, qvec)
        if how == "csls":
            csls = self._neighbourhoods(vectors, groups)
            return found[0] - csls[0] / 2, found[1] - csls[1] / 2, found[2] - csls[2] / 2
        return found

    def _neighbourhoods(
        self, vectors: SemanticVectors, groups: ServerGroups
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per card, centroid and label: the mean of its :data:`CSLS_K` highest cosines to other servers'."""
        if self._csls is None or self._csls[0] is not vectors:
            servers = np.arange(groups.n_servers)
            found = (
                _neighbourhood(np.asarray(vectors.cards), groups.card_server),
                _neighbourhood(vectors.centroids, servers),
                _neighbourhood(vectors.labels, servers),
            )
            self._csls = (vectors, found)
        return self._csls[1]

    def semantic_text(self, card: Card, tool: Mapping[str, Any] | None) -> str:
        how = self.ablation.card_text
        if self.ablation.no_cjk:
            card = replace(card, description=_drop_cjk(card.description))
        if how == "shipped":
            return super().semantic_text(card, tool)
        name = words(card.name) if how.startswith("split_names") else words_of(card.name)
        server = words(card.server) if how.startswith("split_names") else words_of(card.server)
        text = f"{server}: {name}: {card.description[:400]}"
        if how.endswith("params"):
            params = _param_words(tool)
            if params:
                text = f"{text} Parameters: {params}"
        return text

    def fuse(self, fusion: Fusion, qvec: np.ndarray) -> tuple[np.ndarray, Evidence]:
        out, evidence = super().fuse(fusion, qvec)
        k = self.ablation.vector_prf
        if not k:
            return out, evidence
        top = np.argpartition(-out, min(k, len(out)) - 1)[:k] if len(out) > k else np.arange(len(out))
        q2 = qvec + self.ablation.vector_prf_weight * fusion.vectors.cards[top].mean(axis=0)
        q2 = (q2 / np.linalg.norm(q2)).astype(np.float32)
        return super().fuse(fusion, q2)

    def label_text(self, label: str, description: str, card_names: list[str]) -> str:
        if self.ablation.no_cjk:
            description = _drop_cjk(description)
            if len(description.split()) < 4:
                description = ""
        text = super().label_text(label, description, card_names)
        if not self.ablation.label_tools:
            return text
        return f"{text[:300]} Tools: " + ", ".join(words_of(n) for n in card_names[:12])

    def mix(self, lexical: np.ndarray, semantic: np.ndarray, weight: float) -> np.ndarray:
        return _rrf([lexical, semantic]) if self.ablation.fusion == "rrf" else super().mix(lexical, semantic, weight)

    def merge_job(self, mixed: np.ndarray, job: np.ndarray, n_jobs: int) -> None:
        a = self.ablation
        if a.job_merge == "sum":
            mixed += (a.job_weight / n_jobs) * job / job.max()
        else:
            np.maximum(mixed, a.job_weight * job / job.max(), out=mixed)


class AblationRanker(Ranker):
    """A :class:`Ranker` whose steps follow ``ablation`` (the shipped ranker's with the defaults)."""

    def __init__(
        self,
        cards: Sequence[Card],
        *,
        ablation: AblationConfig | None = None,
        encoder: Encoder | None = None,
        schemas: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
        config: RankConfig | None = None,
        vectors: np.ndarray | None = None,
        steps: AblationSteps | None = None,
    ) -> None:
        self.ablation = ablation or AblationConfig()
        if self.ablation.card_text != "shipped" or self.ablation.no_cjk:
            vectors = None  # the given vectors read the shipped card text: encode the variant's
        super().__init__(
            cards,
            encoder=encoder,
            schemas=schemas,
            config=config,
            vectors=vectors,
            steps=steps or AblationSteps(self.ablation),
        )


SOFTMAX_TEMPERATURE = 0.05
"""Of the softmax-weighted card cosines: a card 0.1 below the server's best weighs e^-2 (about 0.14) of it."""
RANK_K = 5.0


CSLS_K = 10
_LOCAL_PATH = re.compile(r"(^|[\s(\"'`])((?:~|\.{1,2})?/[^\s\"'`)]+)")
_PATHS = re.compile(r"(?:^|(?<=[\s(\"'`]))(?:~|\.{1,2})?/[^\s\"'`)]+|\bhttps?://\S+", re.IGNORECASE)
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]+")


def _drop_cjk(text: str) -> str:
    return " ".join(_CJK.sub(" ", text).split())


def _normalised(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _neighbourhood(vectors: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per row: the mean of its :data:`CSLS_K` highest cosines to rows of other groups (servers)."""
    sims = vectors @ vectors.T
    sims[group[:, None] == group[None, :]] = -np.inf
    k = min(CSLS_K, max(1, int((sims > -np.inf).sum(axis=1).min())))
    top = -np.partition(-sims, k - 1, axis=1)[:, :k]
    return np.where(np.isfinite(top), top, 0.0).mean(axis=1)


def _robust_z(x: np.ndarray) -> np.ndarray:
    med = float(np.median(x))
    mad = 1.4826 * float(np.median(np.abs(x - med)))
    return (x - med) / mad if mad > 1e-12 else zscore(x)


def _rank_scale(x: np.ndarray) -> np.ndarray:
    """A view as ``1 / (RANK_K + rank)``, z-scored (so a view's top few servers stand apart, the tail flat)."""
    ranks = np.empty(len(x))
    ranks[np.argsort(-x, kind="stable")] = np.arange(1, len(x) + 1)
    return zscore(1.0 / (RANK_K + ranks))


def _param_words(tool: Mapping[str, Any] | None) -> str:
    """An input schema's property names as words, each with the first 60 characters of its description."""
    schema = tool.get("inputSchema") if isinstance(tool, Mapping) else None
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return ""
    parts = []
    for name, prop in list(props.items())[:8]:
        about = prop.get("description") if isinstance(prop, Mapping) else None
        parts.append(f"{words(str(name))} ({about[:60]})" if isinstance(about, str) and about else words(str(name)))
    return ", ".join(parts)


def _rrf(lists: list[np.ndarray], k: float = 60.0) -> np.ndarray:
    out = np.zeros(len(lists[0]))
    for scores in lists:
        ranks = np.empty(len(scores))
        ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
        out += 1.0 / (k + ranks)
    return out / out.max() if out.max() > 0 else out


class RecordingSteps(AblationSteps):
    """:class:`AblationSteps` that keep, for the last fusion, what the abstention ablation reads beyond
    the shipped features: each fused view's z-scores (``last``)."""

    last: dict[str, Any]

    def fuse(self, fusion: Fusion, qvec: np.ndarray) -> tuple[np.ndarray, Evidence]:
        out, evidence = super().fuse(fusion, qvec)
        vectors, groups = fusion.vectors, fusion.groups
        card_cos = vectors.cards @ qvec
        views = np.stack(
            [
                groups.per_server_max(fusion.mixed),
                groups.per_server_max(fusion.evidence.card_raw),
                groups.per_server_max(card_cos),
                vectors.centroids @ qvec,
                vectors.labels @ qvec,
            ]
        )
        self.last = {"z": np.stack([zscore(v) for v in views])}
        return out, evidence


class RecordingRanker(AblationRanker):
    """An :class:`AblationRanker` with :class:`RecordingSteps`: ``last`` holds, per question, each fused
    view's z-scores and the chosen card."""

    steps: RecordingSteps

    def __init__(
        self,
        cards: Sequence[Card],
        *,
        encoder: Encoder | None = None,
        schemas: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
        vectors: np.ndarray | None = None,
    ) -> None:
        ablation = AblationConfig()
        super().__init__(
            cards, ablation=ablation, encoder=encoder, schemas=schemas, vectors=vectors, steps=RecordingSteps(ablation)
        )

    @property
    def last(self) -> dict[str, Any]:
        """The question's views, as :class:`RecordingSteps` kept them."""
        return self.steps.last

    def rank(self, question: str, *, limit: int | None = 50, implied: bool = True) -> Ranking:
        ranking = super().rank(question, limit=limit, implied=False)
        kept = self.steps.last
        if implied:  # the implied needs rank their own texts, which would overwrite ``last``
            ranking.implied = self.place_implied(question, ranking.servers)
            ranking.implied_units = [u for u in map(self.need_unit, (n for n, _ in ranking.implied)) if u is not None]
        self.steps.last = kept
        return ranking
