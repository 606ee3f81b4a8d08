"""Replicas behind a load balancer: 3 ``skilldeck serve --redis`` processes, HAProxy, Redis, N clients.

Run from the repository root (needs Debian's ``redis-server`` and ``haproxy``)::

    .venv/bin/python bench/replicas.py                       # 100 clients for 30 s, ~1 minute
    .venv/bin/python bench/replicas.py --clients 20 --seconds 10

What it does, all on loopback: a ``redis-server`` and an ``haproxy`` started from temporary config
files (never the system services), round-robin per request over 3 replicas, each ``python -m
skilldeck.cli serve PACK --http 127.0.0.1:PORT --redis URL --watch`` on its own copy of
``examples/skills``. Then ``--clients`` concurrent 2026-07-28 clients (the keep-alive raw HTTP
client of ``bench/server_throughput.py``, one connection each, cheap on CPU) send ``skills/list``
and two ``resources/read`` (text, binary) back to back through the balancer for ``--seconds``.
A third of the way in replica 1 is killed (SIGKILL), and it is started again two thirds of the way
in. Every answer is checked exactly (the listed URIs and names, the file's text or bytes); the
result counts answers that were right, wrong (must be 0), and failed, each failure classified as
retryable (connection refused or reset, HTTP 502/503/504: what a client retries) or not, and
placed in or out of the kill window (from the kill until the restarted replica listens, plus 2 s);
every failure (wrong answers included) that came before the kill is also counted on its own
(``failed_before_kill``): nothing has failed then, so each one is the replicas' or the balancer's.
Each replica serves Prometheus metrics on a port of its own, so what its HTTP bounds did during
the run (connections closed to make room, requests closed for being slow) can be read afterwards
(:func:`bound_refusals`).
The figure for one replica (same clients, balancer and pack, one backend) is measured first, in
the same run, so the two read side by side.

Results: a summary on stdout and ``bench/results/replicas.json``.
``tests/replicas/test_replicas.py`` runs the same harness in CI with fewer clients and seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.util
import json
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "bench"))  # the tests load this file by path (appended: never shadows a package)

from _common import free_port, stop  # noqa: E402

PACK = REPO / "examples" / "skills"
DEFAULT_OUTPUT = REPO / "bench" / "results" / "replicas.json"
HOST = "127.0.0.1"
PATH = "/mcp"
KILL_GRACE_S = 2.0
"""After the restarted replica listens, failures still count as in the kill window for this long."""


def _sibling(name: str) -> ModuleType:
    """``bench/<name>`` as a module (bench is not a package)."""
    key = "skilldeck_bench_" + Path(name).stem
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, REPO / "bench" / name)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


throughput = _sibling("server_throughput.py")


class Missing(RuntimeError):
    """A program the harness needs is not installed."""


def wait_for_port(port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"process exited with code {proc.returncode} before listening on {port}") from None
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {HOST}:{port} after {timeout:.0f}s") from None
            time.sleep(0.05)


def executable(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin")
    if found is None:
        raise Missing(f"{name} is not installed (Debian: apt-get install -y {name})")
    return found


class RedisProcess:
    """One ``redis-server`` on a fixed loopback port, without persistence; killed and started again at will."""

    def __init__(self, workdir: Path) -> None:
        self.binary = executable("redis-server")
        self.port = free_port()
        self.config = workdir / "redis.conf"
        self.config.write_text(
            f'bind {HOST}\nport {self.port}\nsave ""\nappendonly no\ndir {workdir}\n'
            f"logfile {workdir / 'redis.log'}\ndaemonize no\nprotected-mode yes\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, str(self.config)], stdin=subprocess.DEVNULL)
        wait_for_port(self.port, 10, self.proc)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


@contextmanager
def running_redis(workdir: Path) -> Iterator[RedisProcess]:
    redis = RedisProcess(workdir)
    redis.start()
    try:
        yield redis
    finally:
        redis.kill()


@contextmanager
def running_haproxy(workdir: Path, backends: list[int], *, sticky: bool = False) -> Iterator[int]:
    """HAProxy in front of ``backends`` (loopback ports); yields the port it listens on.

    Round-robin per request (``http-server-close``), as a stateless 2026-07-28 deployment needs;
    with ``sticky``, a request carrying ``Mcp-Session-Id`` goes where that session's first
    request went (a stick table on the header: what docs/deploy.md asks for legacy sessions).
    A replica that refuses connections, or whose ``GET /readyz`` is not 200, is skipped (health checks every
    300 ms, as docs/deploy.md configures them; ``redispatch``).
    """
    binary = executable("haproxy")
    port = free_port()
    servers = "\n".join(
        f"    server r{i} {HOST}:{backend} check inter 300ms fall 1 rise 1" for i, backend in enumerate(backends)
    )
    stick = (
        "    stick-table type string len 64 size 100k expire 30m\n"
        "    stick store-response res.hdr(mcp-session-id)\n"
        "    stick match req.hdr(mcp-session-id)\n"
        if sticky
        else ""
    )
    config = workdir / f"haproxy-{port}.cfg"
    config.write_text(
        f"""global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    option http-server-close
    option redispatch
    retries 3
    retry-on conn-failure empty-response
