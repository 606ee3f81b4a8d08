"""The consents a 2026-07-28 client was asked for: bound to it and its card, good once, for a while, a bounded number."""

from __future__ import annotations

import pytest

from skilldeck.catalog import Runtimes, choose, read_entry
from skilldeck.catalog._launch import Launch
from skilldeck.errors import AddRefused
from skilldeck.gateway._add import PendingConsents


def launch() -> Launch:
    raw = {"name": "io.github.example/weather", "description": "Weather", "version": "1.0.0"}
    raw["packages"] = [{"registryType": "npm", "identifier": "weather-mcp", "version": "1.0.0"}]  # type: ignore[list-item]
    found, _ = choose(read_entry(raw), Runtimes(npx="npx"))
    assert found is not None
    return found


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def refused(pending: PendingConsents, token: str, client: str = "ours", card: str = "c@1") -> str:
    with pytest.raises(AddRefused) as caught:
        pending.take(token, client, card)
    assert caught.value.code == "declined"
    return str(caught.value)


def test_a_consent_is_taken_once_by_the_client_and_card_it_was_asked_for() -> None:
    pending = PendingConsents()
    token = pending.new("ours", "c@1", launch())
    assert "no consent of yours" in refused(pending, token, client="theirs")
    assert "no consent of yours" in refused(pending, token, card="other@1")
    assert pending.take(token, "ours", "c@1").entry.name == "io.github.example/weather"
    assert "no consent of yours" in refused(pending, token)  # good once
    assert "no consent of yours" in refused(pending, "forged-token")


def test_a_consent_is_good_until_its_time_is_up_and_not_after() -> None:
    clock = Clock()
    pending = PendingConsents(ttl=600, clock=clock)
    first, second = pending.new("ours", "c@1", launch()), pending.new("ours", "c@1", launch())
    clock.now = 600.0
    assert pending.take(first, "ours", "c@1") is not None
    clock.now = 600.001
    assert "expired" in refused(pending, second)


def test_the_oldest_consent_gives_way_when_the_table_is_full() -> None:
    pending = PendingConsents(limit=3)
    tokens = [pending.new("ours", "c@1", launch()) for _ in range(3)]
    assert len(pending) == 3
    newest = pending.new("ours", "c@1", launch())
    assert len(pending) == 3
    refused(pending, tokens[0])
    for token in (*tokens[1:], newest):
        pending.take(token, "ours", "c@1")
