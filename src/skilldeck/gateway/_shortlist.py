"""The order of the cards ``find`` shows: what ties with the first card, then one card per server. Pure.

A model reads the first five cards (``limit``). Two rules decide which five:

1. **What ties is shown.** Every card whose score is within :data:`TIE_MARGIN` of the first card's
   comes right after it, whatever its server: ``time/get_current_time`` scoring as high as
   ``time/convert_time`` for "what time is it in Tokyo" is shown second, not sixth. A card's score
   is mostly its server's (``RankConfig.fused_server_weight``, 0.98), so only cards of the first
   server whose own match is as good as the first card's come this close.
   Ties go before the other servers' *fillers* only: a server whose best card scores within
   :data:`FILLER_GAP` of the first keeps its place ahead of them, so a catalog where several
   servers are close (LiveMCPBench) still shows five servers.
2. **Then one card per server.** The rest of the head is the best card of each of the first
   :data:`SERVERS_FIRST` servers, in the order the ranking puts the servers (including the place it
   gives a server for a need the question implies, such as a file path, whose best card for that
   need is shown), rather than several tools of one server that score alike; the rest follow by
   score.

Server diversity thus applies only among the cards that are not close to the top.
``bench/selection/everyday.py`` and ``bench/gateway_find.py`` measure both rules.
"""

from __future__ import annotations

from collections.abc import Callable

from skilldeck.select import Card, Decision, Scored

__all__ = ["SERVERS_FIRST", "TIE_MARGIN", "shortlist_order"]

SERVERS_FIRST = 5
"""``find`` leads with the best card of each of this many servers, in the decision's server order."""
TIE_MARGIN = 0.005
"""A card scoring at least the first card's score less this ties with it."""
FILLER_GAP = 0.6
"""Another server's best card scoring more than this below the first card is a filler: ties go before it."""

_EPSILON = 1e-9
"""Scores are floats: a card at the margin exactly is within it."""


def shortlist_order(decision: Decision, best_card: Callable[[str], Card | None]) -> list[Scored]:
    """``decision``'s cards in the order ``find`` shows them (see the module docs); ``best_card`` names the
    best card for a need the question implies."""
    ranked = decision.ranked
    best: dict[str, Scored] = {}
    for scored in ranked:
        best.setdefault(scored.card.server, scored)
    head_servers = decision.servers[:SERVERS_FIRST]
    for entry in decision.needs:
        card = best_card(entry["need"]) if entry.get("implied") else None
        if card is not None and card.server not in best:
            score = next((s for label, s in head_servers if label == card.server), 0.0)
            best[card.server] = Scored(card, score, 0.0)
    head = [best[label] for label, _ in head_servers if label in best]
    if head and ranked:
        top = ranked[0].score
        ties = [s for s in ranked[1:] if top - s.score <= TIE_MARGIN + _EPSILON and s.card.key != head[0].card.key]
        keys = {s.card.key for s in ties}
        rest = [s for s in head[1:] if s.card.key not in keys]
        close = [s for s in rest if top - s.score <= FILLER_GAP + _EPSILON]
        head = [head[0], *close, *ties, *rest[len(close) :]]
    keys = {s.card.key for s in head}
    return [*head, *(s for s in ranked if s.card.key not in keys)]
