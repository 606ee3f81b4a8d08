"""What metrics and tracing cost: ``call`` through the gateway and ``skills/list`` of ``serve``, on and off, one run.

Run from the repository root::

    .venv/bin/python bench/observability.py                       # both eras, 1 and 8 clients, 3 reps
    .venv/bin/python bench/observability.py --reps 8 --duration 2.5 --metrics-before REV   # the recorded run
    .venv/bin/python bench/observability.py --quick               # 1 rep, shorter windows
    .venv/bin/python bench/observability.py --baseline REV        # also "off" as of REV
    .venv/bin/python bench/observability.py --profile --reps 1    # where --metrics spends, under cProfile

Per server these processes run side by side on 127.0.0.1, and every repetition measures each of
them back to back, rotating which goes first (off, metrics, off2, ... then metrics, off2, ..., off),
or with ``--concurrent`` all of them in the same window, each with clients of its own (on a shared
machine the other processes' load then falls on every kind at once, not on whichever ran when it rose);
before the first repetition every process answers one window of every cell that is not kept (a
process's first window is far slower than the next ones, whichever kind it is):

* **off**: ``--metrics`` not given, no tracer provider installed: the spans of ``find``/``load``/
  ``call`` are in the code and are skipped (one check of the global provider each);
* **off2**: a second process started exactly as "off": "off2" against "off" is an A/A pair, the
  noise floor of the run (what two identical servers differ by on this machine at this time);
* **metrics**: ``--metrics 127.0.0.1:PORT``: every request counted and timed, every decision
  counted from the decision log's records (the listener is never scraped while measuring, so the
  figure is the counting's cost);
* **metrics_before** (with ``--metrics-before REV``): "metrics" as of REV (``src/`` checked out to a
  temporary folder): the code before a change to the metrics, measured in the same run;
* **baseline** (with ``--baseline REV``): "off" as of REV, e.g. the commit before tracing was added:
  "off" against it is what the skipped spans cost.

The gateway (``--lexical``: no encoder thread competing for the CPU) proxies
``tools/call call {"tool": "echo/echo", ...}`` to ``bench/_echo_server.py``;
``serve`` answers ``skills/list`` of ``examples/skills``. The load generator, sessions and windows
are those of ``bench/server_throughput.py`` and ``bench/gateway.py`` (imported). Reported per era and
client count, for each kind: the median req/s, its ratio to "off" in each repetition (paired with
the "off" window measured next to it) with the median and quartiles, and the server's CPU ms per
request (read from ``/proc``) and its ratio to "off". Target: metrics cost at most 5% of req/s;
``met_in_throughput`` compares the median of the "metrics" ratios with that, ``noise_floor`` says
how far the A/A ratios "off2"/"off" spread in the same run.

The run also counts the work ``--metrics`` adds per request, in one process (process CPU time, far
less disturbed by the machine's other processes than req/s): the microseconds the request
middleware, a call's decision record and its audit record each cost (:func:`_added_cost`), and the
CPU per ``GatewayService.call`` with and without the span wrapper and the metrics listener,
interleaved round by round (:func:`_cpu_per_call`). ``expected_cost`` divides the added
microseconds by each cell's server CPU per request: the cost the counting can explain.

Results: a table on stdout and ``bench/results/observability.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import os
import pstats
import random
import signal
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
PROFILE_OUTPUT = HERE / "results" / "observability_profile.json"
METRICS_COST_TARGET = 0.05
"""Metrics may cost at most this share of the req/s without them."""


def quartiles(values: list[float]) -> list[float]:
    """The first quartile, the median and the third quartile of ``values`` (the median thrice for one value)."""
    if len(values) < 2:
        return [values[0]] * 3 if values else []
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return [q1, q2, q3]


@dataclass
class Cell:
    server: str
    era: str
    clients: int
    runs: dict[str, list[st.RepResult]] = field(default_factory=dict)
    order: list[list[str]] = field(default_factory=list)
    loadavg: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        off = self.runs["off"]
        out: dict[str, Any] = {"server": self.server, "era": self.era, "clients": self.clients, "order": self.order}
        out["loadavg_1min_per_rep"] = [round(x, 2) for x in self.loadavg]
        for kind, runs in self.runs.items():
            # each repetition's window against the "off" window measured next to it
            ratios = [r.rps / o.rps for o, r in zip(off, runs, strict=True) if o.rps]
            cpu = [
                r.server_cpu_ms_per_req / o.server_cpu_ms_per_req
                for o, r in zip(off, runs, strict=True)
                if o.server_cpu_ms_per_req == o.server_cpu_ms_per_req
                and r.server_cpu_ms_per_req == r.server_cpu_ms_per_req
            ]
            out[kind] = {
                "rps": round(statistics.median(r.rps for r in runs), 1),
                "p50_ms": round(statistics.median(r.p50_ms for r in runs), 3),
                "server_cpu_pct": round(statistics.median(r.server_cpu_pct for r in runs), 1),
                "server_cpu_ms_per_req": round(statistics.median(r.server_cpu_ms_per_req for r in runs), 4),
                "ratio_to_off": round(statistics.median(ratios), 3),
                "ratio_to_off_quartiles": [round(x, 3) for x in quartiles(ratios)],
                "ratio_to_off_per_rep": [round(x, 3) for x in ratios],
                "cpu_per_req_ratio_to_off": round(statistics.median(cpu), 3) if cpu else None,
                "errors": sum(r.errors for r in runs),
            }
        return out


def targets(kinds: list[str], sources: dict[str, Path]) -> dict[str, dict[str, st.Target]]:
    """Per server (gateway, serve), one target per kind; commands completed once the upstream is known.

    ``sources``: the ``src/`` a kind runs from when it is not this tree's (``baseline``, ``metrics_before``).
    """
    skill_paths = st._skill_paths(st.PACK)
    out: dict[str, dict[str, st.Target]] = {"gateway": {}, "serve": {}}
    for kind in kinds:
        env = {"PYTHONPATH": str(sources[kind])} if kind in sources else {}
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
    # a process's first window is slower by far (the gateway's first: a third of the next ones): one
    # window of every cell on every process first, not kept, so no kind pays it for going first
    for cell in cells:
        op, session = ops[cell.server]
        for kind, target in servers[cell.server].items():
            result = await gw.measure(target, cell.era, op, cell.clients, args, session)
            say(f"  warm-up {cell.server:<7} {cell.era} c={cell.clients:<2} {kind:<14} {gw.rep_line(result)}")
    for rep in range(args.reps):
        for i, cell in enumerate(cells):
            order = gw.rotated(list(servers[cell.server]), rep + i)
            cell.order.append(order)
            cell.loadavg.append(os.getloadavg()[0])
            op, session = ops[cell.server]
            if args.concurrent:  # every kind in the same window: the machine's other load falls on all of them
                measured = [
                    gw.measure(servers[cell.server][kind], cell.era, op, cell.clients, args, session) for kind in order
                ]
                results = dict(zip(order, await asyncio.gather(*measured), strict=True))
            else:
                results = {}
                for kind in order:
                    target = servers[cell.server][kind]
                    results[kind] = await gw.measure(target, cell.era, op, cell.clients, args, session)
            for kind, result in results.items():
                cell.runs.setdefault(kind, []).append(result)
                say(
                    f"  rep {rep + 1} {cell.server:<7} {cell.era} c={cell.clients:<2} {kind:<14} {gw.rep_line(result)}"
                    f"  load {os.getloadavg()[0]:.1f}"
                )
    return [c.summary() for c in cells]


def pooled(cells: list[dict[str, Any]], kind: str, resamples: int = 4000) -> dict[str, Any]:
    """``kind``'s ratios to "off" over every cell's repetitions: their median and a 95% bootstrap interval of it.

    The ratios are resampled on a log scale (a ratio and its inverse weigh alike), with a fixed seed
    so the same results give the same interval.
    """
    logs = [math.log(x) for c in cells for x in c[kind]["ratio_to_off_per_rep"] if x > 0]
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(logs, k=len(logs))) for _ in range(resamples))
    low, high = medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]
    return {
        "reps": len(logs),
        "median": round(math.exp(statistics.median(logs)), 3),
        "interval_95": [round(math.exp(low), 3), round(math.exp(high), 3)],
    }


def noise_floor(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """How far the A/A ratios (off2/off) spread, against the metrics ratios, over every cell's repetitions."""
    aa = [x for c in cells for x in c["off2"]["ratio_to_off_per_rep"]]
    on = [x for c in cells for x in c["metrics"]["ratio_to_off_per_rep"]]
    aa_cpu = [c["off2"]["cpu_per_req_ratio_to_off"] for c in cells if c["off2"]["cpu_per_req_ratio_to_off"]]
    on_cpu = [c["metrics"]["cpu_per_req_ratio_to_off"] for c in cells if c["metrics"]["cpu_per_req_ratio_to_off"]]
    return {
        "off2_vs_off_all_reps_quartiles": [round(x, 3) for x in quartiles(aa)],
        "off2_vs_off_all_reps_range": [round(min(aa), 3), round(max(aa), 3)],
        "off2_vs_off_cell_medians": [c["off2"]["ratio_to_off"] for c in cells],
        "metrics_vs_off_all_reps_quartiles": [round(x, 3) for x in quartiles(on)],
        "metrics_vs_off_all_reps_range": [round(min(on), 3), round(max(on), 3)],
        "metrics_vs_off_cell_medians": [c["metrics"]["ratio_to_off"] for c in cells],
        "cpu_per_req_off2_vs_off_cell_medians": aa_cpu,
        "cpu_per_req_metrics_vs_off_cell_medians": on_cpu,
        "widest_off2_vs_off_cell_median_away_from_1": round(max(abs(1 - c["off2"]["ratio_to_off"]) for c in cells), 3),
        "pooled": {
            kind: pooled(cells, kind) for kind in cells[0] if isinstance(cells[0][kind], dict) and kind != "off"
        },
    }


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
    per_call_us = sum(added.values())
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
      call record (what every ``call`` pays with ``--metrics``);
    * ``audit_record_us``: :meth:`~skilldeck.gateway._metrics.GatewayMetrics.audited` of the call's
      policy decision (the other record every ``call`` writes);
    * ``tracing_listeners_us``: :func:`~skilldeck.serving._tracing.annotate` and ``annotate_audit`` of
      those two records with no provider (listening always, traced or not: what each ``call`` pays).
    """
    from types import SimpleNamespace

    from skilldeck.serving._metrics import RequestMetrics
    from skilldeck.serving._tracing import annotate, annotate_audit, traced

    def plain(x: int) -> int:
        return x

    wrapped = traced("bench")(plain)
    record = {"kind": "call", "client": "bench", "tool": "echo/echo", "isError": False, "seconds": 0.001}
    audit = {"decision": "allowed", "tool": "echo/echo", "reason": "granted"}
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
        "audit_record_us": round(least(lambda: [metrics.audited(audit) for _ in range(n)]), 3),
        "tracing_listeners_us": round(least(lambda: [(annotate(record), annotate_audit(audit)) for _ in range(n)]), 3),
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
    """req/s of each kind, then each one's ratio to "off": the median of the repetitions and its quartiles."""
    others = [k for k in kinds if k != "off"]
    lines = [
        "| server | protocol | clients | "
        + " | ".join(f"{k} req/s" for k in kinds)
        + " | "
        + " | ".join(f"{k} / off (quartiles)" for k in others)
        + " | CPU/req metrics / off |",
        "|---|---|---:|" + "---:|" * (len(kinds) + len(others) + 1),
    ]
    for c in cells:
        rps = " | ".join(f"{c[k]['rps']:,.0f}" for k in kinds)
        ratios = " | ".join(
            f"{100 * c[k]['ratio_to_off']:.1f}% ({100 * c[k]['ratio_to_off_quartiles'][0]:.0f}-"
            f"{100 * c[k]['ratio_to_off_quartiles'][2]:.0f})"
            for k in others
        )
        cpu = c["metrics"]["cpu_per_req_ratio_to_off"]
        lines.append(
            f"| {c['server']} | {c['era']} | {c['clients']} | {rps} | {ratios} | "
            + (f"{100 * cpu:.1f}% |" if cpu else "- |")
        )
    return "\n".join(lines)


