"""A soak: many concurrent clients for minutes against ``skilldeck serve --http`` and the gateway.

Run from the repository root::

    .venv/bin/python bench/soak.py                         # 1,000 clients, 10 minutes (about 11 minutes)
    .venv/bin/python bench/soak.py --clients 100 --minutes 1 --output soak-quick.json   # a quick look
    .venv/bin/python bench/soak.py --clients 300 --minutes 2 --gateway-arg=--no-learning --keep-logs soak-logs

Three subprocesses on 127.0.0.1, each run through ``bench/_loop_lag.py`` (which records the worst
stall of its event loop every second):

* **serve**: ``python -m skilldeck.cli serve examples/skills --http``;
* **gateway**: ``python -m skilldeck.cli gateway --config CONFIG --http`` in front of
* **upstream**: ``bench/_echo_server.py``, an ``MCPServer`` with one ``echo(text)`` tool.

Half the clients talk to ``serve`` (``skills/list``, ``skills/get``, ``resources/read`` of a text
and of a binary file, in turn), half to the gateway (``find`` → ``load`` → ``call`` of ``echo``,
three requests per round). Clients alternate between the eras (2026-07-28 stateless requests,
2025-11-25 sessions); one in ten churns: it closes its connection and session every
``--churn-every`` requests and opens new ones. Each client waits a random think time (uniform,
mean ``--think``) between requests, so that the load is steady rather than saturating: a soak
looks for drift (memory, descriptors, stalls, errors) over time, not for the peak rate, which
``bench/server_throughput.py`` and ``bench/gateway.py`` measure. Every answer is checked (the
exact skill list, text, bytes, the echoed text).

Reported per minute and target: requests, errors, p50/p99 latency, the server's RSS and open file
descriptors, its event loop's longest stall, and the garbage collector's full passes (how many, the
longest, their CPU time: ``bench/_loop_lag.py`` times them); over the run: errors (target 0), the RSS slope
after the first two minutes (least squares, target at most 1 MB/min), and the first error seen.
Results: a table on stdout and ``bench/results/soak.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE))  # appended: bench/agents.py never shadows the agents package

import server_throughput as st  # noqa: E402
from _common import free_port  # noqa: E402
from gateway import LOAD, TEXT, EchoExpectations  # noqa: E402

DEFAULT_OUTPUT = HERE / "results" / "soak.json"
LAG = HERE / "_loop_lag.py"
WARMUP_MINUTES = 2
"""Minutes left out of the RSS slope: caches, pools and the allocator settle first."""
RSS_SLOPE_TARGET_MB_PER_MIN = 1.0
FIND = {"name": "find", "arguments": {"query": "echo a text back", "limit": 3}}
CONVERSATION = "dev.skilldeck/conversation"
"""The ``_meta`` key a 2026-07-28 client names its conversation by (its own activation at the gateway)."""
CALL = {"name": "call", "arguments": {"tool": "echo/echo", "arguments": {"text": TEXT}}}


@dataclass
class Minute:
    """What one target did in one minute of the run."""

    ok: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    rss_mb: float = 0.0
    fds: int = 0
    stall_ms: float = 0.0
    full_collections: int = 0
    longest_collection_ms: float = 0.0
    collection_cpu_ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {
            "requests": self.ok + self.errors,
            "errors": self.errors,
            "p50_ms": round(1000 * st._percentile(ordered, 0.50), 2) if ordered else None,
            "p99_ms": round(1000 * st._percentile(ordered, 0.99), 2) if ordered else None,
            "rss_mb": round(self.rss_mb, 1),
            "fds": self.fds,
            "longest_stall_ms": round(self.stall_ms, 1),
            "full_collections": self.full_collections,
            "longest_collection_ms": round(self.longest_collection_ms, 1),
            "collection_cpu_ms": round(self.collection_cpu_ms, 1),
        }


@dataclass
class Run:
    """The measurements of one soak, per target and minute."""

    started: float
    minutes: int
    targets: dict[str, st.Target]
    lag_files: dict[str, Path]
    per_minute: dict[str, list[Minute]] = field(default_factory=dict)
    per_operation: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Per target, each operation's latencies over the run (``OPERATION ERA``: ``find 2025-11-25``, ``open ...``)."""
    first_error: dict[str, str] = field(default_factory=dict)
    sessions_opened: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.per_minute = {key: [Minute() for _ in range(self.minutes)] for key in self.targets}

    def minute(self) -> int:
        return int((time.perf_counter() - self.started) // 60)

    def record(self, key: str, started: float, error: BaseException | None, operation: str = "") -> None:
        index = self.minute()
        if index >= self.minutes:
            return
        cell = self.per_minute[key][index]
        if error is None:
            cell.ok += 1
            took = time.perf_counter() - started
            cell.latencies.append(took)
            if operation:
                self.timed(key, operation, took)
        else:
            cell.errors += 1
            self.first_error.setdefault(key, f"{type(error).__name__}: {error}"[:300])

    def timed(self, key: str, operation: str, took: float) -> None:
        """One successful ``operation``'s latency, for the per-operation figures only (not the minute's)."""
        if self.minute() < self.minutes:
            self.per_operation.setdefault(key, {}).setdefault(operation, []).append(took)

    def sample(self, index: int) -> None:
        """The servers' RSS, descriptors and loop stalls for minute ``index`` (taken at its end)."""
        for key, target in self.targets.items():
            assert target.process is not None
            cell = self.per_minute[key][index]
            cell.rss_mb = st._memory_kib(target.process.pid)["rss_kib"] / 1024
            try:
                cell.fds = len(os.listdir(f"/proc/{target.process.pid}/fd"))
            except OSError:
                cell.fds = -1
            since = self.started_wall + 60 * index
            cell.stall_ms = max(
                (ms for t, ms in _lag_lines(self.lag_files[key]) if since <= t < since + 60), default=0.0
            )
            passes = [(ms, cpu) for t, ms, cpu in _collections(self.lag_files[key]) if since <= t < since + 60]
            cell.full_collections = len(passes)
            cell.longest_collection_ms = max((ms for ms, _ in passes), default=0.0)
            cell.collection_cpu_ms = sum(cpu for _, cpu in passes)

    @property
    def started_wall(self) -> float:
        return time.time() - (time.perf_counter() - self.started)


def _lag_lines(path: Path) -> list[tuple[float, float]]:
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except OSError:
        return []
    return [(float(t), float(ms)) for t, ms in (line.split() for line in lines if line.count(" ") == 1)]


def _collections(lag: Path) -> list[tuple[float, float, float]]:
    """The collector's full passes beside ``lag`` (``bench/_loop_lag.py``): (time, pause in ms, its CPU in ms)."""
    try:
        lines = lag.with_name(lag.name + ".gc").read_text(encoding="ascii").splitlines()
    except OSError:
        return []
    passes = (line.split() for line in lines)
    return [(float(t), float(ms), float(cpu)) for t, gen, ms, _, cpu, *_ in passes if gen == "2"]


# -- clients --------------------------------------------------------------------------------------


def _serve_ops(expectations: st.Expectations) -> list[tuple[str, dict[str, Any], Callable[[Any], None]]]:
    ops = st.OPERATIONS

    def checker(key: str) -> Callable[[Any], None]:
        return lambda result: expectations.check(ops[key], result)

    def check_get(result: Any) -> None:
        skill = result.get("skill") if isinstance(result, dict) else None
        if not isinstance(skill, dict) or skill.get("uri") != "skill://job-search/SKILL.md":
            raise st.BenchError(f"skills/get returned {result!r:.200}")

    return [
        ("skills/list", {}, checker("list")),
        ("skills/get", {"uri": "skill://job-search/SKILL.md"}, check_get),
        ("resources/read", ops["read-text"].params, checker("read-text")),
        ("resources/read", ops["read-binary"].params, checker("read-binary")),
    ]


def _check_found(result: Any) -> None:
    cards = (result.get("structuredContent") or {}).get("cards") if isinstance(result, dict) else None
    if result.get("isError") or not cards or cards[0].get("id") != "echo/echo":
        raise st.BenchError(f"find returned {result!r:.200}")


def _check_loaded(result: Any) -> None:
    tools = (result.get("structuredContent") or {}).get("tools") if isinstance(result, dict) else None
    if result.get("isError") or [t.get("name") for t in tools or []] != ["echo/echo"]:
        raise st.BenchError(f"load returned {result!r:.200}")


def _gateway_ops() -> list[tuple[str, dict[str, Any], Callable[[Any], None]]]:
    echoed = EchoExpectations()
    return [
        ("tools/call", FIND, _check_found),
        ("tools/call", LOAD, _check_loaded),
        ("tools/call", CALL, lambda result: echoed.check(st.OPERATIONS["list"], result)),
    ]


async def client(
    run: Run,
    key: str,
    era: str,
    ops: list[tuple[str, dict[str, Any], Callable[[Any], None]]],
    *,
    end: float,
    think_s: float,
    churn_every: int | None,
    rng: random.Random,
    restart: bool,
) -> None:
    """One client: a session, requests with think time between them, a new session on churn or error.

    ``restart``: every session starts at the first of ``ops`` (the gateway's find → load → call);
    otherwise the client goes on through ``ops`` where it was (serve's reads, each independent).
    """
    target = run.targets[key]
    step = rng.randrange(len(ops))
    while time.perf_counter() < end:
        session = st.Session(st.RawHTTP(st.HOST, target.port, st.PATH), era)
        session.meta = {**st.META, CONVERSATION: f"soak-{id(rng)}-{run.sessions_opened.get(key, 0)}"}
        t0 = time.perf_counter()
        try:
            await session.open()
            run.timed(key, f"open {era}", time.perf_counter() - t0)  # server/discover, or initialize
        except Exception as exc:  # counted like any failed request, then retried after a pause
            run.record(key, t0, exc)
            await session.close()
            await asyncio.sleep(think_s)
            continue
        run.sessions_opened[key] = run.sessions_opened.get(key, 0) + 1
        sent = 0
        if restart:  # find -> load -> call from the top: a new session has nothing loaded
            step = 0
        try:
            while time.perf_counter() < end and (churn_every is None or sent < churn_every):
                await asyncio.sleep(rng.uniform(0, 2 * think_s))
                method, params, check = ops[step % len(ops)]
                step += 1
                sent += 1
                t0 = time.perf_counter()
                try:
                    check(await session.call(method, params))
                except Exception as exc:
                    run.record(key, t0, exc)
                    break  # a new connection and session, as a client would
                run.record(key, t0, None, f"{_operation(method, params)} {era}")
        finally:
            await session.close()


def _operation(method: str, params: dict[str, Any]) -> str:
    """What a request does, for the per-operation latencies: its tool for a call, else its method."""
    name = params.get("name") if method == "tools/call" else None
    return str(name) if name else method


async def soak(run: Run, clients: int, think_s: float, churn_every: int, seed: int, say: Callable[[str], None]) -> None:
    end = run.started + 60 * run.minutes
    ops = {"serve": _serve_ops(run.targets["serve"].expectations), "gateway": _gateway_ops()}
    tasks: list[Awaitable[None]] = []
    for i in range(clients):
        key = "serve" if i % 2 == 0 else "gateway"
        era = st.MODERN if (i // 2) % 2 == 0 else st.LEGACY
        churn = churn_every if (i // 2) % 10 == 9 else None  # one in ten of each target's clients
        rng = random.Random(seed * 100_003 + i)
        restart = key == "gateway"
        tasks.append(
            client(run, key, era, ops[key], end=end, think_s=think_s, churn_every=churn, rng=rng, restart=restart)
        )

    async def sampler() -> None:
        for index in range(run.minutes):
            await asyncio.sleep(max(0.0, run.started + 60 * (index + 1) - time.perf_counter()))
            run.sample(index)
            line = "; ".join(
                f"{key} {m.ok + m.errors} req, {m.errors} err, p99 {m.as_dict()['p99_ms']} ms, "
                f"{m.rss_mb:.0f} MB, {m.fds} fds, stall {m.stall_ms:.0f} ms, "
                f"{m.full_collections} full GC (longest {m.longest_collection_ms:.0f} ms)"
                for key, m in ((k, run.per_minute[k][index]) for k in ("serve", "gateway"))
            )
            say(f"  minute {index + 1}: {line}")

    await asyncio.gather(sampler(), *tasks)


# -- report ---------------------------------------------------------------------------------------


def slope_mb_per_min(rss: list[float]) -> float | None:
    """Least-squares slope of RSS over the minutes after :data:`WARMUP_MINUTES`."""
    points = list(enumerate(rss))[WARMUP_MINUTES:]
    if len(points) < 2:
        return None
    xs, ys = [float(x) for x, _ in points], [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def summary(run: Run) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, minutes in run.per_minute.items():
        slope = slope_mb_per_min([m.rss_mb for m in minutes])
        latencies = sorted(x for m in minutes for x in m.latencies)
        out[key] = {
            "requests": sum(m.ok + m.errors for m in minutes),
            "errors": sum(m.errors for m in minutes),
            "p50_ms": round(1000 * st._percentile(latencies, 0.5), 2) if latencies else None,
            "p99_ms": round(1000 * st._percentile(latencies, 0.99), 2) if latencies else None,
            "rss_mb_first_last": [round(minutes[0].rss_mb, 1), round(minutes[-1].rss_mb, 1)],
            "rss_slope_mb_per_min": None if slope is None else round(slope, 3),
            "fds_max": max(m.fds for m in minutes),
            "longest_stall_ms": max(m.stall_ms for m in minutes),
            "full_collections": sum(m.full_collections for m in minutes),
            "longest_collection_ms": max(m.longest_collection_ms for m in minutes),
            "collection_cpu_ms": round(sum(m.collection_cpu_ms for m in minutes), 1),
            "sessions_opened": run.sessions_opened.get(key, 0),
            "first_error": run.first_error.get(key),
            "per_minute": [m.as_dict() for m in minutes],
            "per_operation": {
                name: {
                    "requests": len(values),
                    "p50_ms": round(1000 * st._percentile(ordered, 0.5), 2),
                    "p99_ms": round(1000 * st._percentile(ordered, 0.99), 2),
                }
                for name, values in sorted(run.per_operation.get(key, {}).items())
                for ordered in [sorted(values)]
            },
        }
        out[key]["meets_targets"] = out[key]["errors"] == 0 and (slope is None or slope <= RSS_SLOPE_TARGET_MB_PER_MIN)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=1_000, help="concurrent clients (half per target)")
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--think", type=float, default=2.0, help="mean seconds between a client's requests")
    parser.add_argument("--churn-every", type=int, default=20, help="requests per session of a churning client")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--gateway-arg",
        action="append",
        default=[],
        help="one more argument for the gateway (repeatable), e.g. --gateway-arg=--no-learning",
    )
    parser.add_argument("--keep-logs", type=Path, help="copy the servers' logs and stall records into this directory")
    return parser.parse_args(argv)


def _relative(path: Path) -> str:
    """``path`` as the report names it: from the repository root when it is inside (no machine's own paths)."""
    resolved = path.resolve()
    return str(resolved.relative_to(st.REPO)) if resolved.is_relative_to(st.REPO) else path.name


def _without_keep_logs(argv: list[str]) -> list[str]:
    """The command line as the report names it: where the logs were kept is the machine's own business."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--keep-logs":
            skip = True
        elif not arg.startswith("--keep-logs="):
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    load_at_start = os.getloadavg()
    started = dt.datetime.now(dt.UTC)
    with tempfile.TemporaryDirectory(prefix="skilldeck-soak-") as tmp:
        log_dir = Path(tmp)
        lag = {key: log_dir / f"{key}.lag" for key in ("serve", "gateway", "upstream")}
        wrap = [sys.executable, str(LAG)]
        upstream = st.Target("upstream", "echo upstream", [], EchoExpectations())  # type: ignore[arg-type]
        upstream.port = free_port(st.HOST)
        upstream.command = [*wrap, str(lag["upstream"]), str(HERE / "_echo_server.py"), st.HOST, str(upstream.port)]
        serve = st.Target("serve", "skilldeck serve", [], st._expectations(st.PACK, st._skill_paths(st.PACK)))
        serve.port = free_port(st.HOST)
        serve.command = [*wrap, str(lag["serve"]), "-m", "skilldeck.cli", "serve", str(st.PACK)]
        serve.command += ["--http", f"{st.HOST}:{serve.port}"]
        gateway = st.Target("gateway", "skilldeck gateway", [], EchoExpectations())  # type: ignore[arg-type]
        gateway.port = free_port(st.HOST)
        config = log_dir / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"echo": {"url": f"http://{st.HOST}:{upstream.port}{st.PATH}"}}}))
        gateway.command = [*wrap, str(lag["gateway"]), "-m", "skilldeck.cli", "gateway", "--config", str(config)]
        gateway.command += ["--http", f"{st.HOST}:{gateway.port}", "--lexical", *args.gateway_arg]
        targets = {"serve": serve, "gateway": gateway, "upstream": upstream}
        try:
            st._start(upstream, log_dir)
            st._wait_ready(upstream)
            for target in (serve, gateway):
                st._start(target, log_dir)
            for target in (serve, gateway):
                st._wait_ready(target)
            say(f"{args.clients} clients for {args.minutes} min; serve :{serve.port}, gateway :{gateway.port}")
            run = Run(time.perf_counter(), args.minutes, targets, lag)
            asyncio.run(soak(run, args.clients, args.think, args.churn_every, args.seed, say))
            results = summary(run)
            logs = {k: st._log_tail(t, 20).replace(f"{st.REPO}/", "") for k, t in targets.items()}
        finally:
            for target in targets.values():
                st._stop(target)
            if args.keep_logs is not None:
                shutil.copytree(log_dir, args.keep_logs, dirs_exist_ok=True)
    report = {
        "benchmark": "soak",
        "date": started.isoformat(timespec="seconds"),
        "command": shlex.join(["bench/soak.py", *_without_keep_logs(argv if argv is not None else sys.argv[1:])]),
        "machine": {
            "cpu_count": os.cpu_count(),
            "cpu_model": st._cpu_model(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_at_start": [round(x, 2) for x in load_at_start],
        },
        "settings": {k: _relative(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "keep_logs"},
        "targets": {"rss_slope_mb_per_min": RSS_SLOPE_TARGET_MB_PER_MIN, "errors": 0},
        "results": results,
        "server_log_tails": logs,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    for key in ("serve", "gateway", "upstream"):
        r = results[key]
        say(
            f"{key}: {r['requests']:,} requests, {r['errors']} errors, p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, "
            f"RSS {r['rss_mb_first_last'][0]} -> {r['rss_mb_first_last'][1]} MB "
            f"(slope {r['rss_slope_mb_per_min']} MB/min after minute {WARMUP_MINUTES}), "
            f"fds max {r['fds_max']}, longest loop stall {r['longest_stall_ms']:.0f} ms, "
            f"{r['full_collections']} full GC passes (longest {r['longest_collection_ms']:.0f} ms)"
        )
    say(f"wrote {args.output}")
    return 0 if all(results[k]["meets_targets"] for k in ("serve", "gateway")) else 1


if __name__ == "__main__":
    raise SystemExit(main())
