"""A ledger another process holds locked costs the other clients nothing; the use waits, then is recorded
(or, past ``--ledger-timeout``, dropped with one log line); a ledger that is not a database is served
around, not refused. Through ``skilldeck gateway`` processes, a real SDK client, and a second process
holding SQLite's write lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.server.mcpserver import MCPServer

from ..host.hostile_http import serving_in_thread
from ..server.helpers import start_gateway, stop

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
WEATHER = "weather forecast for Paris tomorrow"
HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS held (x)")
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO held VALUES (1)")
print("locked", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
print("released", flush=True)
"""


def weather_server(called: threading.Event) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("up", log_level="WARNING")

    @server.tool()
    def forecast(city: str) -> str:
        """Weather forecast for a city: temperature and rain for the next days."""
        called.set()
        return f"{city}: rain"

    return server


def history_text() -> str:
    """What ``skilldeck history`` prints, from a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "skilldeck.cli", "history"], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def config_for(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"up": {"type": "http", "url": url}}}))
    return path


async def test_a_write_waiting_on_another_process_s_lock_holds_no_other_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SKILLDECK_HOME", str(home))
    called = threading.Event()
    with serving_in_thread(weather_server(called).streamable_http_app(streamable_http_path="/mcp")) as url:
        flags = ("--lexical", "--learn-anonymous", "--ledger-timeout", "60")
        proc, started = start_gateway(config_for(tmp_path, url), tmp_path / "gateway.log", *flags)
        holder = None
        try:
            async with Client(started["url"], mode=MODERN, cache=None) as a:
                await a.call_tool("find", {"query": WEATHER})  # opens the ledger (and creates it)
                await a.call_tool("load", {"ids": ["up/forecast"]})
                holder = subprocess.Popen(
                    [sys.executable, "-c", HOLDER, str(home / "ledger.sqlite3")],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                assert holder.stdout is not None
                assert holder.stdin is not None
                assert holder.stdout.readline().strip() == "locked"
                done: list[Any] = []

                async def call() -> None:
                    done.append(await a.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}}))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await anyio.to_thread.run_sync(called.wait, 60)  # the upstream answered: the use is being written
                    async with Client(started["url"], mode=MODERN, cache=None) as b:
                        for _ in range(10):  # another client is served while the write waits on the lock
                            found = await b.call_tool("find", {"query": "rain in Lyon"})
                            assert found.structured_content["cards"], found
                    assert done == []  # the call that taught it is still waiting on the lock
                    holder.stdin.write("go\n")
                    holder.stdin.flush()
                    assert holder.stdout.readline().strip() == "released"
                assert not done[0].is_error, done[0]
        finally:
            if holder is not None:
                holder.kill()
                holder.wait(timeout=10)
            stop(proc)
    records = await anyio.to_thread.run_sync(history_text)
    assert WEATHER in records  # recorded once the lock was released


async def test_a_ledger_that_is_not_a_database_is_served_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ledger.sqlite3").write_bytes(b"not a database" * 100)
    monkeypatch.setenv("SKILLDECK_HOME", str(home))
    called = threading.Event()
    with serving_in_thread(weather_server(called).streamable_http_app(streamable_http_path="/mcp")) as url:
        log = tmp_path / "gateway.log"
        proc, started = start_gateway(config_for(tmp_path, url), log, "--lexical", "--learn-anonymous")
        try:
            async with Client(started["url"], mode=MODERN, cache=None) as c:
                found = await c.call_tool("find", {"query": WEATHER})
                assert found.structured_content["cards"][0]["id"] == "up/forecast"
        finally:
            stop(proc)
    text = log.read_text()
    lines = [line for line in text.splitlines() if "serving without learning from use" in line]
    assert len(lines) == 1, text
    assert "file is not a database" in lines[0]
    assert (home / "ledger.sqlite3").read_bytes() == b"not a database" * 100  # left as it was


async def test_a_ledger_removed_while_serving_is_opened_again_and_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SKILLDECK_HOME", str(home))
    called = threading.Event()
    with serving_in_thread(weather_server(called).streamable_http_app(streamable_http_path="/mcp")) as url:
        log = tmp_path / "gateway.log"
        proc, started = start_gateway(config_for(tmp_path, url), log, "--lexical", "--learn-anonymous")
        try:
            async with Client(started["url"], mode=MODERN, cache=None) as c:
                await c.call_tool("find", {"query": WEATHER})
                for name in ("ledger.sqlite3", "ledger.sqlite3-wal", "ledger.sqlite3-shm"):
                    (home / name).unlink(missing_ok=True)
                await c.call_tool("find", {"query": WEATHER})
                await c.call_tool("load", {"ids": ["up/forecast"]})
                called_result = await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
                assert not called_result.is_error
        finally:
            stop(proc)
    reopened = [line for line in log.read_text().splitlines() if "was removed or replaced while in use" in line]
    assert len(reopened) == 1, log.read_text()
    records = await anyio.to_thread.run_sync(history_text)
    assert WEATHER in records  # written into the file opened again, not into the unlinked one
