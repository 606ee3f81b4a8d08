"""The command line's bound on log output: :class:`LogRateLimit` on a clock the test moves."""

from __future__ import annotations

import logging

import pytest

from skilldeck.cli.output import LogRateLimit, bound_log_output


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(
    name: str = "mcp.server", level: int = logging.WARNING, msg: str = "Invalid Host header: %s"
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, ("evil.example",), None)


def test_a_burst_passes_then_one_per_interval_saying_how_many_were_dropped() -> None:
    clock = Clock()
    limit = LogRateLimit(burst=3, every=2.0, clock=clock)
    assert [limit.filter(record()) for _ in range(5)] == [True, True, True, False, False]
    clock.now = 1.9  # not a whole token back yet
    assert not limit.filter(record())
    clock.now = 2.0
    passed = record()
    assert limit.filter(passed)
    assert passed.getMessage() == "Invalid Host header: evil.example (3 more like this were dropped: over 3 at once)"
    assert not limit.filter(record())
    clock.now = 100.0  # a quiet spell refills the burst, no more
    assert [limit.filter(record()) for _ in range(4)] == [True, True, True, False]


def test_each_logger_and_level_has_its_own_budget() -> None:
    limit = LogRateLimit(burst=1, every=60.0, clock=Clock())
    assert limit.filter(record("a"))
    assert not limit.filter(record("a"))
    assert limit.filter(record("b"))
    assert limit.filter(record("a", logging.ERROR))
    plain = record("c")
    assert limit.filter(plain)
    assert plain.getMessage() == "Invalid Host header: evil.example"  # nothing was dropped: the message is as logged


def test_the_kinds_tracked_are_bounded_least_recently_seen_forgotten_first() -> None:
    limit = LogRateLimit(burst=1, every=60.0, max_kinds=2, clock=Clock())
    assert limit.filter(record("a"))
    assert limit.filter(record("b"))
    assert not limit.filter(record("a"))  # "a" is the most recently seen now
    assert limit.filter(record("c"))  # a third kind: "b" is forgotten, not "a"
    assert not limit.filter(record("a"))
    assert limit.filter(record("b"))  # forgotten, so it starts with a full burst again


@pytest.mark.parametrize("bad", [{"burst": 0}, {"every": 0.0}, {"max_kinds": 0}])
def test_nonsense_limits_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        LogRateLimit(**bad)  # type: ignore[arg-type]


def test_every_handler_gets_one_filter_of_its_own() -> None:
    logger = logging.getLogger("skilldeck-test-bound-log-output")
    handlers = [logging.StreamHandler(), logging.StreamHandler()]
    for handler in handlers:
        logger.addHandler(handler)
    try:
        assert bound_log_output() >= 2
        assert bound_log_output() == 0  # once only
        filters = [[f for f in h.filters if isinstance(f, LogRateLimit)] for h in handlers]
        assert [len(f) for f in filters] == [1, 1]
        assert filters[0][0] is not filters[1][0]
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.filters.clear()
