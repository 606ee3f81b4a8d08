"""The trusted past questions nearest a question: what lets history take the first place. Pure.

A card's past questions are read as a mean vector and a BM25 field (:mod:`skilldeck.select._history`):
both say how a card was used, not that this question was asked before. :class:`Neighbours` keeps
the vector of each *trusted* past question (:class:`~skilldeck.select._taught.Taught`) with the cards
it led to, so the ranker can ask which past question is nearest the one being ranked:

* a **near paraphrase** (cosine at least :attr:`~skilldeck.select._config.RankConfig.history_paraphrase_cosine`)
  is answered with the card it led to, first, as the very question is
  (:meth:`~skilldeck.select._decide.Selector.decide`);
* a **like question** (cosine at least :attr:`~skilldeck.select._config.RankConfig.history_neighbour_cosine`)
  on one of the first :attr:`~skilldeck.select._config.RankConfig.history_neighbour_places` servers
  puts that server first (:meth:`~skilldeck.select._history_view.HistoryView.lift`): the servers'
  like questions are weighed by their votes, the sum of the cosines of their distinct past questions
  from :attr:`~skilldeck.select._config.RankConfig.history_vote_cosine` up.

Bounded: at most :data:`NEIGHBOUR_LIMIT` distinct questions per history. Made whole
(:meth:`Neighbours.build`), the table takes a few of each trusted card's at a time (its first, then
its second, ...), so a card with many cannot crowd the others out; then it is updated with the cards
that changed only (:meth:`Neighbours.updated`): a question no trusted card holds leaves, a new one
joins while there is room. A question already held keeps its vector; only new ones are encoded
(through the ranker's vector cache).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["NEIGHBOUR_LIMIT", "Neighbour", "Neighbours"]

NEIGHBOUR_LIMIT = 4096
"""The most trusted past questions one history keeps vectors of (6 MiB of float32 at 384 dimensions)."""


@dataclass(frozen=True)
class Neighbour:
    """The trusted past question nearest a question on one server, and what it led to."""

    server: int
    """The server's index."""
    card: int
    """A card of that server the past question led to (its index)."""
    question: str
    cosine: float
    """The question's cosine to that past question."""
    votes: float = 0.0
    """The sum of the cosines of the server's like past questions (see the module docs)."""


