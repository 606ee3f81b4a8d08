"""Helpers the benchmarks share: a free port, stopping a child, throughput window options, ``src/`` at a revision,
the head of a before/after report.

The scripts import it by name (``from _common import ...``): run as ``python bench/NAME.py`` their own folder
is already on ``sys.path``; the ones the tests load by path append ``bench/`` to it (last, so that ``bench/agents.py``
never shadows the OpenAI Agents SDK's ``agents`` in a test process), and the ones in a subfolder put it first.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at the moment, on ``host``."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def stop(proc: subprocess.Popen[bytes] | None, timeout: float = 10) -> None:
    """Terminate ``proc`` if it still runs, and kill it when it has not exited ``timeout`` seconds later."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


def window_arguments(parser: argparse.ArgumentParser, *, duration: str, clients: list[int], quick: str = "") -> None:
    """``--quick``, ``--reps``, ``--duration``, ``--warmup`` and ``--clients`` of a throughput benchmark.

    ``duration`` is the default window shown in the help (each script settles the defaults itself), ``quick``
    a note added to ``--quick``'s help.
    """
    parser.add_argument("--quick", action="store_true", help=f"1 rep, 0.3 s warm-up, 1 s windows{quick}")
    parser.add_argument("--reps", type=int, help="repetitions per cell (default 3; 1 with --quick)")
    parser.add_argument(
        "--duration", type=float, help=f"measured seconds per repetition (default {duration}; 1 with --quick)"
    )
    parser.add_argument(
        "--warmup", type=float, help="warm-up seconds before each window (default 0.5; 0.3 with --quick)"
    )
    shown = " ".join(map(str, clients))
    parser.add_argument("--clients", type=int, nargs="+", default=clients, help=f"concurrent clients (default {shown})")


def settle_windows(parser: argparse.ArgumentParser, args: argparse.Namespace, *, duration: float = 2.0) -> None:
    """Fill in the defaults :func:`window_arguments` leaves open (``--quick`` or not), and refuse what cannot run."""
    args.reps = args.reps or (1 if args.quick else 3)
    args.duration = args.duration or (1.0 if args.quick else duration)
    args.warmup = args.warmup if args.warmup is not None else (0.3 if args.quick else 0.5)
    if args.reps < 1 or args.duration <= 0 or args.warmup < 0 or min(args.clients) < 1 or max(args.clients) > 64:
        parser.error("need reps >= 1, duration > 0, warmup >= 0 and 1 <= clients <= 64")


def window_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings those arguments give, as the benchmarks' JSON records them (protocol versions too)."""
    return {
        "reps": args.reps,
        "warmup_s": args.warmup,
        "duration_s": args.duration,
        "clients": args.clients,
        "eras": args.eras,
    }


def src_at(rev: str, into: Path) -> Path:
    """``src/`` as of the git revision ``rev``, written under ``into`` (created); the path to put on PYTHONPATH."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def revisions_header(before: str) -> dict[str, Any]:
    """The head of a before/after report: date, the two revisions and the machine (with its load average now)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "before_rev": before,
        "after_rev": head.stdout.strip(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_start": [round(x, 2) for x in os.getloadavg()],
        },
    }
