"""What metrics and tracing cost: ``call`` through the gateway and ``skills/list`` of ``serve``, on and off, one run.

Run from the repository root::

    .venv/bin/python bench/observability.py                 # both eras, 1 and 8 clients, 3 reps
    .venv/bin/python bench/observability.py --quick         # 1 rep, shorter windows
    .venv/bin/python bench/observability.py --baseline REV  # "off" is the code as of REV (default: none)

Per server three processes run side by side on 127.0.0.1, and every repetition measures each of
them back to back, rotating which goes first:

* **off**: ``--metrics`` not given, no tracer provider installed: the spans of ``find``/``load``/
  ``call`` are in the code and are skipped (one check of the global provider each);
* **metrics**: ``--metrics 127.0.0.1:PORT``: every request counted and timed, every decision
  counted from the decision log's records (the listener is never scraped while measuring, so the
  figure is the counting's cost);
* **baseline** (with ``--baseline REV``): the same command as of REV (``src/`` checked out to a
  temporary folder), e.g. the commit before tracing was added: "off" against it is what the
  skipped spans cost.

The gateway (``--lexical``: no encoder thread competing for the CPU) proxies
``tools/call call {"tool": "echo/echo", ...}`` to ``bench/_echo_server.py``;
``serve`` answers ``skills/list`` of ``examples/skills``. The load generator, sessions and windows
are those of ``bench/server_throughput.py`` and ``bench/gateway.py`` (imported). Reported per era and
client count: the median req/s of each, and each one's ratio to "off", per rep and the median
(target: metrics cost at most 5%; the baseline within noise of "off"). On a loaded machine req/s
swings far more than these costs: the run also reports the CPU per ``GatewayService.call`` in one
process, with and without the span wrapper and the metrics listener, interleaved round by round,
and the microseconds each added piece costs (:func:`_cpu_per_call`); ``met`` is judged on those
(``met_in_throughput`` says how the req/s ratios came out).

Results: a table on stdout and ``bench/results/observability.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE))  # appended: bench/agents.py never shadows the agents package

import gateway as gw  # noqa: E402
import server_throughput as st  # noqa: E402
from _common import free_port, src_at, window_settings  # noqa: E402

DEFAULT_OUTPUT = HERE / "results" / "observability.json"
METRICS_COST_TARGET = 0.05
"""Metrics may cost at most this share of the req/s without them."""


@dataclass
class Cell:
    server: str
    era: str
    clients: int
    runs: dict[str, list[st.RepResult]] = field(default_factory=dict)
    order: list[list[str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        off = self.runs["off"]
        out: dict[str, Any] = {"server": self.server, "era": self.era, "clients": self.clients, "order": self.order}
        for kind, runs in self.runs.items():
            ratios = [r.rps / o.rps for o, r in zip(off, runs, strict=True) if o.rps]
            out[kind] = {
                "rps": round(statistics.median(r.rps for r in runs), 1),
                "p50_ms": round(statistics.median(r.p50_ms for r in runs), 3),
                "server_cpu_pct": round(statistics.median(r.server_cpu_pct for r in runs), 1),
                "ratio_to_off": round(statistics.median(ratios), 3),
                "ratio_to_off_per_rep": [round(x, 3) for x in ratios],
                "errors": sum(r.errors for r in runs),
            }
        return out


def targets(kinds: list[str], baseline_src: Path | None) -> dict[str, dict[str, st.Target]]:
    """Per server (gateway, serve), one target per kind; commands completed once the upstream is known."""
    skill_paths = st._skill_paths(st.PACK)
    out: dict[str, dict[str, st.Target]] = {"gateway": {}, "serve": {}}
    for kind in kinds:
        env = {"PYTHONPATH": str(baseline_src)} if kind == "baseline" and baseline_src else {}
        out["gateway"][kind] = st.Target(f"gateway-{kind}", f"gateway {kind}", [], gw.EchoExpectations(), env=env)  # type: ignore[arg-type]
        out["serve"][kind] = st.Target(
            f"serve-{kind}", f"serve {kind}", [], st._expectations(st.PACK, skill_paths), env=env
        )
    return out


async def run_cells(
    servers: dict[str, dict[str, st.Target]], args: argparse.Namespace, say: Any
) -> list[dict[str, Any]]:
    ops = {"gateway": (gw.PROXIED, gw.GatewaySession), "serve": (st.OPERATIONS["list"], st.Session)}
    cells = [Cell(server, era, n) for server in servers for era in args.eras for n in args.clients]
    for rep in range(args.reps):
        for i, cell in enumerate(cells):
            order = gw.rotated(list(servers[cell.server]), rep + i)
            cell.order.append(order)
            op, session = ops[cell.server]
            for kind in order:
                result = await gw.measure(servers[cell.server][kind], cell.era, op, cell.clients, args, session)
                cell.runs.setdefault(kind, []).append(result)
                say(f"  rep {rep + 1} {cell.server:<7} {cell.era} c={cell.clients:<2} {kind:<8} {gw.rep_line(result)}")
    return [c.summary() for c in cells]


async def _cpu_per_call(url: str, calls: int, rounds: int) -> dict[str, Any]:
    """CPU ms per ``GatewayService.call`` in one process, three ways interleaved round by round (median of rounds).

    * ``undecorated``: the method without its span wrapper (``__wrapped__``): what the code did before tracing;
    * ``off``: as shipped, no tracer provider: the wrapper checks for one and calls through;
    * ``metrics``: as shipped, with :class:`~skilldeck.gateway._metrics.GatewayMetrics` counting the records.

    Process CPU time, not wall time, so the other processes of a loaded machine weigh on it far less
    than on req/s. Run in a child process (``--cpu URL``).
    """
    from skilldeck.gateway._metrics import GatewayMetrics
    from skilldeck.gateway._service import GatewayService
    from skilldeck.host import Host, HttpServer, ServerSpec
    from skilldeck.serving._policy import caller_for

    caller = caller_for(None, None, None)
    arguments = {"text": gw.TEXT}
    per: dict[str, list[float]] = {"undecorated": [], "off": [], "metrics": []}
    async with Host([ServerSpec("echo", HttpServer(url))]) as host:
        service = GatewayService(host, encoder=None)
        await service.load(caller, "bench", ["echo/echo"])
        undecorated = GatewayService.call.__wrapped__  # type: ignore[attr-defined]
        metrics = GatewayMetrics()
        for n in range(rounds + 1):  # round 0 warms up and is not kept
            kinds = list(per)
            order = kinds[n % 3 :] + kinds[: n % 3]
            for kind in order:
                stop = metrics.observe(service) if kind == "metrics" else None
                started = time.process_time()
                for _ in range(calls):
                    if kind == "undecorated":
                        await undecorated(service, caller, "bench", "echo/echo", arguments)
                    else:
                        await service.call(caller, "bench", "echo/echo", arguments)
                spent = time.process_time() - started
                if stop is not None:
                    stop()
                if n:
                    per[kind].append(1000 * spent / calls)
    medians = {kind: round(statistics.median(v), 4) for kind, v in per.items()}
    least = {kind: round(min(v), 4) for kind, v in per.items()}
    added = await _added_cost(service, metrics)
    per_call_us = added["traced_wrapper_us"] + added["request_middleware_us"] + added["decision_record_us"]
    return {
        "cpu_ms_per_call": medians,
        "cpu_ms_per_call_least_disturbed_round": least,
        "per_round": {kind: [round(x, 4) for x in v] for kind, v in per.items()},
        "off_vs_undecorated": round(medians["off"] / medians["undecorated"], 3),
        "metrics_vs_off": round(medians["metrics"] / medians["off"], 3),
        "added_us": added,
        "metrics_and_span_check_us_per_call": round(per_call_us, 3),
        "share_of_service_call_cpu": round(per_call_us / (1000 * least["undecorated"]), 4),
        "calls_per_round": calls,
        "rounds": rounds,
    }


async def _added_cost(service: Any, metrics: Any, n: int = 20_000, rounds: int = 7) -> dict[str, float]:
    """Microseconds of CPU each piece adds, the least of ``rounds`` rounds of ``n`` (the least disturbed).

    * ``traced_wrapper_us``: a function behind :func:`~skilldeck.serving._tracing.traced` with no
      provider, less the same function called directly (what each ``find``/``load``/``call`` pays);
    * ``request_middleware_us``: :class:`~skilldeck.serving._metrics.RequestMetrics` around a handler
      that returns at once, less the handler alone (what every request pays with ``--metrics``);
    * ``decision_record_us``: :meth:`~skilldeck.gateway._metrics.GatewayMetrics.decision` of one
      call record (what every ``call`` pays with ``--metrics``).
    """
    from types import SimpleNamespace

    from skilldeck.serving._metrics import RequestMetrics
    from skilldeck.serving._tracing import traced

    def plain(x: int) -> int:
        return x

    wrapped = traced("bench")(plain)
    record = {"kind": "call", "client": "bench", "tool": "echo/echo", "isError": False, "seconds": 0.001}
    middleware = RequestMetrics(metrics)
    ctx = SimpleNamespace(method="tools/call", protocol_version=st.MODERN)
    result = {"content": []}

    async def handler(_: Any) -> Any:
        return result

    def least(run: Any) -> float:
        spent = []
        for _ in range(rounds):
            started = time.process_time()
            run()
            spent.append(time.process_time() - started)
        return 1e6 * min(spent) / n

    async def least_async(run: Any) -> float:
        spent = []
        for _ in range(rounds):
            started = time.process_time()
            await run()
            spent.append(time.process_time() - started)
        return 1e6 * min(spent) / n

    async def through_middleware() -> None:
        for _ in range(n):
            await middleware(ctx, handler)  # type: ignore[arg-type]

    async def handler_alone() -> None:
        for _ in range(n):
            await handler(ctx)

    return {
        "traced_wrapper_us": round(
            least(lambda: [wrapped(1) for _ in range(n)]) - least(lambda: [plain(1) for _ in range(n)]), 3
        ),
        "request_middleware_us": round(await least_async(through_middleware) - await least_async(handler_alone), 3),
        "decision_record_us": round(least(lambda: [metrics.decision(record) for _ in range(n)]), 3),
    }


def cpu_per_call(url: str, calls: int, rounds: int) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--cpu",
        url,
        "--calls",
        str(calls),
        "--rounds",
        str(rounds),
    ]
    done = subprocess.run(command, cwd=st.REPO, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def markdown_table(cells: list[dict[str, Any]], kinds: list[str]) -> str:
    lines = [
        "| server | protocol | clients | "
        + " | ".join(f"{k} req/s" for k in kinds)
        + " | "
        + " | ".join(f"{k} / off" for k in kinds if k != "off")
        + " |",
        "|---|---|---:|" + "---:|" * (2 * len(kinds) - 1),
    ]
    for c in cells:
        rps = " | ".join(f"{c[k]['rps']:,.0f}" for k in kinds)
        ratios = " | ".join(f"{100 * c[k]['ratio_to_off']:.1f}%" for k in kinds if k != "off")
        lines.append(f"| {c['server']} | {c['era']} | {c['clients']} | {rps} | {ratios} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = gw.era_parser(__doc__)
    p.add_argument("--baseline", metavar="REV", help="also run both servers as of this git revision, same run")
    p.add_argument("--calls", type=int, default=300, help="calls per round of the in-process CPU figure (default 300)")
    p.add_argument("--rounds", type=int, default=9, help="rounds of the in-process CPU figure (default 9)")
    p.add_argument("--cpu", metavar="URL", help=argparse.SUPPRESS)  # the child process of cpu_per_call()
    return gw.parse_windows(p, argv, DEFAULT_OUTPUT)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cpu:
        import anyio

        from skilldeck.server._app import event_loop_options

        figures = anyio.run(_cpu_per_call, args.cpu, args.calls, args.rounds, backend_options=event_loop_options())
        print(json.dumps(figures))
        return 0

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    kinds = ["off", "metrics", *(["baseline"] if args.baseline else [])]
    upstream = st.Target(
        "upstream", "echo upstream", [sys.executable, str(HERE / "_echo_server.py"), st.HOST], gw.EchoExpectations()
    )  # type: ignore[arg-type]
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    started = dt.datetime.now(dt.UTC)
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="skilldeck-bench-") as tmp:
        log_dir = Path(tmp)
        baseline_src = src_at(args.baseline, log_dir / "baseline") if args.baseline else None
        servers = targets(kinds, baseline_src)
        everything = [upstream, *(t for by_kind in servers.values() for t in by_kind.values())]
        try:
            url, config = gw.start_upstream(upstream, log_dir)
            cli = [sys.executable, "-m", "skilldeck.cli"]
            taken = {upstream.port}

            def port() -> int:  # a free port none of the others was given (none is bound until its server starts)
                while (found := free_port(st.HOST)) in taken:
                    pass
                taken.add(found)
                return found

            for kind in kinds:
                for server, command in (
                    # lexical: no encoder encoding card vectors on a thread of its own while the others are measured
                    ("gateway", [*cli, "gateway", "--config", str(config), "--lexical"]),
                    ("serve", [*cli, "serve", str(st.PACK)]),
                ):
                    metrics = ["--metrics", f"{st.HOST}:{port()}"] if kind == "metrics" else []
                    target = servers[server][kind]
                    target.port = port()
                    target.command = [*command, *metrics, "--http", f"{st.HOST}:{target.port}"]
                    st._start(target, log_dir)
            for target in everything:
                st._wait_ready(target)
            cells = asyncio.run(run_cells(servers, args, say))
            cpu = cpu_per_call(url, args.calls, args.rounds)
            say(f"  CPU ms per GatewayService.call in process: {cpu['cpu_ms_per_call']}")
        finally:
            for target in everything:
                st._stop(target)
    elapsed = time.perf_counter() - wall0
    # req/s on a loaded machine swings far more than these costs (see "loadavg_at_start"): the CPU figures
    # measured in one process, round by round, are the ones that can show a cost of a few per cent
    met_throughput = all(c["metrics"]["ratio_to_off"] >= 1 - METRICS_COST_TARGET for c in cells)
    met_cpu = (
        cpu["metrics_vs_off"] <= 1 + METRICS_COST_TARGET and cpu["share_of_service_call_cpu"] <= METRICS_COST_TARGET
    )
    errors = sum(c[k]["errors"] for c in cells for k in kinds)
    met = met_cpu and not errors
    packages = [*st.MAIN_PACKAGES, "prometheus_client", "opentelemetry-api"]
    report = {
        **gw.report_head("observability", argv, started, elapsed, load_at_start, packages),
        "settings": {**window_settings(args), "baseline": args.baseline, "gateway": gw.PROXIED.params},
        "targets": {"metrics_cost_at_most": METRICS_COST_TARGET},
        "met": met,
        "met_in_process_cpu": met_cpu,
        "met_in_throughput": met_throughput,
        "errors": errors,
        "cells": cells,
        "cpu_in_process": cpu,
        "markdown_table": markdown_table(cells, kinds),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown_table(cells, kinds))
    say(
        f"wrote {args.output} in {elapsed:.0f}s; metrics target {'met' if met_cpu else 'MISSED'} in process CPU, "
        f"{'met' if met_throughput else 'missed'} in req/s (load average {report['machine']['loadavg_at_start']})"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
