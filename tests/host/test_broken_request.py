"""What the host's HTTP client for a streamable HTTP server answers in place of a request whose connection broke.

The end-to-end case (a real gateway, an upstream whose connection is reset) is
``tests/gateway/test_upstream_read_error.py``; here each kind of message and error, on an HTTP
transport that fails the way the network did.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp_types import CONNECTION_CLOSED

from skilldeck.host._broken_request import RequestScopedClient, broken_answer_said

pytestmark = pytest.mark.anyio

URL = "http://upstream.test/mcp"


def failing(error: Exception) -> RequestScopedClient:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise error

    return RequestScopedClient("web", transport=httpx2.MockTransport(handler))


async def post(client: RequestScopedClient, message: dict[str, Any]) -> httpx2.Response:
    return await client.send(client.build_request("POST", URL, json=message))


@pytest.mark.parametrize("request_id", [7, "a-7"])
async def test_a_request_whose_connection_broke_is_answered_with_an_error_for_that_request(
    request_id: int | str, caplog: pytest.LogCaptureFixture
) -> None:
    async with failing(httpx2.ReadError("")) as client:
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "echo"}}
        answer = await post(client, message)
    assert answer.status_code == 200
    body = json.loads(answer.content)
    assert body["id"] == request_id  # the same id, of the same type: the SDK hands it to that request's caller
    assert body["error"]["code"] == CONNECTION_CLOSED
    said = body["error"]["message"]
    assert said == (
        "the connection broke before the answer arrived (ReadError); "
        "the server may have run it, so retry it only if running it twice is harmless"
    ), said
    assert broken_answer_said(f"Failed to parse JSON response: {said}") == said
    assert f"[web] tools/call failed: {said}" in caplog.text


async def test_a_request_that_found_no_free_connection_was_not_sent() -> None:
    async with failing(httpx2.PoolTimeout("timed out")) as client:
        answer = await post(client, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    said = json.loads(answer.content)["error"]["message"]
    assert said == (
        "the connection broke before the answer arrived: it was not sent, every connection to the server "
        "stayed busy (PoolTimeout: timed out); it is safe to retry"
    ), said


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "id": 3, "result": {}},  # our answer to a request of the server's
    ],
    ids=["notification", "response"],
)
async def test_a_message_nobody_waits_on_is_dropped_with_a_log_line(
    message: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    async with failing(httpx2.RemoteProtocolError("Server disconnected without sending a response.")) as client:
        answer = await post(client, message)
    assert answer.status_code == 202
    assert "not delivered: the connection broke before the answer arrived (RemoteProtocolError" in caplog.text


@pytest.mark.parametrize(
    ("method", "error"),
    [
        ("POST", httpx2.ConnectError("All connection attempts failed")),  # unreachable: the session is lost
        ("POST", httpx2.ConnectTimeout("timed out")),
        ("GET", httpx2.ReadError("")),  # the standalone stream: the SDK reconnects it itself
        ("DELETE", httpx2.ReadError("")),
    ],
)
async def test_other_failures_are_left_to_the_sdk(method: str, error: Exception) -> None:
    async with failing(error) as client:
        request = client.build_request(method, URL, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        with pytest.raises(type(error)):
            await client.send(request)
