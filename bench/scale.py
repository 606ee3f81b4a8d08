"""``serve`` on 10,000 and 100,000 skills: how long until it is ready and how much memory it holds, before and after.

Run from the repository root::

    .venv/bin/python bench/scale.py --before REV                       # ~15 min on 2 busy cores
    .venv/bin/python bench/scale.py --before REV --skills 10000 --reps 3
    .venv/bin/python bench/scale.py --before REV --packs /var/tmp/packs  # keep the generated packs for a rerun

The packs are ``bench/hardening.py``'s (``make_pack``): each skill a ``SKILL.md`` (two frontmatter
lines) and a ``references/guide.md`` of about 1 KiB, so 100,000 skills are 200,000 files in 200,000
folders. Each measurement starts ``python -m skilldeck.cli serve PACK --http 127.0.0.1:0`` in a fresh
process with ``PYTHONPATH`` on one tree's ``src`` (this checkout's, or ``git archive REV``'s) and
stops it once it has printed its ``serving N skills`` line. Recorded per run: wall seconds from the
start to that line (``ready_s``), the process's CPU seconds then (user + system, ``/proc``;
``cpu_s``), the same with its finished children's (``all_cpu_s``: the worker processes that read
part of a large pack), its resident and peak resident memory then (``VmRSS`` / ``VmHWM``; a
worker's memory is its own and gone by then), and the load average.

The page cache is warm: one unmeasured start reads the pack first, as a restart of a
server would find it. ``--cold DEVICE MOUNTPOINT`` also measures cold starts, each after unmounting
and mounting again a file system of its own that holds ``pack-N`` (so only its caches are dropped,
not the machine's); give it a loop device reading its image with direct I/O, so that nothing comes
from the page cache of the image file either (as root)::

    truncate -s 600M cold.img && mkfs.ext4 -q -N 50000 cold.img
    losetup --direct-io=on -f --show cold.img          # prints the device, e.g. /dev/loop0
    mkdir -p cold && mount /dev/loop0 cold && cp -a PACKS/pack-10000 cold/

Runs alternate between the trees, the order flipping each repetition, and the table gives the
median of each column and the after/before ratio of the medians. On a shared machine CPU seconds
drift less than wall seconds.

Writes ``bench/results/scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "bench"))  # appended: never shadows a package

from _common import revisions_header, src_at, stop  # noqa: E402
from hardening import cpu_seconds, make_pack, rss_mb  # noqa: E402

OUTPUT = REPO / "bench" / "results" / "scale.json"
READY = re.compile(r"skilldeck: serving (\d+) skills from ")


def start_serve(src: Path, pack: Path, timeout: float = 900.0) -> dict[str, Any]:
    """One start of ``serve --http`` from ``src`` on ``pack``: ready time, CPU and memory when ready."""
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "400", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "skilldeck.cli", "serve", str(pack), "--http", "127.0.0.1:0"]
    load = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryFile() as log:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            while True:
                log.seek(0)
                text = log.read().decode(errors="replace")
                if match := READY.search(text):
                    ready = time.perf_counter() - began
                    cpu, memory = cpu_seconds(proc.pid), rss_mb(proc.pid)
                    workers = children_cpu_seconds(proc.pid)
                    return {
                        "skills": int(match.group(1)),
                        "ready_s": round(ready, 2),
                        "cpu_s": round(cpu, 2),
                        "workers_cpu_s": round(workers, 2),
                        "all_cpu_s": round(cpu + workers, 2),
                        **memory,
                        "load_avg": load,
                    }
                if proc.poll() is not None:
                    raise RuntimeError(f"serve exited ({proc.returncode}): {text[-2000:]}")
                if time.perf_counter() - began > timeout:
                    raise RuntimeError(f"serve not ready after {timeout} s")
                time.sleep(0.02)
        finally:
            stop(proc, 20)


def children_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of the process's children it has waited for (the workers that read a large
    pack; ``cutime`` + ``cstime`` in ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def pack_of(size: int, folder: Path) -> Path:
    """The pack of ``size`` skills under ``folder``, generated unless a finished one is there."""
    pack = folder / f"pack-{size}"
    done = folder / f"pack-{size}.done"
    if not done.exists():
        shutil.rmtree(pack, ignore_errors=True)
        print(f"generating {size:,} skills in {pack} ...", file=sys.stderr, flush=True)
        make_pack(pack, size)
        done.write_text("")
    return pack


def remount(device: str, mountpoint: str) -> None:
    """Unmount and mount ``device`` again at ``mountpoint``: its file system's cached pages, folders and inodes go."""
    subprocess.run(["umount", mountpoint], check=True)
    subprocess.run(["mount", device, mountpoint], check=True)


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {
        key: statistics.median(r[key] for r in runs)
        for key in ("ready_s", "cpu_s", "all_cpu_s", "rss_mb", "peak_rss_mb")
    }


