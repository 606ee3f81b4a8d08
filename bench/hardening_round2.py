"""Denial of service by one anonymous client: ordinary requests answered while an attack runs.

Run from the repository root (needs Debian's ``redis-server`` for ``redis-burst``)::

    .venv/bin/python bench/hardening_round2.py --baseline dec9bfc --quick   # both commits, smaller attacks
    .venv/bin/python bench/hardening_round2.py --baseline dec9bfc           # the issue's sizes
    .venv/bin/python bench/hardening_round2.py silent-sockets                # one scenario, this checkout

Each scenario starts the real server (``skilldeck serve`` or ``skilldeck gateway``, ``--http
127.0.0.1:0``, run from the ``src/`` under test) in a fresh subprocess, runs one attack on loopback
for a bounded time and number of connections, and meanwhile sends ordinary requests, a few per
second, each on a new connection: how many got a right answer within 2 s (the target: all), how many
at all, and their latency. The server's RSS is read from ``/proc`` before and after the attack.

* ``silent-sockets`` (item 1): ``--max-connections M``; the attacker keeps M + 16 sockets open that
  never send a byte, re-opening each one the server closes at once and every one after 8 s (under
  ``--request-timeout``'s 10 s). Ordinary: ``skills/list``.
* ``stream-table`` (item 2): ``--max-connections 200``; the attacker opens 200 legacy sessions, each
  holding its GET stream (those refused are not retried). Ordinary: ``skills/list``.
* ``streaming-sessions`` (item 3): ``--max-sessions N``; the attacker opens N legacy sessions, each
  holding its GET stream. Ordinary: a new legacy client (``initialize``, then ``skills/list``).
* ``gateway-oversized`` (item 4): ``skilldeck gateway`` in front of one stdio upstream with a tool
  ``big`` whose answer (40 MiB) is over the host's limit per message (32 MiB) and a tool ``small``;
  the attacker calls ``big`` three times. Ordinary: another client's ``call`` of ``small``, right
  only when it answers ``ok``.
* ``redis-burst`` (item 5): ``serve --redis`` on a loopback ``redis-server``; 20 listen streams
  (the SDK's ``Client.listen``), then 5,000 identical events published on the channel at once, then
  one ``tools/list_changed``: how many listen streams hear it. Ordinary: ``skills/list``.
* ``jwks-huge`` and ``jwks-hang`` (item 12): ``serve --jwt-jwks URL`` where the URL (a loopback
  HTTP server) answers a 100 MiB body, or never answers. Requests with a bearer token naming an
  unknown key: for the body, one a second (50 at once took the baseline past 10 GB of RSS); for the
  endpoint that never answers, 50 at once, then 4 a second. An ordinary request counts as answered by any HTTP answer
  (401 is the right one: the token cannot be verified).

``--baseline REF`` unpacks that commit's ``src/`` (``git archive``) and runs every scenario on it
right before this checkout, so both are measured in one run under the same load. Every flag used
is one the baseline knows too (after, streams hold at most ``--stream-share``'s default, 0.5).
Results: a JSON summary on stdout and ``bench/results/hardening_round2.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.server
import itertools
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

REPO = Path(__file__).resolve().parents[1]
PACK = REPO / "examples" / "skills"
DEFAULT_OUTPUT = REPO / "bench" / "results" / "hardening_round2.json"
SCENARIOS = (
    "silent-sockets",
    "stream-table",
    "streaming-sessions",
    "gateway-oversized",
    "redis-burst",
    "jwks-huge",
    "jwks-hang",
)
WITHIN_S = 2.0
"""An ordinary request answered within this long counts as answered in time (the issue's target)."""
LEGACY = "2025-11-25"
LISTENING = re.compile(r" at (http://[\d.]+:\d+)/")
HOST = "127.0.0.1"


sys.path.append(str(REPO / "bench"))  # appended: never shadows a package

import hardening as round1  # noqa: E402
import replicas  # noqa: E402
from _common import stop  # noqa: E402

# -- the server under test ----------------------------------------------------------------------------


class Server:
    """``python -m skilldeck.cli ARGS --http 127.0.0.1:0`` run from ``src``; stopped on exit."""

    def __init__(self, src: Path, args: list[str], workdir: Path) -> None:
        self.log = workdir / f"server-{time.monotonic_ns()}.log"
        env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "400", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "skilldeck.cli", *args, "--http", f"{HOST}:0"]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            if match := LISTENING.search(text):
                self.url = match.group(1) + "/mcp"
                self.port = int(match.group(1).rsplit(":", 1)[1])
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {shlex.join(cmd)}\n{text}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not start: {shlex.join(cmd)}")

    def rss(self) -> dict[str, float]:
        return round1.rss_mb(self.proc.pid)

    def stop(self) -> None:
        stop(self.proc)


