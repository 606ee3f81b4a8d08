"""``skilldeck gateway --http`` answers on the wire as the upstream it fronts would (issue 25, item 4):
``Mcp-Param-*`` headers checked for the tools it lists, ``-32602`` for malformed ``inputResponses``,
and resumable SSE streams on legacy sessions.

The upstream (:mod:`.transparency_upstream`) is a real SDK server over streamable HTTP on loopback,
the gateway the ``skilldeck gateway`` command; requests are raw HTTP where the wire itself is checked
(status codes, headers, SSE event ids), else the official Python SDK client.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    HEADER_MISMATCH,
    INVALID_PARAMS,
    PROTOCOL_VERSION_META_KEY,
    CreateMessageResult,
    InputRequiredResult,
    TextContent,
)

from skilldeck.serving._resumable import RETRY_MS

from ..server.helpers import events, legacy_headers, open_session
from .transparency_upstream import REGION_HEADER, gateway_in_front

MODERN = "2026-07-28"


class Running(NamedTuple):
    url: str
    log: Path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with gateway_in_front(tmp_path_factory.mktemp("gateway-http-protocol")) as (url, log):
        yield Running(url, log)


def modern_call(url: str, name: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> httpx2.Response:
    """A raw 2026-07-28 ``tools/call`` with the routing headers a conforming client sends (and ``headers``)."""
    meta = {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_CAPABILITIES_META_KEY: {"sampling": {}}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "_meta": meta, **params}}
    sent = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        **(headers or {}),
    }
    with httpx2.Client(timeout=30) as http:
        return http.post(url, json=body, headers=sent)


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message a response carries, as JSON or as the last SSE event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads([d for d in data if d][-1])
    return response.json()


# -- Mcp-Param-* headers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (None, "is missing but the request body's 'region' argument is present"),
        ("=?base64?SGVsbG8?=", "malformed base64"),  # bad padding
        ("=?base64?SGVs!!!bG8=?=", "malformed base64"),  # not the alphabet
        ("south", "does not match the request body's 'region' argument"),
    ],
)
def test_a_pinned_tools_param_header_is_checked_as_the_sdk_checks_its_own(
    gateway: Running, header: str | None, why: str
) -> None:
    headers = {} if header is None else {f"Mcp-Param-{REGION_HEADER}": header}
    response = modern_call(gateway.url, "see__locate", {"arguments": {"region": "Hello"}}, headers)
    assert response.status_code == 400, response.text
    error = answer_of(response)["error"]
    assert error["code"] == HEADER_MISMATCH
    assert why in error["message"], error


@pytest.mark.parametrize("header", ["Hello", "=?base64?" + base64.b64encode(b"Hello").decode() + "?="])
def test_a_matching_param_header_passes(gateway: Running, header: str) -> None:
    response = modern_call(
        gateway.url, "see__locate", {"arguments": {"region": "Hello"}}, {f"Mcp-Param-{REGION_HEADER}": header}
    )
    assert response.status_code == 200, response.text
    assert answer_of(response)["result"]["content"][0]["text"] == "at Hello"


@pytest.mark.anyio
async def test_the_sdk_client_sends_the_header_the_gateway_listed(gateway: Running) -> None:
    async with Client(gateway.url, mode="auto", cache=None) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        region = tools["see__locate"].input_schema["properties"]["region"]
        assert region["x-mcp-header"] == REGION_HEADER  # listed with the upstream's annotation
        result = await c.call_tool("see__locate", {"region": "north pole ☃"})  # base64 on the wire
        assert not result.is_error, result
        assert result.content[0].text == "at north pole ☃"  # type: ignore[union-attr]


UNROUTED = """\
default_identity: {subject: intern, tenant: acme, roles: [reader]}
public_tools: [see/declared]
"""


def test_a_pin_the_policy_does_not_route_is_refused_by_the_policy_not_for_its_headers(tmp_path: Path) -> None:
    """The policy decides first: a caller ``see/locate`` is not routed to is told so (as for any tool it
    was never shown), not ``-32020`` for an ``Mcp-Param-*`` header it had no way to know of."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(UNROUTED)
    with gateway_in_front(tmp_path, "--policy", str(policy)) as (url, _):
        for headers in ({}, {f"Mcp-Param-{REGION_HEADER}": "south"}):  # missing, and mismatched
            response = modern_call(url, "see__locate", {"arguments": {"region": "Hello"}}, headers)
            assert response.status_code == 200, response.text
            result = answer_of(response)["result"]
            assert result["isError"] is True, result
            assert "never listed a tool named 'locate'" in result["content"][0]["text"], result


def test_meta_tools_take_no_param_headers(gateway: Running) -> None:
    """``find`` has no ``x-mcp-header`` argument: nothing to check, as for any tool without one."""
    response = modern_call(gateway.url, "find", {"arguments": {"query": "where"}})
    assert response.status_code == 200, response.text
    assert "result" in answer_of(response)


