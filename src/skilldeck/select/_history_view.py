"""What a card's past questions add to a ranking: the history view beside the five fused views.

:class:`HistoryView` lifts each server's fused score by what its cards' past questions say of the
question (their mean vector folded into the card's, and their own BM25), capped as the lead is, with
a higher floor for trusted past questions; the own views' first server keeps its place unless the one
lifted past it was taught enough, or a trusted past question like this one led to a server among the
first (:mod:`skilldeck.select._neighbours`), which then takes the first place. It keeps what it
computes once per history (the folded norms, the floors). The ranker (:class:`~skilldeck.select._rank.Ranker`)
holds one.
"""

from __future__ import annotations

import numpy as np

from skilldeck.select._config import RankConfig
from skilldeck.select._history import HistoryIndex, cap
from skilldeck.select._neighbours import Neighbour
from skilldeck.select._results import Evidence
from skilldeck.select._steps import SemanticVectors, ServerGroups

__all__ = ["HistoryView"]


class HistoryView:
    """The history view of one catalog (see the module docs).

    Args:
        config: the ranking knobs (the history's weights, caps and floors).
        groups: which server each card is on.
        card_server: each card's server, as an index.
        n_servers: how many servers the catalog has.
    """

    def __init__(self, config: RankConfig, groups: ServerGroups, card_server: np.ndarray, n_servers: int) -> None:
        self.config = config
        self.groups = groups
        self._card_server = card_server
        self._n_servers = n_servers
        self._folded: tuple[HistoryIndex, SemanticVectors, np.ndarray] | None = None
        self._floors: tuple[HistoryIndex, tuple[np.ndarray, np.ndarray]] | None = None

    def lift(
        self,
        fused: np.ndarray,
        ev: Evidence,
        history: HistoryIndex,
        past: np.ndarray | None,
        card_cos: np.ndarray,
        vectors: SemanticVectors | None,
        qvec: np.ndarray,
    ) -> tuple[np.ndarray, Neighbour | None]:
        """What past questions add to each server's fused score: a view of their own, next to the five;
        and the trusted past question like this one (:meth:`neighbour`) whose server it put first, if any.

        Per server, in standard deviations of ``fused``: :attr:`~RankConfig.history_expansion_weight`
        times the best gain of one of its cards' cosine when the card's vector is folded with its past
        questions' mean (document expansion; capped as the lead is), plus :attr:`~RankConfig.history_lexical_view_weight`
        times its past-question BM25 (its best card's over the best own card BM25, its own over the
        best own server BM25; all capped, :func:`~skilldeck.select._history.cap`, with the floor
        :attr:`~RankConfig.history_view_floor`). The own views' first server keeps its place unless
        the server lifted past it was taught enough (:meth:`_taught_enough`), or a trusted past question
        like this one (``qvec``) led to one of the first servers (:meth:`neighbour`): that one is first.

        (Measured and not kept, LiveMCPBench halves: the capped lead of the past questions' mean
        cosine alone, or their cosine alone, as this view -- server R@5 on half B 0.82-0.83; a
        lexical view alone -- 0.856; lifting only servers among the first 10 or 20 of the own views,
        or giving the best-taught one the fifth place -- no better; letting a lifted server pass
        the first by 1 or 2 deviations -- AUROC lower on both halves. See docs/learning.md.)"""
        c = self.config
        out = np.zeros_like(fused)
        if past is not None and vectors is not None and c.history_expansion_weight > 0:
            rows = history.card_rows
            # cos(q, card + mean) = (cos(q, card) + cos(q, mean)) / |card + mean|, the norms kept per history
            norms = self._folded_norms(history, vectors)
            gain = np.zeros(len(card_cos))
            gain[rows] = (card_cos[rows] + past) / norms - card_cos[rows]
            gain = cap(gain, np.clip(card_cos, 0.0, 1.0), c.history_cap_ratio, self.floors(history)[0])
            out += c.history_expansion_weight * self.groups.per_server_max(gain)
        if ev.card_history is not None and ev.server_history is not None and c.history_lexical_view_weight > 0:
            card_peak, server_peak = float(ev.card_raw.max()), float(ev.server_raw.max())
            if card_peak > 0:
                out += c.history_lexical_view_weight * self.groups.per_server_max(ev.card_history) / card_peak
            if server_peak > 0:
                out += c.history_lexical_view_weight * ev.server_history / server_peak
        scale = float(fused.std())
        lifted: np.ndarray = scale * out
        after = fused + lifted
        near = self.neighbour(history, qvec, after)
        first = int(np.argmax(fused)) if near is None else near.server
        new_top = int(np.argmax(after))
        if new_top != first and (near is not None or not self._taught_enough(history, new_top, ev.terms)):
            # the own first server (or the one a like question led to) is first, ahead by a twentieth of the
            # span (more than a card's own score can make up in the final mix)
            others = np.delete(after, first)
            lifted[first] = float(others.max()) + 0.05 * float(after.max() - after.min()) - fused[first]
        return lifted, near

    def neighbour(self, history: HistoryIndex, qvec: np.ndarray, after: np.ndarray) -> Neighbour | None:
        """The trusted past question like this one (``qvec``) whose server is to be first: a near paraphrase
        (:attr:`~RankConfig.history_paraphrase_cosine`) on any server; else, among the first
        :attr:`~RankConfig.history_neighbour_places` servers of ``after`` (the fused scores with history),
        those with a past question of cosine at least :attr:`~RankConfig.history_neighbour_cosine`, the
        one with the most votes (:meth:`~skilldeck.select._neighbours.Neighbours.nearest`). ``None``: none.

        (LiveMCPBench halves, each half's tasks one user's history: Hit@1 0.726 -> 0.779; see docs/learning.md.)"""
        c = self.config
        table = history.neighbours
        if table is None or (c.history_neighbour_places <= 0 and c.history_paraphrase_cosine > 1.0):
            return None  # neither rule can apply: no past question is looked up
        sims = table.cosines(qvec)
        order = np.argsort(-after, kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        closest = table.closest(sims, rank)
        if closest.cosine >= c.history_paraphrase_cosine:
            return closest
        if c.history_neighbour_places <= 0:
            return None
        first = order[: c.history_neighbour_places]
        found = table.nearest(sims, c.history_neighbour_cosine, c.history_vote_cosine, first)
        return max(found.values(), key=lambda n: (n.votes, n.cosine, -rank[n.server]), default=None)

    def floors(self, history: HistoryIndex) -> tuple[np.ndarray | float, np.ndarray | float]:
        """The floors of the history view's caps, per card and per server: :attr:`~RankConfig.history_trusted_floor`
        for a card whose past questions are trusted (a server: all of its taught cards are),
        :attr:`~RankConfig.history_view_floor` for the others."""
        c = self.config
        if not history.trusted or c.history_trusted_floor == c.history_view_floor:
            return c.history_view_floor, c.history_view_floor
        known = self._floors
        if known is not None and known[0] is history:  # computed once per history (a race computes it twice)
            return known[1]
        floors = self._trusted_floors(history)
        self._floors = (history, floors)
        return floors

    def _trusted_floors(self, history: HistoryIndex) -> tuple[np.ndarray, np.ndarray]:
        """Per card and per server, the floor of its cap: trusted past questions get the higher one."""
        c = self.config
        sure = history.trusted_cards()
        taught = np.zeros(len(sure), dtype=bool)
        taught[np.fromiter(history.questions, dtype=np.int64, count=len(history.questions))] = True
        n_servers = self._n_servers
        doubtful = np.bincount(self._card_server[taught & ~sure], minlength=n_servers)[:n_servers] > 0
        sure_servers = (np.bincount(self._card_server[sure], minlength=n_servers)[:n_servers] > 0) & ~doubtful
        floors = (c.history_view_floor, c.history_trusted_floor)
        return np.where(sure, floors[1], floors[0]), np.where(sure_servers, floors[1], floors[0])

    def _folded_norms(self, history: HistoryIndex, vectors: SemanticVectors) -> np.ndarray:
        """Per card of ``history``, the norm of its vector plus its past questions' mean vector
        (computed once per history and vectors; a ranking racing another may compute it twice)."""
        known = self._folded
        if known is not None and known[0] is history and known[1] is vectors:
            return known[2]
        assert history.vectors is not None
        folded = vectors.cards[history.card_rows] + history.vectors
        norms = np.linalg.norm(folded, axis=1).astype(np.float64)
        norms = np.where(norms > 0, norms, 1.0)
        self._folded = (history, vectors, norms)
        return norms

    def _taught_enough(self, history: HistoryIndex, server: int, terms: tuple[str, ...]) -> bool:
        """Whether one of ``server``'s cards holds :attr:`~RankConfig.history_overtake_matches` past
        questions that matched the question's ``terms``."""
        need = self.config.history_overtake_matches
        if need <= 0:
            return False
        cards = np.flatnonzero(self._card_server == server)
        return any(history.matched(int(card), terms) >= need for card in cards)
