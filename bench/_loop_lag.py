"""Run a Python program with its asyncio event loop's stalls recorded (benchmark helper).

    python bench/_loop_lag.py LAG_FILE -m skilldeck.cli serve PACK --http 127.0.0.1:PORT

Every event loop an ``asyncio.Runner`` creates in the program (``asyncio.run``, ``anyio.run``, with
or without uvloop) gets a callback scheduled every :data:`TICK_S`; how late it runs is how long the
loop was stalled (a handler that kept it busy, a blocking call). Once a second the worst lateness
of that second is appended to ``LAG_FILE`` as ``UNIX_TIME MAX_LAG_MS``.

Every full (generation 2) pass of the garbage collector, and every generation 1 pass of
:data:`SLOW_GC_MS` or more, is timed through :data:`gc.callbacks` and appended, once a second too,
to ``LAG_FILE.gc`` as ``UNIX_TIME GENERATION PAUSE_MS OBJECTS_COLLECTED CPU_MS``: the pause in wall
time and in the collecting thread's CPU time (on a loaded machine the first is longer than the
work), so that a stall can be told apart from a collection. With :data:`COUNT_OBJECTS` set, a full
pass's line also has the objects left in the old generation and the frozen ones.

The program itself is run as ``python -m MODULE ARGS`` (or ``python SCRIPT ARGS``) would run it.
"""

from __future__ import annotations

import asyncio
import gc
import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any

TICK_S = 0.05
"""How often the probe callback is scheduled (its lateness is the stall)."""
SLOW_GC_MS = 5.0
"""A generation 1 pass is logged from this long on (every generation 2 pass is)."""
COUNT_OBJECTS = "LOOP_LAG_COUNT_OBJECTS"
"""Set (to anything) in the environment: each full pass's line also has the objects left in the old
generation and the frozen ones (a diagnosis: counting them walks the generation)."""


class _Collections:
    """Times the collector's full passes (written out by the sampler, never from inside a collection)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.pending: list[str] = []
        self._started = self._started_cpu = 0.0
        self.count_objects = bool(os.environ.get(COUNT_OBJECTS))
        gc.callbacks.append(self.callback)

    def callback(self, phase: str, info: dict[str, int]) -> None:
        generation = info["generation"]
        if generation == 0:
            return
        if phase == "start":
            self._started, self._started_cpu = time.perf_counter(), time.thread_time()
            return
        ms = 1000 * (time.perf_counter() - self._started)
        if generation == 2 or ms >= SLOW_GC_MS:
            cpu_ms = 1000 * (time.thread_time() - self._started_cpu)
            line = f"{time.time():.3f} {generation} {ms:.3f} {info['collected']} {cpu_ms:.3f}"
            if self.count_objects and generation == 2:  # a diagnosis: costs a walk of the old generation
                line += f" {len(gc.get_objects(2))} {gc.get_freeze_count()}"
            self.pending.append(line + "\n")

    def flush(self) -> None:
        if self.pending:
            lines, self.pending = self.pending, []
            with self.out.open("a", encoding="ascii") as fh:
                fh.writelines(lines)


class _Sampler:
    def __init__(self, loop: asyncio.AbstractEventLoop, out: Path, collections: _Collections) -> None:
        self.loop, self.out, self.collections = loop, out, collections
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
            self.collections.flush()
            self.worst, self.flushed = 0.0, wall
        self.expected = now + TICK_S
        self.loop.call_at(self.expected, self.tick)


def _instrument(out: Path) -> None:
    original = asyncio.Runner._lazy_init  # type: ignore[attr-defined]
    collections = _Collections(out.with_name(out.name + ".gc"))

    def lazy_init(self: Any) -> None:
        original(self)
        _Sampler(self._loop, out, collections)

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
