"""Run ``python -m MODULE ARGS...`` under cProfile timed by the thread's CPU clock; its stats written to OUT at exit.

Usage: ``python bench/_cpu_profile.py OUT MODULE ARGS...``. ``python -m cProfile`` times with the wall
clock: on a machine shared with other processes, every time the process waits for a core is charged
to whichever function it was in, and a few long waits swamp the functions called a few hundred
times. The thread's CPU clock charges only the time the process ran.
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main() -> None:
    out, module, *rest = sys.argv[1:]
    sys.argv = [module, *rest]
    profiler = cProfile.Profile(time.thread_time)
    profiler.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        profiler.disable()
        profiler.dump_stats(out)


if __name__ == "__main__":
    main()
