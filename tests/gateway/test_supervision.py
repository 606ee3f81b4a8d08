"""A lost upstream is brought back on the backoff schedule; while it is down the gateway does not offer it.

Real upstreams: the demo's ``jobs`` server as a stdio process (with a ``crash`` tool that ends the
process with exit code 1, and refusing to start while a hold file exists, so an outage lasts as long
as the test needs) and as a streamable HTTP process on a fixed loopback port, stopped and started
again. The gateway runs in-process, the official Python SDK client in both eras connected to it
through the outage: ``find`` leaves the down upstream's cards out and names it under
``unavailable``; ``load`` and ``call`` of its tools are refused at once with the upstream and when it
is retried; once it is back every client is told its tools changed, and its tools and skills work
again (the skill verified anew). The log lines a person reads are checked through the CLI process.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp.client import Client
from mcp.client.subscriptions import ToolsListChanged

from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.gateway._app import follow_upstreams
from skilldeck.host import Host, HttpServer, InProcessServer, ServerSpec, StdioServer
from skilldeck.host._backoff import Backoff

from ..server.helpers import REPO, cli_env, start_gateway, stop
from .gateway_clients_support import Gateway, check_structured, files_upstream, refusal

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]
FAST = Backoff(first=0.2, cap=1.0, jitter=0.0)
"""Short waits for tests (the CLI uses the defaults: first retry within 1 s, 60 s cap)."""
CRASHY = """
import os, sys
if os.path.exists(sys.argv[1]):
    sys.exit(3)  # held down by the test
from skilldeck.demo._servers import jobs_server
server = jobs_server()

@server.tool()
def crash() -> str:
    '''Stop this server process at once (exit code 1).'''
    os._exit(1)

server.run()
"""
HTTP_JOBS = """
import sys, uvicorn
from skilldeck.demo._servers import jobs_server
app = jobs_server().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""
QUERY = "search job postings by title words"


class Transitions(list[tuple[str, str]]):
    """What the supervisor told, in order."""

    def __call__(self, label: str, text: str) -> None:
        self.append((label, text))