def shown_command(args: argparse.Namespace) -> str:
    """The command line, the folders and device of this machine named by their roles (PACKS, DEVICE, MOUNTPOINT)."""
    words = ["bench/scale.py", "--before", args.before, "--skills", *map(str, args.skills), "--reps", str(args.reps)]
    if args.packs:
        words += ["--packs", "PACKS"]
    if args.cold:
        words += ["--cold", "DEVICE", "MOUNTPOINT"]
    return " ".join(words)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, metavar="REV", help="the revision to measure beside this tree")
    parser.add_argument("--skills", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reps", type=int, default=3, help="measured starts per tree and size")
    parser.add_argument("--packs", type=Path, help="where packs are generated and kept (default: a temporary folder)")
    parser.add_argument(
        "--cold", nargs=2, metavar=("DEVICE", "MOUNTPOINT"), help="also cold starts from MOUNTPOINT/pack-N (above)"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="skilldeck-scale-"))
    packs = args.packs or work
    packs.mkdir(parents=True, exist_ok=True)
    trees = {"before": src_at(args.before, work / "before"), "after": REPO / "src"}
    report: dict[str, Any] = {
        "command": shown_command(args),
        **revisions_header(args.before),
        "sizes": {},
    }
    cases = [("warm", size) for size in args.skills]
    if args.cold:
        cases += [("cold", size) for size in args.skills if (Path(args.cold[1]) / f"pack-{size}").is_dir()]
    try:
        for cache, size in cases:
            if cache == "warm":
                pack = pack_of(size, packs)
                start_serve(trees["after"], pack)  # warm-up: the pack into the page cache, not measured
            else:
                pack = Path(args.cold[1]) / f"pack-{size}"
            runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            for rep in range(args.reps):
                for name in ("before", "after") if rep % 2 == 0 else ("after", "before"):
                    if cache == "cold":
                        remount(*args.cold)
                    run = start_serve(trees[name], pack)
                    runs[name].append(run)
                    print(f"{size:,} skills, {cache}, {name}: {run}", file=sys.stderr, flush=True)
            medians = {name: summary(r) for name, r in runs.items()}
            report["sizes"][str(size) if cache == "warm" else f"{size} cold"] = {
                "page_cache": cache,
                "runs": runs,
                "median": medians,
                "after_over_before": {
                    key: round(medians["after"][key] / medians["before"][key], 2) for key in medians["after"]
                },
            }
            args.output.write_text(json.dumps(report, indent=1) + "\n")  # what is measured so far, kept
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print("| skills | tree | ready (s) | CPU (s) | CPU with workers (s) | RSS (MB) | peak RSS (MB) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for size, found in report["sizes"].items():
        for name in ("before", "after"):
            m = found["median"][name]
            print(
                f"| {size} | {name} | {m['ready_s']:.2f} | {m['cpu_s']:.2f} | {m['all_cpu_s']:.2f} | {m['rss_mb']:.0f} "
                f"| {m['peak_rss_mb']:.0f} |"
            )
        ratio = found["after_over_before"]
        print(
            f"| {size} | after/before | {ratio['ready_s']}x | {ratio['cpu_s']}x | {ratio['all_cpu_s']}x | {ratio['rss_mb']}x "
            f"| {ratio['peak_rss_mb']}x |"
        )
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
