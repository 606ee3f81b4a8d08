"""What the gateway adds to a ``tools/call``: proxied through ``skilldeck gateway`` vs sent directly, same run.

Run from the repository root::

    .venv/bin/python bench/gateway.py            # both eras, 1 and 8 clients, 3 reps, with peers (about 4 minutes)
    .venv/bin/python bench/gateway.py --quick    # 1 rep, shorter windows

Two subprocesses on 127.0.0.1: the upstream, ``bench/_echo_server.py`` (an ``MCPServer`` with one
``echo(text)`` tool, served over streamable HTTP by ``skilldeck.serving._runner.run_http``), and the
gateway, ``python -m skilldeck.cli gateway --config CONFIG --http 127.0.0.1:PORT`` whose config
names the upstream by URL. The load generator, the sessions and the measuring loop are those of
``bench/server_throughput.py`` (imported, not copied): each client owns one keep-alive connection
and one session and sends requests back to back; only exactly right answers count.

* **direct**: ``tools/call echo {"text": ...}`` sent to the upstream;
* **gateway**: ``tools/call call {"tool": "echo/echo", "arguments": {"text": ...}}`` sent to the
  gateway (each session first loads ``echo/echo``), which checks it against the gate and sends the
  same ``tools/call echo`` upstream on its own session.

* **peers** (``--peers``, default all three): the proxies a user could pick instead, in front of the
  same upstream and sent the direct call (they list the upstream's own tools):

  - ``fastmcp-fresh``: FastMCP 4.2.3's ``create_proxy(URL)`` as documented, a new backend client
    per request (``bench/_fastmcp_proxy.py fresh``);
  - ``fastmcp-reused``: ``create_proxy(client)`` with one connected ``fastmcp.Client``, reused for
    every request (``bench/_fastmcp_proxy.py reused``);
  - ``mcp-proxy``: the npm ``mcp-proxy`` 6.7.19 on Node 22 and the TypeScript SDK, its command's
    wiring over one shared upstream ``Client`` (``bench/_mcp_proxy.mjs``).

  FastMCP runs from ``bench/.venv-fastmcp`` (created and filled with ``pip install fastmcp==4.2.3``
  when missing, shared with ``server_throughput.py``); ``mcp-proxy`` is installed with the npm of
  ``npx -p node@22`` into ``bench/.mcp-proxy`` (git-ignored). A peer that cannot be installed or
  started is reported as skipped, with the reason, in the table and the JSON.

Per era (2026-07-28, 2025-11-25) and client count (1, 8), each repetition runs every path back to
back (round-robin over the cells, rotating which goes first), and the 1-minute load average is
recorded as each repetition begins. Reported: the gateway against each peer, repetition by
repetition: its throughput over the peer's and its CPU per call (the proxy process's CPU time from
/proc over completed calls) over the peer's, as medians with their range; the run meets its
target when every median throughput ratio is at least 1.0 and every CPU ratio at most 1.0. Also
the added p50 latency over direct and the throughput as a share of direct (the earlier targets,
1 ms and 40%, are withdrawn: no proxy with the SDK on both sides reaches them).
``--profile`` runs the gateway under cProfile and writes its top functions to the JSON.

Results: two tables on stdout (against direct; against the peers) and ``bench/results/gateway.json``.
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
import shutil
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
FASTMCP_SPEC = "fastmcp==4.2.3"
FASTMCP_PROXY = HERE / "_fastmcp_proxy.py"
MCP_PROXY_SPEC = "mcp-proxy@6.7.19"
MCP_PROXY_SCRIPT = HERE / "_mcp_proxy.mjs"
MCP_PROXY_DIR = HERE / ".mcp-proxy"  # git-ignored: node_modules with mcp-proxy, and a copy of MCP_PROXY_SCRIPT
PEERS = ("fastmcp-fresh", "fastmcp-reused", "mcp-proxy")
OTHER_GATEWAYS = ("baseline", "json-bound")
"""Other gateways a run may add (``--baseline REV``, ``--json-bound``), compared with the peers as the gateway is."""
_JSON_GATEWAY = """
import functools, sys
import skilldeck.gateway._app as gateway_app
from skilldeck.serving._runner import run_http
gateway_app.run_http = functools.partial(run_http, json_response=True)
sys.argv = ["skilldeck", *sys.argv[1:]]
from skilldeck.cli import main
sys.exit(main())
"""
"""The gateway with every reply one JSON body (the SDK's ``json_response``): nothing relayed during a call."""
"""The other proxies a user could put in front of the same upstream (``--peers``)."""


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


def cpu_per_call(r: st.RepResult) -> float:
    """The measured process's CPU milliseconds per completed call in one repetition."""
    return 10 * r.server_cpu_pct / r.rps if r.rps else float("nan")


def spread(values: list[float], digits: int = 3) -> dict[str, Any]:
    """Median, lowest and highest of per-repetition figures, and the figures themselves."""
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "per_rep": [round(v, digits) for v in values],
    }