@contextlib.contextmanager
def serving(src: Path, args: list[str], workdir: Path) -> Iterator[Server]:
    server = Server(src, args, workdir)
    try:
        yield server
    finally:
        server.stop()


# -- ordinary requests -----------------------------------------------------------------------------


class Tally:
    """Ordinary requests sent while an attack runs: latency of each right answer, else why not."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.wrong: Counter[str] = Counter()
        self.sent = 0

    async def time(self, request: Callable[[], Awaitable[str | None]], limit_s: float) -> None:
        """Run ``request``, which returns None when answered right, else a short reason."""
        self.sent += 1
        start = time.perf_counter()
        try:
            reason = await asyncio.wait_for(request(), limit_s)
        except TimeoutError:
            reason = f"no answer within {limit_s:g}s"
        except Exception as exc:  # every failure is counted by its kind
            reason = type(exc).__name__
        if reason is None:
            self.latencies.append(time.perf_counter() - start)
        else:
            self.wrong[reason] += 1

    def summary(self) -> dict[str, Any]:
        ms = sorted(x * 1000 for x in self.latencies)
        within = sum(1 for x in self.latencies if x <= WITHIN_S)
        return {
            "sent": self.sent,
            "answered_within_2s": within,
            "answered": len(self.latencies),
            "share_within_2s": round(within / self.sent, 3) if self.sent else None,
            "p50_ms": round(statistics.median(ms), 1) if ms else None,
            "max_ms": round(ms[-1], 1) if ms else None,
            "not_answered": dict(self.wrong),
        }


async def ordinary(
    request: Callable[[], Awaitable[str | None]],
    seconds: float,
    per_second: float,
    *,
    burst: int = 0,
    limit_s: float = 10.0,
) -> dict[str, Any]:
    """``burst`` requests at once, then ``per_second`` for ``seconds``; all awaited (each at most ``limit_s``)."""
    tally = Tally()
    tasks = [asyncio.create_task(tally.time(request, limit_s)) for _ in range(burst)]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tasks.append(asyncio.create_task(tally.time(request, limit_s)))
        await asyncio.sleep(1 / per_second)
    await asyncio.gather(*tasks)
    return tally.summary()


async def raw_post(port: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One POST /mcp on a new connection (``Connection: close``): the status and the body as sent."""
    payload = json.dumps(body).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(payload)}\r\n"
        f"Connection: close\r\n{extra}\r\n"
    ).encode()
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(head + payload)
        await writer.drain()
        answer = await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if not answer:
        raise ConnectionAbortedError("closed without an answer")
    status = int(answer.split(b" ", 2)[1])
    return status, answer.partition(b"\r\n\r\n")[2]


MODERN = "2026-07-28"
SKILLS_LIST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "skills/list",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "skilldeck-bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}
"""The ordinary request: a stateless 2026-07-28 ``skills/list`` (``server_throughput.py``'s envelope)."""


def listing(
    port: int, headers: dict[str, str] | None = None, ok: tuple[int, ...] = (200,)
) -> Callable[[], Awaitable[str | None]]:
    """A ``skills/list`` on a new connection, right when its status is in ``ok`` (and, for 200, it lists skills)."""
    modern = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "skills/list", **(headers or {})}

    async def request() -> str | None:
        status, body = await raw_post(port, SKILLS_LIST, modern)
        if status not in ok:
            return f"HTTP {status}"
        return None if status != 200 or b'"skills"' in body else "no skills listed"

    return request


# -- attackers ---------------------------------------------------------------------------------------


