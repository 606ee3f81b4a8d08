"""A trusted past question like the question (or a near paraphrase of it) moves the first answer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from skilldeck.select import CardSet, RankConfig, Ranker, Selector, Taught
from skilldeck.select._neighbours import Neighbours

from .test_history import PAST, CountingEncoder, key

QUESTION = "What will the weather be like in Berlin tomorrow?"
LIKE = "What is the weather forecast for Hamburg on Monday?"  # MiniLM cosine 0.70 to QUESTION
PARAPHRASE = "Tell me the weather in Berlin tomorrow"  # 0.91


def _selector(
    bench: tuple[CardSet, Any, np.ndarray], history: Any = None, threshold: float | None = None, **config: Any
) -> Selector:
    cards, encoder, vectors = bench
    return Selector(
        cards, encoder=encoder, vectors=vectors, history=history, config=RankConfig(**config), threshold=threshold
    )


def _card_of(ranking: Any, place: int) -> Any:
    """The best card of the server at ``place`` (1: the first) of ``ranking``."""
    server = ranking.servers[place - 1][0]
    return next(s.card for s in ranking.scored if s.card.server == server)


def _taught(bench: tuple[CardSet, Any, np.ndarray], place: int, question: str) -> tuple[Any, Any, dict[str, Any]]:
    """QUESTION's ranking without a history, the best card of the server at ``place``, and a trusted
    history that taught that card ``question``."""
    before = _selector(bench).ranker.rank(QUESTION, limit=None)
    card = _card_of(before, place)
    return before, card, {card.key: Taught([question], trusted=True)}


def _first(selector: Selector, question: str = QUESTION) -> str:
    return selector.ranker.rank(question, limit=None).servers[0][0]


def test_a_trusted_like_question_puts_its_server_first_an_untrusted_one_does_not(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    before, second, history = _taught(livemcpbench, 2, LIKE)
    assert second.server != before.servers[0][0]
    trusted = _selector(livemcpbench, history)
    ranking = trusted.ranker.rank(QUESTION, limit=None)
    assert ranking.servers[0][0] == second.server
    assert ranking.neighbour is not None
    assert ranking.neighbour.question == LIKE
    assert 0.5 <= ranking.neighbour.cosine < 0.85
    untrusted = _selector(livemcpbench, {second.key: Taught([LIKE], trusted=False)})
    assert _first(untrusted) == before.servers[0][0]  # one caller of several: the first server keeps its place
    assert untrusted.ranker.rank(QUESTION, limit=None).neighbour is None


def test_a_like_question_is_one_from_the_cosine_set_and_not_below(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    before, second, history = _taught(livemcpbench, 2, LIKE)
    found = _selector(livemcpbench, history).ranker.rank(QUESTION, limit=None).neighbour
    assert found is not None
    at = _selector(livemcpbench, history, history_neighbour_cosine=found.cosine - 1e-6)
    above = _selector(livemcpbench, history, history_neighbour_cosine=found.cosine + 1e-6)
    assert _first(at) == second.server
    assert _first(above) == before.servers[0][0]


def test_a_like_question_moves_only_a_server_among_the_first_places(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    """Taught to the sixth server, the like question lifts it (the trusted history view) to some place p;
    with ``history_neighbour_places`` p it is then first, with p - 1 it stays at p."""
    _, far, history = _taught(livemcpbench, 6, LIKE)
    lifted = _selector(livemcpbench, history, history_neighbour_places=0).ranker.rank(QUESTION, limit=None)
    place = [label for label, _ in lifted.servers].index(far.server) + 1
    assert place > 1
    assert _first(_selector(livemcpbench, history, history_neighbour_places=place)) == far.server
    held = _selector(livemcpbench, history, history_neighbour_places=place - 1).ranker.rank(QUESTION, limit=None)
    assert [label for label, _ in held.servers].index(far.server) + 1 == place


def test_a_near_paraphrase_of_a_trusted_question_is_answered_with_its_card_wherever_it_ranked(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    before, far, history = _taught(livemcpbench, 6, PARAPHRASE)
    decision = _selector(livemcpbench, history, history_neighbour_places=1).decide(QUESTION)
    assert decision.abstain is False
    assert decision.chosen[0].key == far.key
    assert decision.worked_before == PARAPHRASE
    assert "it worked before for this question" in decision.reason
    # a cosine below the paraphrase's: a like question only, which cannot reach the sixth server's card
    strict = _selector(livemcpbench, history, history_neighbour_places=1, history_paraphrase_cosine=0.95)
    decided = strict.decide(QUESTION)
    assert decided.worked_before is None
    assert decided.ranked[0].card.server == before.servers[0][0]


def test_a_like_question_raises_the_confidence_and_the_reason_names_it(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    _, second, history = _taught(livemcpbench, 2, LIKE)
    counted = _selector(livemcpbench, history, history_neighbour_confidence=0.5).decide(QUESTION)
    plain = _selector(livemcpbench, history, history_neighbour_confidence=0.0).decide(QUESTION)
    answered = _selector(livemcpbench, history, threshold=0.0).decide(QUESTION)
    near = _selector(livemcpbench, history).ranker.rank(QUESTION, limit=None).neighbour
    assert near is not None
    assert counted.like_before == LIKE
    assert counted.confidence == pytest.approx(min(1.0, plain.confidence + 0.5 * (near.cosine - 0.3)))
    assert counted.confidence > plain.confidence
    assert plain.like_before == LIKE
    assert answered.abstain is False
    assert f"a question like it worked before, {LIKE!r}, with {second.server}/{second.name}" in answered.reason
    assert counted.to_json()["like_before"] == LIKE
    assert counted.like_card is not None
    assert counted.like_card.key == second.key  # the card the like question led to
    assert counted.to_json()["like_card"]["name"] == second.name


SERVERS = np.array([0, 1, 1])
"""Card 0 on server 0, cards 1 and 2 on server 1."""


def _words(texts: list[str]) -> np.ndarray:
    return CountingEncoder().encode(texts)


def test_the_table_holds_at_most_its_limit_a_few_of_each_cards_questions_at_a_time() -> None:
    questions = {0: ("a one", "a two", "a three"), 1: ("b one", "b two"), 2: ("c one",)}
    table = Neighbours.build(questions, {0, 1, 2}, SERVERS, _words, limit=4)
    assert table is not None
    assert table.texts == ("a one", "b one", "c one", "a two")  # each card's first, then the seconds
    assert len(Neighbours.build(questions, {0, 1, 2}, SERVERS, _words, limit=6) or ()) == 6
    assert len(Neighbours.build(questions, {0, 1, 2}, SERVERS, _words, limit=5) or ()) == 5
    assert Neighbours.build(questions, set(), SERVERS, _words) is None  # nothing trusted: no table
    shared = Neighbours.build({0: ("same",), 1: ("same",)}, {0, 1}, SERVERS, _words, limit=1)
    assert shared is not None
    assert shared.cards == ((0, 1),)  # one question that led to two cards: one row
    assert shared.led_to(0) == ((0, 0), (1, 1))  # each server it led to, with its card there


def test_the_table_encodes_only_questions_it_did_not_hold() -> None:
    seen: list[str] = []

    def encode(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return _words(texts)

    first = Neighbours.build({0: ("a one", "a two")}, {0}, SERVERS, encode)
    assert first is not None
    again = first.updated({1: ((), ("b one",))}, SERVERS, encode)
    assert seen == ["a one", "a two", "b one"]
    assert again is not None
    assert np.array_equal(again.vectors[again.texts.index("a one")], first.vectors[0])


def test_a_ranker_keeps_the_table_while_the_trusted_questions_stay_and_drops_it_when_the_trust_goes(
    cardset: CardSet,
) -> None:
    forecast, price = key(cardset, "weather", "get_forecast"), key(cardset, "stocks", "get_stock_price")
    ranker = Ranker(cardset.cards, encoder=CountingEncoder())
    ranker.set_history({forecast: Taught(PAST, trusted=True)})
    table = ranker._history.neighbours
    assert table is not None
    assert set(table.texts) == set(PAST)
    ranker.update_history({price: ["what does a share of ACME cost"]})  # untrusted: the table is the same
    assert ranker._history.neighbours is table
    ranker.update_history({forecast: Taught(PAST, trusted=False)})
    assert ranker._history.neighbours is None
    without = Ranker(cardset.cards)  # no encoder: no vectors, no table
    without.set_history({forecast: Taught(PAST, trusted=True)})
    assert without._history.neighbours is None


def test_without_places_a_like_question_changes_nothing(livemcpbench: tuple[CardSet, Any, np.ndarray]) -> None:
    before, _, history = _taught(livemcpbench, 2, LIKE)
    off = _selector(livemcpbench, history, history_neighbour_places=0)
    assert off.ranker.rank(QUESTION, limit=None).neighbour is None
    assert _first(off) == before.servers[0][0]


def test_without_places_a_near_paraphrase_is_still_answered_and_above_1_it_is_not(
    livemcpbench: tuple[CardSet, Any, np.ndarray],
) -> None:
    """The two rules are switched apart: 0 places turns the like rule off, a paraphrase cosine above 1 the other."""
    before, far, history = _taught(livemcpbench, 6, PARAPHRASE)
    decision = _selector(livemcpbench, history, history_neighbour_places=0).decide(QUESTION)
    assert decision.worked_before == PARAPHRASE
    assert decision.chosen[0].key == far.key
    off = _selector(livemcpbench, history, history_neighbour_places=0, history_paraphrase_cosine=1.01)
    assert off.ranker.rank(QUESTION, limit=None).neighbour is None
    assert off.decide(QUESTION).worked_before is None
    assert _first(off) == before.servers[0][0]
    like_only = _selector(livemcpbench, history, history_neighbour_places=6, history_paraphrase_cosine=1.01)
    assert like_only.decide(QUESTION).worked_before is None  # a paraphrase is a like question still
    assert like_only.decide(QUESTION).like_before == PARAPHRASE


def test_a_table_updated_card_by_card_holds_what_one_made_whole_does() -> None:
    """Questions taught, replaced and untaught card by card (trust given and taken back): the updated table
    holds the same questions, each with the same cards and (server, card) pairs, as one made whole."""
    servers = np.array([0, 0, 1, 1, 2])
    steps: list[dict[int, tuple[str, ...]]] = [
        {0: ("a", "b"), 2: ("b", "c")},
        {1: ("c",)},
        {0: ("b", "d")},  # a leaves: no trusted card holds it any more
        {2: ()},  # card 2's trust taken back
        {3: ("a", "e"), 4: ("e",)},
    ]
    questions: dict[int, tuple[str, ...]] = {}
    table: Neighbours | None = None
    for step in steps:
        moved = {card: (questions.get(card, ()), now) for card, now in step.items()}
        questions.update(step)
        questions = {card: past for card, past in questions.items() if past}
        whole = Neighbours.build(questions, set(questions), servers, _words)
        table = Neighbours.build(questions, set(questions), servers, _words) if table is None else table
        if step is not steps[0]:
            table = table.updated(moved, servers, _words)
        assert table is not None
        assert whole is not None
        held = {t: (table.cards[i], table.led_to(i)) for i, t in enumerate(table.texts)}
        assert held == {t: (whole.cards[i], whole.led_to(i)) for i, t in enumerate(whole.texts)}, step
        for i, text in enumerate(table.texts):
            assert np.allclose(table.vectors[i], whole.vectors[whole.texts.index(text)])


def test_an_updated_table_takes_a_new_question_only_while_there_is_room() -> None:
    table = Neighbours.build({0: ("a", "b")}, {0}, SERVERS, _words, limit=3)
    assert table is not None
    grown = table.updated({1: ((), ("c", "d"))}, SERVERS, _words, limit=3)
    assert grown is not None
    assert grown.texts == ("a", "b", "c")  # at the limit: d waits
    freed = grown.updated({0: (("a", "b"), ("b",))}, SERVERS, _words, limit=3)
    assert freed is not None
    assert freed.texts == ("b", "c")  # a left; d joins when card 1 is read again
    assert table.updated({0: (("a", "b"), ())}, SERVERS, _words) is None  # nothing trusted any more