@dataclass
class Cell:
    era: str
    clients: int
    runs: dict[str, list[st.RepResult]] = field(default_factory=dict)
    order: list[list[str]] = field(default_factory=list)
    load: list[float] = field(default_factory=list)
    """The 1-minute load average as each repetition of this cell began."""

    def _figures(self, kind: str) -> dict[str, Any]:
        runs = self.runs[kind]
        return {
            "rps": round(statistics.median(r.rps for r in runs), 1),
            "p50_ms": round(statistics.median(r.p50_ms for r in runs), 3),
            "p99_ms": round(statistics.median(r.p99_ms for r in runs), 3),
            "server_cpu_pct": round(statistics.median(r.server_cpu_pct for r in runs), 1),
            "cpu_ms_per_call": round(statistics.median(cpu_per_call(r) for r in runs if r.rps), 3),
            "errors": sum(r.errors for r in runs),
        }

    def _vs_direct(self, kind: str) -> dict[str, Any]:
        direct, proxied = self.runs["direct"], self.runs[kind]
        pairs = list(zip(direct, proxied, strict=True))
        added = [g.p50_ms - d.p50_ms for d, g in pairs]
        share = [g.rps / d.rps for d, g in pairs if d.rps]
        return {
            **self._figures(kind),
            "added_p50_ms": round(statistics.median(added), 3),
            "added_p50_ms_per_rep": [round(x, 3) for x in added],
            "throughput_share": round(statistics.median(share), 3),
            "throughput_share_per_rep": [round(x, 3) for x in share],
            "reps": [r.as_dict() for r in proxied],
        }

    def vs_peer(self, peer: str, ours: str = "gateway") -> dict[str, Any]:
        """``ours`` against ``peer``, repetition by repetition (the same round of the same cell).

        ``throughput``: our req/s over the peer's (above 1: we serve more); ``cpu_per_call``: our
        CPU per call over the peer's (below 1: we spend less).
        """
        pairs = [(g, p) for g, p in zip(self.runs[ours], self.runs[peer], strict=True) if g.rps and p.rps]
        if not pairs:
            return {"throughput": None, "cpu_per_call": None}
        return {
            "throughput": spread([g.rps / p.rps for g, p in pairs]),
            "cpu_per_call": spread([cpu_per_call(g) / cpu_per_call(p) for g, p in pairs]),
        }

    def summary(self, peers: list[str]) -> dict[str, Any]:
        direct = self.runs["direct"]
        out: dict[str, Any] = {
            "era": self.era,
            "clients": self.clients,
            "loadavg_1m_per_rep": [round(x, 2) for x in self.load],
            "direct": {**self._figures("direct"), "reps": [r.as_dict() for r in direct]},
            "order_per_rep": self.order,
        }
        for kind in self.runs:
            if kind != "direct":
                out[kind] = self._vs_direct(kind)
        out["gateway_vs_peers"] = {peer: self.vs_peer(peer) for peer in peers}
        for ours in [k for k in self.runs if k in OTHER_GATEWAYS]:
            out[f"{ours}_vs_peers"] = {peer: self.vs_peer(peer, ours) for peer in peers}
        return out


def meets_targets(cell: dict[str, Any], kind: str = "gateway") -> bool:
    """No errors, and ``kind`` level with or ahead of every peer: throughput ≥ 1.0x, CPU per call ≤ 1.0x (medians)."""
    if cell[kind]["errors"] or cell["direct"]["errors"]:
        return False
    if kind != "gateway":
        return True
    for ratios in cell["gateway_vs_peers"].values():
        if ratios["throughput"] is None:
            return False
        if ratios["throughput"]["median"] < 1.0 or ratios["cpu_per_call"]["median"] > 1.0:
            return False
    return True


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


