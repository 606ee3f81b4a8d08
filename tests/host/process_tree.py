"""Processes as ``/proc`` shows them (Linux), for tests that check what a host leaves running."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

Process = tuple[int, int]
"""A pid and its start time (clock ticks since boot): a pid reused by another process is not the same one."""


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def alive(process: Process) -> bool:
    """Whether ``process`` still runs (a zombie waiting to be reaped counts as ended)."""
    fields = _stat(process[0])
    return fields is not None and fields[0] != "Z" and int(fields[19]) == process[1]


def tree(root: int) -> set[Process]:
    """``root`` and every process descended from it, alive now."""
    children: dict[int, list[int]] = {}
    started: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
            started[int(entry)] = int(fields[19])
    found: set[Process] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in started:
            found.add((pid, started[pid]))
            todo += children.get(pid, [])
    return found


def with_argument(argument: str) -> list[int]:
    """The pids of the live processes one of whose command-line arguments is ``argument``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argument.encode() in args and alive((int(entry), int((_stat(int(entry)) or ["Z"] * 20)[19]))):
            found.append(int(entry))
    return found


def still_running(processes: set[Process], within: float) -> set[Process]:
    """Those of ``processes`` still running after ``within`` seconds (returns as soon as none is)."""
    deadline = time.monotonic() + within
    while (left := {p for p in processes if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def kill(processes: set[Process]) -> None:
    """SIGKILL those of ``processes`` still running (what a failed test leaves behind)."""
    for process in processes:
        if alive(process):
            os.kill(process[0], signal.SIGKILL)


async def stdio_gateway_tree(config: Path, crash: bool = False) -> tuple[set[Process], float]:
    """Run a stdio gateway on ``config``, list its process tree, close its client (or first kill the gateway, as a
    crash would end it): (the tree, when closing began)."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "skilldeck.cli", "gateway", "--config", str(config)]
    )
    async with Client(params, cache=None) as client:
        await client.list_tools()  # the gateway is up, every upstream connected
        (gateway,) = with_argument(str(config))
        processes = tree(gateway)
        closing = time.monotonic()
        if crash:
            os.kill(gateway, signal.SIGKILL)
    return processes, closing
