"""BM25F: the index over weighted bags of terms, a catalog's card and server indexes, and the shipped
background document frequencies."""

from __future__ import annotations

import functools
import itertools
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from skilldeck.select._cards import Card
from skilldeck.select._config import RankConfig
from skilldeck.select._text import card_fields, schema_text, tokens

__all__ = ["BACKGROUND_FILE", "BM25Index", "Background", "CatalogIndex", "background", "bag"]

Background = tuple[tuple[int, Mapping[str, int]], tuple[int, Mapping[str, int]]]
"""(cards n, document frequencies) and (servers n, document frequencies) added to a catalog's own for IDF."""


class BM25Index:
    """BM25 over weighted bags of terms, in flat numpy arrays (postings sorted by term)."""

    def __init__(
        self,
        docs: Sequence[Mapping[str, float]],
        k1: float,
        b: float,
        background: tuple[int, Mapping[str, int]] | None = None,
    ) -> None:
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        for i, doc in enumerate(docs):
            for term, count in doc.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                tfs.append(count)
        bg = None
        if background is not None:
            bg_n, bg_df = background
            terms = sorted(vocab, key=vocab.__getitem__)
            bg = (bg_n, np.array([bg_df.get(t, 0) for t in terms], dtype=np.float64))
        self._index(
            np.array(rows, dtype=np.int32), np.array(cols, dtype=np.int32), np.array(tfs, dtype=np.float64),
            len(docs), vocab, k1, b, bg,
        )  # fmt: skip

    def _index(
        self,
        r: np.ndarray,
        c: np.ndarray,
        tf: np.ndarray,
        n_docs: int,
        vocab: dict[str, int],
        k1: float,
        b: float,
        background: tuple[int, np.ndarray] | None,
    ) -> None:
        self.n = n_docs
        self.vocab = vocab
        lengths = np.bincount(r, weights=tf, minlength=n_docs).astype(np.float64)
        avg = float(lengths.mean()) if self.n and lengths.mean() > 0 else 1.0
        df = np.bincount(c, minlength=len(vocab)).astype(np.float64)
        self.document_frequencies = df
        n = float(self.n)
        if background is not None:
            df = df + background[1][: len(vocab)]
            n += background[0]
        self.idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * lengths[r] / avg) if len(r) else np.zeros(0)
        w = self.idf[c] * tf * (k1 + 1.0) / (tf + norm) if len(r) else np.zeros(0)
        order = np.argsort(c, kind="stable")
        self.docs = r[order]
        self.weights = w[order]
        self.ptr = np.concatenate([[0], np.cumsum(np.bincount(c, minlength=len(vocab)))]).astype(np.int64)

    def scores(self, query: Mapping[str, float]) -> np.ndarray:
        """Every document's BM25 score for weighted query terms."""
        ids = [(self.vocab[t], w) for t, w in query.items() if t in self.vocab]
        if not ids or self.n == 0:
            return np.zeros(self.n)
        if len(ids) == 1:
            ((t, qw),) = ids
            out = np.zeros(self.n)
            out[self.docs[self.ptr[t] : self.ptr[t + 1]]] = qw * self.weights[self.ptr[t] : self.ptr[t + 1]]
            return out
        docs = np.concatenate([self.docs[self.ptr[t] : self.ptr[t + 1]] for t, _ in ids])
        weights = np.concatenate([qw * self.weights[self.ptr[t] : self.ptr[t + 1]] for t, qw in ids])
        return np.bincount(docs, weights=weights, minlength=self.n)


BACKGROUND_FILE = "background-df.json"


@functools.lru_cache(maxsize=1)
def background() -> Background | None:
    """The shipped background document frequencies: (cards n, df) and (servers n, df)."""
    path = resources.files("skilldeck.select") / BACKGROUND_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return (int(data["cards"]["n"]), dict(data["cards"]["df"])), (
        int(data["servers"]["n"]),
        dict(data["servers"]["df"]),
    )


def bag(fields: Iterable[tuple[list[str], float]]) -> dict[str, float]:
    """One BM25F document: each field's term counts times the field's weight, summed (weight <= 0: left out)."""
    out: dict[str, float] = {}
    for terms, weight in fields:
        if weight <= 0:
            continue
        for term, count in Counter(terms).items():
            out[term] = out.get(term, 0.0) + weight * count
    return out


@dataclass(frozen=True, eq=False)
class CatalogIndex:
    """A catalog's two BM25F indexes: one document per card, one per server holding all of its cards.

    A card's document has weighted fields -- its name as words, its description, its input schema's
    property names and descriptions (when known) and its server's label and description; a server's
    document has its label and description (at the name's weight) and every field of its cards."""

    cards: BM25Index
    servers: BM25Index
    card_bags: list[dict[str, float]]
    """Each card's weighted bag of terms (its document)."""
    card_terms: list[frozenset[str]]
    """Each card's terms of its name, description and server (not its schema's)."""
    server_terms: list[frozenset[str]]
    """Each server's terms (every field of its document)."""

    @classmethod
    def build(
        cls,
        cards: Sequence[Card],
        card_server: Sequence[int],
        n_servers: int,
        *,
        config: RankConfig,
        schemas: Mapping[str, Mapping[str, Mapping[str, Any]]],
        background: Background | None,
    ) -> CatalogIndex:
        """Index ``cards`` (``card_server[i]``: the index of card ``i``'s server, of ``n_servers``)."""
        c = config
        card_bags: list[dict[str, float]] = []
        card_terms: list[frozenset[str]] = []
        server_fields: list[list[tuple[list[str], float]]] = [[] for _ in range(n_servers)]
        tok = functools.lru_cache(maxsize=None)(tokens)  # a server's text recurs in each of its cards
        for card, sid in zip(cards, card_server, strict=True):
            names, description, server = card_fields(card)
            t_name, t_desc, t_server = tok(names), tok(description), tok(server)
            tool = schemas.get(card.server, {}).get(card.name) if card.kind == "tool" else None
            t_params = tok(schema_text(tool)) if tool is not None and c.params_weight > 0 else []
            fields = [(t_name, c.name_weight), (t_desc, 1.0), (t_params, c.params_weight)]
            card_bags.append(bag([*fields, (t_server, c.server_field_weight)]))
            card_terms.append(frozenset(t_name) | frozenset(t_desc) | frozenset(t_server))
            if not server_fields[sid]:
                server_fields[sid].append((t_server, c.name_weight))
            server_fields[sid].extend(fields)
        return cls(
            cards=BM25Index(card_bags, c.k1, c.b, background[0] if background else None),
            servers=BM25Index([bag(f) for f in server_fields], c.k1, c.server_b, background[1] if background else None),
            card_bags=card_bags,
            card_terms=card_terms,
            server_terms=[frozenset(itertools.chain.from_iterable(terms for terms, _ in f)) for f in server_fields],
        )
