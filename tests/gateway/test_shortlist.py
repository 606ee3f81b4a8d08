"""The order ``find`` shows cards in: ties with the first card, then one card per server (``_shortlist``)."""

from __future__ import annotations

from skilldeck.gateway._shortlist import FILLER_GAP, TIE_MARGIN, shortlist_order
from skilldeck.select._cards import Card
from skilldeck.select._decide import Decision
from skilldeck.select._rank import Scored


def scored(key: str, score: float) -> Scored:
    server, name = key.split("/")
    return Scored(Card(kind="tool", server=server, name=name, description=""), score, 0.0)


def order(*ranked: Scored) -> list[str]:
    servers: dict[str, float] = {}
    for s in ranked:
        servers.setdefault(s.card.server, s.score)
    decision = Decision(
        query="q", abstain=False, confidence=0.5, reason="", ranked=list(ranked), servers=list(servers.items())
    )
    return [f"{s.card.server}/{s.card.name}" for s in shortlist_order(decision, lambda need: None)]


def test_a_card_that_ties_with_the_first_is_shown_before_other_servers_fillers() -> None:
    shown = order(
        scored("time/convert", 1.0),
        scored("time/current", 1.0 - TIE_MARGIN),  # ties (at the margin exactly)
        scored("fs/info", 0.2),
        scored("memory/graph", 0.19),
    )
    assert shown == ["time/convert", "time/current", "fs/info", "memory/graph"]


def test_a_card_just_past_the_margin_waits_for_the_other_servers() -> None:
    shown = order(
        scored("time/convert", 1.0),
        scored("time/current", 1.0 - TIE_MARGIN - 0.0001),
        scored("fs/info", 0.2),
    )
    assert shown == ["time/convert", "fs/info", "time/current"]


def test_a_close_server_keeps_its_place_ahead_of_the_ties() -> None:
    shown = order(
        scored("time/convert", 1.0),
        scored("time/current", 1.0),
        scored("clock/now", 1.0 - FILLER_GAP),  # close: not a filler
        scored("fs/info", 1.0 - FILLER_GAP - 0.0001),  # a filler
    )
    assert shown == ["time/convert", "clock/now", "time/current", "fs/info"]


def test_without_ties_one_card_per_server_leads() -> None:
    shown = order(scored("a/x", 1.0), scored("a/y", 0.9), scored("b/z", 0.5), scored("c/w", 0.1))
    assert shown == ["a/x", "b/z", "c/w", "a/y"]