frontend mcp
    bind {HOST}:{port}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk
    http-check send meth GET uri /readyz
    http-check expect status 200
{stick}{servers}
"""
    )
    check = subprocess.run([binary, "-c", "-f", str(config)], capture_output=True, text=True, timeout=30)
    if check.returncode != 0:
        raise RuntimeError(f"haproxy refused its config:\n{check.stdout}{check.stderr}")
    proc = subprocess.Popen(
        [binary, "-db", "-q", "-f", str(config)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, 10, proc)
        yield port
    finally:
        stop(proc)


@dataclass
class Replica:
    """One ``skilldeck serve`` process on a fixed port, serving its own copy of the pack."""

    index: int
    pack: Path
    port: int
    redis_url: str | None
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    metrics_port: int = field(default_factory=free_port)

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "skilldeck.cli", "serve", str(self.pack), "--http", f"{HOST}:{self.port}"]
        cmd += ["--watch", "--metrics", f"{HOST}:{self.metrics_port}"]
        if self.redis_url:
            cmd += ["--redis", self.redis_url]
        return cmd

    def start(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400", "NO_COLOR": "1"}
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                self.command(), cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
            )

    def wait_ready(self, timeout: float = 90) -> None:
        try:
            wait_for_port(self.port, timeout, self.proc)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"replica {self.index}: {exc}\n{self.log.read_text(errors='replace')[-3000:]}") from None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        stop(self.proc)


def bound_refusals(replica: Replica) -> dict[str, int]:
    """How often each HTTP bound of ``replica`` acted since it started (``skilldeck_http_bound_refusals``):
    ``connections`` (a new connection closed, every place busy), ``idle_closed`` (a connection closed to make
    room), ``request_time`` (a connection closed for a request that did not arrive in time), ``streams``,
    ``sessions_evicted``."""
    with urllib.request.urlopen(f"http://{HOST}:{replica.metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith('skilldeck_http_bound_refusals_total{bound="'):
            labels, _, value = line.rpartition(" ")
            counts[labels.split('"')[1]] = int(float(value))
    return counts


@contextmanager
def running_replicas(workdir: Path, count: int, redis_url: str | None, pack: Path = PACK) -> Iterator[list[Replica]]:
    """``count`` replicas, each on its own copy of ``pack`` (as each machine of a deployment has its own disk)."""
    replicas = []
    for i in range(count):
        copy = workdir / f"pack{i}"
        shutil.copytree(pack, copy)
        replicas.append(Replica(i, copy, free_port(), redis_url, workdir / f"replica{i}.log"))
    try:
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.wait_ready()
        yield replicas
    finally:
        for replica in replicas:
            replica.stop()


# -- load -----------------------------------------------------------------------------------------


def _retryable(exc: BaseException) -> bool:
    """What a client retries: the connection refused, reset or cut, or the balancer's 502/503/504."""
    if isinstance(exc, OSError | asyncio.IncompleteReadError | ConnectionError | asyncio.TimeoutError):
        return True
    return isinstance(exc, throughput.BenchError) and str(exc).startswith(("HTTP 502", "HTTP 503", "HTTP 504"))


