"""The catalog's semantic vectors: each card's, each server's centroid and each server label's.

:class:`CardVectors` sets them from vectors given, from the vector cache, by encoding them at once,
or on a thread of its own (``background``) while rankings stay lexical; :attr:`CardVectors.indexing`
says how far it is, :meth:`CardVectors.wait` waits for it and :meth:`CardVectors.close` stops it after
the chunk under way. The ranker (:class:`~skilldeck.select._rank.Ranker`) holds one.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from skilldeck.select._cards import Card
from skilldeck.select._results import IndexingState
from skilldeck.select._steps import RankSteps, SemanticVectors
from skilldeck.select._vectors import VectorCache

__all__ = ["BACKGROUND_CHUNK", "CardVectors", "Encoder"]

BACKGROUND_CHUNK = 256
"""Texts per encoder call (and cache write) at least when card vectors are encoded in the background."""


class Encoder(Protocol):
    """Turns texts into L2-normalised vectors (rows)."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class CardVectors:
    """The vectors of one catalog's cards and servers (see the module docs).

    Args:
        cards: the catalog's cards, in the ranker's order.
        server_labels: the servers, in the ranker's order.
        card_server: each card's server, as an index into ``server_labels``.
        encoder: the semantic encoder (``None``: no vectors, ever).
        steps: the ranking's steps (the texts encoded, how the vectors are prepared).
        cache: where vectors are kept by content, or ``None``.
    """

    def __init__(
        self,
        cards: Sequence[Card],
        server_labels: Sequence[str],
        card_server: np.ndarray,
        encoder: Encoder | None,
        steps: RankSteps,
        cache: VectorCache | None,
    ) -> None:
        self.cards = cards
        self.server_labels = server_labels
        self._card_server = card_server
        self.encoder = encoder
        self.steps = steps
        self.cache = cache
        self.vectors: SemanticVectors | None = None
        """Set at once when every card has one (``None`` until then, or without an encoder)."""
        self.indexing = IndexingState(0, 0)
        """How far the card vectors are (see :meth:`wait`); ``total`` 0 without an encoder."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(
        self, vectors: np.ndarray | None, schemas: Mapping[str, Mapping[str, Mapping[str, Any]]], background: bool
    ) -> None:
        """Set the card and label vectors: ``vectors`` given, read from the cache, encoded here, or (with
        ``background``) encoded on a thread of their own."""
        assert self.encoder is not None
        texts = self._label_texts()
        if vectors is not None:
            self._set(vectors, self.encode(texts))
            return
        # cards and server texts in one list: one cache read, one write
        card_texts = [
            self.steps.semantic_text(card, schemas.get(card.server, {}).get(card.name) if card.kind == "tool" else None)
            for card in self.cards
        ]
        both = [*card_texts, *texts]
        todo = self.cache.missing(self.encoder, both) if self.cache is not None else list(dict.fromkeys(both))
        cached = len(both) - len(todo)
        self.indexing = IndexingState(cached, len(both), cached=cached)
        if not background or not todo:
            found = self.encode(both)
            self._set(found[: len(self.cards)], found[len(self.cards) :])
            self.indexing = IndexingState(len(both), len(both), cached=cached)
            return
        self._thread = threading.Thread(
            target=self._index_in_background, args=(both, todo), name="skilldeck-card-vectors", daemon=True
        )
        self._thread.start()

    def _label_texts(self) -> list[str]:
        """What the encoder reads for each server's label view, in server order."""
        about: dict[str, str] = {}
        card_names: dict[str, list[str]] = {}
        for card in self.cards:
            about.setdefault(card.server, card.server_description)
            card_names.setdefault(card.server, []).append(card.name)
        return [self.steps.label_text(label, about[label], card_names[label]) for label in self.server_labels]

    def _set(self, vectors: np.ndarray, label_vectors: np.ndarray) -> None:
        vectors, label_vectors = self.steps.prepare_vectors(vectors, label_vectors)
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.shape[0] != len(self.cards):
            raise ValueError(f"{vecs.shape[0]} vectors for {len(self.cards)} cards")
        sums = np.zeros((len(self.server_labels), vecs.shape[1]), dtype=np.float32)
        np.add.at(sums, self._card_server, vecs)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        self.vectors = SemanticVectors(
            cards=vecs,
            centroids=sums / np.where(norms > 0, norms, 1.0),
            labels=np.ascontiguousarray(label_vectors, dtype=np.float32),
        )

    def _index_in_background(self, both: list[str], todo: list[str]) -> None:
        """Encode ``todo`` a chunk at a time (each chunk stored in the cache as it is done, so an
        interrupted start keeps what it encoded), then let the semantic views join."""
        done = cached = self.indexing.cached
        fresh: dict[str, np.ndarray] = {}
        chunk = max(BACKGROUND_CHUNK, len(todo) // 20)  # at most ~20 cache writes
        try:
            for start in range(0, len(todo), chunk):
                if self._stop.is_set():
                    return
                part = todo[start : start + chunk]
                vectors = self.encode(part)
                if self.cache is None:
                    fresh.update(zip(part, vectors, strict=True))
                done += len(part)
                self.indexing = IndexingState(done, len(both), cached=cached)
            # with a cache every text is in it now: read, not encoded
            found = self.encode(both) if self.cache is not None else np.stack([fresh[t] for t in both])
            self._set(found[: len(self.cards)], found[len(self.cards) :])
        except Exception as exc:  # the ranking stays lexical, and each decision says why
            self.indexing = IndexingState(done, len(both), f"{type(exc).__name__}: {exc}", cached)

    @property
    def semantic(self) -> bool:
        """Whether rankings fuse the encoder's views (an encoder, and every card vector ready)."""
        return self.encoder is not None and self.vectors is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the card vectors encoded in the background (if any); whether rankings are semantic now."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.semantic

    def close(self) -> None:
        """Stop encoding card vectors in the background after the chunk under way (the ranking stays lexical)."""
        self._stop.set()

    def encode(self, texts: list[str]) -> np.ndarray:
        """``texts`` through the encoder (and the cache, which encodes only what it lacks)."""
        assert self.encoder is not None
        if self.cache is not None:
            return self.cache.encode(self.encoder, texts)
        return np.asarray(self.encoder.encode(texts), dtype=np.float32)
