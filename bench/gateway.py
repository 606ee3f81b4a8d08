"""What the gateway adds to a ``tools/call``: proxied through ``skilldeck gateway`` vs sent directly, same run.

Run from the repository root::

    .venv/bin/python bench/gateway.py            # both eras, 1 and 8 clients, 3 reps (about 1.5 minutes)
    .venv/bin/python bench/gateway.py --quick    # 1 rep, shorter windows

Two subprocesses on 127.0.0.1: the upstream, ``bench/_echo_server.py`` (an ``MCPServer`` with one
``echo(text)`` tool, served over streamable HTTP by ``skilldeck.server._app.run_http``), and the
gateway, ``python -m skilldeck.cli gateway --config CONFIG --http 127.0.0.1:PORT`` whose config
names the upstream by URL. The load generator, the sessions and the measuring loop are those of
``bench/server_throughput.py`` (imported, not copied): each client owns one keep-alive connection
and one session and sends requests back to back; only exactly right answers count.

* **direct**: ``tools/call echo {"text": ...}`` sent to the upstream;
* **gateway**: ``tools/call call {"tool": "echo/echo", "arguments": {"text": ...}}`` sent to the
  gateway (each session first loads ``echo/echo``), which checks it against the gate and sends the
  same ``tools/call echo`` upstream on its own session.

Per era (2026-07-28, 2025-11-25) and client count (1, 8), each repetition runs both back to back,
alternating which goes first. Reported: the added p50 latency (gateway p50 - direct p50, per rep
and its median; target at most 1 ms) and the gateway's throughput as a share of direct (target at
least 40%; a proxy is two hops, so 50% is the floor), with the CPU of the measured process.
``--profile`` runs the gateway under cProfile and writes its top functions to the JSON.

Results: a table on stdout and ``bench/results/gateway.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import pstats
import shlex
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

import server_throughput as st  # noqa: E402
from _common import free_port, settle_windows, src_at, window_arguments, window_settings  # noqa: E402

REPO = st.REPO
DEFAULT_OUTPUT = HERE / "results" / "gateway.json"
TEXT = "hello from the load generator"
ADDED_P50_TARGET_MS = 1.0
THROUGHPUT_SHARE_TARGET = 0.40


@dataclass(frozen=True)
class ToolCall:
    """One ``tools/call`` as the load generator sends it (``run_rep`` reads ``method`` and ``params``)."""

    key: str
    label: str
    params: dict[str, Any]
    method: str = "tools/call"


DIRECT = ToolCall("direct", "tools/call echo", {"name": "echo", "arguments": {"text": TEXT}})
PROXIED = ToolCall(
    "gateway",
    "tools/call call(echo/echo)",
    {"name": "call", "arguments": {"tool": "echo/echo", "arguments": {"text": TEXT}}},
)
LOAD = {"name": "load", "arguments": {"ids": ["echo/echo"]}}


class EchoExpectations:
    """A right answer: not an error, and exactly the text sent, as the only content."""

    def check(self, op: Any, result: Any) -> None:
        if not isinstance(result, dict) or result.get("isError"):
            raise st.BenchError(f"{op.label}: error result {result!r:.200}")
        content = result.get("content")
        if not isinstance(content, list) or len(content) != 1 or content[0].get("text") != TEXT:
            raise st.BenchError(f"{op.label}: unexpected content {content!r:.200}")


class GatewaySession(st.Session):
    """A session with the gateway: opened, then ``load``\\ s ``echo/echo`` so ``call`` may send it."""

    async def open(self) -> None:
        await super().open()
        loaded = await self.call("tools/call", LOAD)
        tools = (loaded.get("structuredContent") or {}).get("tools") or []
        if loaded.get("isError") or [t.get("name") for t in tools] != ["echo/echo"]:
            raise st.BenchError(f"load echo/echo failed: {loaded!r:.300}")


@dataclass
class Cell:
    era: str
    clients: int
    runs: dict[str, list[st.RepResult]] = field(default_factory=dict)
    order: list[list[str]] = field(default_factory=list)

    def _vs_direct(self, kind: str) -> dict[str, Any]:
        direct, proxied = self.runs["direct"], self.runs[kind]
        pairs = list(zip(direct, proxied, strict=True))
        added = [g.p50_ms - d.p50_ms for d, g in pairs]
        share = [g.rps / d.rps for d, g in pairs if d.rps]
        return {
            "rps": round(statistics.median(r.rps for r in proxied), 1),
            "p50_ms": round(statistics.median(r.p50_ms for r in proxied), 3),
            "p99_ms": round(statistics.median(r.p99_ms for r in proxied), 3),
            "server_cpu_pct": round(statistics.median(r.server_cpu_pct for r in proxied), 1),
            "cpu_ms_per_call": round(statistics.median(10 * r.server_cpu_pct / r.rps for r in proxied if r.rps), 3),
            "added_p50_ms": round(statistics.median(added), 3),
            "added_p50_ms_per_rep": [round(x, 3) for x in added],
            "throughput_share": round(statistics.median(share), 3),
            "throughput_share_per_rep": [round(x, 3) for x in share],
            "errors": sum(r.errors for r in proxied),
            "reps": [r.as_dict() for r in proxied],
        }

    def summary(self) -> dict[str, Any]:
        direct = self.runs["direct"]
        out: dict[str, Any] = {
            "era": self.era,
            "clients": self.clients,
            "direct": {
                "rps": round(statistics.median(r.rps for r in direct), 1),
                "p50_ms": round(statistics.median(r.p50_ms for r in direct), 3),
                "p99_ms": round(statistics.median(r.p99_ms for r in direct), 3),
                "server_cpu_pct": round(statistics.median(r.server_cpu_pct for r in direct), 1),
                "cpu_ms_per_call": round(statistics.median(10 * r.server_cpu_pct / r.rps for r in direct if r.rps), 3),
                "errors": sum(r.errors for r in direct),
                "reps": [r.as_dict() for r in direct],
            },
            "order_per_rep": self.order,
        }
        for kind in self.runs:
            if kind != "direct":
                out[kind] = self._vs_direct(kind)
        return out


def meets_targets(cell: dict[str, Any], kind: str = "gateway") -> bool:
    entry = cell[kind]
    return bool(
        entry["added_p50_ms"] <= ADDED_P50_TARGET_MS
        and entry["throughput_share"] >= THROUGHPUT_SHARE_TARGET
        and entry["errors"] == 0
        and cell["direct"]["errors"] == 0
    )


def start_upstream(upstream: st.Target, log_dir: Path) -> tuple[str, Path]:
    """Start the echo upstream on a free port; its URL and an ``mcpServers`` file naming it ``echo``."""
    upstream.port = free_port(st.HOST)
    upstream.command.append(str(upstream.port))
    st._start(upstream, log_dir)
    st._wait_ready(upstream)
    url = f"http://{st.HOST}:{upstream.port}{st.PATH}"
    config = log_dir / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"echo": {"url": url}}}))
    return url, config


def report_head(
    name: str,
    argv: list[str] | None,
    started: dt.datetime,
    elapsed: float,
    load_at_start: tuple[float, float, float] | None,
    packages: list[str],
) -> dict[str, Any]:
    """What a result file says first: the benchmark, when, the command, how long, the machine, the versions."""
    return {
        "benchmark": name,
        "date": started.isoformat(timespec="seconds"),
        "command": shlex.join([f"bench/{name}.py", *(argv if argv is not None else sys.argv[1:])]),
        "elapsed_s": round(elapsed, 1),
        "machine": st.machine(load_at_start),
        "versions": st._versions(sys.executable, packages),
    }


def rotated(kinds: list[str], shift: int) -> list[str]:
    """``kinds`` starting ``shift`` places on: each repetition puts another one first."""
    shift %= len(kinds)
    return kinds[shift:] + kinds[:shift]


async def measure(
    target: st.Target, era: str, op: Any, clients: int, args: argparse.Namespace, session: Any
) -> st.RepResult:
    """One repetition of ``op`` on ``target`` with the run's windows, over raw HTTP."""
    return await st.run_rep(target, era, op, clients, args.warmup, args.duration, "raw", session)


