"""What a query unit found, told about one card and its server: the features the decision reads. Pure.

A ranking keeps, for each query unit (the question, each of its jobs, each need it implies), the raw
evidence of every card and server (:class:`~skilldeck.select._results.Evidence`). The decision reads
it about the card chosen: :func:`anchored` turns the evidence into that card's
:class:`~skilldeck.select._results.Unit` (its own lexical and semantic strength, its server's, how
much of the unit's terms it covers, what past questions added apart), and :func:`idf_coverage` says
how much of a unit's weight the best servers hold between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from skilldeck.select._bm25f import BM25Index
from skilldeck.select._history import HistoryIndex
from skilldeck.select._results import Evidence, Unit

__all__ = ["CardPlace", "anchored", "idf_coverage"]


@dataclass(frozen=True, slots=True)
class CardPlace:
    """One card of a catalog and where it stands: the tools it names (a skill), its server and that server's terms."""

    card: int
    named: np.ndarray | None
    """The indexes of the tool cards a skill names (``None``: a tool, or a skill naming none)."""
    server: int
    label: str
    server_terms: frozenset[str]


def idf_coverage(
    own: tuple[str, ...], server: np.ndarray, server_terms: Sequence[frozenset[str]], servers: BM25Index
) -> float:
    """IDF-weighted share of a unit's terms that the top 3 servers hold between them; a term no
    server holds weighs as much as the rarest possible term. ``server``: the unit's server scores."""
    count = len(server)
    k = min(3, count)
    top = np.argpartition(-server, k - 1)[:k] if count > k else range(count)
    held = [server_terms[i] for i in top]  # asked of each term, not merged: the sets are large
    rare = float(np.log(1.0 + (servers.n + 0.5) / 0.5))
    total = covered = 0.0
    for t in own:
        i = servers.vocab.get(t)
        w = rare if i is None else float(servers.idf[i])
        total += w
        if any(t in terms for terms in held):
            covered += w
    return covered / total if total > 0 else 0.0


def anchored(ev: Evidence, where: CardPlace, history: HistoryIndex | None = None) -> Unit:
    """What a query unit found (``ev``), told about one card (the one chosen) and that card's server.

    A skill's lexical and semantic strength is at least that of the best tool it names, as in
    the ranking (where it inherits that tool's score)."""
    card, named, sid = where.card, where.named, where.server
    # the card's own evidence, and apart what its past questions added
    card_raw = ev.card_raw if ev.card_history is None or not ev.folded else ev.card_raw - ev.card_history
    card_sem = ev.card_sem if ev.card_sem is None or ev.sem_history is None else ev.card_sem - ev.sem_history
    lexical = float(card_raw[card])
    semantic = None if card_sem is None else float(card_sem[card])
    if named is not None:
        lexical = max(lexical, float(card_raw[named].max()))
        if card_sem is not None and semantic is not None:
            semantic = max(semantic, float(card_sem[named].max()))
    matched = tuple(t for t in ev.terms if t in where.server_terms)
    fused = margin = agreement = None
    if ev.fused is not None and ev.view_top is not None:
        fused = float(ev.fused[sid])
        others = np.delete(ev.fused, sid)
        margin = fused - float(others.max()) if len(others) else 0.0
        agreement = float(np.mean(ev.view_top == sid))
    return Unit(
        text=ev.text,
        terms=ev.terms,
        card=card,
        server=where.label,
        lexical=lexical,
        server_lexical=float(
            ev.server_raw[sid] - (0.0 if ev.server_history is None or not ev.folded else ev.server_history[sid])
        ),
        coverage=len(matched) / len(ev.terms) if ev.terms else 0.0,
        idf_coverage=ev.idf_coverage,
        matched=matched,
        semantic=semantic,
        server_semantic=None if ev.server_sem is None else float(ev.server_sem[sid]),
        fused=fused,
        fused_margin=margin,
        agreement=agreement,
        label_semantic=None if ev.label_sem is None else float(ev.label_sem[sid]),
        history_lexical=0.0 if ev.card_history is None else float(ev.card_history[card]),
        history_semantic=None if ev.sem_history is None else float(ev.sem_history[card]),
        history=history.matched(card, ev.terms) if history else 0,
    )
