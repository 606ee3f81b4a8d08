"""``find`` on everyday questions, in front of real MCP servers: is the first card right, and answered?

Two catalogs of real servers (``everyday_snapshot.py`` captured what each lists, with its version):

* ``five``: npm ``server-everything``, ``server-filesystem`` (label ``fs``), ``server-memory``, PyPI
  ``mcp-server-time``, and ``skilldeck serve examples/skills`` (label ``skills``): the gateway in
  front of a user's own five servers;
* ``second``: PyPI ``mcp-server-git`` and ``mcp-server-fetch``, npm ``server-sequential-thinking``,
  and the same skill pack (its ``git-workflow`` and ``code-review`` skills stand next to the git
  server's tools).

The questions (``data/everyday/questions.json``) are written the way people and models phrase them:
short requests, model-written capability queries ("get current time in timezone"), paraphrases,
questions that name no tool word; each names the cards it accepts as the first card. The ``none``
questions fit no server of the catalog they are asked of. ``data/everyday/heldout.json`` holds 91 + 23
more, written after the ranking's and the calibration's settings had been chosen on the first set, to
tell how much of a figure is that set's (none of them is used to choose anything).

Each upstream is an in-process ``MCPServer`` that answers ``initialize`` with the real server's
``serverInfo`` and ``instructions`` and lists its real tools (names, titles, descriptions, input
schemas, annotations) unchanged; ``--live`` starts the real servers instead (npx and the venv
``everyday_snapshot.py`` makes). One real ``Host`` and one ``GatewayService`` answer ``find`` as
a client calls it (the default ``limit`` of five cards), after the card vectors are encoded.

Reported per catalog:

* **right and answered**: the first card is one the question accepts and ``find`` did not abstain
  (a ``low_confidence`` answer is an answer: its cards are shown);
* **first accepted**: the first card is accepted, answered or not;
* **shown accepted**: an accepted card is among the cards shown;
* **false answers** on the ``none`` questions: ``find`` answered (did not abstain);
* **tokens**: the mean size of a ``find`` answer as the model reads it (``tiktoken`` cl100k).

    .venv/bin/python bench/selection/everyday.py                  # about a minute on 2 cores
    .venv/bin/python bench/selection/everyday.py --live           # the real servers (npx, PyPI venv)
    .venv/bin/python bench/selection/everyday.py --lexical        # no encoder
    .venv/bin/python bench/selection/everyday.py --questions bench/selection/data/everyday/heldout.json \
        --output bench/results/selection_everyday_heldout.json    # the held-out questions
    .venv/bin/python bench/selection/everyday.py --ablation       # each change taken out, card texts tried,
                                                                   # here and on LiveMCPBench (about 5 minutes)

Writes ``bench/results/selection_everyday.json`` (``--output``) and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from skilldeck.gateway import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec, StdioServer
from skilldeck.select._project import count_tokens
from skilldeck.server import create_server
from skilldeck.serving._policy import Caller

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from everyday_ablation import VARIANTS  # noqa: E402
from everyday_snapshot import SETS, parameters, python_venv  # noqa: E402

from gateway_agent import CountingUpstream  # noqa: E402

DATA = HERE / "data" / "everyday"
DEFAULT_OUTPUT = REPO / "bench" / "results" / "selection_everyday.json"
SKILLS_LABEL = "skills"
PACK = REPO / "examples" / "skills"


def load_servers(path: Path = DATA / "servers.json") -> dict[str, dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(s["label"]): s for s in data["servers"]}


def load_questions(path: Path = DATA / "questions.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def replica(captured: Mapping[str, Any]) -> MCPServer[Any]:
    """An in-process server answering as the captured one does: its serverInfo, instructions and tools."""
    info = captured.get("server_info") or {}
    server: MCPServer[Any] = MCPServer(
        str(info.get("name") or captured["label"]),
        title=info.get("title"),
        description=info.get("description"),
        instructions=captured.get("instructions"),
        version=str(info.get("version") or ""),
        middleware=[CountingUpstream(str(captured["label"]), captured["tools"])],
        log_level="WARNING",
    )
    return server


def specs_for(catalog: str, servers: Mapping[str, Mapping[str, Any]], live: bool, folder: Path) -> list[ServerSpec]:
    specs: list[ServerSpec] = []
    python = python_venv() if live else None
    for label in SETS[catalog]:
        if live:
            assert python is not None
            params = parameters(label, python, folder)
            transport: Any = StdioServer(params.command, tuple(params.args), env=dict(params.env or {}))
        else:
            transport = InProcessServer(replica(servers[label]))
        specs.append(ServerSpec(label, transport, timeout=120))
    pack, _ = create_server(PACK, name="skilldeck")
    specs.append(ServerSpec(SKILLS_LABEL, InProcessServer(pack), timeout=120))
    return specs


def mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if values else float("nan")


def ask(service: GatewayService, question: str, accepted: Sequence[str]) -> dict[str, Any]:
    found = service.find(Caller(), "bench", question)
    shown = [str(c["id"]) for c in found["cards"]]
    first = shown[0] if shown else None
    row: dict[str, Any] = {
        "question": question,
        "first": first,
        "shown": shown,
        "abstain": bool(found["abstain"]),
        "low_confidence": bool(found.get("low_confidence")),
        "confidence": found["confidence"],
        "ranker": found["ranker"],
        "tokens": count_tokens(json.dumps(found, ensure_ascii=False)),
    }
    if accepted:
        row["accepted"] = list(accepted)
        row["first_accepted"] = first in accepted
        row["right_and_answered"] = row["first_accepted"] and not row["abstain"]
        row["shown_accepted"] = any(card in accepted for card in shown)
    return row


def summary(rows: Sequence[dict[str, Any]], nones: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "questions": len(rows),
        "right_and_answered": round(mean([float(r["right_and_answered"]) for r in rows]), 4),
        "first_accepted": round(mean([float(r["first_accepted"]) for r in rows]), 4),
        "shown_accepted": round(mean([float(r["shown_accepted"]) for r in rows]), 4),
        "abstained": round(mean([float(r["abstain"]) for r in rows]), 4),
        "low_confidence": round(mean([float(r["low_confidence"]) for r in rows]), 4),
        "none_questions": len(nones),
        "false_answers": round(mean([float(not r["abstain"]) for r in nones]), 4),
        "tokens_mean": round(mean([float(r["tokens"]) for r in [*rows, *nones]]), 1),
    }


async def run_catalog(
    catalog: str, questions: Mapping[str, Any], servers: Mapping[str, Mapping[str, Any]], *, live: bool, lexical: bool
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if live:
            await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(folder)], check=True)
        async with Host(specs_for(catalog, servers, live, folder)) as host:
            assert not host.failures, host.failures
            service = GatewayService(host, encoder=None) if lexical else GatewayService(host)
            started = time.perf_counter()
            index = service.index_for(Caller())
            ready = await asyncio.to_thread(index.selector.ranker.wait, 600)
            assert lexical or ready, index.selector.ranker.indexing
            indexed = time.perf_counter() - started
            asked = questions[catalog]
            rows = [ask(service, q["q"], q["accept"]) for q in asked["fit"]]
            nones = [ask(service, q, ()) for q in asked["none"]]
            return {
                "upstreams": len(host.registry.labels),
                "cards": len(index.cards.cards),
                "indexed_seconds": round(indexed, 2),
                "summary": summary(rows, nones),
                "rows": rows,
                "none": nones,
            }


def table(results: Mapping[str, Any]) -> str:
    lines = [
        "| catalog | questions | right and answered | first accepted | shown accepted | abstained | "
        "none: false answers | tokens |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for catalog, r in results.items():
        s = r["summary"]
        lines.append(
            f"| {catalog} ({r['upstreams']} servers, {r['cards']} cards) | {s['questions']} | "
            f"{s['right_and_answered']:.1%} | {s['first_accepted']:.1%} | {s['shown_accepted']:.1%} | "
            f"{s['abstained']:.1%} | {s['false_answers']:.1%} of {s['none_questions']} | {s['tokens_mean']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--live", action="store_true", help="start the real servers instead of their captured replicas")
    parser.add_argument("--lexical", action="store_true", help="rank without an encoder")
    parser.add_argument("--catalog", choices=sorted(SETS), action="append", help="only this catalog (repeatable)")
    parser.add_argument(
        "--questions",
        type=Path,
        default=DATA / "questions.json",
        help="the questions to ask (data/everyday/heldout.json: the held-out ones)",
    )
    parser.add_argument("--misses", action="store_true", help="print every question whose first card is not accepted")
    parser.add_argument(
        "--ablation", action="store_true", help="each variant of everyday_ablation.py, here and on LiveMCPBench"
    )
    args = parser.parse_args(argv)
    if args.ablation:
        return ablation(args.output.with_name("selection_everyday_ablation.json"), argv)
    load = [round(x, 2) for x in os.getloadavg()]
    servers = load_servers()
    questions = load_questions(args.questions)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for catalog in args.catalog or list(SETS):
        results[catalog] = asyncio.run(run_catalog(catalog, questions, servers, live=args.live, lexical=args.lexical))
    payload = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": " ".join(["bench/selection/everyday.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": load},
        "servers": {label: s["package"] for label, s in servers.items()},
        "seconds": round(time.perf_counter() - started, 1),
        "catalogs": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(results))
    if args.misses:
        for catalog, r in results.items():
            for row in r["rows"]:
                if not row["right_and_answered"]:
                    flag = "ABSTAIN" if row["abstain"] else "WRONG"
                    print(
                        f"[{catalog}] {flag} {row['confidence']:.2f} {row['question']!r}: "
                        f"{row['shown']} (accept {row['accepted']})"
                    )
            for row in r["none"]:
                if not row["abstain"]:
                    print(f"[{catalog}] FALSE ANSWER {row['confidence']:.2f} {row['question']!r}: {row['shown'][:2]}")
    return 0


def ablation(output: Path, argv: list[str] | None) -> int:
    """Every variant on both catalogs and on LiveMCPBench through the gateway (``gateway_find.run``)."""
    from calibrate import auroc

    from gateway_find import run as livemcpbench

    servers, questions = load_servers(), load_questions()
    rows: dict[str, Any] = {}
    for name, variant in VARIANTS.items():
        with variant():
            catalogs = {c: asyncio.run(run_catalog(c, questions, servers, live=False, lexical=False)) for c in SETS}
            lmb = asyncio.run(livemcpbench(None))["default"]
        fit = [r for c in catalogs.values() for r in c["rows"]]
        none = [r for c in catalogs.values() for r in c["none"]]
        rows[name] = {
            "everyday": summary(fit, none),
            "everyday_auroc": round(
                auroc([r["confidence"] for r in fit if r["first_accepted"]], [r["confidence"] for r in none]), 4
            ),
            "livemcpbench": {
                "hit@1": lmb["summary"]["all"]["hit@1"],
                "recall@5": lmb["summary"]["all"]["recall@5"],
                "shown_recall@5": lmb["summary"]["all"]["shown_recall@5"],
                "auroc": lmb["abstention"]["all"]["auroc"],
            },
        }
        e, m = rows[name]["everyday"], rows[name]["livemcpbench"]
        print(
            f"| {name} | {e['right_and_answered']:.1%} | {e['first_accepted']:.1%} | {e['shown_accepted']:.1%} | "
            f"{e['false_answers']:.1%} | {rows[name]['everyday_auroc']:.3f} | {m['hit@1']:.2f} | {m['recall@5']:.2f} | "
            f"{m['shown_recall@5']:.2f} | {m['auroc']:.3f} |",
            flush=True,
        )
    payload = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": " ".join(["bench/selection/everyday.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load": [round(x, 2) for x in os.getloadavg()],
        },
        "variants": rows,
    }
    output.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