async def silent_socket(port: int, stop: asyncio.Event, hold: float, counts: Counter[str]) -> None:
    """A socket that never sends a byte, re-opened when the server closes it and after ``hold`` seconds."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
        except OSError:
            counts["refused"] += 1
            await asyncio.sleep(0.05)
            continue
        counts["opened"] += 1
        try:
            got = await asyncio.wait_for(reader.read(1), hold)
            counts["closed by the server" if not got else "answered"] += 1
        except TimeoutError:
            counts["re-opened after hold"] += 1
        except OSError:
            counts["closed by the server"] += 1
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def legacy_session(port: int) -> str | int:
    """A legacy session opened by hand (``initialize`` + ``initialized``): its id, or the HTTP status."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
    }
    payload = json.dumps(init).encode()
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(
            (
                f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(payload)}\r\n"
                f"Connection: close\r\n\r\n"
            ).encode()
            + payload
        )
        answer = await reader.read()
    finally:
        writer.close()
    status = int(answer.split(b" ", 2)[1]) if answer else 0
    if status != 200:
        return status
    head = answer.partition(b"\r\n\r\n")[0].decode()
    session = next(
        line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.lower().startswith("mcp-session-id:")
    )
    status, _ = await raw_post(
        port,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY},
    )
    return session


Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def legacy_stream(port: int, held: list[Stream], counts: Counter[str]) -> None:
    """A legacy session holding its GET stream open (kept in ``held``), or the status that refused it."""
    try:
        session = await legacy_session(port)
    except (OSError, ConnectionAbortedError, IndexError, ValueError):
        counts["initialize failed"] += 1
        return
    if not isinstance(session, str):
        counts[f"initialize HTTP {session}"] += 1
        return
    try:
        reader, writer = await asyncio.open_connection(HOST, port)
        writer.write(
            f"GET /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nAccept: text/event-stream\r\n"
            f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {LEGACY}\r\n\r\n".encode()
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        counts["stream failed"] += 1
        return
    status = head.split(b" ", 2)[1].decode()
    if status == "200":
        counts["streams held"] += 1
        held.append((reader, writer))
    else:
        counts[f"stream HTTP {status}"] += 1
        writer.close()


async def open_streams(port: int, n: int, parallel: int = 8) -> tuple[list[Stream], Counter[str]]:
    held: list[Stream] = []
    counts: Counter[str] = Counter()
    queue = iter(range(n))

    async def opener() -> None:
        for _ in queue:
            await legacy_stream(port, held, counts)

    await asyncio.gather(*(opener() for _ in range(parallel)))
    return held, counts


async def still_open(held: list[Stream]) -> int:
    """How many of ``held`` the server has not ended: what they sent is read until it stops (open) or ends."""

    async def is_open(reader: asyncio.StreamReader) -> bool:
        while True:
            try:
                if not await asyncio.wait_for(reader.read(65536), 0.05):
                    return False
            except TimeoutError:
                return True
            except OSError:
                return False

    return sum(await asyncio.gather(*(is_open(reader) for reader, _ in held)))


def close_all(held: list[Stream]) -> None:
    for _, writer in held:
        writer.close()


# -- scenarios ---------------------------------------------------------------------------------------


class Run:
    """What one scenario needs: the code under test, the sizes (``--quick``), a work folder."""

    def __init__(self, src: Path, quick: bool, workdir: Path) -> None:
        self.src, self.quick, self.workdir = src, quick, workdir

    def serve(self, *args: str) -> contextlib.AbstractContextManager[Server]:
        return serving(self.src, ["serve", str(PACK), *args], self.workdir)


async def silent_sockets(run: Run) -> dict[str, Any]:
    table = 256 if run.quick else 2_048
    attackers, seconds = table + 16, 20.0 if run.quick else 30.0
    with run.serve("--max-connections", str(table)) as server:
        before = server.rss()
        alone = await ordinary(listing(server.port), 3, 4)
        stop, counts = asyncio.Event(), Counter[str]()
        attack = [asyncio.create_task(silent_socket(server.port, stop, 8.0, counts)) for _ in range(attackers)]
        await asyncio.sleep(3)  # the table is full
        during = await ordinary(listing(server.port), seconds, 4)
        after = server.rss()
        stop.set()
        await asyncio.gather(*attack)
    return {
        "max_connections": table,
        "attack": {"silent_sockets": attackers, "hold_s": 8.0, "seconds": seconds, **counts},
        "ordinary_alone": alone,
        "ordinary_during_attack": during,
        "rss_before_mb": before["rss_mb"],
        "rss_after_mb": after["rss_mb"],
    }


async def under_streams(
    server: Server, streams: int, request: Callable[[], Awaitable[str | None]], seconds: float, per_second: float
) -> dict[str, Any]:
    """``streams`` legacy sessions each holding its GET stream, then ordinary requests while they are held."""
    before = server.rss()
    began = time.monotonic()
    held, counts = await open_streams(server.port, streams)
    opened_in = time.monotonic() - began
    during = await ordinary(request, seconds, per_second)
    after = server.rss()
    open_at_end = await still_open(held)
    close_all(held)
    return {
        "attack": {"streams_tried": streams, **counts, "open_seconds": round(opened_in, 1)},
        "attack_streams_still_open_at_end": open_at_end,
        "ordinary_during_attack": during,
        "rss_before_mb": before["rss_mb"],
        "rss_after_mb": after["rss_mb"],
    }


async def stream_table(run: Run) -> dict[str, Any]:
    table, seconds = 200, 15.0 if run.quick else 30.0
    with run.serve("--max-connections", str(table)) as server:
        return {"max_connections": table, **await under_streams(server, table, listing(server.port), seconds, 4)}


def new_legacy_client(port: int) -> Callable[[], Awaitable[str | None]]:
    async def request() -> str | None:
        session = await legacy_session(port)
        if not isinstance(session, str):
            return f"initialize HTTP {session}"
        status, body = await raw_post(
            port,
            {"jsonrpc": "2.0", "id": 2, "method": "skills/list", "params": {}},
            {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY},
        )
        if status != 200:
            return f"skills/list HTTP {status}"
        return None if b'"skills"' in body else "skills/list without skills"

    return request


async def streaming_sessions(run: Run) -> dict[str, Any]:
    sessions, seconds = (200, 15.0) if run.quick else (1_000, 30.0)
    with run.serve("--max-sessions", str(sessions)) as server:
        return {
            "max_sessions": sessions,
            **await under_streams(server, sessions, new_legacy_client(server.port), seconds, 2),
        }


UPSTREAM = """\
from mcp.server.mcpserver import MCPServer

server = MCPServer("big")


@server.tool()
def big() -> str:
    \"\"\"An answer over the gateway's limit per message.\"\"\"
    return "x" * (40 * 1024 * 1024)


@server.tool()
def small() -> str:
    \"\"\"A short answer.\"\"\"
    return "ok"


server.run()
"""


async def gateway_session(port: int, load: list[str]) -> str:
    session = await legacy_session(port)
    assert isinstance(session, str), session
    status, body = await raw_post(
        port,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "load", "arguments": {"ids": load}}},
        {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY},
    )
    assert status == 200, (status, body[:300])
    return session


