"""``GET /healthz`` and ``GET /readyz`` of ``serve --http`` and ``gateway --http``, from the outside.

Each test runs the real command and asks over raw sockets, as a balancer's check would: the
answers and their reasons, the gateway's count of upstreams up against ``--ready-upstreams`` at the
bound and one past it, and probes answered while ``--max-connections`` holds clients out (the
reserved places for probes at the bound and one past it).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skilldeck.serving._connections import DEFAULT_PROBE_CONNECTIONS

from .helpers import CLI, cli_env, closed_within, legacy_stream, running_http, start_gateway, stop

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def ask(port: int, method: str, path: str, *, close: bool = True, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """One request on a new connection, read until the server closes it: (status, JSON body)."""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    if close:
        head += "Connection: close\r\n"
    if body:
        head += f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    payload = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(payload) if payload else {}


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_healthz_and_readyz_answer_plain_json(tmp_path: Path, examples_dir: Path, command: str) -> None:
    with running_http(command, tmp_path, examples_dir) as ran:
        assert ask(ran.port, "GET", "/healthz") == (200, {"status": "up"})
        status, ready = ask(ran.port, "GET", "/readyz")
        assert status == 200, ready
        if command == "serve":
            assert ready == {"status": "ready", "skills": 8}
        else:
            assert ready["upstreams"] == {"up": 1, "of": 1, "minimum": 1}
            assert ready["index"]["cards"] >= 8  # the example pack's skills, ranked by find
        assert ask(ran.port, "HEAD", "/readyz") == (200, {})
        status, refused = ask(ran.port, "POST", "/healthz", body=b"{}")
        assert (status, refused) == (405, {"error": "/healthz answers GET"})


def broken_and_good(tmp_path: Path, examples_dir: Path) -> Path:
    """A gateway config naming one upstream that serves the example pack and one that exits at once."""
    config = tmp_path / "gateway.json"
    good = {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(examples_dir)]}
    broken = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
    config.write_text(json.dumps({"mcpServers": {"docs": good, "broken": broken}}))
    return config


def test_gateway_readyz_counts_upstreams_up_against_ready_upstreams(tmp_path: Path, examples_dir: Path) -> None:
    config = broken_and_good(tmp_path, examples_dir)
    for minimum, expected in ((1, 200), (2, 503)):  # at the bound (one of two up), and one past it
        proc, started = start_gateway(config, tmp_path / f"gateway-{minimum}.log", "--ready-upstreams", str(minimum))
        try:
            port = int(started.group("url").rsplit(":", 1)[1].split("/")[0])
            status, body = ask(port, "GET", "/readyz")
            assert status == expected, body
            assert body["status"] == ("ready" if expected == 200 else "not ready")
            assert body["upstreams"] == {"up": 1, "of": 2, "minimum": minimum}
        finally:
            stop(proc)
    # a minimum the config can never reach is refused before anything starts
    cmd = [*CLI, "gateway", "--config", str(config), "--http", "127.0.0.1:0", "--ready-upstreams", "3"]
    ran = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=cli_env())
    assert ran.returncode != 0
    assert "--ready-upstreams 3" in ran.stderr
    assert "names only 2 servers" in ran.stderr, ran.stderr


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_probes_are_answered_while_max_connections_holds_clients_out(
    tmp_path: Path, examples_dir: Path, command: str
) -> None:
    """At --max-connections 3: a third client is still served; with three held, a fourth client is refused with
    the reason while probes are answered, in up to DEFAULT_PROBE_CONNECTIONS places of their own; with every
    place held, the next connection is closed at once."""
    extra = ("--max-connections", "3", "--request-timeout", "60", "--stream-share", "1")
    with running_http(command, tmp_path, examples_dir, *extra) as ran:
        # busy connections (a stream each): never closed to make room, unlike silent ones
        held = [legacy_stream("127.0.0.1", ran.port) for _ in range(2)]
        try:
            time.sleep(0.2)  # the server has accepted both
            status, answer = ask(ran.port, "POST", "/mcp", body=PING)  # the third client: at the bound
            assert "jsonrpc" in answer, (status, answer)
            held.append(legacy_stream("127.0.0.1", ran.port))
            time.sleep(0.2)
            status, refused = ask(ran.port, "POST", "/mcp", body=PING)  # a fourth client: one past it
            assert status == 503, refused
            assert "3 HTTP connections are open (--max-connections)" in refused["error"]
            assert "only for /healthz or /readyz" in refused["error"]
            assert ask(ran.port, "GET", "/healthz") == (200, {"status": "up"})
            assert ask(ran.port, "GET", "/readyz", close=False)[0] == 200  # closed after one answer all the same
            probes = [socket.create_connection(("127.0.0.1", ran.port)) for _ in range(DEFAULT_PROBE_CONNECTIONS)]
            held += probes
            time.sleep(0.2)
            with socket.create_connection(("127.0.0.1", ran.port)) as past:  # every probe place taken too
                waited = closed_within(past, 5)
                assert waited is not None, "a connection past the probes' places was kept"
                assert waited < 0.5, waited
            held.pop().close()  # the last probe's place
            time.sleep(0.3)  # one probe place is free again: the next probe takes it, at the bound
            assert ask(ran.port, "GET", "/readyz")[0] == 200
        finally:
            for conn in held:
                conn.close()


def test_mcp_cannot_be_served_where_probes_are_answered(examples_dir: Path) -> None:
    cmd = [*CLI, "serve", str(examples_dir), "--http", "127.0.0.1:0", "--path", "/readyz"]
    ran = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=cli_env())
    assert ran.returncode != 0
    assert "--path /readyz is where health probes are answered" in ran.stderr, ran.stderr
