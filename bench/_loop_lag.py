"""Run a Python program with its asyncio event loop's stalls recorded (benchmark helper).

    python bench/_loop_lag.py LAG_FILE -m skilldeck.cli serve PACK --http 127.0.0.1:PORT

Every event loop an ``asyncio.Runner`` creates in the program (``asyncio.run``, ``anyio.run``, with
or without uvloop) gets a callback scheduled every :data:`TICK_S`; how late it runs is how long the
loop was stalled (a handler that kept it busy, a blocking call). Once a second the worst lateness
of that second is appended to ``LAG_FILE`` as ``UNIX_TIME MAX_LAG_MS``. The program itself is run
as ``python -m MODULE ARGS`` (or ``python SCRIPT ARGS``) would run it.
"""

from __future__ import annotations

import asyncio
import runpy
import sys
import time
from pathlib import Path
from typing import Any

TICK_S = 0.05
"""How often the probe callback is scheduled (its lateness is the stall)."""


class _Sampler:
    def __init__(self, loop: asyncio.AbstractEventLoop, out: Path) -> None:
        self.loop, self.out = loop, out
        self.worst = 0.0
        self.flushed = time.time()
        self.expected = loop.time() + TICK_S
        loop.call_at(self.expected, self.tick)

    def tick(self) -> None:
        now = self.loop.time()
        self.worst = max(self.worst, now - self.expected)
        wall = time.time()
        if wall - self.flushed >= 1.0:
            with self.out.open("a", encoding="ascii") as fh:
                fh.write(f"{wall:.3f} {1000 * self.worst:.3f}\n")
            self.worst, self.flushed = 0.0, wall
        self.expected = now + TICK_S
        self.loop.call_at(self.expected, self.tick)


def _instrument(out: Path) -> None:
    original = asyncio.Runner._lazy_init  # type: ignore[attr-defined]

    def lazy_init(self: Any) -> None:
        original(self)
        _Sampler(self._loop, out)

    asyncio.Runner._lazy_init = lazy_init  # type: ignore[attr-defined]


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit("usage: _loop_lag.py LAG_FILE (-m MODULE | SCRIPT) ARGS...")
    _instrument(Path(sys.argv[1]))
    if sys.argv[2] == "-m":
        module, sys.argv = sys.argv[3], [sys.argv[3], *sys.argv[4:]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        script, sys.argv = sys.argv[2], sys.argv[2:]
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
