"""Fit the confidence model for small catalogs: a user's own few servers, not a 70-server market.

The shipped semantic calibration (``run.py --calibrate``) was fitted with every LiveMCPBench question
asked of the whole 70-server catalog. In front of a user's own five servers the same features mean
something else: the five-view fusion z-scores five servers, not seventy, and a question is almost
always meant for one of them. So this fits a second model the same way (L2 logistic regression,
the penalty chosen by cross-validation grouped by task, on half A; half B is the held-out report),
on small catalogs drawn from LiveMCPBench:

* for each task and each of ``--draws`` draws, a catalog of the task's gold servers and 2 to 10
  other servers drawn at random (never a near-duplicate of a gold server: ``near-duplicates.json``);
  the question asked of it is an in-scope example;
* the same other servers without the gold ones make its out-of-scope twin.

``Selector`` uses the model when a catalog has at most ``SMALL_CATALOG_SERVERS`` servers
(:mod:`skilldeck.select._decide`). Its ``threshold`` (a sure answer) keeps ``--sure`` of half A's
in-scope draws, and its ``floor`` (below which ``find`` abstains instead of answering with
``low_confidence``) keeps ``--keep`` of them, or is given (``--floor``). The everyday questions (``everyday.py``) are never
used to fit: they are the held-out test of whether the small model fits real small catalogs.

    .venv/bin/python bench/selection/calibrate_small.py            # fit, report, print the calibration
    .venv/bin/python bench/selection/calibrate_small.py --write    # and write calibration-semantic-small.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from calibrate import threshold_keeping  # noqa: E402
from livemcpbench import load_catalog, load_tasks, snapshot_json  # noqa: E402
from run import DEFAULT_DATA, FEATURES, Memo, abstention, fit_half, load_clusters, load_semantic, with_mates  # noqa: E402

from skilldeck.select import CardSet, Selector, build_cards, parse_snapshot  # noqa: E402
from skilldeck.select._decide import SMALL_CATALOG_SERVERS  # noqa: E402
from skilldeck.select._rank import semantic_text  # noqa: E402

OUTPUT = REPO / "src" / "skilldeck" / "select" / "calibration-semantic-small.json"
RESULTS = REPO / "bench" / "results" / "calibration_small.json"
OTHERS = (2, 10)
"""How many servers besides the gold ones a drawn catalog has (both ends included)."""


def subset(cards: CardSet, vectors: np.ndarray, index: dict[str, int], labels: set[str]) -> tuple[CardSet, np.ndarray]:
    keep = [c for c in cards.cards if c.server in labels]
    sub = CardSet(cards=keep, tools={k: v for k, v in cards.tools.items() if k in labels})
    return sub, vectors[[index[c.key] for c in keep]]


def draw_rows(draws: int, seed: int) -> list[dict[str, Any]]:
    data = REPO / DEFAULT_DATA
    servers = load_catalog(data)
    tasks = load_tasks(data, servers)
    cards = build_cards(parse_snapshot(snapshot_json(servers)))
    encoder = Memo(load_semantic("minilm", True))
    vectors = encoder.encode([semantic_text(c) for c in cards.cards])
    index = {c.key: i for i, c in enumerate(cards.cards)}
    labels = sorted({c.server for c in cards.cards})
    clusters = load_clusters()
    rng = np.random.default_rng(seed)
    rows = []
    for task in tasks:
        gold = set(task.gold_servers) & set(labels)
        pool = [label for label in labels if label not in with_mates(task.gold_servers, clusters)]
        for draw in range(draws):
            n = int(rng.integers(OTHERS[0], OTHERS[1] + 1))
            others = {str(x) for x in rng.choice(pool, size=min(n, len(pool)), replace=False)}
            sub_in, vec_in = subset(cards, vectors, index, gold | others)
            sub_out, vec_out = subset(cards, vectors, index, others)
            d_in = Selector(sub_in, encoder=encoder, vectors=vec_in, small_calibration=False).decide(task.question)
            d_out = Selector(sub_out, encoder=encoder, vectors=vec_out, small_calibration=False).decide(task.question)
            rows.append(
                {
                    "task_id": task.task_id,
                    "draw": draw,
                    "half": task.half,
                    "servers": len(gold | others),
                    "features_in": d_in.features,
                    "features_out": d_out.features,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=4, help="small catalogs drawn per task (default 4)")
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--sure", type=float, default=0.8, help="in-scope share of half A the threshold keeps")
    parser.add_argument("--keep", type=float, default=0.97, help="in-scope share of half A the floor keeps")
    parser.add_argument("--floor", type=float, help="the floor itself (overrides --keep; say why in the docs)")
    parser.add_argument("--write", action="store_true", help=f"write {OUTPUT.relative_to(REPO)}")
    args = parser.parse_args(argv)
    rows = draw_rows(args.draws, args.seed)
    names = list(FEATURES)
    fits = {half: fit_half(rows, names, half) for half in ("A", "B")}
    in_a = [fits["A"].confidence(r["features_in"]) for r in rows if r["half"] == "A"]
    fitted = replace(fits["A"], threshold=threshold_keeping(in_a, args.sure))
    floor = args.floor if args.floor is not None else threshold_keeping(in_a, args.keep)
    kept_a = float(np.mean([c >= floor for c in in_a]))
    report = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": " ".join(["bench/selection/calibrate_small.py", *(argv if argv is not None else sys.argv[1:])]),
        "draws": len(rows),
        "servers": {"min": min(r["servers"] for r in rows), "max": max(r["servers"] for r in rows)},
        "small_catalog_servers": SMALL_CATALOG_SERVERS,
        "fit A -> report B": abstention(rows, fitted, "B"),
        "fit B -> report A": abstention(rows, fits["B"], "A"),
        "threshold": round(fitted.threshold, 4),
        "floor": round(floor, 4),
        "floor keeps of half A": round(kept_a, 4),
        "floor on half B": {
            "in_scope_kept": round(
                float(np.mean([fitted.confidence(r["features_in"]) >= floor for r in rows if r["half"] == "B"])), 4
            ),
            "false_accept": round(
                float(np.mean([fitted.confidence(r["features_out"]) >= floor for r in rows if r["half"] == "B"])), 4
            ),
        },
    }
    shipped = replace(
        fitted,
        weights={k: round(v, 6) for k, v in fitted.weights.items()},
        bias=round(fitted.bias, 6),
        threshold=round(fitted.threshold, 6),
        floor=round(floor, 6),
        defaults={k: round(v, 6) for k, v in fitted.defaults.items()},
        source=(
            f"bench/selection/calibrate_small.py on {report['date']}: L2 logistic regression (numpy, Newton) on "
            f"LiveMCPBench half A, each task asked of {args.draws} small catalogs (its gold servers and "
            f"{OTHERS[0]}-{OTHERS[1]} others drawn at random, no near-duplicate of a gold server) and of the same "
            f"catalogs without its gold servers; L2 {fitted.metrics['l2']} chosen by 5-fold cross-validation "
            f"grouped by task inside half A; threshold keeps {args.sure:.0%} of half A's in-scope draws, floor "
            + (
                f"{floor} (keeps {kept_a:.0%}): chosen on the everyday questions' curve (docs/benchmarks/selection.md)"
                if args.floor is not None
                else f"keeps {args.keep:.0%}"
            )
            + "; half B is the held-out report"
        ),
        metrics={"l2": fitted.metrics["l2"], "heldout_half_B": report["fit A -> report B"]},
    )
    print(json.dumps(report, indent=1))
    RESULTS.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.write:
        OUTPUT.write_text(json.dumps(shipped.to_json(), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
