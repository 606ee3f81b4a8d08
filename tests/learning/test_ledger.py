"""The usage ledger's rules, in memory: per-card and per-audience bounds, repeats, shares, age, pruning."""

from __future__ import annotations

import pytest

from skilldeck.learning import Ledger, LedgerLimits
from skilldeck.learning._ledger import DAY, Use, balanced

CARD = "up/weather"


def teach(ledger: Ledger, caller: str, count: int, *, card: str = CARD, start: float = 0.0, word: str = "q") -> None:
    for i in range(count):
        ledger.add(f"{word} {caller} {i}", card, caller, start + i)


@pytest.mark.parametrize("per_card", [1, 5, 20])
def test_a_card_keeps_its_newest_n_questions_at_n_and_n_plus_one(per_card: int) -> None:
    ledger = Ledger(limits=LedgerLimits(per_card=per_card))
    teach(ledger, "alice", per_card)
    assert len(ledger.uses(("", CARD))) == per_card
    change = ledger.add("the newest question", CARD, "alice", 1_000.0)
    assert [u.question for u in change.written] == ["the newest question"]
    assert [u.question for u in change.removed] == ["q alice 0"]  # the oldest made room
    questions = ledger.questions(now=1_000.0)[("", CARD)]
    assert len(questions) == per_card
    assert questions[0] == "the newest question"


def test_an_exact_repeat_counts_once_and_is_the_newest() -> None:
    ledger = Ledger()
    ledger.add("weather in Paris", CARD, "alice", 1.0)
    ledger.add("other question", CARD, "alice", 2.0)
    ledger.add("  weather   in Paris ", CARD, "bob", 3.0)  # the same text once whitespace is folded
    assert ledger.questions(now=3.0)[("", CARD)] == ["weather in Paris", "other question"]
    assert [u.caller for u in ledger.uses(("", CARD))] == ["bob", "alice"]


def test_the_same_callers_repeat_within_refresh_after_changes_nothing_and_later_refreshes_it() -> None:
    """An agent looping on one question records it once an hour, not on every call: no store write, no
    ranker re-reading the card. Another caller's repeat, or one at refresh_after, is recorded."""
    ledger = Ledger(limits=LedgerLimits(refresh_after=3_600.0))
    assert ledger.add("weather in Paris", CARD, "alice", 0.0)
    assert not ledger.add("weather in Paris", CARD, "alice", 1.0)
    assert not ledger.add("weather  in Paris", CARD, "alice", 3_599.0)  # N - 1 seconds
    assert [u.at for u in ledger.uses(("", CARD))] == [0.0]
    assert [u.at for u in ledger.add("weather in Paris", CARD, "alice", 3_600.0).written] == [3_600.0]  # N
    assert [u.caller for u in ledger.add("weather in Paris", CARD, "bob", 3_601.0).written] == ["bob"]
    assert ledger.add("weather in Paris", "up/other", "bob", 3_602.0)  # another card is another use
    every = Ledger(limits=LedgerLimits(refresh_after=0.0))
    assert every.add("weather in Paris", CARD, "alice", 0.0)
    assert every.add("weather in Paris", CARD, "alice", 0.0)  # 0: every repeat is written


def test_a_question_is_cut_to_its_length_cap() -> None:
    limits = LedgerLimits(max_question_chars=10)
    ledger = Ledger(limits=limits)
    ledger.add("x" * 10, CARD, "alice", 1.0)
    ledger.add("y" * 11, CARD, "alice", 2.0)
    assert ledger.questions(now=2.0)[("", CARD)] == ["y" * 10, "x" * 10]


def test_one_caller_holds_at_most_half_of_a_card_once_another_taught_it() -> None:
    ledger = Ledger()
    ledger.add("weather tomorrow in Lyon", CARD, "bob", 0.0)
    teach(ledger, "mallory", 100, start=1.0, word="crafted")  # a flood after one honest use
    callers = [u.caller for u in ledger.uses(("", CARD))]
    assert callers.count("mallory") == 1, callers
    assert callers.count("bob") == 1, callers
    # a third caller's use lets mallory hold one more: half of four
    ledger.add("rain in Nantes", CARD, "carol", 200.0)
    teach(ledger, "mallory", 10, start=201.0, word="again")
    callers = [u.caller for u in ledger.uses(("", CARD))]
    assert callers.count("mallory") == 2, callers
    assert len(callers) == 4, callers


def test_a_card_that_keeps_one_question_keeps_the_newest_whoever_asked_it() -> None:
    ledger = Ledger(limits=LedgerLimits(per_card=1))
    ledger.add("honest", CARD, "bob", 0.0)
    ledger.add("newer", CARD, "mallory", 1.0)
    assert ledger.questions(now=1.0) == {("", CARD): ["newer"]}


def test_a_caller_alone_on_a_card_teaches_it_fully() -> None:
    ledger = Ledger()
    teach(ledger, "", 25)  # the default identity of a desktop's stdio gateway
    assert len(ledger.questions(now=25.0)[("", CARD)]) == 20


def test_the_share_bound_is_per_card() -> None:
    ledger = Ledger()
    ledger.add("honest", CARD, "bob", 0.0)
    teach(ledger, "mallory", 10, start=1.0)
    teach(ledger, "mallory", 10, start=1.0, card="up/other")
    assert len(ledger.uses(("", CARD))) == 2
    assert len(ledger.uses(("", "up/other"))) == 10


