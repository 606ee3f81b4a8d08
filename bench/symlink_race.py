"""Adversarial measurement: a folder swapped for a symlink while skills load. Does a secret leak?

Run from the repository root::

    .venv/bin/python bench/symlink_race.py                        # this checkout only, 5 s
    .venv/bin/python bench/symlink_race.py --baseline <git-rev>   # the same run against an older sources.py too

A pack with one skill (``team/leaky`` holding ``refs/passwd``) sits in a temporary root; outside it,
folders of the same shape hold a secret. One thread keeps swapping ``refs`` (and, alternately, the
skill folder) for a symlink to the outside folder and back, while the main thread loads the root
with ``DirectorySource.load()`` back to back, as ``skilldeck serve --watch`` does on every change.
Every file of every load is checked for the secret. With ``--baseline REV``, the
``src/skilldeck/skill/pack.py`` (``server/sources.py`` before it moved) of that revision is loaded from git into a separate module and
measured in the same run, alternating with the current one.

Results: a table on stdout and ``bench/results/symlink_race.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SECRET = b"root:x:0:0:TOP-SECRET-OUTSIDE-THE-ROOT"


def _baseline_module(rev: str) -> ModuleType:
    for path in ("src/skilldeck/skill/pack.py", "src/skilldeck/server/sources.py"):  # where it lived at ``rev``
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode == 0:
            break
    shown.check_returncode()
    source = shown.stdout
    spec = importlib.util.spec_from_loader("skilldeck_baseline_sources", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    exec(compile(source, f"{rev}:sources.py", "exec"), module.__dict__)  # our own file, at that revision
    return module


def _pack(base: Path) -> tuple[Path, list[tuple[Path, Path]]]:
    outside = base / "outside"
    outside.mkdir()
    (outside / "passwd").write_bytes(SECRET)
    decoy = base / "elsewhere" / "leaky"
    (decoy / "refs").mkdir(parents=True)
    (decoy / "refs" / "passwd").write_bytes(SECRET)
    (decoy / "SKILL.md").write_bytes(b"---\nname: leaky\ndescription: decoy\n---\n")
    root = base / "skills"
    skill = root / "team" / "leaky"
    (skill / "refs").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: leaky\ndescription: A test skill.\n---\n# leaky\n")
    (skill / "refs" / "passwd").write_text("harmless reference\n")
    return root, [(skill / "refs", outside), (skill, decoy)]


def measure(module: ModuleType, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root, swaps_to = _pack(Path(tmp))
        stop = threading.Event()
        swaps = 0

        def swapper() -> None:
            nonlocal swaps
            while not stop.is_set():
                for target, decoy in swaps_to:
                    hold = target.with_name(target.name + ".hold")
                    os.rename(target, hold)
                    os.symlink(decoy, target)
                    os.sched_yield()
                    os.unlink(target)
                    os.rename(hold, target)
                    swaps += 1

        source = module.DirectorySource(root)
        thread = threading.Thread(target=swapper, daemon=True)
        loads = leaks = leaking_loads = crashes = 0
        first_leak: float | None = None
        start = time.perf_counter()
        thread.start()
        try:
            while time.perf_counter() - start < seconds:
                loads += 1
                try:
                    result = source.load()
                except OSError:
                    crashes += 1  # the whole load failed: nothing served from this root until the next one
                    continue
                found = sum(SECRET in data for skill in result.skills for data in skill.files.values())
                leaks += found
                leaking_loads += found > 0
                if found and first_leak is None:
                    first_leak = time.perf_counter() - start
        finally:
            stop.set()
            thread.join()
        return {
            "seconds": round(time.perf_counter() - start, 2),
            "loads": loads,
            "swaps": swaps,
            "leaking_loads": leaking_loads,
            "leaked_files": leaks,
            "crashed_loads": crashes,
            "first_leak_s": None if first_leak is None else round(first_leak, 4),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="loading time per implementation and round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, alternating which implementation goes first")
    parser.add_argument("--baseline", metavar="REV", help="also measure sources.py as of this git revision")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "symlink_race.json")
    args = parser.parse_args()

    from skilldeck.skill import _pack as current

    impls: dict[str, ModuleType] = {"current": current}
    if args.baseline:
        impls = {f"baseline {args.baseline}": _baseline_module(args.baseline), **impls}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in impls}
    for round_no in range(args.rounds):
        order = list(impls) if round_no % 2 == 0 else list(reversed(impls))
        for name in order:
            runs[name].append(measure(impls[name], args.seconds))

    print(f"{args.seconds:g} s x {args.rounds} rounds per implementation")
    print("| sources.py | loads | swaps | loads leaking | files leaked | first leak | loads failed (OSError) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, reps in runs.items():
        firsts = [r["first_leak_s"] for r in reps if r["first_leak_s"] is not None]
        first = f"{min(firsts) * 1000:.1f} ms" if firsts else "never"
        print(
            f"| {name} | {sum(r['loads'] for r in reps):,} | {sum(r['swaps'] for r in reps):,} | "
            f"{sum(r['leaking_loads'] for r in reps):,} | {sum(r['leaked_files'] for r in reps):,} | {first} | "
            f"{sum(r['crashed_loads'] for r in reps):,} |"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "command": " ".join(["bench/symlink_race.py", *sys.argv[1:]]),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "settings": {"seconds": args.seconds, "rounds": args.rounds, "baseline": args.baseline},
                "runs": runs,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
