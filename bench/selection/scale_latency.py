"""``Selector.decide`` -- what ``select`` answers and ``find`` ranks with -- at 10,000 and 100,000 cards.

Run from the repository root::

    .venv/bin/python bench/selection/scale_latency.py                  # ~10 min on 2 busy cores
    .venv/bin/python bench/selection/scale_latency.py --cards 10000 --reps 2
    .venv/bin/python bench/selection/scale_latency.py --cards 10000 --reps 3 --kernels 3   # OPENBLAS_CORETYPE as set / unset

The catalogs are ``synth.py``'s (LiveMCPBench's servers copied and perturbed to N tool cards); the
questions LiveMCPBench's 95. Each question is encoded by the default encoder (MiniLM, its query
cache off, as in ``speed.py``), so the encoder's cost per question is in every figure.

The card and server-label vectors are **stand-ins**: a unit vector per text drawn from a generator
seeded by the text (the default encoder would spend about 25 CPU-minutes on 100,000 cards here; the
figures are for "once vectors are cached"). A decision does the same arithmetic whatever the values
of the vectors; the rankings, and so the quality, are not measured here (``run.py`` measures them on
the real catalog). ``speed.py``'s ``latency_10k`` is the same measure with the encoder's own card
vectors, to compare the 10,000-card figure against.

Per catalog: one pass over the questions unmeasured, then ``--reps`` passes; p50/p95 of wall and
CPU milliseconds per decision, the load average before and after. Just before each decision the
encoder encodes the same question alone (``encoder_alone_p50_ms``; ``beyond_encoder_p50_ms`` is the
median of each decision less its encoding): the machine's speed moves by a fifth within hours, and
the encoder is most of a decision. With ``--kernels N``, N runs as the environment has ``OPENBLAS_CORETYPE``
alternate with N without it (OpenBLAS then picks its kernel for the CPU; a machine that forces an older
kernel pays for it in the encoder). ``find`` is this decision plus
the formatting of the ``limit`` cards it returns (``GatewayService.find``). Writes
``bench/results/selection_scale.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from livemcpbench import load_catalog, load_tasks  # noqa: E402
from synth import synthesize  # noqa: E402

from skilldeck.select import Selector, build_cards, parse_snapshot  # noqa: E402
from skilldeck.select._encoders import load_encoder  # noqa: E402

OUTPUT = HERE.parents[1] / "bench" / "results" / "selection_scale.json"


class StandInCatalogVectors:
    """The default encoder for questions; while :attr:`catalog` is set, a seeded unit vector per text instead."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.name = f"{encoder.name}+stand-in"
        self.catalog = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.encoder, name)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not self.catalog:
            return np.asarray(self.encoder.encode(texts), dtype=np.float32)
        out = np.empty((len(texts), 384), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            row = np.random.default_rng(seed).standard_normal(384)
            out[i] = row / np.linalg.norm(row)
        return out


def measure(n_cards: int, servers: list[dict[str, Any]], questions: list[str], reps: int) -> dict[str, Any]:
    cards = build_cards(parse_snapshot(synthesize(servers, n_cards)))
    encoder = StandInCatalogVectors(load_encoder("minilm", cache_size=0))
    began = time.perf_counter()
    selector = Selector(cards, encoder=encoder)
    built = time.perf_counter() - began
    encoder.catalog = False
    for question in questions:
        selector.decide(question)
    load_before = [round(x, 2) for x in os.getloadavg()]
    wall: list[float] = []
    cpu: list[float] = []
    alone: list[float] = []
    for _ in range(reps):
        for question in questions:
            w = time.perf_counter()
            encoder.encoder.encode([question])  # the encoder alone, just before: what the decision is made of
            alone.append((time.perf_counter() - w) * 1000)
            w, c = time.perf_counter(), time.process_time()
            selector.decide(question)
            cpu.append((time.process_time() - c) * 1000)
            wall.append((time.perf_counter() - w) * 1000)

    def pct(values: list[float], q: int) -> float:
        return round(float(np.percentile(values, q)), 2)

    return {
        "cards": n_cards,
        "servers": len(selector.ranker.server_labels),
        "index_s": round(built, 1),
        "decisions": len(wall),
        "p50_ms": pct(wall, 50),
        "p95_ms": pct(wall, 95),
        "cpu_p50_ms": pct(cpu, 50),
        "cpu_p95_ms": pct(cpu, 95),
        "encoder_alone_p50_ms": pct(alone, 50),
        "beyond_encoder_p50_ms": pct([d - e for d, e in zip(wall, alone, strict=True)], 50),
        "load_avg_before": load_before,
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
    }


def blas() -> list[dict[str, Any]]:
    """The BLAS numpy runs the encoder's products on, and the kernel it chose (``OPENBLAS_CORETYPE`` in the
    environment overrides OpenBLAS's own choice: on an AVX-512 CPU, forcing ``Haswell`` makes the encoder
    about a quarter slower)."""
    from threadpoolctl import threadpool_info

    return [
        {
            "library": lib.get("internal_api"),
            "version": lib.get("version"),
            "kernel": lib.get("architecture"),
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        }
        for lib in threadpool_info()
        if lib.get("user_api") == "blas"
    ]


def header(argv: list[str]) -> dict[str, Any]:
    """What every report of this script starts with: its command, when, on what, and what the vectors are."""
    return {
        "command": " ".join(["bench/selection/scale_latency.py", *argv]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "catalog_vectors": "stand-ins (a seeded unit vector per text); questions encoded by minilm, cache off",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reps", type=int, default=2, help="measured passes over the 95 questions")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument(
        "--kernels",
        type=int,
        metavar="ROUNDS",
        help="with OPENBLAS_CORETYPE set in the environment: ROUNDS child runs as the environment has it, "
        "alternating with ROUNDS without it (OpenBLAS's own choice of kernel), all in one results file",
    )
    args = parser.parse_args(argv)
    if args.kernels:
        return compare_kernels(args, argv if argv is not None else sys.argv[1:])
    data = HERE / "data" / "livemcpbench"
    servers = load_catalog(data)
    questions = [task.question for task in load_tasks(data, servers)]
    report = header(argv if argv is not None else sys.argv[1:])
    report["machine"]["blas"] = blas()
    report["results"] = []
    for n in args.cards:
        found = measure(n, servers, questions, args.reps)
        print(json.dumps(found), flush=True)
        report["results"].append(found)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.output}")
    return 0


def compare_kernels(args: argparse.Namespace, argv: list[str]) -> int:
    """Alternate child runs with ``OPENBLAS_CORETYPE`` as set and unset; one report of them all."""
    import subprocess
    import tempfile

    if not os.environ.get("OPENBLAS_CORETYPE"):
        print("OPENBLAS_CORETYPE is not set: OpenBLAS chooses its kernel already; run without --kernels")
        return 2
    forwarded = ["--cards", *map(str, args.cards), "--reps", str(args.reps)]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.kernels):
            for label, env in (
                ("as set", dict(os.environ)),
                ("openblas's choice", {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}),
            ):
                out = Path(tmp) / f"{i}-{len(runs)}.json"
                subprocess.run([sys.executable, __file__, *forwarded, "--output", str(out)], env=env, check=True)
                child = json.loads(out.read_text())
                runs.append({"kernel": label, "blas": child["machine"]["blas"], "results": child["results"]})
    report = header(argv)
    report["runs"] = runs
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
