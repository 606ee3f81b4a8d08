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