def test_uses_older_than_the_max_age_are_not_read_and_are_dropped() -> None:
    ledger = Ledger(limits=LedgerLimits(max_age=30 * DAY))
    ledger.add("old", CARD, "alice", 0.0)
    ledger.add("recent", CARD, "alice", 20 * DAY)
    assert ledger.questions(now=30 * DAY)[("", CARD)] == ["recent", "old"]  # at the age: still read
    assert ledger.questions(now=30 * DAY + 1)[("", CARD)] == ["recent"]
    change = ledger.prune(lambda card: True, now=30 * DAY + 1)
    assert [u.question for u in change.removed] == ["old"]
    assert len(ledger) == 1


def test_an_audience_keeps_at_most_its_entry_cap_oldest_out_first() -> None:
    ledger = Ledger(limits=LedgerLimits(max_entries=3))
    for i in range(3):
        ledger.add(f"q{i}", f"up/card{i}", "alice", float(i))
    assert len(ledger) == 3
    change = ledger.add("q3", "up/card3", "alice", 3.0)
    assert [u.question for u in change.removed] == ["q0"]
    assert len(ledger) == 3
    assert ledger.cards() == [("", "up/card1"), ("", "up/card2"), ("", "up/card3")]


def test_an_audience_keeps_at_most_its_byte_cap() -> None:
    one = len(b"q0") + len(b"up/c0") + len(b"alice")
    ledger = Ledger(limits=LedgerLimits(max_bytes=2 * one))
    ledger.add("q0", "up/c0", "alice", 0.0)
    ledger.add("q1", "up/c1", "alice", 1.0)
    assert ledger.size == 2 * one
    ledger.add("q2", "up/c2", "alice", 2.0)
    assert ledger.size == 2 * one
    assert ledger.cards() == [("", "up/c1"), ("", "up/c2")]


def test_prune_drops_the_uses_of_cards_no_longer_listed() -> None:
    ledger = Ledger()
    ledger.add("weather", CARD, "alice", 0.0)
    ledger.add("convert", "up/currency", "alice", 0.0)
    change = ledger.prune(lambda card: card[1] != "up/currency", now=1.0)
    assert [u.card for u in change.removed] == ["up/currency"]
    assert ledger.cards() == [("", CARD)]


def test_limits_that_hold_nothing_are_refused() -> None:
    with pytest.raises(ValueError, match="per_card must be at least 1"):
        LedgerLimits(per_card=0)
    with pytest.raises(ValueError, match="max_age must be a positive"):
        LedgerLimits(max_age=0)
    for refresh_after in (-1.0, 180 * DAY):
        with pytest.raises(ValueError, match="refresh_after"):
            LedgerLimits(refresh_after=refresh_after)


def test_a_cards_questions_are_trusted_when_two_callers_taught_them_or_the_audience_has_one_caller() -> None:
    ledger = Ledger()
    ledger.add("weather in Paris", "up/weather", "alice", 1.0)
    assert ledger.callers == 1
    assert ledger.questions_of(("", "up/weather"), 2.0).trusted  # a single-user audience learns fully
    ledger.add("merge two pdfs", "up/pdf", "bob", 2.0)
    assert ledger.callers == 2
    assert not ledger.questions_of(("", "up/weather"), 3.0).trusted  # one caller among several: capped
    ledger.add("rain in Lyon", "up/weather", "bob", 3.0)
    assert ledger.questions_of(("", "up/weather"), 4.0).trusted  # two distinct callers taught it
    assert ledger.questions_of(("", "up/weather"), 4.0) == ["rain in Lyon", "weather in Paris"]
    assert {card[1]: q.trusted for card, q in ledger.questions(4.0).items()} == {"up/weather": True, "up/pdf": False}
    ledger.prune(lambda card: card[1] != "up/pdf", 4.0)  # bob's other use leaves with its card; his Lyon use stays
    assert ledger.callers == 2
    assert not ledger.questions_of(("", "up/missing"), 4.0).trusted


def _uses(*callers: str) -> list[Use]:
    """One use per caller, newest first (the first caller's use is the newest)."""
    return [Use(f"q{len(callers) - i}", CARD, caller, float(len(callers) - i)) for i, caller in enumerate(callers)]


def _kept(uses: list[Use], per_card: int = 20) -> list[str]:
    return [f"{u.caller}{u.question[1:]}" for u in balanced(uses, per_card)]


def test_a_caller_holds_exactly_half_of_a_card_and_one_more_use_is_given_up() -> None:
    # 2 of 4 is half: all kept; 2 of 3 is over half: the caller's oldest is given up
    assert _kept(_uses("mallory", "bob", "mallory", "carol")) == ["mallory4", "bob3", "mallory2", "carol1"]
    assert _kept(_uses("mallory", "bob", "mallory")) == ["mallory3", "bob2"]
    # newest first, a use is taken only while its caller holds at most half of what is taken, itself included:
    # mallory's second use would be 2 of 2, so it is skipped, and bob's and carol's are taken
    assert _kept(_uses("mallory", "mallory", "bob", "carol")) == ["mallory4", "bob2", "carol1"]
    # a card that keeps two questions keeps one of each of two callers, not a flood's two newest
    assert _kept(_uses("mallory", "mallory", "bob"), per_card=2) == ["mallory3", "bob1"]
    assert _kept(_uses("mallory", "mallory", "bob"), per_card=1) == ["mallory3"]


def test_a_callers_use_over_half_of_a_card_removes_its_oldest_from_the_ledger() -> None:
    ledger = Ledger()
    ledger.add("weather in Lyon", CARD, "mallory", 0.0)
    ledger.add("rain in Nantes", CARD, "bob", 1.0)
    change = ledger.add("weather in Paris", CARD, "mallory", 2.0)
    assert [u.question for u in change.written] == ["weather in Paris"]
    assert [u.question for u in change.removed] == ["weather in Lyon"]
    assert ledger.questions(now=2.0)[("", CARD)] == ["weather in Paris", "rain in Nantes"]