def rep_line(result: st.RepResult) -> str:
    """A repetition's figures, as the progress lines print them."""
    return (
        f"{result.rps:7.0f} req/s  p50 {result.p50_ms:6.3f} ms  server CPU {result.server_cpu_pct:3.0f}%  "
        f"client CPU {result.client_cpu_pct:3.0f}%"
        + (f"  errors {result.errors} ({result.first_error})" if result.errors else "")
    )


async def run_cells(
    upstream: st.Target, gateways: dict[str, st.Target], args: argparse.Namespace, say: Any
) -> list[dict[str, Any]]:
    runs: dict[str, tuple[st.Target, ToolCall, Any]] = {"direct": (upstream, DIRECT, st.Session)}
    runs |= {kind: (target, PROXIED, GatewaySession) for kind, target in gateways.items()}
    kinds = list(runs)
    cells = [Cell(era, clients) for era in args.eras for clients in args.clients]
    for rep in range(args.reps):
        for i, cell in enumerate(cells):
            order = rotated(kinds, rep + i)  # rotate who goes first
            cell.order.append(order)
            for kind in order:
                target, op, session = runs[kind]
                result = await measure(target, cell.era, op, cell.clients, args, session)
                cell.runs.setdefault(kind, []).append(result)
                say(f"  rep {rep + 1} {cell.era} c={cell.clients:<2} {kind:<8} {rep_line(result)}")
    return [c.summary() for c in cells]