CALL_IDS = itertools.count(3)
"""Request ids of ``call``: calls in flight at once need ids of their own."""


def gateway_call(port: int, session: str, tool: str) -> Callable[[], Awaitable[str | None]]:
    async def request() -> str | None:
        status, body = await raw_post(
            port,
            {
                "jsonrpc": "2.0",
                "id": next(CALL_IDS),
                "method": "tools/call",
                "params": {"name": "call", "arguments": {"tool": tool, "arguments": {}}},
            },
            {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY},
        )
        if status != 200:
            return f"HTTP {status}"
        reply = round1._sse_json(body)
        result = reply.get("result") or {}
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            return "isError: " + re.sub(r"\d+", "N", text)[:120]
        return None if "ok" in json.dumps(result.get("content")) else "no 'ok' in the result"

    return request


async def gateway_oversized(run: Run) -> dict[str, Any]:
    script = run.workdir / "big_upstream.py"
    script.write_text(UPSTREAM)
    config = run.workdir / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"big": {"command": sys.executable, "args": [str(script)]}}}))
    seconds = 15.0 if run.quick else 30.0
    with serving(run.src, ["gateway", "--config", str(config)], run.workdir) as server:
        before = server.rss()
        attacker = await gateway_session(server.port, ["big/big"])
        victim = await gateway_session(server.port, ["big/small"])
        alone = await ordinary(gateway_call(server.port, victim, "big/small"), 2, 2)
        attack_results: Counter[str] = Counter()

        async def attack() -> None:
            for _ in range(3):
                tally = Tally()
                await tally.time(gateway_call(server.port, attacker, "big/big"), 60)
                attack_results.update(tally.wrong or {"answered ok": 1})
                await asyncio.sleep(seconds / 4)

        attacking = asyncio.create_task(attack())
        during = await ordinary(gateway_call(server.port, victim, "big/small"), seconds, 2, limit_s=60)
        await attacking
        after = server.rss()
    return {
        "attack": {"calls_of_big": 3, "big_answer_bytes": 40 * 1024 * 1024, "results": dict(attack_results)},
        "ordinary_alone": alone,
        "ordinary_during_attack": during,
        "rss_before_mb": before["rss_mb"],
        "rss_after_mb": after["rss_mb"],
        "server_peak_rss_mb": after["peak_rss_mb"],
    }


