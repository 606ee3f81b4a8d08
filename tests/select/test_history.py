"""The ranker reads a usage history: each card's past questions, lexically and semantically, capped."""

from __future__ import annotations

import random
import threading
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from skilldeck.select import CardSet, RankConfig, Ranker, Selector, Taught
from skilldeck.select._history import HistoryIndex, cap
from skilldeck.select._vectors import VectorCache


class CountingEncoder:
    """Deterministic vectors from a hash of the text's words (a shared word pulls texts together)."""

    name = "counting"
    fingerprint = "counting-history-v1"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen.extend(texts)
        rows = []
        for t in texts:
            v = np.zeros(32, dtype=np.float32)
            for w in t.lower().split():
                v += np.random.default_rng(sum(map(ord, w))).standard_normal(32).astype(np.float32)
            rows.append(v / (np.linalg.norm(v) or 1.0))
        return np.stack(rows) if rows else np.zeros((0, 32), dtype=np.float32)


def key(cardset: CardSet, server: str, name: str) -> str:
    return next(c.key for c in cardset.cards if c.server == server and c.name == name)


def top(selector: Selector, question: str) -> str:
    d = selector.decide(question)
    return f"{d.ranked[0].card.server}/{d.ranked[0].card.name}"


# the forecast card holds "city" and "region" only; the route card holds "walking route": past
# questions that led to the forecast teach it the rest
QUESTION = "umbrella for my walking route through the city region"
PAST = [
    "Do I need an umbrella on my walking route in Porto tomorrow?",
    "Will I need an umbrella on the cycling route this weekend?",
]


def test_past_questions_lift_the_card_they_led_to(cardset: CardSet) -> None:
    before = Selector(cardset)
    assert top(before, QUESTION) != "weather/get_forecast"
    after = Selector(cardset, history={key(cardset, "weather", "get_forecast"): PAST})
    d = after.decide(QUESTION)
    assert f"{d.ranked[0].card.server}/{d.ranked[0].card.name}" == "weather/get_forecast"
    assert d.history == 2
    assert d.to_json()["history"] == 2
    assert "history" not in before.decide(QUESTION).to_json()


def test_set_history_swaps_in_a_new_history_without_reindexing_the_catalog(cardset: CardSet) -> None:
    encoder = CountingEncoder()
    selector = Selector(cardset, encoder=encoder, cache=VectorCache(None))
    index, vectors = selector.ranker.index, selector.ranker.vectors
    encoder.seen.clear()
    forecast = key(cardset, "weather", "get_forecast")
    selector.set_history({forecast: PAST})
    assert selector.ranker.index is index  # the catalog's indexes are kept
    assert selector.ranker.vectors is vectors
    assert sorted(encoder.seen) == sorted(PAST)  # only the past questions are encoded
    assert selector.ranker.history.size == 2
    encoder.seen.clear()
    alerts = key(cardset, "weather", "get_alerts")
    selector.set_history({forecast: PAST, alerts: ["Any storm warnings for the coast?"]})
    assert encoder.seen == ["Any storm warnings for the coast?"]  # an unchanged card's vector is reused
    selector.set_history({})
    assert not selector.ranker.history
    assert selector.decide(QUESTION).history == 0


def test_keys_of_cards_not_in_the_catalog_and_empty_questions_are_ignored(cardset: CardSet) -> None:
    ranker = Ranker(cardset.cards, history={"tool:gone:nothing": ["anything"], key(cardset, "pdf", "merge_pdfs"): [""]})
    assert not ranker.history


def test_a_history_lift_is_capped_by_the_cards_own_evidence() -> None:
    own = np.array([4.0, 1.0, 0.0])
    lift = np.array([10.0, 10.0, 10.0])
    capped = cap(lift, own, ratio=1.0, floor=0.25)
    assert capped.tolist() == [5.0, 2.0, 1.0]  # 1 x own + 0.25 x the best own
    assert cap(np.array([-1.0]), np.array([0.0]), 1.0, 0.25).tolist() == [0.0]


def test_a_flood_on_an_unrelated_card_does_not_overtake_a_card_with_real_evidence(cardset: CardSet) -> None:
    question = "What is the stock price of AAPL?"
    honest = Selector(cardset)
    assert top(honest, question) == "stocks/get_stock_price"
    crafted = [f"what is the stock price of AAPL today {i}" for i in range(20)]
    poisoned = Selector(cardset, history={key(cardset, "pdf", "merge_pdfs"): crafted})
    d = poisoned.decide(question)
    assert f"{d.ranked[0].card.server}/{d.ranked[0].card.name}" == "stocks/get_stock_price"
    scores = {f"{s.card.server}/{s.card.name}": s.score for s in d.ranked}
    # the unrelated card's lift is bounded by the cap floor: at most a quarter of the best real match
    assert scores["pdf/merge_pdfs"] <= 0.5 * scores["stocks/get_stock_price"]