def markdown_table(cells: list[dict[str, Any]]) -> str:
    lines = [
        "| protocol | clients | path | req/s | share of direct | p50 ms | added p50 ms | server CPU % | CPU ms / call |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        for kind in [k for k in c if isinstance(c[k], dict)]:
            e = c[kind]
            share = f"{100 * e['throughput_share']:.0f}%" if "throughput_share" in e else ""
            added = f"{e['added_p50_ms']:.2f}" if "added_p50_ms" in e else ""
            lines.append(
                f"| {c['era']} | {c['clients']} | {kind} | {e['rps']:,.0f} | {share} | {e['p50_ms']:.2f} | {added} "
                f"| {e['server_cpu_pct']:.0f} | {e['cpu_ms_per_call']:.2f} |"
            )
    return "\n".join(lines)


def profile_top(path: Path, limit: int = 40) -> list[dict[str, Any]]:
    """The gateway's functions by cumulative time, then by own time (cProfile's output)."""
    stats = pstats.Stats(str(path))
    rows = []
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = filename
        for marker in ("site-packages/", "src/"):
            if marker in filename:
                where = filename.split(marker, 1)[1]
        rows.append({"function": f"{where}:{line}({name})", "calls": calls, "tottime_s": tottime, "cumtime_s": cumtime})
    by_own = sorted(rows, key=lambda r: -r["tottime_s"])[:limit]
    by_cum = sorted(rows, key=lambda r: -r["cumtime_s"])[:limit]
    return [{"by": "tottime", "rows": by_own}, {"by": "cumtime", "rows": by_cum}]


# -- where a proxied call's CPU goes (in one process, so process CPU time can be split) -------------


async def _breakdown(url: str, calls: int) -> dict[str, float]:
    """CPU per call (process time, ms) of the upstream hop alone, the gateway's check, and check + hop.

    Run in a child process (``--breakdown URL``) so the baseline's ``src/`` can be put on its path.
    ``check_call_70_servers`` is the same check with LiveMCPBench's 70 servers (527 tools) listed.
    """
    import gateway_agent as agent
    from skilldeck.gateway._service import GatewayService
    from skilldeck.host import Host, HttpServer, InProcessServer, ServerSpec
    from skilldeck.serving._policy import caller_for

    caller = caller_for(None, None, None)
    arguments = {"text": TEXT}
    out: dict[str, float] = {}

    def per_call(started: float) -> float:
        return round(1000 * (time.process_time() - started) / calls, 4)

    out["http_post"] = await _http_post(url, calls, arguments)
    async with Host([ServerSpec("echo", HttpServer(url))]) as host:
        service = GatewayService(host)
        await service.load(caller, "bench", ["echo/echo"])
        client = host.connections.connected["echo"].client
        await service.call(caller, "bench", "echo/echo", arguments)
        for _ in range(2):  # the second pass is the one kept (warm)
            started = time.process_time()
            for _ in range(calls):
                await client.call_tool("echo", arguments)
            out["upstream_hop"] = per_call(started)
            started = time.process_time()
            for _ in range(calls):
                service.check_call(caller, "bench", "echo/echo", arguments)
            out["check_call"] = per_call(started)
            started = time.process_time()
            for _ in range(calls):
                await service.call(caller, "bench", "echo/echo", arguments)
            out["service_call"] = per_call(started)
    servers, _ = agent.catalog()
    upstreams = [
        ServerSpec(s["label"], InProcessServer(agent.upstream_server(s["label"], s["tools"])[0])) for s in servers
    ]
    async with Host(upstreams) as host:
        service = GatewayService(host)
        await service.load(caller, "bench", ["whois/whois_domain"])
        whois = {"domain": "example.com"}
        service.check_call(caller, "bench", "whois/whois_domain", whois)
        started = time.process_time()
        for _ in range(calls):
            service.check_call(caller, "bench", "whois/whois_domain", whois)
        out["check_call_70_servers"] = per_call(started)
    return out


async def _http_post(url: str, calls: int, arguments: dict[str, Any]) -> float:
    """CPU ms per call of the HTTP library the SDK's client runs on (httpx2) alone: the same
    2026-07-28 ``tools/call`` posted on one keep-alive connection and its JSON body parsed, with no
    MCP session, dispatcher or model validation. No client hop built on it can cost less."""
    import httpx2

    meta = {
        "io.modelcontextprotocol/protocolVersion": st.MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": arguments, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": st.MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }
    async with httpx2.AsyncClient() as http:
        for _ in range(2):  # the second pass is the one kept (warm)
            started = time.process_time()
            for _ in range(calls):
                response = await http.post(url, json=body, headers=headers)
                if response.json()["result"]["content"][0]["text"] != arguments["text"]:
                    raise RuntimeError(f"unexpected answer: {response.text[:200]}")
            spent = time.process_time() - started
    return round(1000 * spent / calls, 4)


def floor(cells: list[dict[str, Any]], cpu: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """What any proxy on this stack pays per call, next to what the gateway pays (CPU ms, 1 client).

    A proxied call is at least one SDK server pass (what the upstream spends on a whole direct
    call) plus one SDK client hop (``upstream_hop``); the gateway's own decisions are the rest.
    ``http_library_ms`` is the part of the hop that is the SDK's HTTP library alone (``http_post``).
    The added p50 at 1 client cannot be below the gateway's CPU per call.
    """
    rows = []
    for cell in cells:
        if cell["clients"] != 1:
            continue
        for kind, figures in cpu.items():
            server_pass = cell["direct"]["cpu_ms_per_call"]
            rows.append(
                {
                    "era": cell["era"],
                    "gateway": kind,
                    "server_pass_ms": server_pass,
                    "client_hop_ms": figures["upstream_hop"],
                    "http_library_ms": figures.get("http_post"),
                    "floor_ms": round(server_pass + figures["upstream_hop"], 3),
                    "gateway_cpu_ms": cell[kind]["cpu_ms_per_call"],
                }
            )
    return rows


def breakdown(url: str, calls: int, pythonpath: Path | None = None) -> dict[str, float]:
    env = {**os.environ, **({"PYTHONPATH": str(pythonpath)} if pythonpath else {})}
    command = [sys.executable, str(Path(__file__).resolve()), "--breakdown", url, "--calls", str(calls)]
    done = subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def era_parser(doc: str | None) -> argparse.ArgumentParser:
    """The arguments of a benchmark over both eras (windows, clients, ``--eras``), described by ``doc``'s first line."""
    p = argparse.ArgumentParser(description=doc.split("\n\n", 1)[0] if doc else None)
    window_arguments(p, duration="2", clients=[1, 8])
    p.add_argument("--eras", nargs="+", choices=st.ERAS, default=list(st.ERAS), help="protocol versions to run")
    return p


def parse_windows(p: argparse.ArgumentParser, argv: list[str] | None, output: Path) -> argparse.Namespace:
    """``argv`` parsed (with ``--output``, by default ``output``) and its windows settled."""
    p.add_argument("--output", type=Path, default=output, help="JSON results path")
    args = p.parse_args(argv)
    settle_windows(p, args)
    return args


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = era_parser(__doc__)
    p.add_argument("--profile", type=Path, metavar="FILE", help="run the gateway under cProfile, stats to FILE")
    p.add_argument(
        "--baseline",
        metavar="REV",
        help="also run the gateway as of this git revision (its src/ checked out to a temp dir), same run",
    )
    p.add_argument("--calls", type=int, default=300, help="sequential calls per breakdown figure (default 300)")
    p.add_argument("--breakdown", metavar="URL", help=argparse.SUPPRESS)  # the child process of breakdown()
    return parse_windows(p, argv, DEFAULT_OUTPUT)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.breakdown:
        import anyio

        try:  # the event loop the gateway command runs on (uvloop where installed), as of that src/
            from skilldeck.server._app import event_loop_options

            options = event_loop_options()
        except ImportError:  # an older src/: asyncio's own loop
            options = {}
        figures = anyio.run(_breakdown, args.breakdown, args.calls, backend_options=options)
        print(json.dumps({**figures, "uvloop": bool(options)}))
        return 0

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    upstream = st.Target(
        "upstream", "echo upstream", [sys.executable, str(HERE / "_echo_server.py"), st.HOST], EchoExpectations()
    )  # type: ignore[arg-type]
    gateways = {"gateway": st.Target("gateway", "skilldeck gateway", [], EchoExpectations())}  # type: ignore[arg-type]
    if args.baseline:
        gateways["baseline"] = st.Target("baseline", f"gateway at {args.baseline}", [], EchoExpectations())  # type: ignore[arg-type]
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    started = dt.datetime.now(dt.UTC)
    wall0 = time.perf_counter()
    top: list[dict[str, Any]] | None = None
    with tempfile.TemporaryDirectory(prefix="skilldeck-bench-") as tmp:
        log_dir = Path(tmp)
        try:
            url, config = start_upstream(upstream, log_dir)
            for kind, gateway in gateways.items():
                gateway.port = free_port(st.HOST)
                profiler = ["-m", "cProfile", "-o", str(args.profile)] if args.profile and kind == "gateway" else []
                gateway.command = [sys.executable, *profiler, "-m", "skilldeck.cli", "gateway", "--config", str(config)]
                gateway.command += ["--http", f"{st.HOST}:{gateway.port}"]
                if kind == "baseline":
                    gateway.env = {"PYTHONPATH": str(src_at(args.baseline, log_dir / "baseline"))}
                st._start(gateway, log_dir)
            for gateway in gateways.values():
                st._wait_ready(gateway)
            say(f"upstream at {url}; gateways at " + ", ".join(f"{k} :{g.port}" for k, g in gateways.items()))
            cells = asyncio.run(run_cells(upstream, gateways, args, say))
            cpu = {"gateway": breakdown(url, args.calls)}
            if args.baseline:
                cpu["baseline"] = breakdown(url, args.calls, log_dir / "baseline" / "src")
            for kind, figures in cpu.items():
                say(f"  CPU ms per call ({kind}): " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()))
            floors = floor(cells, cpu)
            for row in floors:
                say(
                    f"  floor {row['era']} {row['gateway']}: server pass {row['server_pass_ms']:.2f} + client hop "
                    f"{row['client_hop_ms']:.2f} = {row['floor_ms']:.2f} ms CPU; the gateway spent "
                    f"{row['gateway_cpu_ms']:.2f}; the HTTP library alone {row['http_library_ms']} ms per POST"
                )
        finally:
            profiled = gateways["gateway"].process
            if args.profile and profiled is not None and profiled.poll() is None:
                profiled.send_signal(signal.SIGINT)  # cProfile writes its stats on the way out
                with contextlib.suppress(subprocess.TimeoutExpired):
                    profiled.wait(timeout=30)
            for target in (*gateways.values(), upstream):
                st._stop(target)
        if args.profile and args.profile.exists():
            top = profile_top(args.profile)
    elapsed = time.perf_counter() - wall0
    ok = all(meets_targets(c) for c in cells)
    baseline_ok = all(meets_targets(c, "baseline") for c in cells) if args.baseline else None
    report = {
        **report_head("gateway", argv, started, elapsed, load_at_start, st.MAIN_PACKAGES),
        "settings": {
            **window_settings(args),
            "profiled": bool(args.profile),
            "baseline": args.baseline,
            "direct": DIRECT.params,
            "gateway": PROXIED.params,
        },
        "targets": {"added_p50_ms_at_most": ADDED_P50_TARGET_MS, "throughput_share_at_least": THROUGHPUT_SHARE_TARGET},
        "met": ok,
        "baseline_met": baseline_ok,
        "cells": cells,
        "cpu_ms_per_call_in_process": cpu,
        "floor_cpu_ms_per_call": floors,
        "markdown_table": markdown_table(cells),
    }
    if top is not None:
        report["profile"] = top
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown_table(cells))
    say(f"wrote {args.output} in {elapsed:.0f}s; targets {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