def expected_cost(cells: list[dict[str, Any]], added: dict[str, float]) -> list[dict[str, Any]]:
    """Per cell, the share of the server's CPU per request that the work ``--metrics`` adds can explain.

    A proxied ``call`` pays the request middleware, its decision record and its audit record; a
    ``skills/list`` of ``serve`` the middleware alone.
    """
    out = []
    for c in cells:
        us = added["request_middleware_us"]
        if c["server"] == "gateway":
            us += added["decision_record_us"] + added["audit_record_us"]
        per_req_us = 1000 * c["off"]["server_cpu_ms_per_req"]
        out.append(
            {
                "server": c["server"],
                "era": c["era"],
                "clients": c["clients"],
                "added_us": round(us, 3),
                "server_cpu_us_per_req": round(per_req_us, 1),
                "share": round(us / per_req_us, 4) if per_req_us else None,
            }
        )
    return out


METRICS_CODE = ("skilldeck/serving/_metrics.py", "skilldeck/gateway/_metrics.py", "prometheus_client/")
"""The files whose own time is the counting's: the middleware, the decision listeners, the client library."""


def metrics_share(path: Path) -> dict[str, Any]:
    """Of a server's cProfile stats: the own time in :data:`METRICS_CODE`, per request and as a share of all."""
    stats = pstats.Stats(str(path))
    total = counted = 0.0
    requests = 0
    top: list[tuple[float, int, str]] = []
    for (filename, line, name), (_cc, calls, tottime, _cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        if any(marker in filename for marker in METRICS_CODE):
            counted += tottime
            top.append(
                (tottime, calls, f"{filename.rsplit('site-packages/', 1)[-1].rsplit('src/', 1)[-1]}:{line}({name})")
            )
        if filename.endswith("skilldeck/serving/_metrics.py") and name == "_is_error":
            requests += calls  # once per request answered (a coroutine's __call__ counts once per resumption)
    top.sort(reverse=True)
    return {
        "requests": requests,
        "profiled_cpu_s": round(total, 3),
        "metrics_code_s": round(counted, 4),
        "metrics_share": round(counted / total, 4) if total else None,
        "metrics_us_per_request_profiled": round(1e6 * counted / requests, 2) if requests else None,
        "top": [{"function": f, "calls": c, "tottime_s": round(t, 4)} for t, c, f in top[:10]],
    }


async def profile_windows(servers: dict[str, st.Target], args: argparse.Namespace, say: Any) -> None:
    """One warm-up and one measured window of every era and client count on each profiled server."""
    ops = {"gateway": (gw.PROXIED, gw.GatewaySession), "serve": (st.OPERATIONS["list"], st.Session)}
    for server, target in servers.items():
        op, session = ops[server]
        for era in args.eras:
            for clients in args.clients:
                for what in ("warm-up", "profiled"):
                    result = await gw.measure(target, era, op, clients, args, session)
                    say(f"  {what} {server:<7} {era} c={clients:<2} {gw.rep_line(result)}")


def profile(args: argparse.Namespace, say: Any) -> dict[str, Any]:
    """``gateway`` and ``serve`` with ``--metrics`` under cProfile: where the counting's time goes in the servers.

    Timed by each thread's CPU clock (``bench/_cpu_profile.py``), not the wall clock. cProfile charges
    each Python call a fixed overhead, so small functions (the counting's are) weigh more under it
    than they do unprofiled: the shares are an upper bound.
    """
    upstream = st.Target(
        "upstream", "echo upstream", [sys.executable, str(HERE / "_echo_server.py"), st.HOST], gw.EchoExpectations()
    )  # type: ignore[arg-type]
    servers = targets(["metrics"], {})
    profiled = {server: by_kind["metrics"] for server, by_kind in servers.items()}
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="skilldeck-bench-") as tmp:
        log_dir = Path(tmp)
        try:
            _url, config = gw.start_upstream(upstream, log_dir)
            for server, command in (
                ("gateway", ["gateway", "--config", str(config), "--lexical"]),
                ("serve", ["serve", str(st.PACK)]),
            ):
                target = profiled[server]
                target.port = free_port(st.HOST)
                stats = log_dir / f"{server}.pstats"
                profiler = [sys.executable, str(HERE / "_cpu_profile.py"), str(stats)]  # CPU time, not wall time
                target.command = [*profiler, "skilldeck.cli", *command]
                target.command += ["--metrics", f"{st.HOST}:{free_port(st.HOST)}", "--http", f"{st.HOST}:{target.port}"]
                st._start(target, log_dir)
            for target in (upstream, *profiled.values()):
                st._wait_ready(target)
            asyncio.run(profile_windows(profiled, args, say))
        finally:
            for target in profiled.values():
                if target.process is not None and target.process.poll() is None:
                    target.process.send_signal(signal.SIGINT)  # cProfile writes its stats on the way out
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        target.process.wait(timeout=60)
            for target in (*profiled.values(), upstream):
                st._stop(target)
        for server in profiled:
            out[server] = metrics_share(log_dir / f"{server}.pstats")
            say(
                f"  {server}: {out[server]['requests']} requests, metrics code {out[server]['metrics_share']:.2%} of "
                f"the profiled CPU, {out[server]['metrics_us_per_request_profiled']} us per request under cProfile"
            )
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = gw.era_parser(__doc__)
    p.add_argument("--baseline", metavar="REV", help="also run both servers as of this git revision, same run")
    p.add_argument(
        "--metrics-before", metavar="REV", help="also run both servers with --metrics as of this git revision"
    )
    p.add_argument("--calls", type=int, default=300, help="calls per round of the in-process CPU figure (default 300)")
    p.add_argument("--rounds", type=int, default=9, help="rounds of the in-process CPU figure (default 9)")
    p.add_argument(
        "--concurrent",
        action="store_true",
        help="measure every kind in the same window (each with its own clients) instead of one after another",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="instead: run both servers with --metrics under cProfile, one window per cell, and report the "
        "counting's share of their CPU (to --output, default bench/results/observability_profile.json)",
    )
    p.add_argument("--cpu", metavar="URL", help=argparse.SUPPRESS)  # the child process of cpu_per_call()
    return gw.parse_windows(p, argv, DEFAULT_OUTPUT)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cpu:
        import anyio

        from skilldeck.serving._runner import event_loop_options

        figures = anyio.run(_cpu_per_call, args.cpu, args.calls, args.rounds, backend_options=event_loop_options())
        print(json.dumps(figures))
        return 0

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.profile:
        return profile_report(args, argv, say)

    kinds = [
        "off",
        "metrics",
        "off2",
        *(["metrics_before"] if args.metrics_before else []),
        *(["baseline"] if args.baseline else []),
    ]
    upstream = st.Target(
        "upstream", "echo upstream", [sys.executable, str(HERE / "_echo_server.py"), st.HOST], gw.EchoExpectations()
    )  # type: ignore[arg-type]
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    started = dt.datetime.now(dt.UTC)
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="skilldeck-bench-") as tmp:
        log_dir = Path(tmp)
        revisions = {"baseline": args.baseline, "metrics_before": args.metrics_before}
        sources = {kind: src_at(rev, log_dir / kind) for kind, rev in revisions.items() if rev}
        servers = targets(kinds, sources)
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
                    with_metrics = kind in ("metrics", "metrics_before")
                    metrics = ["--metrics", f"{st.HOST}:{port()}"] if with_metrics else []
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
    # req/s on a loaded machine swings by more than these costs: the A/A pair (off2/off) says by how much
    met_throughput = all(c["metrics"]["ratio_to_off"] >= 1 - METRICS_COST_TARGET for c in cells)
    floor = noise_floor(cells)
    expected = expected_cost(cells, cpu["added_us"])
    met_cpu = (
        cpu["metrics_vs_off"] <= 1 + METRICS_COST_TARGET and cpu["share_of_service_call_cpu"] <= METRICS_COST_TARGET
    )
    errors = sum(c[k]["errors"] for c in cells for k in kinds)
    met = met_cpu and not errors
    packages = [*st.MAIN_PACKAGES, "prometheus_client", "opentelemetry-api"]
    report = {
        **gw.report_head("observability", argv, started, elapsed, load_at_start, packages),
        "settings": {
            **window_settings(args),
            "baseline": args.baseline,
            "metrics_before": args.metrics_before,
            "concurrent": args.concurrent,
            "gateway": gw.PROXIED.params,
        },
        "targets": {"metrics_cost_at_most": METRICS_COST_TARGET},
        "met": met,
        "met_in_process_cpu": met_cpu,
        "met_in_throughput": met_throughput,
        "errors": errors,
        "noise_floor": floor,
        "expected_cost": expected,
        "cells": cells,
        "cpu_in_process": cpu,
        "markdown_table": markdown_table(cells, kinds),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown_table(cells, kinds))
    say(
        f"A/A off2/off over all reps: quartiles {floor['off2_vs_off_all_reps_quartiles']}, "
        f"metrics/off {floor['metrics_vs_off_all_reps_quartiles']}; pooled {floor['pooled']}; expected cost "
        f"{[e['share'] for e in expected]}"
    )
    say(
        f"wrote {args.output} in {elapsed:.0f}s; metrics target {'met' if met_cpu else 'MISSED'} in process CPU, "
        f"{'met' if met_throughput else 'missed'} in req/s (load average {report['machine']['loadavg_at_start']})"
    )
    return 0 if met else 1


def profile_report(args: argparse.Namespace, argv: list[str] | None, say: Any) -> int:
    """``--profile``: :func:`profile`, written with the run's head."""
    output = PROFILE_OUTPUT if args.output == DEFAULT_OUTPUT else args.output
    load_at_start = os.getloadavg()
    started = dt.datetime.now(dt.UTC)
    wall0 = time.perf_counter()
    shares = profile(args, say)
    packages = [*st.MAIN_PACKAGES, "prometheus_client"]
    report = {
        **gw.report_head("observability", argv, started, time.perf_counter() - wall0, load_at_start, packages),
        "settings": window_settings(args),
        "profiled": shares,
    }
    output.write_text(json.dumps(report, indent=2) + "\n")
    say(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
