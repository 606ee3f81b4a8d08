"""Selection speed with the default encoder: this tree beside an earlier revision, in one run.

Run from the repository root::

    .venv/bin/python bench/selection/speed.py --before REV     # ~15 min on 2 vCPUs (the two cold starts)

Every measurement runs in a fresh interpreter with the tree's ``src`` first on ``sys.path``, the
two trees alternating, on the same catalogs and questions (LiveMCPBench's 527 tools and 95
questions; the synthetic 10,000-card catalog of ``synth.py``). Wall time and the process's CPU
time (all threads) are both recorded: on a shared machine wall time is inflated by other jobs'
load, CPU time much less. Each tree keeps its own vector cache (their encoders' fingerprints differ).

* ``cold_start_10k``: a ``Selector`` over the 10,000 cards with an empty vector cache, so every card
  and server text is encoded. A tree whose ``Selector`` takes ``background`` (card vectors encoded
  on a thread of their own) reports two times: ``ready_*`` -- imports, encoder loaded, index built
  and a first question answered (lexically, and the decision says so) -- and ``semantic_*`` -- until
  every vector is encoded and stored and the rankings fuse the encoder's views. A tree without it
  is ready when it is semantic.
* ``warm_restart_10k``: a new process: imports, the encoder loaded and verified, the 10,000 cards
  indexed, their vectors read from the cache, a first question answered (two runs per tree, the
  one with less CPU kept).
* ``latency_527`` / ``latency_10k``: ``Selector.decide`` per question, the encoder's query cache
  off (every question is encoded), p50/p95 of wall and CPU milliseconds.

Writes ``bench/results/selection_speed.json`` (with the machine's load average at start and end, and
the BLAS kernel the latency runs' products ran on: ``OPENBLAS_CORETYPE`` in the environment overrides
OpenBLAS's own choice, see ``scale_latency.py --kernels``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from livemcpbench import load_catalog, load_tasks, snapshot_json  # noqa: E402
from synth import synthesize  # noqa: E402

from _common import revisions_header, src_at  # noqa: E402

OUT = REPO / "bench" / "results" / "selection_speed.json"

WORKER = r"""
import json, sys, time
import numpy as np
args = json.loads(sys.argv[1])
t0, c0 = time.perf_counter(), time.process_time()
from skilldeck.select import Selector, build_cards, load_snapshot
from skilldeck.select._encoders import load_encoder
out = {}
def lat(selector, questions, reps):
    for q in questions[:5]:
        selector.decide(q)
    wall, cpu = [], []
    for _ in range(reps):
        for q in questions:
            w, c = time.perf_counter(), time.process_time()
            selector.decide(q)
            cpu.append((time.process_time() - c) * 1000)
            wall.append((time.perf_counter() - w) * 1000)
    pct = lambda v, q: round(float(np.percentile(v, q)), 2)
    return {"p50_ms": pct(wall, 50), "p95_ms": pct(wall, 95), "cpu_p50_ms": pct(cpu, 50), "cpu_p95_ms": pct(cpu, 95),
            "calls": len(wall)}
if args["job"] == "start":  # cold start (empty cache) or warm restart (filled cache): the same steps
    import inspect
    cards = build_cards(load_snapshot(args["catalog"]))
    encoder = load_encoder("minilm")
    background = "background" in inspect.signature(Selector).parameters
    options = {"background": True} if background else {}
    selector = Selector(cards, encoder=encoder, cache_dir=args["cache"], **options)
    first = selector.decide(args["question"])
    out = {"ready_s": round(time.perf_counter() - t0, 2), "ready_cpu_s": round(time.process_time() - c0, 2),
           "first_answer": getattr(first, "ranker", "semantic")}
    if background:
        selector.ranker.wait()
        state = selector.ranker.indexing
        out["texts_encoded"] = state.total - state.cached
    else:
        out["texts_encoded"] = selector.ranker.cache.encoded
    out.update({"semantic_s": round(time.perf_counter() - t0, 2), "semantic_cpu_s": round(time.process_time() - c0, 2)})
else:
    questions = json.loads(open(args["questions"], encoding="utf-8").read())
    encoder = load_encoder("minilm", cache_size=0)
    for name, catalog in args["catalogs"].items():
        selector = Selector(build_cards(load_snapshot(catalog)), encoder=encoder, cache_dir=args["cache"])
        out[name] = lat(selector, questions, args["reps"])
    from threadpoolctl import threadpool_info  # the kernel the encoder's products ran on
    out["blas"] = [{"kernel": i.get("architecture"), "version": i.get("version")}
                   for i in threadpool_info() if i.get("user_api") == "blas"]
print(json.dumps(out))
"""


def _tree(rev: str | None, work: Path) -> Path:
    """The ``src`` folder of ``rev`` (``None``: this working tree's)."""
    if rev is None:
        return REPO / "src"
    return src_at(rev, work / f"tree-{rev.replace('/', '_')}")


def _run(src: Path, args: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = datetime.now(UTC)
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, json.dumps(args)], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"worker failed ({src}): {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if args["job"] == "start":
        result["process_wall_s"] = round((datetime.now(UTC) - t0).total_seconds(), 2)
        result["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the earlier revision to measure beside this tree")
    ap.add_argument("--reps", type=int, default=2, help="passes over the 95 questions per catalog")
    ap.add_argument("--output", default=str(OUT))
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="skilldeck-speed-"))
    data = REPO / "bench" / "selection" / "data" / "livemcpbench"
    servers = load_catalog(data)
    questions = [t.question for t in load_tasks(data, servers)]
    paths = {"527": work / "catalog-527.json", "10k": work / "catalog-10k.json"}
    paths["527"].write_text(json.dumps(snapshot_json(servers)), encoding="utf-8")
    paths["10k"].write_text(json.dumps(synthesize(servers, 10_000)), encoding="utf-8")
    qfile = work / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    trees = {"after": _tree(None, work), "before": _tree(args.before, work)}
    results: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        **revisions_header(args.before),
        "before": {},
        "after": {},
    }
    caches = {name: work / f"cache-10k-{name}" for name in ("before", "after")}
    start = {"job": "start", "catalog": str(paths["10k"]), "question": questions[0]}
    try:
        for name in ("after", "before"):
            print(f"cold start, 10,000 cards ({name}) ...", flush=True)
            results[name]["cold_start_10k"] = _run(trees[name], {**start, "cache": str(caches[name])})
            print(f"  {results[name]['cold_start_10k']}", flush=True)
        for rep in range(2):
            for name in ("before", "after") if rep == 0 else ("after", "before"):
                r = _run(trees[name], {**start, "cache": str(caches[name])})
                results[name].setdefault("warm_restart_10k_runs", []).append(r)
                print(f"warm restart ({name}): {r}", flush=True)
        for name in ("before", "after"):
            runs = results[name]["warm_restart_10k_runs"]
            results[name]["warm_restart_10k"] = min(runs, key=lambda r: r["semantic_cpu_s"])
        for name in ("before", "after"):
            print(f"latency ({name}) ...", flush=True)
            lat = _run(
                trees[name],
                {
                    "job": "latency",
                    "catalogs": {k: str(v) for k, v in paths.items()},
                    "questions": str(qfile),
                    "cache": str(caches[name]),
                    "reps": args.reps,
                },
            )
            results[name]["latency_527"] = lat["527"]
            results[name]["latency_10k"] = lat["10k"]
            results[name]["blas"] = lat["blas"]
            print(f"  {lat}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["machine"]["load_avg_end"] = list(os.getloadavg())
    Path(args.output).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