def test_set_history_is_safe_while_rankings_run(cardset: CardSet) -> None:
    selector = Selector(cardset)
    forecast = key(cardset, "weather", "get_forecast")
    errors: list[BaseException] = []

    def rank() -> None:
        try:
            for _ in range(30):
                selector.decide(QUESTION)
        except BaseException as exc:  # pragma: no cover - what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=rank) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(30):
        selector.set_history({forecast: PAST[: 1 + i % 2]})
    for t in threads:
        t.join()
    assert errors == []


UPDATE_POOL = [
    *PAST,
    "Any storm warnings for the coast?",
    "merge these two PDF files into one",
    "what is the stock price of AAPL today",
    "umbrella for the city region walk",
    "the weather forecast for Lisbon this weekend",
    "send the quarterly report by email",
    "the",  # no index term at all: a card with a history and an empty document
]
UPDATE_QUESTIONS = [
    QUESTION,
    "What is the stock price of AAPL?",
    "storm warnings on the coast this weekend",
    "merge the PDF report",
    "forecast for Lisbon",
]


def test_a_history_updated_use_by_use_ranks_exactly_as_one_indexed_whole(cardset: CardSet) -> None:
    """Uses recorded one at a time (a card gains a question, the oldest goes, a card is forgotten), each
    handed to the ranker as a new history: the index it updated scores every question exactly as an
    index built whole from the last history, lexically and semantically."""
    rng = random.Random(5)
    keys = [c.key for c in cardset.cards]
    updated = Selector(cardset, encoder=CountingEncoder(), cache=VectorCache(None))
    history: dict[str, list[str]] = {}
    for step in range(60):
        card = rng.choice(keys)
        history = {**history, card: [rng.choice(UPDATE_POOL), *history.get(card, [])][:3]}
        changes = {card: history[card]}
        if step % 9 == 8:
            gone = rng.choice(sorted(history))
            history.pop(gone)  # a card whose uses were all forgotten
            changes[gone] = []
        if step % 2:  # the whole history (compared card by card), or the cards that changed only
            updated.set_history(history)
        else:
            updated.update_history(changes)
    whole = Selector(cardset, encoder=CountingEncoder(), cache=VectorCache(None), history=history)
    a, b = updated.ranker.history, whole.ranker.history
    assert a.questions == b.questions
    assert a.size == b.size
    assert a.card_rows.tolist() == b.card_rows.tolist()
    assert a.vectors is not None
    assert b.vectors is not None
    assert np.array_equal(a.vectors, b.vectors)
    for question in UPDATE_QUESTIONS:
        terms = updated.ranker.query_terms(question)
        assert np.array_equal(a.card_scores(terms), b.card_scores(terms)), question
        assert np.array_equal(a.server_scores(terms, 9), b.server_scores(terms, 9)), question
        mine, theirs = updated.decide(question), whole.decide(question)
        assert [(s.card.key, s.score) for s in mine.ranked] == [(s.card.key, s.score) for s in theirs.ranked]
        assert mine.history == theirs.history, question
        assert mine.features == theirs.features, question


def test_trust_updated_use_by_use_is_as_in_an_index_built_whole(cardset: CardSet) -> None:
    """A card's questions turning trusted (a second caller) or back, with or without new questions: the
    updated index trusts the same cards as one built whole from the last history, and ranks the same."""
    rng = random.Random(7)
    keys = [c.key for c in cardset.cards]
    updated = Selector(cardset, encoder=CountingEncoder(), cache=VectorCache(None))
    history: dict[str, Taught] = {}
    for step in range(40):
        card = rng.choice(keys)
        past = list(history.get(card, []))
        if step % 3:
            past = [rng.choice(UPDATE_POOL), *past][:3]
        history = {**history, card: Taught(past or [rng.choice(UPDATE_POOL)], rng.random() < 0.5)}
        if step % 2:
            updated.set_history(history)
        else:
            updated.update_history({card: history[card]})
    whole = Selector(cardset, encoder=CountingEncoder(), cache=VectorCache(None), history=history)
    a, b = updated.ranker.history, whole.ranker.history
    assert a.trusted == b.trusted
    assert a.trusted == {i for i, c in enumerate(cardset.cards) if c.key in history and history[c.key].trusted}
    for question in UPDATE_QUESTIONS:
        mine, theirs = updated.decide(question), whole.decide(question)
        assert [(s.card.key, s.score) for s in mine.ranked] == [(s.card.key, s.score) for s in theirs.ranked]


