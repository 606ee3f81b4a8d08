"""Each need a question implies, ranked on its own and remembered, and the place it is given. Pure.

A need a rule finds in a question (:data:`~skilldeck.select._query.IMPLIED_NEEDS`: a file, a URL, a
sum, a fact to remember, the clock) is a fixed text: the ranker ranks it once, as a question of its own,
and remembers which card and server it puts first (forgotten when the history changes, or while the
catalog's vectors were not ready). :meth:`NeedRankings.place` gives each such server a place among the
first five of a question's servers, or the first place in a small catalog for a need that names what
the question is about (:data:`~skilldeck.select._query.LEADING_NEEDS`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence

from skilldeck.select._cards import Card
from skilldeck.select._query import IMPLIED_SLOT, LEADING_NEEDS
from skilldeck.select._results import Ranking, Unit
from skilldeck.select._steps import RankSteps

__all__ = ["NeedRankings", "move_up"]


class NeedRankings:
    """The implied needs' own rankings over one catalog (``rank`` ranks one need's text), remembered."""

    def __init__(
        self,
        cards: Sequence[Card],
        steps: RankSteps,
        small: bool,
        rank: Callable[[str], Ranking],
        semantic: Callable[[], bool],
    ) -> None:
        self.cards = cards
        self.steps = steps
        self.small = small
        self._rank = rank
        self._semantic = semantic
        self._best: dict[tuple[bool, str], Unit | None] = {}

    def forget(self) -> None:
        """Rank every need again when next asked (the history changed)."""
        self._best = {}

    def known(self, need: str) -> bool:
        """Whether ``need``'s semantic ranking is remembered."""
        return (True, need) in self._best

    def unmet(self, questions: Sequence[str], primed: Container[str]) -> list[str]:
        """The needs ``questions`` imply whose semantic ranking is not remembered yet (nor their vector ``primed``)."""
        needs = dict.fromkeys(need for q in questions for need in self.steps.implied_needs(q))
        return [need for need in needs if not self.known(need) and need not in primed]

    def place(self, question: str, servers: list[tuple[str, float]]) -> list[tuple[str, str]]:
        """Give each need ``question`` implies one place among the first servers of ``servers`` (a
        ranking's server list, reordered in place); (need, its best server) for each need matched."""
        found: list[tuple[str, str]] = []
        for need in self.steps.implied_needs(question):
            best = self.best_server(need)
            if best is not None:
                found.append((need, best))
        leading = [best for need, best in found if self.small and need in LEADING_NEEDS][:1]
        others = [best for _, best in found if best not in leading]
        move_up(servers, list(dict.fromkeys(others))[: IMPLIED_SLOT + 1])
        move_up(servers, leading, 0)
        return found

    def best_server(self, need: str) -> str | None:
        """The server a need's own ranking puts first."""
        unit = self.unit(need)
        return None if unit is None else unit.server

    def best_card(self, need: str) -> Card | None:
        """The card a need's own ranking puts first (``None``: nothing matched it)."""
        unit = self.unit(need)
        return None if unit is None else self.cards[unit.card]

    def unit(self, need: str) -> Unit | None:
        """What a need's own ranking found, told about its best card (``None``: nothing matched it)."""
        key = (self._semantic(), need)  # a need ranked lexically while vectors were encoded is ranked again
        if key not in self._best:
            ranking = self._rank(need)
            top = ranking.scored[0].score if ranking.scored else 0.0
            unit = ranking.units[0] if top > 0 and ranking.units else None
            self._best[(ranking.semantic, need)] = unit
            return unit
        return self._best[key]


def move_up(servers: list[tuple[str, float]], wanted: list[str], slot: int = IMPLIED_SLOT) -> None:
    """Give each of ``wanted`` a place among the first ``slot`` + 1 of ``servers`` (in place).

    Each server moved up takes the place of the last of the first places that no need asked for;
    scores stay non-increasing."""
    width = slot + 1
    top = servers[:width]
    moved = [label for label in wanted if all(label != t for t, _ in top)]
    if not moved:
        return
    # drop the last of the first places that no need asked for, one per server moved up
    head = list(top)
    for _ in moved:
        drop = max(i for i, (label, _) in enumerate(head) if label not in wanted)
        head.pop(drop)
    placed = {label for label, _ in head}.union(moved)
    floor = head[-1][1] if head else servers[0][1]
    reordered = [*head, *((label, floor) for label in moved)]
    # scores stay non-increasing: none above the entry before it. The rest keep their order, so
    # once one is at or below the entry before it, so is every one after it: only a few change
    rest = [e for e in servers if e[0] not in placed]
    at = 0
    while at < len(rest) and rest[at][1] > reordered[-1][1]:
        reordered.append((rest[at][0], reordered[-1][1]))
        at += 1
    reordered.extend(rest[at:])
    servers[:] = reordered
