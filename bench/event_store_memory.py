"""What the SSE event store of legacy sessions holds in memory at its bounds, before and after a change.

Run from the repository root::

    .venv/bin/python bench/event_store_memory.py                  # before = main's parent revision
    .venv/bin/python bench/event_store_memory.py --before 816f8c9 # any revision holding serving/_resumable.py

The store (``skilldeck.serving._resumable.ResumableStreams``, default bounds) is filled the way one client
fills it, by many requests whose streams relay progress notifications, until every bound holds: a fresh
subprocess per revision and per message size stores events over 64 sessions until it has opened
``--streams`` streams of ``--events`` events each (past the store's own bounds, so the oldest go). It then
reports what the store says it keeps (streams, events, bytes counted) and what it really holds: the growth
of Python's traced memory (``tracemalloc``) and, in a second process that traces nothing, of the
resident set (``/proc/self/statm``) over the process just before it stored anything.

Results: a table on stdout and ``bench/results/event_store_memory.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, revisions_header, src_at

RESULTS = REPO / "bench" / "results" / "event_store_memory.json"

MEASURE = r"""
import asyncio, gc, json, os, sys, tracemalloc
from mcp_types import JSONRPCNotification
from skilldeck.serving._resumable import MAX_BYTES, ResumableStreams

streams_wanted, events_wanted, padding = (int(a) for a in sys.argv[1:4])
traced_run = sys.argv[4] == "traced"  # tracemalloc's own records swell the resident set: measured apart

def resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def progress(n: int) -> JSONRPCNotification:
    params = {"progressToken": f"t-{n}", "progress": n, "total": 1000, "message": "x" * padding}
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params=params)

async def fill() -> dict:
    store = ResumableStreams()
    sessions = [store.for_session() for _ in range(64)]
    messages = [progress(n) for n in range(events_wanted)]
    gc.collect()
    base_rss = resident()
    if traced_run:
        tracemalloc.start()
    base_traced = tracemalloc.get_traced_memory()[0]
    for s in range(streams_wanted):
        session = sessions[s % len(sessions)]
        stream = str(s)
        await session.store_event(stream, None)  # the priming event
        for message in messages[: events_wanted - 1]:
            await session.store_event(stream, message.model_copy(deep=True))
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] - base_traced
    tracemalloc.stop()
    rss = resident() - base_rss
    message_bytes = len(messages[1].model_dump_json(by_alias=True, exclude_unset=True).encode())
    return {
        "message_bytes": message_bytes,
        "streams": store.streams,
        "events": store.events,
        "bytes_counted": store.bytes,
        "max_bytes": MAX_BYTES,
        "traced_bytes": traced if traced_run else None,
        "resident_bytes": None if traced_run else rss,
    }

print(json.dumps(asyncio.run(fill())))
"""


def measure(src: Path, streams: int, events: int, padding: int) -> dict[str, Any]:
    """One fill in a process measuring its resident set, one in a process tracing its allocations."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    result: dict[str, Any] = {}
    for mode in ("resident", "traced"):
        ran = subprocess.run(
            [sys.executable, "-c", MEASURE, str(streams), str(events), str(padding), mode],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if ran.returncode != 0:
            raise SystemExit(f"the measuring process failed:\n{ran.stderr}")
        result |= {k: v for k, v in json.loads(ran.stdout).items() if v is not None}
    result["traced_per_event"] = round(result["traced_bytes"] / max(result["events"], 1))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="HEAD~1", help="the revision to compare with (default: HEAD~1)")
    parser.add_argument("--streams", type=int, default=4_096, help="streams opened (default: the store's bound)")
    parser.add_argument("--events", type=int, default=128, help="events per stream (default: the store's bound)")
    parser.add_argument(
        "--padding", type=int, nargs="+", default=[0, 200], help="characters of message text per progress event"
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    report: dict[str, Any] = {
        **revisions_header(args.before),
        "command": " ".join(["python", "bench/event_store_memory.py", *sys.argv[1:]]),
        "streams_opened": args.streams,
        "events_per_stream": args.events,
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as scratch:
        before_src = src_at(args.before, Path(scratch) / "before")
        for padding in args.padding:
            for name, src in (("before", before_src), ("after", REPO / "src")):
                row = {"revision": name, "padding": padding, **measure(src, args.streams, args.events, padding)}
                report["runs"].append(row)
                print(
                    f"{name:6} {row['message_bytes']:4d} B messages: {row['streams']:5d} streams, "
                    f"{row['events']:7d} events, counted {row['bytes_counted'] / 2**20:6.1f} MiB, "
                    f"traced {row['traced_bytes'] / 2**20:6.1f} MiB ({row['traced_per_event']} B an event), "
                    f"resident +{row['resident_bytes'] / 2**20:6.1f} MiB"
                )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
