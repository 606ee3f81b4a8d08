"""Deciding: choose capabilities for a question, or abstain with reasons. Pure.

Ranking orders cards; deciding asks whether the best of them is *close enough*. Confidence is a
logistic function of features that do not depend on how the rest of the catalog scored:

* ``lexical``: ``log(1 + BM25)`` of the top-ranked card -- the one chosen;
* ``server_lexical``: ``log(1 + BM25)`` of that card's server's document;
* ``idf_coverage``: the IDF-weighted share of the question's terms that the top three servers'
  documents hold between them (a term no server holds counts as the rarest possible term);
* ``terms``: ``log(1 + number of question terms)`` (long questions cover less by nature);
* with an encoder (the fused ranking, :mod:`skilldeck.select._rank`): ``semantic`` /
  ``server_semantic`` / ``label_semantic``, the cosine of that card / its server's centroid / its
  server's ``label: description``; ``coverage``, the share of the question's terms in that
  server's document; ``fused``, that server's fused score (a sum of five z-scores);
  ``fused_margin``, that score minus the best other server's; ``agreement``, the share of the five
  views that rank that server first;
* with an encoder, for the needs the question implies (a file path, a URL, arithmetic, a date
  relative to today: :func:`~skilldeck.select._rank.implied_needs`): ``implied_semantic`` /
  ``implied_server_semantic`` / ``implied_label_semantic``, the same three cosines for the best
  card of each such need's own ranking, the lowest over the needs. A question is in scope when
  every need it has is served, so the weakest need counts; a question that implies none reads the
  calibration's ``defaults`` (the in-scope average) instead.

So the confidence and the reason of a decision are those of the card it chooses (or, when it
abstains, of the best candidate), never of another server that happened to score higher as a whole.

The weights, bias and threshold are fitted by ``bench/selection/run.py --calibrate`` (plain numpy
L2 logistic regression on in-scope questions and their out-of-scope twins from half of
LiveMCPBench, its regularisation chosen by cross-validation grouped by task; the threshold keeps
90% of that half's in-scope questions) and shipped as
``calibration-lexical.json`` / ``calibration-semantic.json``. Below the threshold the answer is
**abstain**, naming the best candidates and why they fell short. A question with several jobs
(:func:`~skilldeck.select._rank.split_jobs`) may get one capability per job, each job judged by
the same model. Every decision can be appended to a structured log.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, TypeVar

import numpy as np

from skilldeck._records import JsonLinesLog
from skilldeck.select._cards import Card, CardSet
from skilldeck.select._config import SMALL_CATALOG_SERVERS
from skilldeck.select._history import History
from skilldeck.select._rank import Encoder, IndexingState, RankConfig, Ranker, Ranking, Scored, Unit
from skilldeck.select._text import tokens_of_each
from skilldeck.select._vectors import VectorCache

T = TypeVar("T")

MAX_NEEDS = 8
"""Needs one question may be split into (each is ranked on its own)."""

__all__ = [
    "FEATURES",
    "HISTORY_FEATURES",
    "MAX_NEEDS",
    "SMALL_CATALOG_SERVERS",
    "Calibration",
    "Decision",
    "DecisionLog",
    "Selector",
    "default_calibration",
    "implied_features",
    "unit_features",
    "what_to_check",
]

FEATURES = (
    "lexical",
    "server_lexical",
    "idf_coverage",
    "terms",
    "semantic",
    "server_semantic",
    "coverage",
    "fused",
    "fused_margin",
    "agreement",
    "label_semantic",
    "implied_semantic",
    "implied_server_semantic",
    "implied_label_semantic",
)
LEXICAL_FEATURES = FEATURES[:4]
"""What the lexical calibration reads (the encoder's features are absent without one)."""
HISTORY_FEATURES = ("history_lexical", "history_semantic")
"""What a card's past questions added to its BM25 (``log(1 + lift)``) and to its cosine, when the
ranker reads a usage history (absent without one; a calibration that does not weigh them ignores them)."""


@dataclass(frozen=True)
class Calibration:
    """``confidence = sigmoid(bias + sum(weight_i * feature_i))``; abstain below ``threshold``."""

    weights: dict[str, float]
    bias: float
    threshold: float
    source: str = "built-in"
    metrics: dict[str, Any] = field(default_factory=dict)
    """What the fit measured on held-out data (informational)."""
    defaults: dict[str, float] = field(default_factory=dict)
    """The value a feature takes when a question does not have it (e.g. the implied-need features of a
    question that implies no need); a feature absent from both counts 0."""
    floor: float | None = None
    """Below the threshold, the confidence from which the best cards are still worth showing, flagged
    as a low-confidence answer (the gateway's ``find``), rather than abstaining; ``None``: the threshold."""

    def confidence(self, features: dict[str, float]) -> float:
        values = {**self.defaults, **features}
        z = self.bias + sum(self.weights.get(k, 0.0) * v for k, v in values.items())
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        return cls(
            weights={str(k): float(v) for k, v in data["weights"].items()},
            bias=float(data["bias"]),
            threshold=float(data["threshold"]),
            source=str(data.get("source", "file")),
            metrics=dict(data.get("metrics", {})),
            defaults={str(k): float(v) for k, v in data.get("defaults", {}).items()},
            floor=float(data["floor"]) if data.get("floor") is not None else None,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "weights": self.weights,
            "bias": self.bias,
            "threshold": self.threshold,
            "source": self.source,
        }
        if self.floor is not None:
            out["floor"] = self.floor
        if self.defaults:
            out["defaults"] = self.defaults
        if self.metrics:
            out["metrics"] = self.metrics
        return out


def default_calibration(semantic: bool, *, small: bool = False) -> Calibration:
    """The shipped calibration for the lexical (default) or semantic (``minilm``) selector; ``small``: the
    semantic one fitted on catalogs of at most :data:`SMALL_CATALOG_SERVERS` servers."""
    if small and semantic:
        name = "calibration-semantic-small.json"
    else:
        name = "calibration-semantic.json" if semantic else "calibration-lexical.json"
    path = resources.files("skilldeck.select") / name
    return Calibration.from_json(json.loads(path.read_text(encoding="utf-8")))


def unit_features(unit: Unit) -> dict[str, float]:
    """The confidence features of one query unit (see the module docstring)."""
    feats = {
        "lexical": math.log1p(max(unit.lexical, 0.0)),
        "server_lexical": math.log1p(max(unit.server_lexical, 0.0)),
        "idf_coverage": unit.idf_coverage,
        "terms": math.log1p(len(unit.terms)),
    }
    if unit.semantic is not None:
        feats["coverage"] = unit.coverage
        feats["semantic"] = unit.semantic
    if unit.server_semantic is not None:
        feats["server_semantic"] = unit.server_semantic
    for name in ("fused", "fused_margin", "agreement", "label_semantic"):
        value = getattr(unit, name)
        if value is not None:
            feats[name] = float(value)
    if unit.history_lexical > 0 or unit.history_semantic is not None:  # a ranker with a usage history
        feats["history_lexical"] = math.log1p(unit.history_lexical)
        feats["history_semantic"] = unit.history_semantic or 0.0
    return feats


def implied_features(units: Sequence[Unit]) -> dict[str, float]:
    """The weakest implied need's cosines (see the module docstring); empty without such needs or an encoder."""
    feats: dict[str, float] = {}
    for name in ("semantic", "server_semantic", "label_semantic"):
        values = [float(v) for v in (getattr(u, name) for u in units) if v is not None]
        if values:
            feats[f"implied_{name}"] = min(values)
    return feats


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The outcome for one question (built with keyword arguments only)."""

    query: str
    abstain: bool
    confidence: float
    reason: str
    ranked: list[Scored]
    chosen: list[Card] = field(default_factory=list)
    tools: list[tuple[str, str]] = field(default_factory=list)
    """(server, tool) pairs whose schemas the chosen capabilities need."""
    features: dict[str, float] = field(default_factory=dict)
    servers: list[tuple[str, float]] = field(default_factory=list)
    """Every server, best first, with its best card's score."""
    jobs: list[dict[str, Any]] = field(default_factory=list)
    """For a multi-job question: each job's text, best server and confidence."""
    needs: list[dict[str, Any]] = field(default_factory=list)
    """Each need and its own shortlist: the needs given (one: the question itself), then the needs the
    question implies (``"implied": true``, with the server given a place for it)."""
    ranker: str = "lexical"
    """Which ranking answered: ``"semantic"`` (the encoder's views fused in) or ``"lexical"``."""
    indexing: IndexingState | None = None
    """With an encoder whose card vectors are not all ready yet (encoded in the background): how far they are."""
    history: int = 0
    """How many past questions of the card chosen (or, abstaining, of the best candidate) the question
    matched (:mod:`skilldeck.select._history`): 0 without a usage history."""
    worked_before: str | None = None
    """The trusted past question, the same as this one but for word order and inflection, that already led to a
    successful use of the card chosen (:meth:`~skilldeck.select._rank.Ranker.recalled`): that card is put first
    and the question answered, whatever the confidence; or a near paraphrase of it
    (:attr:`~skilldeck.select._config.RankConfig.history_paraphrase_cosine`)."""
    like_before: str | None = None
    """A trusted past question like this one (:attr:`~skilldeck.select._config.RankConfig.history_neighbour_cosine`)
    that led to a successful use on the first card's server, which it put first; the confidence counts it."""
    like_card: Card | None = None
    """The card :attr:`like_before` led to: on the first card's server, not always the first card."""

    def to_json(self, depth: int = 10) -> dict[str, Any]:
        out: dict[str, Any] = {
            "query": self.query,
            "abstain": self.abstain,
            "confidence": round(self.confidence, 4),
            "reason": self.reason,
            "ranked": [
                {
                    "server": s.card.server,
                    "kind": s.card.kind,
                    "name": s.card.name,
                    **({"uri": s.card.uri} if s.card.uri else {}),
                    "score": round(s.score, 4),
                }
                for s in self.ranked[:depth]
            ],
            "servers": [{"server": label, "score": round(score, 4)} for label, score in self.servers[:depth]],
            "chosen": [c.to_json() for c in self.chosen],
            "tools": [{"server": server, "name": name} for server, name in self.tools],
        }
        if self.jobs:
            out["jobs"] = self.jobs
        if self.needs:
            out["needs"] = self.needs
        out["ranker"] = self.ranker
        if self.history > 0:
            out["history"] = self.history
        if self.worked_before is not None:
            out["worked_before"] = self.worked_before
        if self.like_before is not None:
            out["like_before"] = self.like_before
        if self.like_card is not None:
            out["like_card"] = self.like_card.to_json()
        if self.indexing is not None:
            out["indexing"] = self.indexing.to_json()
        return out


class DecisionLog(JsonLinesLog):
    """Structured record of decisions: in memory, and appended as JSON lines to ``path`` if given."""

    def record(self, decision: Decision) -> None:
        features = {k: round(v, 4) for k, v in decision.features.items()}
        self._append({**decision.to_json(depth=5), "features": features})


def indexing_note(state: IndexingState) -> str:
    """What a reason adds while the card vectors are not ready: the answer is the lexical ranker's."""
    why = f"failed: {state.error}" if state.error else f"{state.done:,} of {state.total:,} encoded"
    return f" [lexical ranking: card vectors {why}]"


def _surface(question: str) -> dict[str, str]:
    """Each stemmed term of ``question`` mapped back to the word the person wrote."""
    found: dict[str, str] = {}
    words = re.findall(r"\w+", question)
    for word, terms in zip(words, tokens_of_each(words), strict=True):
        for term in terms:
            found.setdefault(term, word.lower())
    return found


def what_to_check(query: str, scored: Scored) -> str:
    """What a model should check before loading ``scored``, the closest card of a low-confidence answer:
    which of the question's words its text shares, and which it does not."""
    words = _surface(query)
    asked = list(dict.fromkeys(t for t in words if t))
    shared = [t for t in asked if t in scored.matched_terms]
    missing = [t for t in asked if t not in scored.matched_terms]
    card = f"{scored.card.server}/{scored.card.name}"
    if not shared:
        return f"{card} shares no word with the question: check that its description does what was asked"
    note = f"{card} shares {_quoted(shared, 4, words)} with the question"
    if missing:
        note += f" but not {_quoted(missing, 4, words)}"
    return note + ": check that its description does what was asked"


def _quoted(terms: Sequence[str], n: int, surface: dict[str, str] | None = None) -> str:
    surface = surface or {}
    terms = [surface.get(t, t) for t in terms]
    return ", ".join(repr(t) for t in terms[:n]) or "no shared terms"


def _round_robin(lists: Sequence[Sequence[T]], key: Callable[[T], Any]) -> list[T]:
    """The lists' items in turn (first of each, then second of each, ...), each key once."""
    out: list[T] = []
    seen: set[Any] = set()
    for row in itertools.zip_longest(*lists):
        for item in row:
            if item is not None and key(item) not in seen:
                seen.add(key(item))
                out.append(item)
    return out


class Selector:
    """Choose skills or tools for questions, or abstain.

    Args:
        cards: the catalog's cards (a :class:`CardSet` -- whose tool schemas are then indexed too --
            or a list).
        encoder: a semantic encoder (the default install's: :func:`~skilldeck.select._encoders.default_encoder`),
            or ``None`` for lexical only.
        calibration: confidence model and threshold; the shipped one by default.
        threshold: override the calibration's threshold.
        log: where decisions are recorded.
        max_tools_per_server: how many tools of one chosen server are projected at most.
        max_capabilities: how many capabilities a multi-job question may get at most.
        config: ranking knobs (:class:`~skilldeck.select._rank.RankConfig`).
        vectors: precomputed card vectors for ``encoder`` (see :class:`~skilldeck.select._rank.Ranker`).
        limit: how many ranked cards a decision keeps.
        cache_dir: where card vectors are kept by content between runs (``None``: nowhere).
        job_calibration: how each job of a multi-job question is judged; by default, with an
            encoder, the shipped lexical model (jobs are ranked lexically), else ``calibration``.
        background: with an encoder, encode the card vectors the cache lacks on a thread of their own
            and answer at once: lexically, judged by ``lexical_calibration``, until they are ready
            (each decision says which ranker answered, and how far the vectors are), then semantically
            (:class:`~skilldeck.select._rank.Ranker`'s ``background``).
        lexical_calibration: how a lexical ranking is judged when an encoder is given but its card
            vectors are not ready (the shipped lexical model by default).
        cache: a vector cache to use instead of one on ``cache_dir`` (see :class:`~skilldeck.select._rank.Ranker`).
        history: each card's past questions, by :attr:`~skilldeck.select._cards.Card.key` (a usage
            ledger's, :mod:`skilldeck.select._history`); replace it later with :meth:`set_history`.
        history_calibration: how a semantic ranking that read a usage history is judged (``None``, the
            default: by ``calibration``, as any other -- a refit with history in place was measured and not
            better, see ``bench/selection/learning.py``).
        small_calibration: with an encoder and no ``calibration`` given, judge a catalog of at most
            :data:`SMALL_CATALOG_SERVERS` servers by the model fitted on small catalogs (the default).
    """

    def __init__(
        self,
        cards: CardSet | Sequence[Card],
        *,
        encoder: Encoder | None = None,
        calibration: Calibration | None = None,
        threshold: float | None = None,
        log: DecisionLog | None = None,
        max_tools_per_server: int = 5,
        max_capabilities: int = 3,
        config: RankConfig | None = None,
        vectors: np.ndarray | None = None,
        limit: int = 50,
        cache_dir: str | os.PathLike[str] | None = None,
        job_calibration: Calibration | None = None,
        background: bool = False,
        lexical_calibration: Calibration | None = None,
        cache: VectorCache | None = None,
        history: History | None = None,
        history_calibration: Calibration | None = None,
        small_calibration: bool = True,
    ) -> None:
        schemas = cards.tools if isinstance(cards, CardSet) else None
        self.cards = cards.cards if isinstance(cards, CardSet) else list(cards)
        self.ranker = Ranker(
            self.cards,
            encoder=encoder,
            schemas=schemas,
            config=config,
            vectors=vectors,
            cache_dir=cache_dir,
            background=background,
            cache=cache,
            history=history,
        )
        self.lexical_calibration = lexical_calibration or (default_calibration(False) if encoder is not None else None)
        servers = len({card.server for card in self.cards})
        small = small_calibration and encoder is not None and servers <= SMALL_CATALOG_SERVERS
        self.calibration = calibration or default_calibration(encoder is not None, small=small)
        self.threshold = self.calibration.threshold if threshold is None else threshold
        self._threshold_given = threshold is not None
        self.history_calibration = history_calibration
        """How a semantic ranking that read a usage history is judged (``None``: as any other)."""
        # a job of a multi-job question is ranked lexically (only the whole question is encoded), so
        # with an encoder it is judged by the lexical model, which reads what a job has
        self.job_calibration = job_calibration or (default_calibration(False) if encoder is not None else None)
        self.log = log
        self.max_tools_per_server = max_tools_per_server
        self.max_capabilities = max_capabilities
        self.limit = limit

    def set_history(self, history: History) -> None:
        """Rank with ``history`` (each card's past questions, by key) from the next decision on: only the
        history is indexed again (:meth:`~skilldeck.select._rank.Ranker.set_history`); thread-safe."""
        self.ranker.set_history(history)

    def update_history(self, changes: History) -> None:
        """Rank with the past questions of the cards in ``changes`` (by key; an empty list: none now)
        from the next decision on, the other cards' as they were
        (:meth:`~skilldeck.select._rank.Ranker.update_history`); thread-safe."""
        self.ranker.update_history(changes)

    def decide(self, query: str | Sequence[str]) -> Decision:
        """Rank every card for ``query``; choose the capabilities it needs, or abstain with reasons.

        ``query`` is one question, or several needs a caller (or an agent) split it into ("find the
        paper", "save it to report.md"): each need is ranked and judged on its own, the shortlist
        takes each need's cards and servers in turn, and every confident need adds its capability
        (up to ``max_capabilities``). The decision's confidence and reason are those of the first
        card chosen (or, abstaining, of the first need's best candidate)."""
        if isinstance(query, str):
            return self._record(self._decide_one(query))
        needs = [q for q in query if q.strip()]
        if not needs:
            raise ValueError("decide() needs a question, or at least one non-empty need")
        if len(needs) > MAX_NEEDS:
            raise ValueError(f"{len(needs)} needs for one question; split it into at most {MAX_NEEDS}")
        if len(needs) == 1:
            return self._record(self._decide_one(needs[0]))
        return self._record(self._decide_needs(needs))

    def _decide_needs(self, needs: list[str]) -> Decision:
        self.ranker.prime(needs)  # every need encoded in one call
        decisions = [self._decide_one(need) for need in needs]
        chosen, tools, first = self._first_choices(decisions)
        own = [entry for d in decisions for entry in d.needs if not entry.get("implied")]
        implied = [entry for d in decisions for entry in d.needs if entry.get("implied")]
        implied = list({entry["need"]: entry for entry in implied}.values())
        if first is None:
            reason = f"abstained for each of the {len(needs)} needs; the first: " + decisions[0].reason.removeprefix(
                "abstained: "
            )
        else:
            reason = "; ".join(
                f"need {i} ({need!r}): " + (d.reason if not d.abstain else "abstained")
                for i, (need, d) in enumerate(zip(needs, decisions, strict=True), 1)
            )
        judged = first or decisions[0]  # the confidence and features told: of the first need answered
        # the needs are ranked one after another: vectors finished in between make the first lexical only
        return Decision(
            query="; ".join(needs),
            abstain=first is None,
            confidence=judged.confidence,
            reason=reason,
            ranked=_round_robin([d.ranked for d in decisions], key=lambda s: s.card.key)[: self.limit],
            chosen=chosen,
            tools=tools,
            features=judged.features,
            servers=_round_robin([d.servers for d in decisions], key=lambda s: s[0]),
            jobs=[],
            needs=own + implied,
            ranker=decisions[0].ranker,
            indexing=decisions[0].indexing,
            history=judged.history,
        )

    def _first_choices(self, decisions: list[Decision]) -> tuple[list[Card], list[tuple[str, str]], Decision | None]:
        """The cards the needs chose (one per server, at most ``max_capabilities``), their tools, and the
        first decision that chose one (``None``: every need abstained).

        A need answered by a server an earlier need chose adds no card but brings its tools: two needs of
        one server ("the latest price", "the dividends") each get the tool they need."""
        chosen: list[Card] = []
        tools: list[tuple[str, str]] = []
        first: Decision | None = None
        for d in decisions:
            if d.abstain or not d.chosen:
                continue
            first = first or d
            card = d.chosen[0]
            if all(card.server != c.server for c in chosen):
                if len(chosen) >= self.max_capabilities:
                    continue
                chosen.append(card)
            tools.extend(t for t in d.tools if t not in tools)
        return chosen, tools, first

    def _decide_one(self, query: str) -> Decision:
        ranking = self.ranker.rank(query, limit=self.limit)
        decision = self._decide_question(query, ranking)
        shortlist = [
            {"server": s.card.server, "kind": s.card.kind, "name": s.card.name, "score": round(s.score, 4)}
            for s in decision.ranked[:5]
        ]
        needs: list[dict[str, Any]] = [
            {
                "need": query,
                "abstain": decision.abstain,
                "confidence": round(decision.confidence, 4),
                "chosen": [f"{c.server}/{c.name}" for c in decision.chosen[:1]],
                "ranked": shortlist,
                "servers": [label for label, _ in decision.servers[:5]],
            }
        ]
        needs.extend({"need": need, "implied": True, "server": server} for need, server in ranking.implied)
        return replace(decision, needs=needs)

    def _decide_question(self, query: str, ranking: Ranking) -> Decision:
        decision = self._judge(query, ranking)
        if ranking.semantic:
            return replace(decision, ranker="semantic")
        if self.ranker.encoder is None or ranking.indexing is None:
            return decision
        # an encoder whose card vectors are still being encoded: this answer is the lexical ranker's
        return replace(decision, reason=decision.reason + indexing_note(ranking.indexing), indexing=ranking.indexing)

    def threshold_for(self, decision: Decision) -> float:
        """The threshold ``decision`` was judged against (the lexical model's while card vectors are encoded)."""
        return self._threshold(decision.ranker == "semantic", bool(self.ranker.history))

    def floor_for(self, decision: Decision) -> float | None:
        """The confidence from which ``decision``'s cards are worth showing though it abstained (the floor of
        the model that judged it); ``None`` when the threshold was given, or the model has no floor."""
        if self._threshold_given:
            return None
        calibration, _ = self._model(decision.ranker == "semantic", bool(self.ranker.history))
        return calibration.floor

    def _threshold(self, semantic: bool, history: bool = False) -> float:
        if not semantic and self.lexical_calibration is not None:
            return self.lexical_calibration.threshold
        if semantic and history and self.history_calibration is not None and not self._threshold_given:
            return self.history_calibration.threshold
        return self.threshold

    def _calibration_for(self, ranking: Ranking) -> tuple[Calibration, float]:
        """The model and threshold a ranking is judged by: the lexical model while card vectors are
        encoded, the history-aware one for a semantic ranking that read a usage history."""
        return self._model(ranking.semantic, ranking.history > 0)

    def _model(self, semantic: bool, history: bool) -> tuple[Calibration, float]:
        threshold = self._threshold(semantic, history)
        if not semantic and self.lexical_calibration is not None:  # an encoder, its vectors not ready
            return self.lexical_calibration, threshold
        if semantic and history and self.history_calibration is not None:
            return self.history_calibration, threshold
        return self.calibration, threshold

    def _judge(self, query: str, ranking: Ranking) -> Decision:
        if not ranking.scored:
            return Decision(
                query=query, abstain=True, confidence=0.0, reason="abstained: the catalog is empty", ranked=[]
            )
        unit = ranking.units[0]
        feats = unit_features(unit) | implied_features(ranking.implied_units)
        calibration, threshold = self._calibration_for(ranking)
        confidence = calibration.confidence(feats)
        recalled = self._recalled(query, ranking) or self._paraphrased(ranking)
        if recalled is not None:
            return self._worked_before(query, ranking, recalled, confidence, feats, unit)
        near = ranking.neighbour
        like = like_card = None
        if near is not None and self.cards[near.card].server == ranking.scored[0].card.server:
            # a trusted past question like this one led to the server first: it counts as evidence
            raised = self.ranker.config.history_neighbour_confidence * max(0.0, near.cosine - 0.3)
            confidence, like, like_card = min(1.0, confidence + raised), near.question, self.cards[near.card]
        if confidence < threshold:
            reason = self._why_not(ranking, unit, confidence, query, threshold)
            return Decision(
                query=query,
                abstain=True,
                confidence=confidence,
                reason=reason,
                ranked=ranking.scored,
                features=feats,
                servers=ranking.servers,
                history=unit.history,
                like_before=like,
                like_card=like_card,
            )
        chosen = [ranking.scored[0].card]
        jobs: list[dict[str, Any]] = []
        for job in ranking.units[1:]:  # multi-job questions: each confident job may add a capability
            job_cal = self.job_calibration or self.calibration
            job_conf = job_cal.confidence(unit_features(job))
            card = self.cards[job.card]
            job_threshold = self.threshold if self.job_calibration is None else job_cal.threshold
            added = (
                job_conf >= job_threshold
                and len(chosen) < self.max_capabilities
                and all(card.server != c.server for c in chosen)
            )
            if added:
                chosen.append(card)
            jobs.append({"job": job.text, "server": job.server, "confidence": round(job_conf, 4), "added": added})
        tools = self._tools_for(chosen, ranking)
        first = chosen[0]
        before = ""
        if like is not None and like_card is not None:
            before = f"a question like it worked before, {like!r}, with {like_card.server}/{like_card.name}; "
        reason = (
            f"chose {first.kind} {first.server}/{first.name} (confidence {confidence:.2f}; {before}"
            f"{len(unit.matched)} of {len(unit.terms)} question terms in {unit.server}: {_quoted(unit.matched, 6, _surface(query))})"
        )
        if len(chosen) > 1:
            reason += "; the question names several jobs, also " + ", ".join(f"{c.server}/{c.name}" for c in chosen[1:])
        return Decision(
            query=query,
            abstain=False,
            confidence=confidence,
            reason=reason,
            ranked=ranking.scored,
            chosen=chosen,
            tools=tools,
            features=feats,
            servers=ranking.servers,
            jobs=jobs,
            history=unit.history,
            like_before=like,
            like_card=like_card,
        )

    def _recalled(self, query: str, ranking: Ranking) -> tuple[Scored, str] | None:
        """The best-ranked card a trusted past question, this very question, led to, with that question."""
        found = self.ranker.recalled(query)
        if not found:
            return None
        place = {s.card.key: i for i, s in enumerate(ranking.scored)}
        card, past = min(found, key=lambda f: place.get(self.cards[f[0]].key, len(place)))
        return self._scored(ranking, card), past

    def _paraphrased(self, ranking: Ranking) -> tuple[Scored, str] | None:
        """The card a trusted past question, a near paraphrase of this one, led to, with that question."""
        near = ranking.neighbour
        if near is None or near.cosine < self.ranker.config.history_paraphrase_cosine:
            return None
        return self._scored(ranking, near.card), near.question

    def _scored(self, ranking: Ranking, card: int) -> Scored:
        """``card`` as ``ranking`` scored it (at the first card's score if it was not kept)."""
        key = self.cards[card].key
        found = next((s for s in ranking.scored if s.card.key == key), None)
        return found if found is not None else Scored(self.cards[card], ranking.scored[0].score, 0.0)

    def _worked_before(
        self,
        query: str,
        ranking: Ranking,
        recalled: tuple[Scored, str],
        confidence: float,
        feats: dict[str, float],
        unit: Unit,
    ) -> Decision:
        """The card a trusted past question (this very question) led to, first and chosen (see :attr:`Decision.worked_before`)."""
        scored, past = recalled
        card = scored.card
        ranked = [scored, *(s for s in ranking.scored if s.card.key != card.key)]
        servers = [s for s in ranking.servers if s[0] == card.server] or [(card.server, scored.score)]
        servers += [s for s in ranking.servers if s[0] != card.server]
        reason = (
            f"chose {card.kind} {card.server}/{card.name}: it worked before for this question ({past!r} led to a "
            f"successful call; confidence {confidence:.2f} on the catalog's own words)"
        )
        return Decision(
            query=query,
            abstain=False,
            confidence=confidence,
            reason=reason,
            ranked=ranked,
            chosen=[card],
            tools=self._tools_for([card], ranking),
            features=feats,
            servers=servers,
            history=max(unit.history, 1),
            worked_before=past,
        )

    def _tools_for(self, chosen: list[Card], ranking: Ranking) -> list[tuple[str, str]]:
        tools: list[tuple[str, str]] = []
        for card in chosen:
            if card.kind == "skill":
                tools.extend(t for t in card.tools if t not in tools)
                continue
            # a tool card: the tool, plus its server's next-best tools that also scored well
            if (card.server, card.name) not in tools:
                tools.append((card.server, card.name))
            siblings = [
                s
                for s in ranking.scored
                if s.card.kind == "tool" and s.card.server == card.server and s.card.name != card.name
            ]
            best = max((s.score for s in ranking.scored if s.card.key == card.key), default=0.0)
            best = max(best, siblings[0].score if siblings else 0.0)
            for s in siblings[: self.max_tools_per_server - 1]:
                if s.score >= 0.5 * best and (s.card.server, s.card.name) not in tools:
                    tools.append((s.card.server, s.card.name))
        return tools

    def _why_not(
        self, ranking: Ranking, unit: Unit, confidence: float, query: str = "", threshold: float | None = None
    ) -> str:
        words = _surface(query)
        parts = [
            f"{s.card.server}/{s.card.name} (matched {_quoted(s.matched_terms, 4, words)})" for s in ranking.scored[:3]
        ]
        missing = [t for t in unit.terms if t not in unit.matched]
        return (
            f"abstained: nothing is close enough (confidence {confidence:.2f} < threshold "
            f"{self.threshold if threshold is None else threshold:.2f}); "
            f"the best server, {unit.server}, covers {len(unit.matched)} of {len(unit.terms)} question terms "
            f"(missing {_quoted(missing, 5, words)}); best candidates: " + "; ".join(parts)
        )

    def _record(self, decision: Decision) -> Decision:
        if self.log is not None:
            self.log.record(decision)
        return decision
