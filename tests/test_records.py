"""The JSON-lines logs' listeners: every record reaches them, and a failing one is dropped without harm."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from skilldeck._records import JsonLinesLog


class _Log(JsonLinesLog):
    def add(self, **fields: Any) -> None:
        self._append(fields)


def test_listeners_get_every_record_until_they_unsubscribe() -> None:
    log, seen_a, seen_b = _Log(keep=2), [], []
    stop_a = log.subscribe(seen_a.append)
    log.subscribe(seen_b.append)
    log.add(n=1)
    stop_a()
    stop_a()  # twice is harmless
    log.add(n=2)
    log.add(n=3)
    assert [r["n"] for r in seen_a] == [1]
    assert [r["n"] for r in seen_b] == [1, 2, 3]
    assert [r["n"] for r in log.records] == [2, 3]  # ``keep`` bounds the records, not what listeners saw


def test_a_failing_listener_is_dropped_loudly_and_the_record_is_still_kept(caplog: pytest.LogCaptureFixture) -> None:
    log, seen = _Log(), []

    def broken(record: dict[str, Any]) -> None:
        raise RuntimeError("observer bug")

    log.subscribe(broken)
    log.subscribe(seen.append)
    with caplog.at_level(logging.WARNING):
        log.add(n=1)
        log.add(n=2)
    assert [r["n"] for r in log.records] == [1, 2]
    assert [r["n"] for r in seen] == [1, 2]
    assert sum("no longer receives records" in r.getMessage() for r in caplog.records) == 1