@dataclass
class LoadResult:
    clients: int
    seconds: float
    replicas: int
    ok: int = 0
    wrong: int = 0
    errors_retryable_in_window: int = 0
    errors_retryable_outside_window: int = 0
    errors_other: int = 0
    failed_before_kill: int = 0
    """Failures of any kind (wrong answers, non-200 answers, connections refused or cut) that came before the
    kill, or in the whole run without one: nothing had failed then, so none of them is excused."""
    before_kill_examples: list[str] = field(default_factory=list)
    wrong_examples: list[str] = field(default_factory=list)
    other_examples: list[str] = field(default_factory=list)
    outside_examples: list[str] = field(default_factory=list)
    kill_window_s: list[float] | None = None
    latencies_ms: dict[str, float] = field(default_factory=dict)

    @property
    def requests_per_s(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "requests_per_s": round(self.requests_per_s, 1)}


async def run_load(
    port: int,
    *,
    clients: int,
    seconds: float,
    replicas: list[Replica] | None = None,
    kill: int | None = None,
    pack: Path = PACK,
) -> LoadResult:
    """``clients`` concurrent 2026-07-28 clients through the balancer at ``port`` for ``seconds``.

    With ``kill``, that replica is killed a third of the way in and started again two thirds in;
    when it is not listening again by the end, the clients go on until it has served for
    ``KILL_GRACE_S`` (a loaded machine starts Python slowly), so the run always sees it back.
    """
    expectations = throughput._expectations(pack, throughput._skill_paths(pack))
    ops = list(throughput.OPERATIONS.values())
    result = LoadResult(clients=clients, seconds=seconds, replicas=len(replicas or []) or 1)
    window: list[float] = []  # [killed_at, back_at] relative to start
    latencies: list[float] = []
    start = time.monotonic()
    deadline = start + seconds
    back = asyncio.Event()
    if kill is None or not replicas:
        back.set()

    def in_window(at: float) -> bool:
        if not window:
            return False
        end = window[1] + KILL_GRACE_S if len(window) > 1 else float("inf")
        return window[0] <= at <= end

    def before_kill(text: str) -> None:
        """Count a failure that came before the kill (every failure, in a run without one)."""
        if not window:
            result.failed_before_kill += 1
            if len(result.before_kill_examples) < 5:
                result.before_kill_examples.append(text)

    def running() -> bool:
        """Until the deadline, and on until the killed replica has been back for ``KILL_GRACE_S``."""
        now = time.monotonic()
        if now < deadline or not back.is_set():
            return True
        return len(window) > 1 and now < start + window[1] + KILL_GRACE_S

    async def client(n: int) -> None:
        rng = random.Random(n)
        session = throughput.Session(throughput.RawHTTP(HOST, port, PATH), throughput.MODERN)
        try:
            while running():
                op = rng.choice(ops)
                sent = time.monotonic()
                try:
                    answer = await asyncio.wait_for(session.call(op.method, op.params), 30)
                except Exception as exc:  # classified below; the client goes on, as a real one would retry
                    await session.http.aclose()
                    at = time.monotonic() - start
                    text = f"{at:.2f}s {type(exc).__name__}: {str(exc)[:160]}"
                    before_kill(text)
                    if _retryable(exc):
                        if in_window(at):
                            result.errors_retryable_in_window += 1
                        else:
                            result.errors_retryable_outside_window += 1
                            if len(result.outside_examples) < 5:
                                result.outside_examples.append(text)
                    else:
                        result.errors_other += 1
                        if len(result.other_examples) < 5:
                            result.other_examples.append(text)
                    await asyncio.sleep(0.05)
                    continue
                try:
                    expectations.check(op, answer)
                except throughput.BenchError as exc:
                    before_kill(f"{time.monotonic() - start:.2f}s wrong: {str(exc)[:160]}")
                    result.wrong += 1
                    if len(result.wrong_examples) < 5:
                        result.wrong_examples.append(str(exc)[:200])
                    continue
                result.ok += 1
                latencies.append(time.monotonic() - sent)
        finally:
            await session.close()

    async def chaos() -> None:
        if kill is None or not replicas:
            return
        victim = replicas[kill]
        await asyncio.sleep(seconds / 3)
        window.append(time.monotonic() - start)  # from here a failure may be the kill's
        victim.kill()
        await asyncio.sleep(max(0.0, start + 2 * seconds / 3 - time.monotonic()))
        victim.start()
        await asyncio.to_thread(victim.wait_ready)
        window.append(time.monotonic() - start)
        back.set()

    await asyncio.gather(chaos(), *(client(n) for n in range(clients)))
    result.seconds = round(time.monotonic() - start, 2)
    result.kill_window_s = [round(w, 2) for w in window] or None
    if latencies:
        latencies.sort()
        result.latencies_ms = {
            "p50": round(latencies[len(latencies) // 2] * 1000, 1),
            "p95": round(latencies[int(len(latencies) * 0.95)] * 1000, 1),
        }
    return result


# -- main -----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="skilldeck-replicas-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        redis = stack.enter_context(running_redis(work))
        replicas = stack.enter_context(running_replicas(work, 3, redis.url))
        single_port = stack.enter_context(running_haproxy(work, [replicas[0].port]))
        print(f"one replica: {args.clients} clients for {args.seconds:.0f}s ...", flush=True)
        single = asyncio.run(run_load(single_port, clients=args.clients, seconds=args.seconds))
        balanced_port = stack.enter_context(running_haproxy(work, [r.port for r in replicas]))
        print(f"three replicas, replica 1 killed and restarted: {args.clients} clients for {args.seconds:.0f}s ...")
        three = asyncio.run(
            run_load(balanced_port, clients=args.clients, seconds=args.seconds, replicas=replicas, kill=1)
        )
        bounds = [bound_refusals(replica) for replica in replicas]
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "command": " ".join([Path(sys.executable).name, "bench/replicas.py", *(argv or sys.argv[1:])]),
        "note": "2 cores shared by the load generator, HAProxy, Redis and every replica: the three-replica "
        "figure cannot exceed the one-replica figure here; see docs/deploy.md for the scaling argument",
        "one_replica": single.as_dict(),
        "three_replicas_one_killed": three.as_dict(),
        "bound_refusals_per_replica": bounds,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    for label, r in (("1 replica", single), ("3 replicas, 1 killed", three)):
        print(
            f"{label:>22}: {r.requests_per_s:7.1f} req/s ok, p50 {r.latencies_ms.get('p50')} ms, wrong {r.wrong}, "
            f"retryable errors {r.errors_retryable_in_window} in / {r.errors_retryable_outside_window} outside "
            f"the kill window {r.kill_window_s}, other errors {r.errors_other}, failed before the kill "
            f"{r.failed_before_kill}"
        )
    print(f"HTTP bounds that acted, per replica (replica 1 since its restart): {bounds}")
    print(f"written: {args.output.relative_to(REPO) if args.output.is_relative_to(REPO) else args.output}")
    clean = single.failed_before_kill == 0 and three.failed_before_kill == 0 and three.wrong == 0
    return 0 if clean and three.errors_other == 0 and three.errors_retryable_outside_window == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
