"""When to try a lost server again: capped, jittered exponential backoff that resets after a stable period.

Pure: no sleeping, no I/O. :class:`Backoff` is the schedule's settings; :class:`RetrySchedule` is
one server's place in it, with the random source and the clock injected, so a test can drive it
step by step::

    schedule = RetrySchedule(Backoff(), random=lambda: 1.0, clock=lambda: now)
    schedule.next_delay()  # 1.0, then 2.0, 4.0, ... up to 60.0
    schedule.connected()   # a session that then stays up for `stable` seconds starts the schedule again
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass

from skilldeck.errors import ConfigError

__all__ = ["Backoff", "RetrySchedule"]


@dataclass(frozen=True)
class Backoff:
    """The retry schedule's settings.

    The n-th retry in a row (from 0) waits ``min(cap, first * factor**n)`` seconds, less a random
    share of up to ``jitter`` of it (so servers lost together are not all retried at one instant);
    a session that stayed up ``stable`` seconds or more resets the count.
    """

    first: float = 1.0
    """Seconds before the first retry, at most (the jitter only shortens it)."""
    factor: float = 2.0
    cap: float = 60.0
    """The longest wait between two tries."""
    jitter: float = 0.5
    """The share of each wait that is random (0: none; 0.5: the wait is between half and all of it)."""
    stable: float = 60.0
    """Seconds a session must stay up for its next loss to be retried after ``first`` again."""

    def __post_init__(self) -> None:
        if not (0 < self.first <= self.cap):
            raise ConfigError(f"backoff: first ({self.first!r}) must be positive and at most cap ({self.cap!r})")
        if self.factor < 1:
            raise ConfigError(f"backoff: factor must be at least 1, not {self.factor!r}")
        if not (0 <= self.jitter < 1):
            raise ConfigError(f"backoff: jitter must be from 0 up to (not including) 1, not {self.jitter!r}")
        if self.stable < 0:
            raise ConfigError(f"backoff: stable must not be negative, not {self.stable!r}")


class RetrySchedule:
    """One server's retries: :meth:`next_delay` after each failure, :meth:`connected` after each success."""

    def __init__(
        self,
        backoff: Backoff,
        *,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backoff = backoff
        self._random = random
        self._clock = clock
        self.failures = 0
        """Failures in a row that the schedule counts (reset by a stable session)."""
        self._up_since: float | None = None

    def connected(self) -> None:
        """The server is connected now (the count resets if it stays up ``stable`` seconds)."""
        self._up_since = self._clock()

    def next_delay(self) -> float:
        """Seconds to wait before trying again, after a failed attempt or a lost session."""
        if self._up_since is not None and self._clock() - self._up_since >= self.backoff.stable:
            self.failures = 0
        self._up_since = None
        b = self.backoff
        base = b.first
        for _ in range(min(self.failures, 64)):  # multiplied step by step: a power could overflow
            base = min(b.cap, base * b.factor)
        self.failures += 1
        return base * (1 - b.jitter * self._random())
