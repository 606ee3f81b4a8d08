"""A client's mistake is answered as the client's mistake: an error code that says so, and at most one
bounded line in the server's log, never a traceback. Real SDK clients against a real server, both eras."""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST

from skilldeck.errors import ECHO_LIMIT
from skilldeck.server import create_server
from skilldeck.serving._request_ids import INVALID_ID_MESSAGE, has_invalid_id

from .helpers import POST_HEADERS, initialize_request, running_http

ERAS = ["auto", "legacy"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_an_unknown_prompt_is_invalid_params_and_logs_no_traceback(
    examples_dir: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = create_server(examples_dir)

    @server.prompt()
    def greet(who: str) -> str:
        """A prompt of the server's own: the guard must not swallow what it renders."""
        return f"hello {who}"

    name = "x" * 16_000  # the fuzzer's long name: echoed cut, not whole
    caplog.set_level(logging.DEBUG)
    async with Client(server, mode=mode, cache=None) as client:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt(name, {})
        assert raised.value.error.code == INVALID_PARAMS, raised.value.error
        assert raised.value.error.message.startswith("unknown prompt 'xxx"), raised.value.error.message
        assert "prompts/list names the prompts" in raised.value.error.message
        assert len(raised.value.error.message) < ECHO_LIMIT + 100
        rendered = await client.get_prompt("greet", {"who": "ada"})
        assert "hello ada" in str(rendered.messages[0].content)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], [
        (r.name, r.levelname, r.getMessage()[:80]) for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR
    ]


@pytest.mark.parametrize(
    ("body", "invalid"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', False),
        (b'{"jsonrpc":"2.0","id":-7 ,"method":"ping"}', False),
        (b'{"jsonrpc":"2.0","id":"a\\"b","method":"ping"}', False),
        (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', False),
        (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"unreadable"}}', False),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"id":1.5}}}', False),
        (b"not json", False),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', True),
        (b'{"jsonrpc":"2.0","id":1e3,"method":"ping"}', True),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', True),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', True),
        (b'{"jsonrpc":"2.0","id":{},"method":"ping"}', True),
        (b'{"jsonrpc":"2.0","id":[],"method":"ping"}', True),
        (b'{"jsonrpc":"2.0","id":null,"result":{}}', True),
    ],
)
def test_which_ids_are_invalid(body: bytes, invalid: bool) -> None:
    assert has_invalid_id(body) is invalid


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_a_legacy_request_with_an_invalid_id_is_answered_invalid_request(
    tmp_path: Path, examples_dir: Path, command: str
) -> None:
    """The SDK's legacy transport took such a request for a notification: 202 and no reply, so the client
    waited out its timeout. Now 400 with -32600 and id null; valid ids, and an id-looking value inside
    params, are answered as before."""
    headers, init = POST_HEADERS, initialize_request()
    with running_http(command, tmp_path, examples_dir) as (host, port, _, _), httpx2.Client(timeout=30) as http:
        url = f"http://{host}:{port}/mcp"
        opened = http.post(url, json=init, headers=headers)
        assert opened.status_code == 200, opened.text
        session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        for bad in ("1.5", "true", "null", "{}", "[]"):
            reply = http.post(url, content=f'{{"jsonrpc":"2.0","id":{bad},"method":"ping"}}', headers=session)
            assert reply.status_code == 400, (bad, reply.status_code, reply.text)
            assert reply.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": INVALID_REQUEST, "message": INVALID_ID_MESSAGE},
            }, bad
        for good in ("7", '"seven"'):
            reply = http.post(url, content=f'{{"jsonrpc":"2.0","id":{good},"method":"ping"}}', headers=session)
            assert reply.status_code == 200, (good, reply.text)
            assert f'"id":{good}' in reply.text.replace(" ", ""), reply.text
        nested = '{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"id":1.5}}}'
        reply = http.post(url, content=nested, headers=session)
        assert reply.status_code == 200, reply.text
        assert '"id":8' in reply.text.replace(" ", ""), reply.text


def _leave_mid_body(host: str, port: int, headers: str) -> None:
    """A POST that promises 50 bytes more body than it sends, then hangs up."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{headers}Content-Length: {len(body) + 50}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(head + body)
        time.sleep(0.1)  # the server has started reading the body


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_a_client_that_leaves_mid_body_costs_no_traceback(tmp_path: Path, examples_dir: Path, command: str) -> None:
    """Each such request printed uvicorn's "Exception in ASGI application" and a 40-line traceback (2026-07-28),
    or an SDK error (2025-11-25). A disconnect is not an error: nothing is logged, and the server answers on."""
    headers, init = POST_HEADERS, initialize_request()
    with running_http(command, tmp_path, examples_dir) as (host, port, log, _), httpx2.Client(timeout=30) as http:
        url = f"http://{host}:{port}/mcp"
        session = http.post(url, json=init, headers=headers).headers["mcp-session-id"]
        before = log.read_text()
        for _ in range(5):
            _leave_mid_body(host, port, "MCP-Protocol-Version: 2026-07-28\r\n")
            _leave_mid_body(host, port, f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n")
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        legacy = {**headers, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        assert http.post(url, json=ping, headers=legacy).status_code == 200
        time.sleep(1.0)  # anything the disconnects made the server log has been written
    added = log.read_text()[len(before) :]
    assert "Traceback" not in added, added[:3_000]
    assert "Exception in ASGI" not in added, added[:3_000]
    assert not [line for line in added.splitlines() if "ERROR" in line], added[:3_000]
