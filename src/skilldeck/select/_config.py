"""The ranker's weights (:class:`RankConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RankConfig"]


@dataclass(frozen=True)
class RankConfig:
    """The ranker's weights. The defaults are the measured best (``bench/selection/run.py --ablation``).

    The variants that were measured and not shipped (pseudo-relevance feedback, servers scored by
    their best card, reciprocal rank fusion, max-merged or unsplit jobs, no path words, ...) live in
    the benchmark (``bench/selection/ablation.py``), which gives :class:`~skilldeck.select._rank.Ranker`
    steps of its own (:class:`~skilldeck.select._rank.RankSteps`)."""

    k1: float = 1.2
    b: float = 0.75
    server_b: float = 0.5
    """BM25 length normalisation of server documents (cards use ``b``)."""
    name_weight: float = 2.0
    """BM25F weight of a card's name field (description = 1)."""
    params_weight: float = 0.3
    """Weight of the input schema's property names and descriptions (when schemas are given)."""
    server_field_weight: float = 0.3
    """Weight of the server's label and description inside each card's document."""
    server_mix: float = 0.5
    """A card's score = (1 - server_mix) * its own + server_mix * its server's."""
    semantic_weight: float = 0.5
    """Share of a card's cosine in its own score (when an encoder is given)."""
    fused_server_weight: float = 0.98
    """With an encoder: a card's score = this share of its server's fused score (in [0, 1]) + the rest of its
    own, so servers come out in fused order and each server's cards by their own score (chosen on half A)."""
    history_weight: float = 0.5
    """BM25F weight of a card's past questions (a field of their own, scored on its own index; see
    :mod:`skilldeck.select._history`), added to the card's own score."""
    history_server_weight: float = 0.5
    """Weight of a server's past questions (every past question of its cards) added to its own score."""
    history_semantic_weight: float = 1.0
    """With an encoder: how much of the lead of a card's past-question cosine over its own cosine lifts it."""
    history_cap_ratio: float = 1.0
    """History lifts a card (or a server) by at most this many times its own evidence for the question ..."""
    history_cap_floor: float = 0.25
    """... plus this share of the best own evidence of any card (server): so a card whose own text shares
    nothing with the question is lifted by history to at most this share of the best real match."""