# -- the peer proxies -----------------------------------------------------------------------------


class PeerUnavailable(Exception):
    """A peer proxy could not be installed or started; the run reports it as skipped, with this reason."""


def fastmcp_python(say: Any) -> Path:
    """The interpreter of ``bench/.venv-fastmcp`` with exactly FASTMCP_SPEC installed (created or filled once)."""
    python = st.ensure_fastmcp_venv(FASTMCP_SPEC, say)
    wanted = FASTMCP_SPEC.split("==", 1)[1]
    if st._versions(python, ["fastmcp"])["packages"]["fastmcp"] != wanted:
        st.pip_install(python, FASTMCP_SPEC, say)
    return python


def mcp_proxy_node(say: Any) -> str:
    """Node 22, with MCP_PROXY_SPEC installed into MCP_PROXY_DIR once (npm of ``npx -p node@22``) and the script copied there."""
    node = st._node22(say)
    marker = MCP_PROXY_DIR / ".installed-from"
    if not (marker.is_file() and marker.read_text() == MCP_PROXY_SPEC):
        shutil.rmtree(MCP_PROXY_DIR, ignore_errors=True)
        MCP_PROXY_DIR.mkdir(parents=True)
        (MCP_PROXY_DIR / "package.json").write_text('{"private": true}\n')
        say(f"npm install {MCP_PROXY_SPEC} into {MCP_PROXY_DIR.relative_to(REPO)} ...")
        npx = shutil.which("npx")
        assert npx is not None  # _node22 found it
        command = [npx, "-y", "-p", st.NODE, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error"]
        subprocess.run([*command, MCP_PROXY_SPEC], cwd=MCP_PROXY_DIR, check=True, stdout=subprocess.DEVNULL)
        marker.write_text(MCP_PROXY_SPEC)
    shutil.copyfile(MCP_PROXY_SCRIPT, MCP_PROXY_DIR / MCP_PROXY_SCRIPT.name)
    return node


def _node_versions(node: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in ("mcp-proxy", "@modelcontextprotocol/client", "@modelcontextprotocol/server"):
        manifest = MCP_PROXY_DIR / "node_modules" / name / "package.json"
        found[name] = json.loads(manifest.read_text())["version"] if manifest.is_file() else None
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return {"node": version, "packages": found}


def peer_command(peer: str, url: str, port: int, say: Any) -> tuple[list[str], dict[str, Any]]:
    """How to start ``peer`` in front of ``url`` on ``port``, and the versions it runs; installs it first if needed."""
    try:
        if peer.startswith("fastmcp-"):
            python = fastmcp_python(say)
            command = [str(python), str(FASTMCP_PROXY), peer.removeprefix("fastmcp-"), url, st.HOST, str(port)]
            return command, st._versions(python, st.FASTMCP_PACKAGES)
        node = mcp_proxy_node(say)
        script = MCP_PROXY_DIR / MCP_PROXY_SCRIPT.name
        return [node, str(script), url, st.HOST, str(port)], _node_versions(node)
    except subprocess.CalledProcessError as e:
        raise PeerUnavailable(f"{shlex.join(map(str, e.cmd))} exited with {e.returncode}") from e
    except (OSError, SystemExit) as e:
        raise PeerUnavailable(str(e)) from e


def start_peers(
    peers: list[str], url: str, log_dir: Path, say: Any
) -> tuple[dict[str, st.Target], dict[str, str], dict[str, Any]]:
    """The peers that installed and listen; the reason for each that did not; the versions each runs."""
    started: dict[str, st.Target] = {}
    skipped: dict[str, str] = {}
    versions: dict[str, Any] = {}
    for peer in peers:
        target = st.Target(peer, peer, [], EchoExpectations())  # type: ignore[arg-type]
        target.port = free_port(st.HOST)
        try:
            target.command, versions[peer] = peer_command(peer, url, target.port, say)
            st._start(target, log_dir)
            st._wait_ready(target)
        except (PeerUnavailable, SystemExit) as e:
            st._stop(target)
            skipped[peer] = " ".join(str(e).split())[:300]
            say(f"  peer {peer} skipped: {skipped[peer]}")
            continue
        started[peer] = target
    return started, skipped, versions


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
    upstream: st.Target,
    gateways: dict[str, st.Target],
    peers: dict[str, st.Target],
    args: argparse.Namespace,
    say: Any,
) -> list[dict[str, Any]]:
    """Every cell, round-robin: each repetition runs every path of every cell once, rotating who goes first.

    A peer proxy is sent the direct call (``tools/call echo``): it lists the upstream's own tools.
    """
    runs: dict[str, tuple[st.Target, ToolCall, Any]] = {"direct": (upstream, DIRECT, st.Session)}
    runs |= {kind: (target, PROXIED, GatewaySession) for kind, target in gateways.items()}
    runs |= {kind: (target, DIRECT, st.Session) for kind, target in peers.items()}
    kinds = list(runs)
    cells = [Cell(era, clients) for era in args.eras for clients in args.clients]
    for rep in range(args.reps):
        for i, cell in enumerate(cells):
            order = rotated(kinds, rep + i)  # rotate who goes first
            cell.order.append(order)
            cell.load.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"))
            for kind in order:
                target, op, session = runs[kind]
                result = await measure(target, cell.era, op, cell.clients, args, session)
                cell.runs.setdefault(kind, []).append(result)
                say(f"  rep {rep + 1} {cell.era} c={cell.clients:<2} {kind:<14} {rep_line(result)}")
    return [c.summary(list(peers)) for c in cells]


def markdown_table(cells: list[dict[str, Any]]) -> str:
    lines = [
        "| protocol | clients | path | req/s | share of direct | p50 ms | added p50 ms | server CPU % | CPU ms / call |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        for kind in [k for k in c if isinstance(c[k], dict) and "rps" in c[k]]:
            e = c[kind]
            share = f"{100 * e['throughput_share']:.0f}%" if "throughput_share" in e else ""
            added = f"{e['added_p50_ms']:.2f}" if "added_p50_ms" in e else ""
            lines.append(
                f"| {c['era']} | {c['clients']} | {kind} | {e['rps']:,.0f} | {share} | {e['p50_ms']:.2f} | {added} "
                f"| {e['server_cpu_pct']:.0f} | {e['cpu_ms_per_call']:.2f} |"
            )
    return "\n".join(lines)


def ratio_text(ratios: dict[str, Any] | None) -> str:
    """``1.23x (1.10–1.31)``: the median ratio and its range over the repetitions."""
    if ratios is None:
        return "n/a"
    return f"{ratios['median']:.2f}x ({ratios['min']:.2f}–{ratios['max']:.2f})"


def peers_table(cells: list[dict[str, Any]], skipped: dict[str, str], ours: str = "gateway") -> str:
    """``ours`` against each peer proxy: req/s and CPU per call of both, and their ratios (median, range)."""
    lines = [
        f"| protocol | clients | peer | peer req/s | {ours} req/s | {ours} ÷ peer req/s | peer CPU ms / call "
        f"| {ours} CPU ms / call | {ours} ÷ peer CPU / call | load avg |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        gateway = c[ours]
        load = statistics.median(c["loadavg_1m_per_rep"]) if c["loadavg_1m_per_rep"] else float("nan")
        for peer, ratios in c[f"{ours}_vs_peers"].items():
            e = c[peer]
            lines.append(
                f"| {c['era']} | {c['clients']} | {peer} | {e['rps']:,.0f} | {gateway['rps']:,.0f} "
                f"| {ratio_text(ratios['throughput'])} | {e['cpu_ms_per_call']:.2f} | {gateway['cpu_ms_per_call']:.2f} "
                f"| {ratio_text(ratios['cpu_per_call'])} | {load:.1f} |"
            )
    lines += [f"| | | {peer} | skipped: {reason} | | | | | | |" for peer, reason in skipped.items()]
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
    p.add_argument(
        "--profile", type=Path, metavar="FILE", help="run the gateway under a CPU-time cProfile, stats to FILE"
    )
    p.add_argument(
        "--baseline",
        metavar="REV",
        help="also run the gateway as of this git revision (its src/ checked out to a temp dir), same run",
    )
    peers_help = "peer proxies in the same run (default all; --peers with none to leave them out)"
    p.add_argument("--peers", nargs="*", choices=PEERS, default=list(PEERS), help=peers_help)
    p.add_argument(
        "--json-bound",
        action="store_true",
        help="also run the gateway with every reply one JSON body (SDK json_response): what choosing per "
        "response inside the SDK's legacy transport would reach for calls that relay nothing",
    )
    p.add_argument("--calls", type=int, default=300, help="sequential calls per breakdown figure (default 300)")
    p.add_argument("--breakdown", metavar="URL", help=argparse.SUPPRESS)  # the child process of breakdown()
    return parse_windows(p, argv, DEFAULT_OUTPUT)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.breakdown:
        import anyio

        try:  # the event loop the gateway command runs on (uvloop where installed), as of that src/
            from skilldeck.serving._runner import event_loop_options

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
    if args.json_bound:
        gateways["json-bound"] = st.Target("json-bound", "gateway answering JSON", [], EchoExpectations())  # type: ignore[arg-type]
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    started = dt.datetime.now(dt.UTC)
    wall0 = time.perf_counter()
    top: list[dict[str, Any]] | None = None
    peers: dict[str, st.Target] = {}
    skipped: dict[str, str] = {}
    peer_versions: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="skilldeck-bench-") as tmp:
        log_dir = Path(tmp)
        try:
            url, config = start_upstream(upstream, log_dir)
            for kind, gateway in gateways.items():
                gateway.port = free_port(st.HOST)
                cli = ["-m", "skilldeck.cli"]
                if args.profile and kind == "gateway":  # CPU time, as server_throughput.py profiles
                    cli = ["-c", st._PROFILED_SERVE, str(args.profile.resolve())]
                elif kind == "json-bound":
                    cli = ["-c", _JSON_GATEWAY]
                gateway.command = [sys.executable, *cli, "gateway", "--config", str(config)]
                gateway.command += ["--http", f"{st.HOST}:{gateway.port}"]
                if kind == "baseline":
                    gateway.env = {"PYTHONPATH": str(src_at(args.baseline, log_dir / "baseline"))}
                st._start(gateway, log_dir)
            for gateway in gateways.values():
                st._wait_ready(gateway)
            peers, skipped, peer_versions = start_peers(args.peers, url, log_dir, say)
            say(
                f"upstream at {url}; gateways and peers at "
                + ", ".join(f"{k} :{g.port}" for k, g in (gateways | peers).items())
            )
            cells = asyncio.run(run_cells(upstream, gateways, peers, args, say))
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
            for target in (*gateways.values(), *peers.values(), upstream):
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
            "json_bound": args.json_bound,
            "direct": DIRECT.params,
            "gateway": PROXIED.params,
        },
        "peers": {
            "run": list(peers),
            "skipped": skipped,
            "versions": peer_versions,
            "how": {
                "fastmcp-fresh": "bench/_fastmcp_proxy.py fresh: fastmcp.server.create_proxy(URL), a new backend "
                "client per request in the front request's era (FastMCP's documented default)",
                "fastmcp-reused": "bench/_fastmcp_proxy.py reused: create_proxy(Client(URL)) with the client "
                "connected once (mode auto: 2026-07-28 upstream), one backend session for every request",
                "mcp-proxy": "bench/_mcp_proxy.mjs: mcp-proxy's startHTTPServer + proxyServer over one shared "
                "TypeScript SDK Client (StreamableHTTPClientTransport, --upstreamProtocol auto: 2026-07-28 "
                "upstream), the command's other defaults",
            },
        },
        "targets": {
            "gateway_vs_each_peer": "throughput ratio >= 1.0 and CPU-per-call ratio <= 1.0 (medians) in every cell",
            "withdrawn": {
                "added_p50_ms_at_most": ADDED_P50_TARGET_MS,
                "throughput_share_at_least": THROUGHPUT_SHARE_TARGET,
            },
        },
        "met": ok,
        "baseline_met": baseline_ok,
        "cells": cells,
        "cpu_ms_per_call_in_process": cpu,
        "floor_cpu_ms_per_call": floors,
        "markdown_table": markdown_table(cells),
        "peers_table": peers_table(cells, skipped),
        **{f"{k}_peers_table": peers_table(cells, skipped, k) for k in gateways if k in OTHER_GATEWAYS and peers},
    }
    if top is not None:
        report["profile"] = top
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown_table(cells))
    print()
    print(peers_table(cells, skipped))
    for kind in [k for k in gateways if k in OTHER_GATEWAYS and peers]:
        print()
        print(peers_table(cells, skipped, kind))
    say(f"wrote {args.output} in {elapsed:.0f}s; targets {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
