"""Small builders for skill folders in tests, and what tests share to run ``skilldeck serve`` and talk to it."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import httpx2
import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "skilldeck.cli"]
STARTUP_LINE = re.compile(r"skilldeck: serving (\d+) skills from .* at (http://\S+)")
"""What ``skilldeck serve --http`` prints once its port is bound: the skill count and the URL."""
GATEWAY_STARTUP_LINE = re.compile(
    r"skilldeck gateway: (?P<up>\d+) of (?P<total>\d+) servers \((?P<skills>\d+) skills, \d+ tools\) at (?P<url>http://\S+)"
)
"""``skilldeck gateway --http``'s startup line: servers up, servers configured, skills, URL."""
POST_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
"""The headers of a raw streamable-HTTP POST."""


def cli_env(**extra: str) -> dict[str, str]:
    """The environment to run the CLI in: rich wraps stderr at 80 columns off a terminal, so keep lines whole."""
    return {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", **extra}


def initialize_request(client_name: str = "test", client_version: str = "0") -> dict[str, Any]:
    """A raw legacy (2025-11-25) ``initialize`` request."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": client_version},
        },
    }


def start_serve(cmd: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Run ``cmd`` (a ``skilldeck serve``) from the repository, its stdout and stderr into ``log_path``."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=cli_env()
        )


STARTUP_GUARD = 180.0
"""Seconds a server or gateway started by a test may take to print its startup line before the test fails.

A guard, not a measure: a start returns as soon as the line is printed. A gateway's start is two Python
processes (the gateway and the server behind it), about 2 s of CPU on an idle machine; at a load of 24 on
two cores each gets a twelfth of a core, which took a start past the 60 s this guard was (the bounded-log
test's ``[gateway]`` case), so the guard leaves that three times over."""


def wait_for_startup(
    proc: subprocess.Popen[bytes],
    log_path: Path,
    timeout: float,
    ready: Callable[[re.Match[str]], bool] = lambda _: True,
    pattern: re.Pattern[str] = STARTUP_LINE,
) -> re.Match[str] | str:
    """The startup line once ``proc`` prints it (and ``ready`` holds of it), else why not (it exited, or time ran out)."""
    deadline = time.monotonic() + timeout
    while True:
        text = log_path.read_text(errors="replace")
        match = pattern.search(text)
        if match and ready(match):
            return match
        if proc.poll() is not None:
            return f"skilldeck server exited with code {proc.returncode} before it was ready:\n{text}"
        if time.monotonic() >= deadline:
            return f"skilldeck server not ready within {timeout:.0f}s; its log:\n{text}"
        time.sleep(0.1)


def start_gateway(
    config: Path,
    log_path: Path,
    *extra: str,
    timeout: float = STARTUP_GUARD,
    ready: Callable[[re.Match[str]], bool] = lambda _: True,
) -> tuple[subprocess.Popen[bytes], re.Match[str]]:
    """``skilldeck gateway --config CONFIG --http 127.0.0.1:0 EXTRA...`` once its startup line is printed (and
    ``ready`` holds of it); the process is stopped and the test failed, with the log, when it does not start."""
    proc = start_serve([*CLI, "gateway", "--config", str(config), "--http", "127.0.0.1:0", *extra], log_path)
    found = wait_for_startup(proc, log_path, timeout, ready, pattern=GATEWAY_STARTUP_LINE)
    if isinstance(found, str):
        stop(proc)
        pytest.fail(f"the gateway did not start: {found}", pytrace=False)
    return proc, found


def stop(proc: subprocess.Popen[Any]) -> None:
    """Terminate ``proc`` (kill it if it does not end within 10 s) and reap it."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


class Running(NamedTuple):
    """A ``serve --http`` or ``gateway --http`` process :func:`running_http` started: where it listens, its log."""

    host: str
    port: int
    log: Path
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"


@contextmanager
def running_http(command: str, tmp_path: Path, examples_dir: Path, *extra: str) -> Iterator[Running]:
    """``skilldeck serve --http`` of the example pack, or ``gateway --http`` in front of it (``command``), with
    ``extra`` flags, until the block ends (stopped then if it still runs)."""
    log = tmp_path / f"{command}.log"
    cmd = [*CLI, "serve", str(examples_dir)]
    if command == "gateway":
        config = tmp_path / "gateway.json"
        config.write_text(json.dumps({"mcpServers": {"docs": {"command": cmd[0], "args": cmd[1:]}}}))
        cmd = [*CLI, "gateway", "--config", str(config)]
    proc = start_serve([*cmd, "--http", "127.0.0.1:0", *extra], log)
    try:
        found = wait_for_startup(proc, log, STARTUP_GUARD, pattern=re.compile(r" at http://(\S+):(\d+)/"))
        assert not isinstance(found, str), found
        yield Running(found.group(1), int(found.group(2)), log, proc)
    finally:
        stop(proc)


def legacy_headers(session: str | None = None, **extra: str) -> dict[str, str]:
    """The headers of a raw legacy (2025-11-25) POST, of session ``session`` when given, and ``extra``."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **extra}
    if session is not None:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    return headers


def open_session(http: httpx2.Client, url: str) -> str:
    """A new legacy session at ``url`` (initialized), by its id."""
    opened = http.post(url, json=initialize_request(), headers=legacy_headers())
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    done = http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=legacy_headers(session)
    )
    assert done.status_code == 202, done.text
    return session


def events(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """SSE events from a stream's lines, each as its fields (comments skipped)."""
    event: dict[str, str] = {}
    for line in lines:
        if not line:
            if event:
                yield event
            event = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            event[name] = value.removeprefix(" ")


def closed_within(conn: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``conn`` (reading nothing but the end), or None if it stayed open."""
    conn.settimeout(seconds)
    start = time.monotonic()
    try:
        data = conn.recv(4096)
    except TimeoutError:
        return None
    except ConnectionResetError:
        return time.monotonic() - start
    assert data == b"", data
    return time.monotonic() - start


def write_skill(
    root: Path,
    skill_path: str,
    description: str = "A test skill.",
    files: dict[str, bytes | str] | None = None,
    *,
    frontmatter_extra: str = "",
) -> Path:
    """Create ``root/skill_path/SKILL.md`` (name = last segment) plus ``files``; return the folder."""
    folder = root / skill_path
    folder.mkdir(parents=True, exist_ok=True)
    name = skill_path.rsplit("/", 1)[-1]
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{frontmatter_extra}---\n# {name}\n"
    )
    for rel, content in (files or {}).items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return folder


def stream_get(host: str, port: int, session: str, **headers: str) -> tuple[socket.socket, bytes]:
    """A legacy session's ``GET`` (a stream, when it is answered 200) on a socket of its own: the socket and
    the response's head; ``headers`` are sent too (``Last_Event_ID`` as ``Last-Event-ID``)."""
    conn = send_get(host, port, session, **headers)
    return conn, read_head(conn)


def send_get(host: str, port: int, session: str, **headers: str) -> socket.socket:
    """A legacy session's ``GET`` sent on a socket of its own, nothing read yet (see :func:`stream_get`)."""
    conn = socket.create_connection((host, port))
    extra = "".join(f"{name.replace('_', '-')}: {value}\r\n" for name, value in headers.items())
    conn.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
        f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n{extra}\r\n".encode()
    )
    return conn


def read_head(conn: socket.socket) -> bytes:
    """The head of the response ``conn`` receives (status line and headers)."""
    conn.settimeout(10)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        assert chunk, head
        head += chunk
    return head


def legacy_stream(host: str, port: int) -> socket.socket:
    """A new legacy (2025-11-25) session's GET stream, open on a socket of its own (its head read)."""
    with httpx2.Client(timeout=30) as http:
        session = open_session(http, f"http://{host}:{port}/mcp")
    conn, head = stream_get(host, port, session)
    assert head.startswith(b"HTTP/1.1 200"), head
    return conn


GC_PROBE = (
    "import gc, sys, threading, time\n"
    "from skilldeck.cli import main\n"
    "def report():\n"
    "    while gc.get_freeze_count() == 0 or gc.get_threshold()[0] == 700:\n"
    "        time.sleep(0.05)\n"
    "    print('frozen', gc.get_freeze_count(), 'thresholds', gc.get_threshold(), flush=True)\n"
    "threading.Thread(target=report, daemon=True).start()\n"
    "sys.argv = ['skilldeck', *sys.argv[1:]]\n"
    "main()\n"
)
"""The CLI run in-process by a wrapper that prints the collector's freeze count and thresholds once
start-up has frozen the heap and changed them (``python PROBE serve ...``, ``python PROBE gateway ...``)."""


def wait_for_gc_report(log: Path, timeout: float = 10.0) -> str:
    """The log of a CLI run through :data:`GC_PROBE` once it has printed the collector's settings (or the timeout passed)."""
    deadline = time.monotonic() + timeout
    while "frozen" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return log.read_text()


def gc_report(args: list[str], work: Path, pattern: re.Pattern[str] = STARTUP_LINE) -> str:
    """The log of ``skilldeck ARGS`` run through :data:`GC_PROBE` once started and its collector settings printed."""
    probe, log = work / "probe.py", work / "probe.log"
    probe.write_text(GC_PROBE)
    proc = start_serve([sys.executable, str(probe), *args], log)
    try:
        found = wait_for_startup(proc, log, STARTUP_GUARD, pattern=pattern)
        assert not isinstance(found, str), found
        return wait_for_gc_report(log)
    finally:
        stop(proc)