@dataclass(frozen=True, eq=False)
class Neighbours:
    """The vectors of a history's trusted past questions, each with the cards it led to."""

    texts: tuple[str, ...]
    vectors: np.ndarray
    """One row per text: its normalised vector (float32)."""
    cards: tuple[tuple[int, ...], ...]
    """Per text: the trusted cards it led to (sorted)."""
    offsets: np.ndarray
    """Per text ``i``, its (server, card) pairs are ``pair_servers[offsets[i]:offsets[i + 1]]`` and the same
    of ``pair_cards``: each server it led to, with the first of its cards there."""
    pair_servers: np.ndarray
    pair_cards: np.ndarray

    def led_to(self, i: int) -> tuple[tuple[int, int], ...]:
        """The (server, card) pairs of text ``i``."""
        at = slice(int(self.offsets[i]), int(self.offsets[i + 1]))
        return tuple(zip(self.pair_servers[at].tolist(), self.pair_cards[at].tolist(), strict=True))

    def __len__(self) -> int:
        return len(self.texts)

    def cosines(self, qvec: np.ndarray) -> np.ndarray:
        """The question's cosine to each past question."""
        out: np.ndarray = np.einsum("ij,j->i", self.vectors, qvec).astype(np.float64)
        return out

    @classmethod
    def build(
        cls,
        questions: Mapping[int, tuple[str, ...]],
        trusted: Iterable[int],
        card_server: np.ndarray,
        encode: Callable[[list[str]], np.ndarray],
        limit: int = NEIGHBOUR_LIMIT,
    ) -> Neighbours | None:
        """The table of the ``trusted`` cards' ``questions`` (card index -> its past questions; ``card_server``:
        each card's server index), made whole: at most ``limit`` distinct texts; ``None`` without any."""
        led: dict[str, list[int]] = {}
        pasts = [(card, questions[card]) for card in sorted(trusted) if questions.get(card)]
        depth = max((len(past) for _, past in pasts), default=0)
        for i in range(depth):  # round-robin: each card's first question, then each card's second, ...
            for card, past in pasts:
                if i < len(past) and (past[i] in led or len(led) < limit):
                    led.setdefault(past[i], []).append(card)
        if not led:
            return None
        return _made(tuple(led), {t: tuple(sorted(set(c))) for t, c in led.items()}, card_server, encode)

    def updated(
        self,
        moved: Mapping[int, tuple[tuple[str, ...], tuple[str, ...]]],
        card_server: np.ndarray,
        encode: Callable[[list[str]], np.ndarray],
        limit: int = NEIGHBOUR_LIMIT,
    ) -> Neighbours | None:
        """This table after the cards of ``moved`` changed (card -> its trusted questions before and now,
        ``()`` when it had none or has none now): only their questions are read again, a question no
        trusted card holds any more leaves, and a new one joins while there is room under ``limit``
        (so below it, the table made whole and the one updated use by use hold the same questions)."""
        at = {t: i for i, t in enumerate(self.texts)}
        touched: dict[str, set[int]] = {}

        def holding(text: str) -> set[int]:
            if text not in touched:
                touched[text] = set(self.cards[at[text]]) if text in at else set()
            return touched[text]

        for card, (before, now) in moved.items():
            for text in before:
                holding(text).discard(card)
            for text in now:
                holding(text).add(card)
        texts = [t for t in self.texts if t not in touched or touched[t]]
        room = limit - len(texts)
        for text, cards in touched.items():
            if text not in at and cards and room > 0:
                texts.append(text)
                room -= 1
        if not texts:
            return None
        led = {t: tuple(sorted(touched[t])) if t in touched else self.cards[at[t]] for t in texts}
        return _made(tuple(texts), led, card_server, encode, self, frozenset(touched))

    def closest(self, sims: np.ndarray, rank: np.ndarray) -> Neighbour:
        """The past question nearest the question (``sims``: :meth:`cosines`), on the best ranked of the
        servers it led to (``rank``: each server's place, 0 first)."""
        i = int(np.argmax(sims))
        at = slice(int(self.offsets[i]), int(self.offsets[i + 1]))
        servers, cards = self.pair_servers[at], self.pair_cards[at]
        j = int(np.argmin(rank[servers]))
        return Neighbour(int(servers[j]), int(cards[j]), self.texts[i], float(sims[i]))

    def nearest(self, sims: np.ndarray, floor: float, vote_floor: float, among: np.ndarray) -> dict[int, Neighbour]:
        """Per server of ``among`` with a past question of cosine at least ``floor`` (``sims``: :meth:`cosines`):
        its nearest one, with its votes (the sum of the cosines of its distinct past questions from
        ``vote_floor`` up)."""
        rows = np.flatnonzero(sims >= min(floor, vote_floor))
        if not len(rows):
            return {}
        counts = self.offsets[rows + 1] - self.offsets[rows]
        at = np.concatenate([np.arange(self.offsets[r], self.offsets[r + 1]) for r in rows])
        cos, row = np.repeat(sims[rows], counts), np.repeat(rows, counts)
        kept = np.isin(self.pair_servers[at], among)
        servers, cards, cos, row = self.pair_servers[at][kept], self.pair_cards[at][kept], cos[kept], row[kept]
        out: dict[int, Neighbour] = {}
        for server in np.unique(servers).tolist():
            mine = servers == server
            best = int(np.argmax(np.where(mine, cos, -np.inf)))
            if cos[best] < floor:
                continue
            votes = float(cos[mine & (cos >= vote_floor)].sum())
            out[server] = Neighbour(server, int(cards[best]), self.texts[int(row[best])], float(cos[best]), votes)
        return out


def _made(
    texts: tuple[str, ...],
    led: Mapping[str, tuple[int, ...]],
    card_server: np.ndarray,
    encode: Callable[[list[str]], np.ndarray],
    previous: Neighbours | None = None,
    touched: frozenset[str] = frozenset(),
) -> Neighbours:
    """The table of ``texts``, each with the cards it ``led`` to: a text ``previous`` holds keeps its vector,
    and its (server, card) pairs unless it is one of the ``touched`` texts (whose cards changed); new
    texts are encoded in one call."""
    known = {t: i for i, t in enumerate(previous.texts)} if previous is not None else {}
    new = [t for t in texts if t not in known]
    made = np.asarray(encode(new), dtype=np.float32) if new else None
    dim = made.shape[1] if made is not None else previous.vectors.shape[1]  # type: ignore[union-attr]
    stacked = np.empty((len(texts), dim), dtype=np.float32)
    old = [(i, known[t]) for i, t in enumerate(texts) if t in known]
    if old:
        assert previous is not None
        stacked[[i for i, _ in old]] = previous.vectors[[j for _, j in old]]
    if made is not None:
        norms = np.linalg.norm(made, axis=1, keepdims=True)
        stacked[[i for i, t in enumerate(texts) if t not in known]] = made / np.where(norms > 0, norms, 1.0)
    pairs_servers: list[np.ndarray] = []
    pairs_cards: list[np.ndarray] = []
    for text in texts:
        i = known.get(text)
        if i is not None and previous is not None and text not in touched:
            at = slice(int(previous.offsets[i]), int(previous.offsets[i + 1]))
            pairs_servers.append(previous.pair_servers[at])
            pairs_cards.append(previous.pair_cards[at])
            continue
        ids = np.asarray(led[text], dtype=np.int64)
        where, first = np.unique(card_server[ids], return_index=True)  # each server once, its first card
        pairs_servers.append(where.astype(np.int64))
        pairs_cards.append(ids[first])
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(p) for p in pairs_servers])
    cards = tuple(led[t] for t in texts)
    return Neighbours(texts, stacked, cards, offsets, np.concatenate(pairs_servers), np.concatenate(pairs_cards))
