"""The ranker's weights (:class:`RankConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SMALL_CATALOG_SERVERS", "RankConfig"]

SMALL_CATALOG_SERVERS = 12
"""A catalog of at most this many servers is a *small* one: a user's own few servers, where a question is
almost always meant for one of them, not one of a market's seventy. It is ranked and judged as such: a need the
question implies (a file it names, a URL) puts its server first rather than fifth
(:meth:`~skilldeck.select._rank.Ranker.place_implied`), and with an encoder the confidence is the model fitted on
small catalogs (``calibration-semantic-small.json``, ``bench/selection/calibrate_small.py``)."""


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
    intent_weight: float = 0.3
    """How much what a question asks to do to data (read, write, delete) agreeing with what a tool's
    annotations say it does adds to the card's own score, or takes from it when they contradict
    (:mod:`skilldeck.select._intent`; ``bench/selection/everyday.py``: 0.1, 0.3 and 0.6 put the same
    first cards within a point of each other, 0.3 the best; no effect on a tool without annotations)."""
    slot_weight: float = 0.3
    """How much a question giving (or not giving) a value a tool's required argument needs (a clock
    time to convert, a URL to fetch) moves the card's own score (:mod:`skilldeck.select._slots`)."""
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
    history_expansion_weight: float = 4.0
    """With an encoder, past questions are a server view of their own, added to the fused score of the
    five (:meth:`~skilldeck.select._rank.Ranker._history_view`): per server, the best gain of one of its
    cards' cosine when the card's vector is folded with its past questions' mean (the cosine to
    ``card + mean``, normalised, less the card's own), times this ..."""
    history_lexical_view_weight: float = 1.0
    """... plus this times its cards' best past-question BM25 (over the best own BM25 of any card) and its
    own past-question BM25 (over the best own server BM25), both capped as above; the sum, in standard
    deviations of the fused scores. (Chosen on half B measured with half A's history, checked the other
    way: ``bench/selection/learning.py``.)"""
    history_view_floor: float = 0.0
    """The floor of the cap (:attr:`history_cap_floor`) on what the history view adds: 0, so past
    questions lift a card only in proportion to its own evidence for the question (its cosine, its BM25).
    Measured on LiveMCPBench: 0.25 raised server R@5 on both halves to 0.857 / 0.867, but 20 crafted
    uses then put an unrelated server third; 0.1 still put it fifth."""
    history_trusted_floor: float = 1.0
    """The floor of that cap for a card whose past questions are trusted (taught by at least two
    distinct callers, or in an audience with one caller: :class:`~skilldeck.select._history.Taught`),
    and for a server all of whose taught cards are: 1, so trusted past questions lift as if uncapped
    (a lift of at most the best own evidence of any card plus the card's own; LiveMCPBench, one caller:
    server R@5 0.867 / 0.878; 0.25: 0.857 / 0.867). One caller's flood in an audience of several stays
    capped by :attr:`history_view_floor`."""
    history_neighbour_places: int = 3
    """A trusted past question like the question (:attr:`history_neighbour_cosine`) that led to one of the
    first this many servers (history's lift included) puts that server first; 0: never (a near
    paraphrase is still answered as :attr:`history_paraphrase_cosine` says; :mod:`~skilldeck.select._neighbours`). Measured on the LiveMCPBench halves (each half's tasks one
    user's history): 2 / 3 / 4 places raise Hit@1 0.726 -> 0.768 / 0.779 / 0.779 at cosine 0.5."""
    history_neighbour_cosine: float = 0.5
    """The cosine from which a trusted past question is *like* the question (0.48, 0.5 and 0.52: Hit@1
    0.779 on the halves, 3 places; 0.55: 0.768; 0.45: 0.789, but AUROC 0.819 / 0.793)."""
    history_vote_cosine: float = 0.4
    """Several servers among the first having a like question: the one whose distinct past questions of
    at least this cosine sum highest is put first (a server many like questions led to beats one a
    single question led to; 0.35 / 0.4 / 0.45: Hit@1 0.768 / 0.779 / 0.768)."""
    history_paraphrase_cosine: float = 0.85
    """The cosine from which a trusted past question is a near paraphrase of the question: its card is
    put first wherever it ranked, and the question answered as a question asked again is; above 1:
    never (with :attr:`history_neighbour_places` 0 too, no past question is looked up at all)."""
    history_neighbour_confidence: float = 0.5
    """A decision whose first server a like question put there has its confidence raised by this times
    that question's cosine over 0.3 (halves, AUROC 0.839 / 0.814 without history: 0.838 / 0.813 with
    this, 0.823 / 0.800 without it, 0.798 / 0.786 with 2)."""
    history_overtake_matches: int = 0
    """A server lifted past the own views' first server takes its place only when one of its cards holds
    at least this many past questions that matched the question (dense, agreeing history); 0 (the
    default): never, so past questions reorder the servers after the first. Measured with 3 on the
    LiveMCPBench halves: Hit@1 0.72 / 0.756 (+1 task on B) but AUROC 0.821 / 0.804, below the 0.839 /
    0.811 without history; so not the default."""
