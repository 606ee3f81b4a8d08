"""The retry schedule of a lost upstream, driven step by step with a fixed random source and a hand-moved clock."""

from __future__ import annotations

import pytest

from skilldeck.errors import ConfigError
from skilldeck.host._backoff import Backoff, RetrySchedule


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def schedule(backoff: Backoff | None = None, *, share: float = 0.0, clock: Clock | None = None) -> RetrySchedule:
    """A schedule whose random source always returns ``share`` (0: no jitter taken off; 1: all of it)."""
    return RetrySchedule(backoff or Backoff(), random=lambda: share, clock=clock or Clock())


def test_the_waits_double_from_the_first_up_to_the_cap_and_stay_there() -> None:
    s = schedule()
    assert [s.next_delay() for _ in range(9)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]


def test_the_first_retry_comes_within_one_second_whatever_the_jitter() -> None:
    for share in (0.0, 0.3, 0.999):
        assert 0.5 <= schedule(share=share).next_delay() <= 1.0


def test_jitter_takes_at_most_its_share_off_each_wait() -> None:
    s = schedule(Backoff(first=4, cap=100, jitter=0.25), share=1.0)
    assert [s.next_delay() for _ in range(3)] == [3.0, 6.0, 12.0]


def test_a_session_that_stays_up_the_stable_period_resets_the_count_and_one_just_short_does_not() -> None:
    clock = Clock()
    s = schedule(Backoff(stable=30), clock=clock)
    assert [s.next_delay() for _ in range(4)] == [1, 2, 4, 8]
    s.connected()
    clock.now += 29.9  # just short of stable: the next wait goes on doubling
    assert s.next_delay() == 16
    s.connected()
    clock.now += 30  # stable: back to the first wait
    assert [s.next_delay(), s.next_delay()] == [1, 2]


def test_a_failed_attempt_after_an_old_success_does_not_reset_twice() -> None:
    clock = Clock()
    s = schedule(Backoff(stable=10), clock=clock)
    s.next_delay()
    s.connected()
    clock.now += 100
    assert s.next_delay() == 1  # reset by the stable session
    clock.now += 100  # time passing while down is not time up
    assert s.next_delay() == 2


def test_a_long_outage_never_overflows() -> None:
    s = schedule(Backoff(first=1, factor=1e6, cap=60))
    assert [s.next_delay() for _ in range(2000)][-1] == 60


@pytest.mark.parametrize(
    ("settings", "phrase"),
    [
        ({"first": 0}, "first"),
        ({"first": 61, "cap": 60}, "first"),
        ({"factor": 0.5}, "factor"),
        ({"jitter": 1.0}, "jitter"),
        ({"jitter": -0.1}, "jitter"),
        ({"stable": -1}, "stable"),
    ],
)
def test_settings_that_cannot_make_a_schedule_are_refused_naming_the_setting(
    settings: dict[str, float], phrase: str
) -> None:
    with pytest.raises(ConfigError, match=f"backoff: {phrase}"):
        Backoff(**settings)