def test_one_recorded_use_rereads_only_its_card_and_its_server(cardset: CardSet) -> None:
    encoder = CountingEncoder()
    selector = Selector(cardset, encoder=encoder, cache=VectorCache(None))
    forecast, merge = key(cardset, "weather", "get_forecast"), key(cardset, "pdf", "merge_pdfs")
    selector.set_history({forecast: PAST, merge: ["merge these two PDF files into one"]})
    before = selector.ranker.history
    encoder.seen.clear()
    selector.set_history(
        {forecast: ["Any storm warnings for the coast?", *PAST[:1]], merge: ["merge these two PDF files into one"]}
    )
    after = selector.ranker.history
    assert encoder.seen == ["Any storm warnings for the coast?"]  # the other questions' vectors are cached
    card = selector.ranker._keys[merge]
    assert after.per_card[card] is before.per_card[card]  # the merge card was not read again
    assert before.cards is not None
    assert after.cards is not None
    merge_terms = before.per_card[card].ids.tolist()
    for term in merge_terms:  # nor were its terms' postings, in the card field or its server's
        assert after.cards.postings[term] is before.cards.postings[term]
    at = after.card_rows.tolist().index(card)
    assert np.array_equal(after.vectors[at], before.vectors[before.card_rows.tolist().index(card)])
    selector.set_history(
        {forecast: ["Any storm warnings for the coast?", *PAST[:1]], merge: ["merge these two PDF files into one"]}
    )
    assert selector.ranker.history.cards is after.cards  # the same history again: nothing re-read


def test_an_empty_history_index_scores_nothing() -> None:
    empty = HistoryIndex.empty(3)
    assert not empty
    assert empty.size == 0
    assert empty.card_scores({"x": 1.0}).tolist() == [0.0, 0.0, 0.0]
    assert empty.matched(0, ("x",)) == 0


# -- poisoning, with the default encoder on LiveMCPBench's 70 servers ---------------------------------

POISON_QUESTIONS = [
    "What will the weather be like in Berlin tomorrow?",
    "Find the latest papers on retrieval augmented generation on arXiv",
    "Convert /root/word/report.docx to PDF",
    "What is the current stock price of NVIDIA?",
    "Search Wikipedia for the history of the Eiffel Tower",
    "Create a mind map of the chapters of my thesis",
]


def _unrelated(selector: Selector, livemcpbench: tuple[CardSet, Any, np.ndarray], question: str) -> tuple[Any, Any]:
    """The question's ranking without a history, and the card its own text shares nothing with (no
    term, the lowest cosine)."""
    cards, encoder, vectors = livemcpbench
    selector.set_history({})
    before = selector.ranker.rank(question, limit=None)
    cos = vectors @ encoder.encode([question])[0]
    shared = {s.card.key for s in before.scored if s.lexical > 0}
    unrelated = [i for i, c in enumerate(cards.cards) if c.key not in shared]
    return before, cards.cards[min(unrelated, key=lambda i: float(cos[i]))]


