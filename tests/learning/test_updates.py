"""Rankers take new histories on a worker thread: the newest one each, whatever the order of submission."""

from __future__ import annotations

from skilldeck.learning._updates import HistoryUpdates
from skilldeck.select import Card, Selector


def selector(label: str) -> Selector:
    return Selector([Card("tool", label, name, f"{name} things", tools=((label, name),)) for name in ("a", "b")])


def read(selector: Selector) -> dict[str, list[str]]:
    ranker = selector.ranker
    return {ranker.cards[i].key: list(asked) for i, asked in ranker.history.questions.items()}


def test_each_selector_ends_with_the_newest_history_submitted_for_it() -> None:
    updates = HistoryUpdates()
    first, second = selector("one"), selector("two")
    a, b = first.cards[0].key, second.cards[1].key
    for i in range(100):
        updates.submit(first, {a: [f"question {i}"]})
        updates.submit(second, {b: [f"other {i}"]})
    assert updates.wait(60)
    assert read(first) == {a: ["question 99"]}
    assert read(second) == {b: ["other 99"]}
    updates.submit(first, {})  # a cleared ledger
    assert updates.wait(60)
    assert read(first) == {}
    assert read(second) == {b: ["other 99"]}


def test_changes_submitted_after_a_whole_history_are_read_on_top_of_it() -> None:
    updates = HistoryUpdates()
    one = selector("one")
    a, b = one.cards[0].key, one.cards[1].key
    updates.submit(one, {a: ["question a"]})
    for i in range(50):  # one recorded use after another: the cards that changed, merged while waiting
        updates.submit_changes(one, {b: [f"question b {i}"]})
    assert updates.wait(60)
    assert read(one) == {a: ["question a"], b: ["question b 49"]}
    updates.submit_changes(one, {a: []})  # a's questions all forgotten
    assert updates.wait(60)
    assert read(one) == {b: ["question b 49"]}
    updates.submit_changes(one, {b: ["newer"]})
    updates.submit(one, {a: ["whole again"]})  # a whole history replaces the changes still waiting
    assert updates.wait(60)
    assert read(one) == {a: ["whole again"]}
