"""Deciding: choose capabilities for a question, or abstain with reasons. Pure.

Ranking orders cards; deciding asks whether the best of them is *close enough*. Confidence is
a logistic function of features that do not depend on the rest of the catalog's scores (the raw
BM25 strength of the best match, the share of the question's terms the best card covers, the
best semantic similarity when an encoder is installed), fitted on labelled in-scope and
out-of-scope questions by the procedure in ``bench/selection`` and shipped as a
:class:`Calibration`. Below the threshold the answer is **abstain**, naming the best candidates
and why they fell short. Every decision can be appended to a structured log.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from skilldeck.select.cards import Card, CardSet
from skilldeck.select.rank import Encoder, Ranker, Scored, split_jobs

__all__ = ["Calibration", "Decision", "DecisionLog", "Selector", "default_calibration"]

FEATURES = ("lexical_strength", "coverage", "semantic")


@dataclass(frozen=True)
class Calibration:
    """``confidence = sigmoid(bias + sum(weight_i * feature_i))``; abstain below ``threshold``."""

    weights: dict[str, float]
    bias: float
    threshold: float
    source: str = "built-in"

    def confidence(self, features: dict[str, float]) -> float:
        z = self.bias + sum(self.weights.get(k, 0.0) * v for k, v in features.items())
        return 1.0 / (1.0 + math.exp(-z))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        return cls(
            weights={str(k): float(v) for k, v in data["weights"].items()},
            bias=float(data["bias"]),
            threshold=float(data["threshold"]),
            source=str(data.get("source", "file")),
        )

    def to_json(self) -> dict[str, Any]:
        return {"weights": self.weights, "bias": self.bias, "threshold": self.threshold, "source": self.source}


def default_calibration(semantic: bool) -> Calibration:
    """The shipped calibration for the lexical (default) or semantic selector."""
    name = "calibration-semantic.json" if semantic else "calibration-lexical.json"
    path = resources.files("skilldeck.select") / name
    return Calibration.from_json(json.loads(path.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class Decision:
    """The outcome for one question."""

    query: str
    abstain: bool
    confidence: float
    reason: str
    ranked: list[Scored]
    chosen: list[Card] = field(default_factory=list)
    tools: list[tuple[str, str]] = field(default_factory=list)
    """(server, tool) pairs whose schemas the chosen capabilities need."""
    features: dict[str, float] = field(default_factory=dict)

    def to_json(self, depth: int = 10) -> dict[str, Any]:
        return {
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
            "chosen": [c.to_json() for c in self.chosen],
            "tools": [{"server": server, "name": name} for server, name in self.tools],
        }


class DecisionLog:
    """Structured record of decisions: in memory, and appended as JSON lines to ``path`` if given."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.records: list[dict[str, Any]] = []

    def record(self, decision: Decision) -> None:
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **decision.to_json(depth=5)}
        entry["features"] = {k: round(v, 4) for k, v in decision.features.items()}
        self.records.append(entry)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _coverage(words: list[str], card_words: set[str]) -> tuple[float, list[str]]:
    if not words:
        return 0.0, []
    matched = [w for w in dict.fromkeys(words) if w in card_words]
    return len(matched) / len(dict.fromkeys(words)), matched


class Selector:
    """Choose skills or tools for questions, or abstain.

    Args:
        cards: the catalog's cards (a :class:`CardSet` or a list).
        encoder: a semantic encoder (``skilldeck[semantic]``), or ``None`` for lexical only.
        calibration: confidence model and threshold; the shipped one by default.
        threshold: override the calibration's threshold.
        log: where decisions are recorded.
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
    ) -> None:
        self.cards = cards.cards if isinstance(cards, CardSet) else list(cards)
        self.ranker = Ranker(self.cards, encoder=encoder)
        self.calibration = calibration or default_calibration(encoder is not None)
        self.threshold = self.calibration.threshold if threshold is None else threshold
        self.log = log
        self.max_tools_per_server = max_tools_per_server
        self._card_words = [set(self.ranker._words(c.text)) for c in self.cards]
        self._index = {c.key: i for i, c in enumerate(self.cards)}

    def features(self, query: str, best: Scored) -> tuple[dict[str, float], list[str]]:
        words = self.ranker._words(query)
        coverage, matched = _coverage(words, self._card_words[self._index[best.card.key]])
        feats = {"lexical_strength": math.log1p(max(best.lexical, 0.0)), "coverage": coverage}
        if best.semantic is not None:
            feats["semantic"] = best.semantic
        return feats, matched

    def _assess(self, query: str) -> tuple[list[Scored], float, dict[str, float], list[str]]:
        ranked = self.ranker.score(query)
        if not ranked:
            return ranked, 0.0, {}, []
        feats, matched = self.features(query, ranked[0])
        return ranked, self.calibration.confidence(feats), feats, matched

    def decide(self, query: str) -> Decision:
        """Rank every card for ``query``; choose the capabilities it needs, or abstain with reasons."""
        ranked, confidence, feats, matched = self._assess(query)
        if not ranked:
            decision = Decision(query, True, 0.0, "abstained: the catalog is empty", ranked)
            self._record(decision)
            return decision
        if confidence < self.threshold:
            decision = Decision(query, True, confidence, self._why_not(query, ranked), ranked, features=feats)
            self._record(decision)
            return decision
        chosen = [ranked[0].card]
        for job in split_jobs(query):  # multi-job questions: each clause may add a capability
            job_ranked, job_conf, _, _ = self._assess(job)
            if job_ranked and job_conf >= self.threshold:
                card = job_ranked[0].card
                if all(card.server != c.server or card.key == c.key for c in chosen) and card not in chosen:
                    chosen.append(card)
        tools = self._tools_for(chosen, ranked)
        words_matched = ", ".join(repr(w) for w in matched[:6]) or "no shared terms"
        reason = (
            f"chose {chosen[0].kind} {chosen[0].server}/{chosen[0].name} (confidence {confidence:.2f}; "
            f"matched {words_matched})"
        )
        if len(chosen) > 1:
            reason += "; the question names several jobs, also " + ", ".join(f"{c.server}/{c.name}" for c in chosen[1:])
        decision = Decision(query, False, confidence, reason, ranked, chosen, tools, feats)
        self._record(decision)
        return decision

    def _tools_for(self, chosen: list[Card], ranked: list[Scored]) -> list[tuple[str, str]]:
        tools: list[tuple[str, str]] = []
        for card in chosen:
            if card.kind == "skill":
                tools.extend(t for t in card.tools if t not in tools)
                continue
            # a tool card: the tool, plus its server's next-best tools that also scored well
            tools.append((card.server, card.name))
            best = next(s.score for s in ranked if s.card.key == card.key)
            siblings = [
                s for s in ranked if s.card.kind == "tool" and s.card.server == card.server and s.card.key != card.key
            ]
            for s in siblings[: self.max_tools_per_server - 1]:
                if s.score >= 0.5 * best and (s.card.server, s.card.name) not in tools:
                    tools.append((s.card.server, s.card.name))
        return tools

    def _why_not(self, query: str, ranked: list[Scored]) -> str:
        parts = []
        for s in ranked[:3]:
            feats, matched = self.features(query, s)
            conf = self.calibration.confidence(feats)
            shared = ", ".join(repr(w) for w in matched[:4]) or "no shared terms"
            parts.append(f"{s.card.server}/{s.card.name} (confidence {conf:.2f}; {shared})")
        return f"abstained: nothing is close enough (threshold {self.threshold:.2f}); best candidates: " + "; ".join(
            parts
        )

    def _record(self, decision: Decision) -> None:
        if self.log is not None:
            self.log.record(decision)