def test_a_flood_of_crafted_uses_moves_an_unrelated_card_no_further_than_the_measured_bound(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    """One caller teaches a card its own text shares nothing with (no term, the lowest cosine) 20
    crafted uses of the question (the ledger's most per card): the card never comes first and its
    server stays out of the first five (bench/selection/learning.py measures the same on every
    LiveMCPBench task: best place after the flood 6th, never first)."""
    cards, encoder, vectors = livemcpbench
    selector = Selector(cards, encoder=encoder, vectors=vectors)
    for question in POISON_QUESTIONS:
        before, target = _unrelated(selector, livemcpbench, question)
        selector.set_history({target.key: [question] + [f"{question} ({n})" for n in range(19)]})
        after = selector.ranker.rank(question, limit=None)
        assert after.scored[0].card.key != target.key, question
        assert target.server not in [label for label, _ in after.servers[:5]], question
        assert after.servers[0][0] == before.servers[0][0], question  # the honest first server keeps its place


def test_the_confidence_reads_a_cards_own_evidence_and_apart_what_history_added(cardset: CardSet) -> None:
    question = "What is the weather forecast for the city of Porto?"
    plain = Selector(cardset).decide(question)
    learned = Selector(cardset, history={key(cardset, "weather", "get_forecast"): PAST}).decide(question)
    assert plain.chosen[0].name == learned.chosen[0].name == "get_forecast"
    for name in ("lexical", "server_lexical", "idf_coverage", "terms"):
        assert learned.features[name] == pytest.approx(plain.features[name]), name
    assert "history_lexical" not in plain.features
    assert learned.features["history_lexical"] >= 0.0


# -- with an encoder: past questions are a view of their own in the server fusion ----------------------

VIEW_QUESTION = "What will the weather be like in Berlin tomorrow?"


def _second_server_card(ranking: Any) -> Any:
    second = ranking.servers[1][0]
    return next(s.card for s in ranking.scored if s.card.server == second)


def test_past_questions_reorder_the_servers_after_the_first_and_the_confidence_reads_own_evidence(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    """Taught the very question, the second server's card gains the most a history can give; the first
    server of the catalog's own views keeps its place, and the decision's fused features are the own
    views' (as without a history): the confidence is not moved by what was taught."""
    cards, encoder, vectors = livemcpbench
    plain = Selector(cards, encoder=encoder, vectors=vectors)
    before = plain.ranker.rank(VIEW_QUESTION, limit=None)
    taught = _second_server_card(before)
    learned = Selector(cards, encoder=encoder, vectors=vectors, history={taught.key: [VIEW_QUESTION]})
    after = learned.ranker.rank(VIEW_QUESTION, limit=None)
    assert after.servers[0][0] == before.servers[0][0]
    assert after.servers[1][0] == taught.server
    d_plain, d_learned = plain.decide(VIEW_QUESTION), learned.decide(VIEW_QUESTION)
    for name in ("fused", "fused_margin", "agreement"):
        assert d_learned.features[name] == pytest.approx(d_plain.features[name]), name


def test_history_overtake_lets_a_server_taught_enough_take_the_first_place(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    cards, encoder, vectors = livemcpbench
    before = Selector(cards, encoder=encoder, vectors=vectors).ranker.rank(VIEW_QUESTION, limit=None)
    taught = _second_server_card(before)
    history = {taught.key: [VIEW_QUESTION]}
    strong = RankConfig(history_expansion_weight=100.0)  # a lift far past the first server
    kept = Selector(cards, encoder=encoder, vectors=vectors, history=history, config=strong)
    assert kept.ranker.rank(VIEW_QUESTION).servers[0][0] == before.servers[0][0]
    config = replace(strong, history_overtake_matches=1)
    passed = Selector(cards, encoder=encoder, vectors=vectors, history=history, config=config)
    assert passed.ranker.rank(VIEW_QUESTION).servers[0][0] == taught.server
    config = replace(strong, history_overtake_matches=2)  # one matched past question is not enough
    held = Selector(cards, encoder=encoder, vectors=vectors, history=history, config=config)
    assert held.ranker.rank(VIEW_QUESTION).servers[0][0] == before.servers[0][0]


def test_two_callers_uses_lift_a_card_further_than_one_callers_flood(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    """The same 20 uses on a card its own text shares nothing with: taught by one caller of an audience
    of several (a plain or untrusted history) they stay capped by the card's own evidence, the first
    server kept and the card's server out of the first five; taught by two distinct callers (trusted:
    :class:`~skilldeck.select.Taught`) they hold the very question, which is answered with the card it
    led to: its server is first (what trusted history may overturn, docs/learning.md)."""
    cards, encoder, vectors = livemcpbench
    selector = Selector(cards, encoder=encoder, vectors=vectors)
    for question in POISON_QUESTIONS:
        before, target = _unrelated(selector, livemcpbench, question)
        uses = [question] + [f"{question} ({n})" for n in range(19)]
        places = {}
        for trusted in (False, True):
            selector.set_history({target.key: Taught(uses, trusted)})
            after = selector.ranker.rank(question, limit=None)
            places[trusted] = [label for label, _ in after.servers].index(target.server) + 1
        selector.set_history({target.key: Taught(uses, False)})
        assert selector.ranker.rank(question, limit=None).servers[0][0] == before.servers[0][0], question
        assert places[False] > 5, question
        assert places[True] == 1, question


def test_past_questions_vectors_are_kept_on_disk_so_a_restart_encodes_none_of_them(cardset: CardSet, tmp_path) -> None:
    """The ledger's questions are encoded through the ranker's vector cache (the gateway's is on disk):
    a restarted ranker with the same history reads their vectors, and encodes only a question it never saw."""
    forecast = key(cardset, "weather", "get_forecast")
    first = CountingEncoder()
    ranker = Ranker(cardset.cards, encoder=first, cache_dir=tmp_path)
    ranker.set_history({forecast: PAST})
    assert set(PAST) <= set(first.seen)  # encoded once, stored
    again = CountingEncoder()
    restarted = Ranker(cardset.cards, encoder=again, cache_dir=tmp_path)
    restarted.set_history({forecast: PAST})
    assert again.seen == []  # neither the cards nor the past questions encoded again
    assert restarted.history.vectors is not None
    restarted.set_history({forecast: [*PAST, "rain gear for the weekend hike"]})
    assert again.seen == ["rain gear for the weekend hike"]  # only the new question