class Heard:
    """The tool-list changes one client heard: ``notifications/tools/list_changed`` (legacy) or a listen event."""

    def __init__(self) -> None:
        self.count = 0

    async def __call__(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.count += 1


async def listen(c: Client, heard: Heard, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    async with c.listen(tools_list_changed=True) as sub:
        task_status.started()
        async for event in sub:
            if isinstance(event, ToolsListChanged):
                heard.count += 1


async def until(predicate: Any, what: str) -> None:
    """Poll ``predicate`` until it holds, for 30 s at most (generous, for a loaded machine); fail saying ``what``."""
    with anyio.move_on_after(30):
        while not predicate():
            await anyio.sleep(0.02)
        return
    pytest.fail(f"not within 30 s: {what}")


@asynccontextmanager
async def supervised(
    specs: list[ServerSpec], transitions: Transitions, mode: Literal["auto", "legacy"] = "auto"
) -> AsyncIterator[Gateway]:
    async with Host(specs, restart=FAST, on_transition=transitions, mode=mode) as host:
        service = GatewayService(host)
        server, middleware = create_gateway(service)
        async with host.watch(on_change=follow_upstreams(service, middleware)) as watcher:
            yield Gateway(host, service, server, middleware, watcher)


@asynccontextmanager
async def both_eras(gw: Gateway) -> AsyncIterator[dict[str, tuple[Client, Heard]]]:
    """A modern client (listening for tool-list changes) and a legacy one, each with what it heard."""
    heard = {era: Heard() for era in ERAS}
    async with (
        Client(gw.server, mode="auto", cache=None) as modern,
        Client(gw.server, mode="legacy", cache=None, message_handler=heard["legacy"]) as legacy,
        anyio.create_task_group() as tg,
    ):
        await tg.start(listen, modern, heard["modern"])
        yield {"modern": (modern, heard["modern"]), "legacy": (legacy, heard["legacy"])}
        tg.cancel_scope.cancel()


async def found(c: Client) -> dict[str, Any]:
    return check_structured("find", await c.call_tool("find", {"query": QUERY, "limit": 20}))


async def refused_at_once(c: Client, tool: str, label: str) -> str:
    """A call of ``tool`` refused without waiting on the upstream (its timeout is 60 s; this allows 10)."""
    with anyio.fail_after(10):
        text = refusal(
            await c.call_tool("call", {"tool": tool, "arguments": {"query": "python"}}), f"'{label}' is down"
        )
    assert "the call was not sent" in text, text
    assert "retried in" in text or "being retried now" in text, text
    return text


async def check_down(clients: dict[str, tuple[Client, Heard]], label: str, reason: str) -> None:
    for c, _ in clients.values():
        result = await found(c)
        assert all(card["server"] != label for card in result["cards"]), result
        assert result["cards"], result  # the upstream still up is offered
        (down,) = [u for u in result["unavailable"] if u["server"] == label]
        assert reason in down["reason"], down
        await refused_at_once(c, f"{label}/search_jobs", label)
        result = await c.call_tool("load", {"ids": [f"{label}/job-search"]})
        assert result.is_error, result  # nothing loaded: an error a model notices
        loaded = result.structured_content
        assert isinstance(loaded, dict), result
        assert loaded["skills"] == [], loaded
        (why,) = loaded["refused"]
        assert f"'{label}' is down" in why["reason"], loaded
        # the other upstream is not affected
        check_structured("load", await c.call_tool("load", {"ids": ["files/read_file"]}))
        read = await c.call_tool("call", {"tool": "files/read_file", "arguments": {"path": "notes.txt"}})
        assert not read.is_error, read


def heard_now(clients: dict[str, tuple[Client, Heard]]) -> dict[str, int]:
    return {era: heard.count for era, (_, heard) in clients.items()}


async def check_back(
    gw: Gateway, clients: dict[str, tuple[Client, Heard]], label: str, heard_before: dict[str, int]
) -> None:
    """``label`` is connected again (within the backoff, cap 1 s), every client told, its tools and skills working."""
    await until(lambda: label in gw.host.connections.connected, f"{label} back")
    for era, (c, heard) in clients.items():
        await until(lambda h=heard, e=era: h.count > heard_before[e], f"{era} told the tools changed")
        result = await found(c)
        assert result["cards"][0]["server"] == label, result
        assert "unavailable" not in result, result
        loaded = check_structured("load", await c.call_tool("load", {"ids": [f"{label}/job-search"]}))
        assert [s["verified"] for s in loaded["skills"]] == [True], loaded
        called = await c.call_tool("call", {"tool": f"{label}/search_jobs", "arguments": {"query": "python"}})
        assert not called.is_error, called


async def test_a_stdio_upstream_that_exits_is_restarted_and_not_offered_meanwhile(tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    transitions = Transitions()
    specs = [
        ServerSpec("crashy", StdioServer(sys.executable, ("-c", CRASHY, str(hold))), timeout=60),
        ServerSpec("files", InProcessServer(files_upstream().server), timeout=10),
    ]
    async with supervised(specs, transitions) as gw, both_eras(gw) as clients:
        for c, _ in clients.values():
            assert (await found(c))["cards"][0]["server"] == "crashy"
            check_structured("load", await c.call_tool("load", {"ids": ["crashy/search_jobs", "crashy/crash"]}))
        hold.write_text("")  # restarts fail until the test lets them
        modern = clients["modern"][0]
        crashed = await modern.call_tool("call", {"tool": "crashy/crash", "arguments": {}})
        assert crashed.is_error, crashed
        await until(lambda: "crashy" in gw.host.failures, "the exit noticed")
        await check_down(clients, "crashy", "exited (code 1)")
        assert transitions[0] == ("crashy", "exited (code 1); restarting in 0.2 s"), transitions
        assert len(transitions) == 1, transitions  # failed restarts are no transitions

        heard = heard_now(clients)
        hold.unlink()
        await check_back(gw, clients, "crashy", heard)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_jobs(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """The demo's jobs server over streamable HTTP on ``port``, as a process of its own, until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HTTP_JOBS, str(port)], cwd=REPO, stdin=subprocess.DEVNULL, env=cli_env()
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, f"the HTTP upstream exited with code {proc.returncode}"
                assert time.monotonic() < deadline, "the HTTP upstream did not listen within 60 s"
                time.sleep(0.05)
        yield proc
    finally:
        stop(proc)


async def test_an_http_upstream_down_at_start_or_stopped_is_connected_again(tmp_path: Path) -> None:
    port = free_port()
    transitions = Transitions()
    specs = [
        ServerSpec("web", HttpServer(f"http://127.0.0.1:{port}/mcp"), timeout=60),
        ServerSpec("files", InProcessServer(files_upstream().server), timeout=10),
    ]
    async with supervised(specs, transitions) as gw, both_eras(gw) as clients:
        assert "web" in gw.host.failures  # down at start
        await check_down(clients, "web", "All connection attempts failed")
        with http_jobs(port):
            await check_back(gw, clients, "web", heard_now(clients))
        # stopped: the first request to notice may fail; from then on requests are refused at once
        with anyio.fail_after(30):
            while "web" not in gw.host.failures:
                c = clients["legacy"][0]
                await c.call_tool("call", {"tool": "web/search_jobs", "arguments": {"query": "python"}})
                await anyio.sleep(0.05)
        # "connection lost: ..." at first, "... All connection attempts failed" once a retry failed
        await check_down(clients, "web", "connection")
        assert [label for label, _ in transitions] == ["web"], transitions
        assert "reconnecting in" in transitions[0][1], transitions
        with http_jobs(port):
            await check_back(gw, clients, "web", heard_now(clients))


async def test_an_http_upstream_restarted_between_requests_is_connected_again_when_it_forgets_the_session() -> None:
    port = free_port()
    transitions = Transitions()
    specs = [ServerSpec("web", HttpServer(f"http://127.0.0.1:{port}/mcp"), timeout=60)]
    with http_jobs(port) as first:
        # 2025-11-25 upstream sessions have an id the server keeps in memory
        async with supervised(specs, transitions, mode="legacy") as gw, both_eras(gw) as clients:
            before = gw.host.connections.connected["web"]
            for c, _ in clients.values():
                check_structured("load", await c.call_tool("load", {"ids": ["web/search_jobs"]}))
            stop(first)
            with http_jobs(port):
                heard = heard_now(clients)
                c = clients["modern"][0]
                # the first call to reach the new process is answered 404 for the old session
                await c.call_tool("call", {"tool": "web/search_jobs", "arguments": {"query": "python"}})
                await check_back(gw, clients, "web", heard)
                assert gw.host.connections.connected["web"] is not before
                assert transitions == [
                    ("web", "session lost (HTTP 404: the server no longer knows it); reconnecting in 0.2 s")
                ], transitions


def test_with_log_format_json_every_line_is_one_object_start_restart_and_refusal_included(tmp_path: Path) -> None:
    """A log shipper reads the gateway's stderr: the start line, an upstream down at start, an upstream that
    exits and comes back, and a request refused (a wrong Host header, logged by the SDK) are each one JSON
    object with a time, a level, a logger and the message (and ``upstream`` where a line is about one)."""
    import httpx2

    config = tmp_path / "mcp.json"
    crashy = {"command": sys.executable, "args": ["-c", CRASHY, str(tmp_path / "hold")]}
    gone = {"command": sys.executable, "args": ["-c", "raise SystemExit('down')"]}
    config.write_text(json.dumps({"mcpServers": {"crashy": crashy, "gone": gone}}))
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--log-format", "json")
    url = match["url"].split('"', 1)[0]  # the line is JSON: the URL ends at the string's quote
    try:

        async def crash() -> None:
            async with Client(url, mode="legacy", cache=None) as c:
                check_structured("load", await c.call_tool("load", {"ids": ["crashy/crash"]}))
                await c.call_tool("call", {"tool": "crashy/crash", "arguments": {}})

        anyio.run(crash)
        with httpx2.Client(timeout=30) as http:
            refused = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Host": "evil"})
            assert refused.status_code == 421
        deadline = time.monotonic() + 60
        while not ("back:" in log.read_text() and "Invalid Host header" in log.read_text()):
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        stop(proc)
    lines = [json.loads(line) for line in log.read_text().splitlines()]  # every line, or this fails
    assert all(set(line) >= {"time", "level", "logger", "message"} for line in lines), lines
    assert all(line["time"].endswith("Z") for line in lines), lines
    said = {(line["level"], line.get("upstream"), line["message"].split(" (")[0].split(";")[0]) for line in lines}
    start = next(line for line in lines if line["message"].startswith("skilldeck gateway: 1 of 2 servers"))
    assert (start["level"], start["logger"]) == ("info", "skilldeck.cli"), start
    assert ("warning", "gone", "unavailable [gone] exited") in said, said
    assert ("warning", "crashy", "[crashy] exited") in said, said
    assert ("info", "crashy", "[crashy] back: 3 tools, 1 skill") in said, said
    [host] = [line for line in lines if "Invalid Host header" in line["message"]]
    assert host["level"] == "warning", host
    assert host["logger"].startswith("mcp."), host


def test_the_cli_says_when_an_upstream_exits_and_when_it_is_back(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    hold = tmp_path / "hold"  # never created: every restart succeeds
    crashy = {"command": sys.executable, "args": ["-c", CRASHY, str(hold)]}
    config.write_text(json.dumps({"mcpServers": {"crashy": crashy}}))
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log)
    try:

        async def crash() -> None:
            async with Client(match["url"], mode="legacy", cache=None) as c:
                check_structured("load", await c.call_tool("load", {"ids": ["crashy/crash"]}))
                await c.call_tool("call", {"tool": "crashy/crash", "arguments": {}})

        anyio.run(crash)
        deadline = time.monotonic() + 60
        while "[crashy] back:" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        lines = [line for line in log.read_text().splitlines() if line.startswith("[crashy]")]
        assert len(lines) == 2, log.read_text()
        exited, back = lines
        assert exited.startswith("[crashy] exited (code 1); restarting in "), exited
        assert float(exited.removeprefix("[crashy] exited (code 1); restarting in ").removesuffix(" s")) <= 1.0
        assert back == "[crashy] back: 3 tools, 1 skill", back
    finally:
        stop(proc)