async def listener(url: str, ready: asyncio.Event, stop: asyncio.Event, heard: dict[str, Any]) -> None:
    """One 2026-07-28 client's listen stream: how many events it heard, when it heard tools/list_changed."""
    from mcp import Client
    from mcp.server.subscriptions import ToolsListChanged

    heard.update(events=0, tools_changed_at=None, ended=None)
    try:
        async with (
            Client(url, mode="auto", cache=None, read_timeout_seconds=60) as client,
            client.listen(resources_list_changed=True, tools_list_changed=True) as sub,
        ):
            ready.set()
            async for event in sub:
                heard["events"] += 1
                if isinstance(event, ToolsListChanged):
                    heard["tools_changed_at"] = time.monotonic()
            heard["ended"] = "stream ended"
    except BaseException as exc:  # how the stream ended is the result, unless the run was over (cancelled)
        if not stop.is_set():
            heard["ended"] = repr(exc)[:200]
        if not isinstance(exc, Exception):
            raise
    finally:
        ready.set()


async def redis_burst(run: Run) -> dict[str, Any]:
    import redis.asyncio as aioredis
    from mcp.server.subscriptions import ResourcesListChanged, ToolsListChanged

    from skilldeck.serving._redis_bus import encode_event

    listeners, events = 20, 5_000
    with replicas.running_redis(run.workdir) as redis_server, run.serve("--redis", redis_server.url) as server:
        raw = aioredis.Redis.from_url(redis_server.url)
        try:
            before = server.rss()
            stop = asyncio.Event()
            heard: list[dict[str, Any]] = [{} for _ in range(listeners)]
            readies = [asyncio.Event() for _ in range(listeners)]
            tasks = [asyncio.create_task(listener(server.url, r, stop, h)) for r, h in zip(readies, heard, strict=True)]
            await asyncio.gather(*(r.wait() for r in readies))
            channels = [c.decode() for c in await raw.pubsub_channels("skilldeck:*")]
            assert len(channels) == 1, channels

            async def attack() -> None:
                await asyncio.sleep(2)
                burst = encode_event(ResourcesListChanged())
                async with raw.pipeline(transaction=False) as pipe:
                    for _ in range(events):
                        pipe.publish(channels[0], burst)
                    await pipe.execute()
                await asyncio.sleep(3)
                told["at"] = time.monotonic()
                await raw.publish(channels[0], encode_event(ToolsListChanged()))
                await asyncio.sleep(WITHIN_S + 1)

            told: dict[str, float] = {}
            attacking = asyncio.create_task(attack())
            during = await ordinary(listing(server.port), 9, 4)
            await attacking
            after = server.rss()
            stop.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await raw.aclose()
    in_time = [h for h in heard if h["tools_changed_at"] is not None and h["tools_changed_at"] - told["at"] <= WITHIN_S]
    return {
        "channel": channels[0],
        "attack": {"listen_streams": listeners, "identical_events_published": events},
        "listeners_hearing_the_next_change_within_2s": len(in_time),
        "events_heard_per_listener_p50": statistics.median(h["events"] for h in heard),
        "listen_streams_ended": dict(Counter(h["ended"] for h in heard if h["ended"])),
        "ordinary_during_attack": during,
        "rss_before_mb": before["rss_mb"],
        "rss_after_mb": after["rss_mb"],
    }


