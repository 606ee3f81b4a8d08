"""``find`` through the gateway on LiveMCPBench: ranking quality, abstentions, and which ranker answered.

The 70 LiveMCPBench servers run in-process (``gateway_agent.upstream_server``: the catalog's tools
with their real names, descriptions and input schemas; each server describes itself in its
``serverInfo.description`` with the catalog's ``"<name>: <description>"``, as the selection
snapshot does). One real ``Host`` connects all of them and one ``GatewayService`` answers
``find`` for each of the 95 tasks, for each ranker:

* ``default``: ``GatewayService(host)`` as every caller gets it -- the default encoder (MiniLM)
  fused with the lexical ranker. The card vectors are encoded in the background; the run measures
  how long the first index takes, then waits for it and asks every question;
* ``lexical``: ``GatewayService(host, encoder=None)`` (``skilldeck gateway --lexical``).

Metrics are ``bench/selection``'s (``livemcpbench.py``): server Hit@1 (the first card's server is one
the task needs) and server Recall@5 (the share of the task's requirements met by the first five
distinct servers of the cards, ``find(limit=50)``), plus ``shown Recall@5``: the same share met by
the servers of the five cards a model sees by default (``limit=5``; fewer than five servers when a
server has several of them).

Abstention. Every task is in scope (its servers are connected), so each abstention is a false one:
the report gives the false-abstain rate at the calibrated threshold (what ``select`` uses) and at
the gateway's plausibility floor (the calibration's ``floor``), below which it still
abstains, above which it shows the card flagged ``low_confidence``. The cost of the floor is
counted on the out-of-scope twins (``bench/selection``'s: the question against the gateway's cards
without the task's servers, ranked by a ``Selector`` on the same cards and vectors): the share that
the floor accepts. ``--fit`` prints the floor that keeps a given share of half A's in-scope
questions (half B is then the held-out report).

Run from the repository root::

    .venv/bin/python bench/gateway_find.py           # about 1 minute on 2 cores

Writes ``bench/results/gateway_find.json`` and prints a table; exits 1 when the default ranker
misses Hit@1 >= 0.72 or Recall@5 >= 0.80.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from skilldeck.gateway._service import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.select import CardSet, Selector
from skilldeck.serving._policy import Caller

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE))  # appended: bench/agents.py never shadows the agents package
sys.path.insert(0, str(HERE / "selection"))

from calibrate import auroc  # noqa: E402
from livemcpbench import Task  # noqa: E402

from gateway_agent import MAX_QUERY_CHARS, catalog, upstream_server  # noqa: E402

DEFAULT_OUTPUT = HERE / "results" / "gateway_find.json"
TARGETS = {"hit@1": 0.72, "recall@5": 0.80}
"""What ``select`` reaches on the same questions (bench/README.md, selection), which ``find`` must reach."""


def mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if values else float("nan")


def distinct_servers(cards: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(c["server"]) for c in cards))


def task_row(task: Task, found: dict[str, Any], shown: dict[str, Any]) -> dict[str, Any]:
    servers = distinct_servers(found["cards"])
    sets = task.server_sets
    shown_servers = set(distinct_servers(shown["cards"]))
    return {
        "task_id": task.task_id,
        "half": task.half,
        "top": found["cards"][0]["id"] if found["cards"] else None,
        "hit@1": float(bool(servers) and servers[0] in task.gold_servers),
        "recall@5": sum(bool(set(servers[:5]) & s) for s in sets) / len(sets),
        "shown_recall@5": sum(bool(shown_servers & s) for s in sets) / len(sets),
        "confidence": found["confidence"],
        "abstain": found["abstain"],
        "low_confidence": bool(found.get("low_confidence")),
        "ranker": found["ranker"],
    }


def out_of_scope(service: GatewayService, tasks: Sequence[Task]) -> list[dict[str, Any]]:
    """Each question against the gateway's cards without the task's servers (a ``Selector`` on the same
    cards and cached vectors, as ``find`` ranks them): its confidence, as ``find`` would give it."""
    cards = service.index_for(Caller()).cards
    rows = []
    for task in tasks:
        removed = task.gold_servers
        sub = CardSet(
            [c for c in cards.cards if c.server not in removed],
            {label: tools for label, tools in cards.tools.items() if label not in removed},
        )
        selector = Selector(sub, encoder=service.encoder, cache=service.vectors)
        decision = selector.decide(task.question[:MAX_QUERY_CHARS])
        rows.append({"task_id": task.task_id, "half": task.half, "confidence": decision.confidence})
    return rows


def keeping(confidences: Sequence[float], share: float) -> float:
    """The largest threshold at or under which ``share`` of ``confidences`` are kept."""
    ordered = np.sort(np.asarray(confidences))
    index = int(np.floor((1.0 - share) * len(ordered)))
    return float(ordered[min(index, len(ordered) - 1)])


def abstentions(
    rows: Sequence[dict[str, Any]], twins: Sequence[dict[str, Any]], threshold: float, floor: float
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("all", "A", "B"):
        ins = [r["confidence"] for r in rows if part == "all" or r["half"] == part]
        outs = [r["confidence"] for r in twins if part == "all" or r["half"] == part]
        out[part] = {
            "false_abstain_calibrated": round(mean([float(c < threshold) for c in ins]), 4),
            "false_abstain_floor": round(mean([float(c < floor) for c in ins]), 4),
            "false_accept_calibrated": round(mean([float(c >= threshold) for c in outs]), 4),
            "false_accept_floor": round(mean([float(c >= floor) for c in outs]), 4),
            "auroc": round(auroc(ins, outs), 4),
            "n": len(ins),
        }
    return out


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("all", "A", "B"):
        chosen = [r for r in rows if part == "all" or r["half"] == part]
        out[part] = {
            key: round(mean([float(r[key]) for r in chosen]), 4)
            for key in ("hit@1", "recall@5", "shown_recall@5", "abstain", "low_confidence")
        }
        out[part]["n"] = len(chosen)
        out[part]["rankers"] = sorted({r["ranker"] for r in chosen})
    return out


async def run_ranker(host: Host, tasks: Sequence[Task], lexical: bool, fit: float | None) -> dict[str, Any]:
    service = GatewayService(host, encoder=None) if lexical else GatewayService(host)
    caller = Caller()
    started = time.perf_counter()
    index = service.index_for(caller)  # loads the encoder, starts encoding the card vectors
    first = service.find(caller, "bench", tasks[0].question[:MAX_QUERY_CHARS])
    result: dict[str, Any] = {
        "first_find": {
            "seconds": round(time.perf_counter() - started, 2),
            "ranker": first["ranker"],
            "indexing": first.get("indexing"),
        }
    }
    ready = await asyncio.to_thread(index.selector.ranker.wait, 600)
    result["indexed_seconds"] = round(time.perf_counter() - started, 2)
    if not lexical:
        assert ready, index.selector.ranker.indexing
    rows = []
    for task in tasks:
        question = task.question[:MAX_QUERY_CHARS]
        found = service.find(caller, f"bench-{task.task_id}", question, 50)
        shown = service.find(caller, f"bench-{task.task_id}", question)
        rows.append(task_row(task, found, shown))
    result["summary"] = summarise(rows)
    semantic = rows[0]["ranker"] == "semantic"
    threshold = index.selector.threshold
    judged_by = (
        index.selector.calibration if semantic else (index.selector.lexical_calibration or index.selector.calibration)
    )
    floor = judged_by.floor if judged_by.floor is not None else threshold
    twins = out_of_scope(service, tasks)
    result["threshold"] = {"calibrated": round(threshold, 4), "floor": floor}
    result["abstention"] = abstentions(rows, twins, threshold, floor)
    if fit is not None:
        fitted = keeping([r["confidence"] for r in rows if r["half"] == "A"], fit)
        result["fit"] = {"keep": fit, "floor": round(fitted, 4), **abstentions(rows, twins, threshold, fitted)}
    result["tasks"] = rows
    return result


async def run(fit: float | None) -> dict[str, Any]:
    servers, tasks = catalog()
    specs = []
    for s in servers:
        server, _ = upstream_server(str(s["label"]), s["tools"], description=str(s["description"]))
        specs.append(ServerSpec(str(s["label"]), InProcessServer(server), timeout=60))
    results: dict[str, Any] = {}
    async with Host(specs) as host:
        assert not host.failures, host.failures
        results["upstreams"] = len(host.registry.labels)
        results["tools"] = len(host.registry.tools())
        for name, lexical in (("default", False), ("lexical", True)):
            results[name] = await run_ranker(host, tasks, lexical, fit)
    return results


def table(results: dict[str, Any]) -> str:
    lines = [
        "| ranker | Hit@1 | Recall@5 | shown Recall@5 | false abstain (calibrated / floor) | "
        "twins accepted (calibrated / floor) | AUROC | answered by |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ("default", "lexical"):
        r = results[name]
        s, a = r["summary"]["all"], r["abstention"]["all"]
        lines.append(
            f"| {name} | {s['hit@1']:.2f} | {s['recall@5']:.2f} | {s['shown_recall@5']:.2f} | "
            f"{a['false_abstain_calibrated']:.2f} / {a['false_abstain_floor']:.2f} | "
            f"{a['false_accept_calibrated']:.2f} / {a['false_accept_floor']:.2f} | {a['auroc']:.3f} | "
            f"{', '.join(s['rankers'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--fit", type=float, metavar="SHARE", help="also the floor keeping SHARE of half A in scope")
    args = parser.parse_args(argv)
    load = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    results = asyncio.run(run(args.fit))
    payload = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": " ".join(["bench/gateway_find.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": load},
        "targets": TARGETS,
        "seconds": round(time.perf_counter() - started, 1),
        **results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(results))
    for name in ("default", "lexical"):
        print(f"{name}: first find {results[name]['first_find']}, indexed after {results[name]['indexed_seconds']} s")
        if "fit" in results[name]:
            print(f"{name}: fit {json.dumps(results[name]['fit'])}")
    default = results["default"]["summary"]["all"]
    return 0 if all(default[k] >= v for k, v in TARGETS.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