# -- malformed inputResponses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("responses", "why"),
    [
        (None, "inputResponses must be an object"),
        ([1, 2], "inputResponses must be an object"),
        ({"word": 12345}, "inputResponses['word'] is not a valid answer"),
        ({"word": {"action": "nonsense"}}, "inputResponses['word'] is not a valid answer"),
    ],
)
@pytest.mark.parametrize("tool", ["see__ask_what_you_can", "no_such_tool"])
def test_malformed_input_responses_are_invalid_params_with_400(
    gateway: Running, tool: str, responses: Any, why: str
) -> None:
    """Checked with the request's params, before the tool is even looked up (as the SDK checks them)."""
    response = modern_call(gateway.url, tool, {"arguments": {}, "inputResponses": responses})
    assert response.status_code == 400, response.text
    error = answer_of(response)["error"]
    assert error["code"] == INVALID_PARAMS
    assert why in error["message"], error


@pytest.mark.anyio
async def test_a_well_formed_retry_still_completes(gateway: Running) -> None:
    answer = CreateMessageResult(role="assistant", content=TextContent(type="text", text="w"), model="m")
    async with Client(gateway.url, mode="auto", cache=None, sampling_callback=lambda *_: answer) as c:  # type: ignore[arg-type,return-value]
        first = await c.session.call_tool("see__ask_what_you_can", {}, allow_input_required=True)
        assert isinstance(first, InputRequiredResult), first
        assert set(first.input_requests or {}) == {"word"}  # only what this client declared
        done = await c.session.call_tool(
            "see__ask_what_you_can",
            {},
            input_responses={"word": answer},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert done.content[0].text == "answered word", done  # type: ignore[union-attr]


# -- resumable SSE streams (2025-11-25 sessions) -----------------------------------------------------


def slow_call(request_id: int) -> dict[str, Any]:
    params = {"name": "see__slow", "arguments": {"seconds": 0.5}, "_meta": {"progressToken": "p"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_a_dropped_stream_is_resumed_from_its_last_event_id_and_only_in_its_session(gateway: Running) -> None:
    with httpx2.Client(timeout=30) as http:
        mine, theirs = open_session(http, gateway.url), open_session(http, gateway.url)
        with http.stream("POST", gateway.url, json=slow_call(7), headers=legacy_headers(mine)) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            seen = events(stream.iter_lines())
            priming = next(seen)
            assert priming.get("id"), priming
            assert priming.get("data") == "", priming  # no message
            assert priming.get("retry") == str(RETRY_MS)
            progress = next(seen)
            assert json.loads(progress["data"])["method"] == "notifications/progress", progress
            assert progress.get("id"), progress
        # the stream dropped before the answer; the call goes on upstream

        # another session cannot have this session's events, with its ids or any other
        replayed = http.get(gateway.url, headers=legacy_headers(theirs, **{"Last-Event-ID": progress["id"]}))
        assert replayed.status_code == 200
        assert not [e for e in events(iter([*replayed.text.splitlines(), ""])) if e.get("data")], replayed.text

        # its own session resumes after the last event it saw, as a client does: each replay sends what it
        # missed and ends (a replay holds no connection), and the client comes back after the retry hint
        last, answer, replays = progress["id"], None, 0
        while answer is None:
            replays += 1
            assert replays <= 30, "no answer in 30 replays"
            if replays > 1:
                time.sleep(RETRY_MS / 1000)  # the hint a client waits out between reconnections
            resumed = http.get(gateway.url, headers=legacy_headers(mine, **{"Last-Event-ID": last}))
            assert resumed.status_code == 200, resumed.text  # the whole body read: the stream ended by itself
            for event in events(iter([*resumed.text.splitlines(), ""])):
                last = event.get("id", last)
                message = json.loads(event["data"]) if event.get("data") else {}
                if message.get("id") == 7:
                    answer = message
        assert last != progress["id"], "the answer came without an event id"  # resumable again from there
        after = http.get(gateway.url, headers=legacy_headers(mine, **{"Last-Event-ID": last}))
        assert after.status_code == 200, after.text
        assert not after.text.strip(), after.text  # nothing left: it ends empty
    assert answer["result"]["content"][0]["text"] == "slept 0.5", answer


@pytest.mark.anyio
async def test_the_sdk_legacy_client_is_unaffected_by_priming_events(gateway: Running) -> None:
    async with Client(gateway.url, mode="legacy", cache=None) as c:
        with anyio.fail_after(30):
            result = await c.call_tool("see__slow", {"seconds": 0})
    assert result.content[0].text == "slept 0", result  # type: ignore[union-attr]


def test_a_call_that_sends_nothing_before_its_answer_is_one_json_body(gateway: Running) -> None:
    """No progress asked for, nothing relayed: the answer alone, as ``application/json`` (``_single_body``)."""
    call = slow_call(8)
    del call["params"]["_meta"]  # no progress token: the upstream's progress goes nowhere
    call["params"]["arguments"]["seconds"] = 0
    with httpx2.Client(timeout=30) as http:
        session = open_session(http, gateway.url)
        answered = http.post(gateway.url, json=call, headers=legacy_headers(session))
    assert answered.status_code == 200, answered.text
    assert answered.headers["content-type"] == "application/json"
    assert answered.headers["content-length"] == str(len(answered.content))
    assert answered.headers["mcp-session-id"] == session
    message = answered.json()
    assert message["id"] == 8
    assert message["result"]["content"][0]["text"] == "slept 0", message