class Jwks(http.server.BaseHTTPRequestHandler):
    """A JWKS URL that answers a 100 MiB body (``/huge``) or never answers (``/hang``); counts its fetches."""

    fetches: ClassVar[Counter[str]] = Counter()
    release: ClassVar[threading.Event] = threading.Event()

    def do_GET(self) -> None:
        Jwks.fetches[self.path] += 1
        if self.path == "/hang":
            Jwks.release.wait(120)
            return
        size = 100 * 1024 * 1024
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        chunk = b" " * (1024 * 1024)
        try:
            for _ in range(size // len(chunk)):
                self.wfile.write(chunk)
        except OSError:
            pass  # the server stopped reading: what the cap is for

    def log_message(self, *_: Any) -> None:
        pass


@contextlib.contextmanager
def jwks_url(kind: str) -> Iterator[str]:
    Jwks.fetches.clear()
    Jwks.release.clear()
    httpd = http.server.ThreadingHTTPServer((HOST, 0), Jwks)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{httpd.server_address[1]}/{kind}"
    finally:
        Jwks.release.set()
        httpd.shutdown()
        httpd.server_close()


async def jwks(run: Run, kind: str) -> dict[str, Any]:
    import jwt

    seconds = 20.0 if run.quick else 40.0
    # the 100 MiB body one request at a time: 50 at once took the baseline past 10 GB, more than a shared machine
    # should be asked for; a body that never comes costs no memory, so those come 50 at once
    burst, per_second = (0, 1.0) if kind == "huge" else (50, 4.0)
    with jwks_url(kind) as url:
        args = ["--jwt-jwks", url, "--jwt-issuer", "https://issuer.example", "--jwt-audience", "https://bench.example"]
        with run.serve(*args) as server:
            before = server.rss()
            token = jwt.encode(
                {
                    "iss": "https://issuer.example",
                    "aud": "https://bench.example",
                    "sub": "x",
                    "exp": int(time.time()) + 3600,
                },
                "not-the-key-" * 4,
                algorithm="HS256",
                headers={"kid": "unknown-key"},
            )
            bearer = {"Authorization": f"Bearer {token}"}
            without = await ordinary(listing(server.port, ok=(401,)), 2, 2)
            during = await ordinary(
                listing(server.port, bearer, ok=(401,)), seconds, per_second, burst=burst, limit_s=90
            )
            after = server.rss()
    return {
        "jwks": "a 100 MiB body" if kind == "huge" else "never answers",
        "attack": {"token_requests_at_once": burst, "then_per_second": per_second, "seconds": seconds},
        "jwks_fetches": sum(Jwks.fetches.values()),
        "ordinary_without_token_before": without,
        "ordinary_during_attack": during,
        "rss_before_mb": before["rss_mb"],
        "rss_after_mb": after["rss_mb"],
        "server_peak_rss_mb": after["peak_rss_mb"],
    }


def measure(scenario: str, run: Run) -> dict[str, Any]:
    runners: dict[str, Callable[[Run], Awaitable[dict[str, Any]]]] = {
        "silent-sockets": silent_sockets,
        "stream-table": stream_table,
        "streaming-sessions": streaming_sessions,
        "gateway-oversized": gateway_oversized,
        "redis-burst": redis_burst,
        "jwks-huge": lambda r: jwks(r, "huge"),
        "jwks-hang": lambda r: jwks(r, "hang"),
    }
    return asyncio.run(runners[scenario](run))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help=f"any of {', '.join(SCENARIOS)} (default: all)"
    )
    parser.add_argument(
        "--baseline", metavar="REF", help="also measure the src/ of this git commit, before this checkout"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller attacks: a table of 256, 200 sessions, 15-20 s of attack each"
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    scenarios = args.scenarios or list(SCENARIOS)
    if unknown := set(scenarios) - set(SCENARIOS):
        parser.error(f"unknown scenario {sorted(unknown)[0]!r} (choose from {', '.join(SCENARIOS)})")
    started = time.monotonic()
    load_at_start = os.getloadavg()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="skilldeck-hardening2-") as tmp:
        work = Path(tmp)
        codes = round1.codes_under_test(args.baseline, work)
        for scenario in scenarios:
            results[scenario] = {}
            for label, src in codes.items():
                print(f"{scenario}: {label} ...", file=sys.stderr)
                folder = Path(tempfile.mkdtemp(dir=work))
                results[scenario][label] = measure(scenario, Run(src, args.quick, folder))
                print(json.dumps(results[scenario][label]), file=sys.stderr)
    settings = {"quick": args.quick, "answered_in_time_s": WITHIN_S}
    round1.write_report(args.output, "bench/hardening_round2.py", settings, started, load_at_start, results)


if __name__ == "__main__":
    main()
