"""Rankers take new histories on a worker thread: the newest one each, whatever the order of submission."""

from __future__ import annotations

import threading

from skilldeck.learning._updates import HistoryUpdates
from skilldeck.select import Card, History, Selector


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


class Held(Selector):
    """A selector whose next history is read only once the test lets it (``entered`` says it is being read)."""

    def __init__(self, label: str) -> None:
        super().__init__([Card("tool", label, name, f"{name} things", tools=((label, name),)) for name in ("a", "b")])
        self.entered = threading.Event()
        self.release = threading.Event()

    def set_history(self, history: History) -> None:
        self.entered.set()
        assert self.release.wait(60), "the test never let the history be read"
        super().set_history(history)


def test_a_selector_is_settled_once_the_history_submitted_for_it_is_in_it_not_anothers() -> None:
    """``settled`` waits for this selector's history only: another selector held in its reading does not
    hold it, and it is not settled while its own is being read, or waiting behind another's."""
    updates = HistoryUpdates()
    held, free = Held("held"), selector("free")
    a = held.cards[0].key
    assert not updates.pending(held)
    assert updates.settled(held, 0)
    updates.submit(held, {a: ["question a"]})
    assert held.entered.wait(60)
    assert updates.pending(held)
    assert not updates.settled(held, 0.01)  # being read
    assert not updates.pending(free)
    assert updates.settled(free, 0)
    updates.submit(free, {free.cards[0].key: ["other"]})
    assert updates.pending(free)  # waiting behind the held one's reading
    assert not updates.settled(free, 0.01)
    held.release.set()
    assert updates.settled(held, 60)
    assert read(held) == {a: ["question a"]}
    assert updates.settled(free, 60)
    assert read(free) == {free.cards[0].key: ["other"]}
    assert not updates.pending(held)
    assert not updates.pending(free)


def test_a_history_that_cannot_be_indexed_settles_its_selector_all_the_same() -> None:
    class Failing(Selector):
        def set_history(self, history: History) -> None:
            raise ValueError("cannot index this")

    updates = HistoryUpdates()
    failing = Failing([Card("tool", "x", "a", "a things", tools=(("x", "a"),))])
    updates.submit(failing, {"tool:x:a": ["question"]})
    assert updates.settled(failing, 60)  # the ranker keeps the one it had; nobody waits for ever
    assert read(failing) == {}


def test_a_callback_is_called_once_when_its_selector_is_settled_and_never_once_taken_back() -> None:
    updates = HistoryUpdates()
    held, other = Held("held"), Held("other")
    calls: list[str] = []
    assert not updates.when_settled(held, lambda: calls.append("idle"))  # nothing waiting: never called
    assert updates.waiters(held) == 0
    updates.submit(held, {held.cards[0].key: ["question"]})
    assert held.entered.wait(60)
    assert updates.when_settled(held, lambda: calls.append("first"))

    def failing() -> None:
        raise RuntimeError("the event loop is gone")

    assert updates.when_settled(held, failing)  # a wake-up that fails does not stop the others'

    def taken_back() -> None:
        calls.append("taken back")

    assert updates.when_settled(held, taken_back)
    woken = threading.Event()

    def last() -> None:
        calls.append("last")
        woken.set()

    assert updates.when_settled(held, last)
    assert updates.waiters(held) == 4
    updates.forget(held, taken_back)
    updates.forget(held, taken_back)  # twice: nothing more
    assert updates.waiters(held) == 3
    assert not updates.when_settled(other, lambda: calls.append("other"))  # the other selector waits for nothing
    held.release.set()
    assert woken.wait(60)  # called in the order they came, after the history is in
    assert read(held) == {held.cards[0].key: ["question"]}
    assert calls == ["first", "last"]
    assert updates.waiters(held) == 0
