"""SIGTERM stops ``serve --http`` and ``gateway --http`` within a bound, whatever clients hold open.

Each test runs the real command and talks to it over loopback: a listen stream (2026-07-28) and a
legacy session's GET stream are ended the way the protocol lets a server end them, a request in
flight is let finish, and one still unfinished when ``--shutdown-timeout`` runs out is cut and
reported.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client

from ..host.process_tree import kill, still_running, tree
from .helpers import POST_HEADERS, initialize_request, running_http

LINE = re.compile(r"stopped on SIGTERM in [\d.]+s: ended (.*)")


def exited_within(proc: subprocess.Popen[bytes], seconds: float) -> float | None:
    """Seconds until ``proc`` exited, or None if it still runs after ``seconds``."""
    start = time.monotonic()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - start


async def open_get_stream(http: httpx2.AsyncClient, url: str) -> httpx2.Response:
    """A legacy session's GET stream, open (its response head received)."""
    reply = await http.post(url, json=initialize_request(), headers=POST_HEADERS)
    session = {"Mcp-Session-Id": reply.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=initialized, headers={**POST_HEADERS, **session})).status_code == 202
    request = http.build_request("GET", url, headers={"Accept": "text/event-stream", **session})
    stream = await http.send(request, stream=True)
    assert stream.status_code == 200
    return stream


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_sigterm_ends_open_streams_and_exits(tmp_path: Path, examples_dir: Path, command: str) -> None:
    """A listen stream and a legacy GET stream open: SIGTERM ends both cleanly and the process exits 0 at once."""
    with running_http(command, tmp_path, examples_dir) as ran:
        proc, url, log = ran.proc, ran.url, ran.log

        async def hold_streams_through_sigterm() -> float | None:
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(url, mode="auto", cache=None) as client,
                client.listen(resources_list_changed=True) as listening,
            ):
                get_stream = await open_get_stream(http, url)
                processes = tree(proc.pid)  # for the gateway: its upstream's too
                proc.send_signal(signal.SIGTERM)
                with anyio.fail_after(20):
                    async for _ in listening:  # a graceful close ends the loop; a dropped stream raises
                        pass
                    async for _ in get_stream.aiter_bytes():  # the response ends; a cut one raises
                        pass
                waited = await anyio.to_thread.run_sync(exited_within, proc, 20)
                left = still_running(processes, within=2)
                kill(left)
                assert not left, f"{len(left)} processes outlived the {command} by 2 s"
                return waited

        waited = anyio.run(hold_streams_through_sigterm)
        text = log.read_text()
        assert waited is not None, f"still running 20 s after SIGTERM with two streams open:\n{text}"
        assert proc.returncode == 0, text
        assert waited < 10, text
        stopped = LINE.search(text)
        assert stopped, text
        assert stopped.group(1) == "1 listen stream and 1 legacy GET stream; no request cut"


def _partial_post(port: int) -> tuple[socket.socket, bytes]:
    """A connection that sent a ping's head and half its body: (the connection, the rest of the body)."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    conn.sendall(head + body[:10])
    return conn, body[10:]


def _read_all(conn: socket.socket) -> bytes:
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return data


def test_a_request_in_flight_finishes_and_one_past_the_shutdown_timeout_is_cut(
    tmp_path: Path, examples_dir: Path
) -> None:
    """Two requests arriving when SIGTERM comes: the one completed in time is answered, the other is cut after
    --shutdown-timeout, and the line says so."""
    with running_http("serve", tmp_path, examples_dir, "--shutdown-timeout", "3", "--request-timeout", "60") as ran:
        proc, port, log = ran.proc, ran.port, ran.log
        finishing, rest = _partial_post(port)
        cut, _ = _partial_post(port)
        time.sleep(0.5)  # both heads are in: two requests in flight
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        finishing.sendall(rest)
        answer = _read_all(finishing)
        assert answer.startswith(b"HTTP/1.1 "), answer[:200]
        assert b'"jsonrpc":"2.0"' in answer, answer[-200:]  # answered in full, as the SDK answers it any time
        waited = exited_within(proc, 30)
        assert waited is not None, log.read_text()
        took = time.monotonic() - start
        assert _read_all(cut) == b""  # closed without an answer
        finishing.close()
        cut.close()
    text = log.read_text()
    assert 3 <= took < 10, (took, text)
    stopped = LINE.search(text)
    assert stopped, text
    assert stopped.group(1).endswith("; cut 1 request still running after 3s (--shutdown-timeout)"), text
