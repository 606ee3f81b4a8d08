"""Ranking cards for a question: lexical BM25 always, semantic embeddings when installed. Pure.

The index holds every card (skills and tools). A question is scored against each card; tool
scores also count for their server, and skills inherit the best score of the tools they name,
so a question phrased in a tool's words still finds the skill that uses it. Questions that name
several jobs ("find X, then chart it and save a PDF") are also scored clause by clause, so each
job can bring its own capability.

Lexical scoring is ``bm25s`` with English stemming (``PyStemmer``). Semantic scoring is an
optional :class:`Encoder` (``skilldeck[semantic]``); scores are normalised per query and mixed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from skilldeck.select.cards import Card

__all__ = ["Encoder", "Ranker", "Scored", "split_jobs"]


class Encoder(Protocol):
    """Turns texts into L2-normalised vectors (rows)."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Scored:
    """A card with its score for one question (in [0, 1], higher is closer)."""

    card: Card
    score: float
    lexical: float
    semantic: float | None = None
    matched_terms: tuple[str, ...] = ()


_CLAUSE = re.compile(r"[;,.]\s+|\s+(?:and then|then|and also|after that|finally)\s+", re.IGNORECASE)


def split_jobs(question: str) -> list[str]:
    """Clauses of a question that could each be a job of their own (three words or more)."""
    parts = [p.strip(" .,;") for p in _CLAUSE.split(question)]
    jobs = [p for p in parts if len(p.split()) >= 3]
    return jobs if len(jobs) > 1 else []


def _tokenizer() -> tuple[Callable[[list[str]], object], object]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")

    def tokenize(texts: list[str]) -> object:
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)

    return tokenize, stemmer


class Ranker:
    """An index over cards.

    Args:
        cards: every card to choose from.
        encoder: an optional semantic encoder; ``None`` means lexical only.
        semantic_weight: the share of the semantic score in the mix (0..1).
    """

    def __init__(self, cards: Sequence[Card], *, encoder: Encoder | None = None, semantic_weight: float = 0.6) -> None:
        import bm25s

        self.cards = list(cards)
        self.encoder = encoder
        self.semantic_weight = semantic_weight if encoder is not None else 0.0
        self._tokenize, self._stemmer = _tokenizer()
        self._bm25 = bm25s.BM25()
        texts = [c.text for c in self.cards] or [""]
        self._bm25.index(self._tokenize(texts), show_progress=False)
        self._vectors = encoder.encode([c.text for c in self.cards]) if encoder is not None and self.cards else None
        # skills inherit from the tools they name: card index of each (server, tool)
        self._tool_index = {(c.server, c.name): i for i, c in enumerate(self.cards) if c.kind == "tool"}

    def _lexical(self, question: str) -> np.ndarray:
        scores = np.zeros(len(self.cards))
        if not self.cards:
            return scores
        words = self._words(question)
        if not words:
            return scores
        raw = self._bm25.get_scores(words)
        scores[: len(raw)] = raw
        return scores

    def _words(self, question: str) -> list[str]:
        import bm25s

        tokens = bm25s.tokenize(
            [question], stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False
        )
        return list(tokens[0]) if tokens else []

    def _semantic(self, question: str) -> np.ndarray | None:
        if self.encoder is None or self._vectors is None:
            return None
        q = self.encoder.encode([question])[0]
        return np.clip(self._vectors @ q, 0.0, 1.0)

    def score(self, question: str) -> list[Scored]:
        """Every card scored for ``question``, best first."""
        lexical = self._lexical(question)
        semantic = self._semantic(question)
        lex_norm = lexical / lexical.max() if lexical.max() > 0 else lexical
        mixed = (1 - self.semantic_weight) * lex_norm
        if semantic is not None:
            mixed = mixed + self.semantic_weight * semantic
        # a skill scores at least as well as the best tool it names (a little discounted)
        for i, card in enumerate(self.cards):
            if card.kind == "skill" and card.tools:
                inherited = [mixed[self._tool_index[t]] for t in card.tools if t in self._tool_index]
                if inherited:
                    mixed[i] = max(mixed[i], 0.9 * max(inherited))
        order = np.argsort(-mixed, kind="stable")
        return [
            Scored(
                card=self.cards[i],
                score=float(mixed[i]),
                lexical=float(lexical[i]),
                semantic=None if semantic is None else float(semantic[i]),
            )
            for i in order
        ]
