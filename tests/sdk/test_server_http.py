"""Canaries of the SDK's streamable HTTP server: what its bare app does that a stop-gap of ``server/`` or the
gateway corrects, and the private state those stop-gaps read, pinned on the real SDK in process.

Each test drives ``MCPServer.streamable_http_app()`` with raw ASGI messages, nothing of skilldeck in the path
(see ``sdk_support``). A failure names the module to revisit and its entry in ``docs/sdk-workarounds.md``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import math
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import GET_STREAM_KEY, EventStore, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    HEADER_MISMATCH,
    INVALID_REQUEST,
    PROTOCOL_VERSION_META_KEY,
    JSONRPCNotification,
)
from starlette.requests import ClientDisconnect

from ..integration.conformance_reference_server import MemoryEventStore
from .sdk_support import (
    INITIALIZE,
    MODERN,
    POST,
    asgi_request,
    echo_server,
    open_legacy_session,
    revisit,
    serving,
    settled,
    sse_events,
)

pytestmark = pytest.mark.anyio

SESSIONS = "serving/_sessions.py"
PING = b'{"jsonrpc":"2.0","id":7,"method":"ping"}'
MODERN_META = {
    PROTOCOL_VERSION_META_KEY: MODERN,
    CLIENT_CAPABILITIES_META_KEY: {},
    CLIENT_INFO_META_KEY: {"name": "c", "version": "0"},
}


# -- serving/_sessions.py: a full table evicts an idle session -----------------------------------------------


async def test_a_full_session_table_refuses_a_new_session_though_every_session_is_idle() -> None:
    async with serving(echo_server(), max_sessions=1, session_idle_timeout=600) as app:
        await open_legacy_session(app)  # idle from now on: no request in flight, no GET stream
        refused = await asgi_request(app, "POST", POST, json.dumps(INITIALIZE).encode())
    assert refused.status == 503, revisit(
        f"what a new session gets when max_sessions idle ones are open (HTTP {refused.status}, not 503)",
        SESSIONS,
        "sessions",
    )


async def test_the_manager_admits_a_session_through_one_synchronous_step_into_an_ordered_table() -> None:
    server = echo_server()
    async with serving(server, max_sessions=4, session_idle_timeout=600) as app:
        manager = server.session_manager
        admit = inspect.signature(StreamableHTTPSessionManager._admit_session)
        assert list(admit.parameters) == ["self", "requestor"], revisit(
            f"StreamableHTTPSessionManager._admit_session's parameters to {list(admit.parameters)}",
            SESSIONS,
            "sessions",
        )
        assert not inspect.iscoroutinefunction(StreamableHTTPSessionManager._admit_session), revisit(
            "StreamableHTTPSessionManager._admit_session into a coroutine (the wrappers call it synchronously)",
            SESSIONS,
            "sessions",
        )
        first = (await open_legacy_session(app))["mcp-session-id"]
        second = (await open_legacy_session(app))["mcp-session-id"]
        table = manager._server_instances
        assert (type(table), list(table)) == (dict, [first, second]), revisit(
            "StreamableHTTPSessionManager._server_instances (no longer a dict of session id to transport, oldest "
            "first)",
            SESSIONS,
            "sessions",
        )
        assert all(isinstance(t, StreamableHTTPServerTransport) for t in table.values())
        assert isinstance(manager._session_owners, dict), revisit(
            "StreamableHTTPSessionManager._session_owners", SESSIONS, "sessions"
        )


async def test_an_idle_session_has_a_finite_deadline_and_cancelling_its_idle_scope_ends_it() -> None:
    server = echo_server()
    async with serving(server, max_sessions=4, session_idle_timeout=600) as app:
        headers = await open_legacy_session(app)
        session_id = headers["mcp-session-id"]
        transport = server.session_manager._server_instances[session_id]
        scope = transport.idle_scope
        assert scope is not None, revisit("a transport's idle_scope (there is none)", SESSIONS, "sessions")
        assert math.isfinite(scope.deadline), revisit(
            "a transport's idle_scope (an idle session no longer has a finite deadline)", SESSIONS, "sessions"
        )
        assert transport._requests_in_flight == 0, revisit(
            "StreamableHTTPServerTransport._requests_in_flight", SESSIONS, "sessions"
        )
        scope.cancel()  # what the eviction does, as the idle timeout would
        ended = await settled(lambda: session_id not in server.session_manager._server_instances)
        assert (ended, transport.is_terminated) == (True, True), revisit(
            "what cancelling a session's idle_scope does (the session is not ended and forgotten)",
            SESSIONS,
            "sessions",
        )
        gone = await asgi_request(app, "POST", headers, PING)
        assert gone.status == 404, gone


async def test_an_open_get_stream_is_the_one_request_in_flight_and_holds_the_session() -> None:
    server = echo_server()
    async with serving(server, max_sessions=4, session_idle_timeout=600) as app:
        headers = await open_legacy_session(app)
        transport = server.session_manager._server_instances[headers["mcp-session-id"]]
        stream_headers = {**headers, "accept": "text/event-stream"}
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: asgi_request(app, "GET", stream_headers, until=lambda _: False))
            opened = await settled(lambda: GET_STREAM_KEY in transport._request_streams)
            assert opened, revisit(
                "StreamableHTTPServerTransport._request_streams (an open GET stream is not under GET_STREAM_KEY)",
                SESSIONS,
                "sessions",
            )
            assert transport._requests_in_flight == 1, revisit(
                f"what _requests_in_flight counts (an open GET stream alone makes {transport._requests_in_flight})",
                SESSIONS,
                "sessions",
            )
            deadline = transport.idle_scope.deadline if transport.idle_scope is not None else 0.0
            assert math.isinf(deadline), revisit(
                "a transport's idle_scope deadline while a GET stream is open (not infinite)", SESSIONS, "sessions"
            )
            tg.cancel_scope.cancel()


# -- serving/_sessions.py: what a request for a session held elsewhere is told -------------------------------


async def test_a_request_for_an_unknown_session_is_told_only_that_it_was_not_found() -> None:
    async with serving(echo_server()) as app:
        headers = {**POST, "mcp-session-id": "held-by-another-replica", "mcp-protocol-version": "2025-11-25"}
        reply = await asgi_request(app, "POST", headers, PING)
    said = json.loads(reply.body)
    assert (reply.status, said["error"]["message"]) == (404, "Session not found"), revisit(
        f"what a request for an unknown session is told (HTTP {reply.status}: {said})", SESSIONS, "unknown-sessions"
    )


# -- serving/_request_ids.py ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["1.5", "true", "null", "{}", "[]"])
async def test_a_legacy_request_whose_id_is_not_a_string_or_integer_is_taken_for_a_notification(bad: str) -> None:
    async with serving(echo_server()) as app:
        headers = await open_legacy_session(app)
        reply = await asgi_request(app, "POST", headers, f'{{"jsonrpc":"2.0","id":{bad},"method":"ping"}}'.encode())
    assert (reply.status, reply.body) == (202, b""), revisit(
        f"its legacy answer to a request with id {bad} (HTTP {reply.status} {reply.body[:200]!r}, not 202 and nothing)",
        "serving/_request_ids.py",
        "request-ids",
    )


@pytest.mark.parametrize("bad", ["1.5", "null"])
async def test_a_modern_request_whose_id_is_not_a_string_or_integer_is_answered_invalid_request(bad: str) -> None:
    """The stop-gap covers legacy sessions only, because the 2026-07-28 path answers these itself."""
    async with serving(echo_server()) as app:
        body = {"jsonrpc": "2.0", "id": json.loads(bad), "method": "ping", "params": {"_meta": MODERN_META}}
        headers = {**POST, "mcp-protocol-version": MODERN, "mcp-method": "ping"}
        reply = await asgi_request(app, "POST", headers, json.dumps(body).encode())
    said = json.loads(reply.body)
    assert (reply.status, said.get("id"), said.get("error", {}).get("code")) == (400, None, INVALID_REQUEST), revisit(
        f"its 2026-07-28 answer to a request with id {bad} (HTTP {reply.status}: {said})",
        "serving/_request_ids.py",
        "request-ids",
    )


# -- serving/_single_body.py ---------------------------------------------------------------------------------


async def test_a_legacy_request_that_sends_nothing_but_its_response_is_still_answered_on_an_sse_stream() -> None:
    async with serving(echo_server(), event_store=MemoryEventStore(), retry_interval=2_000) as app:
        headers = await open_legacy_session(app)
        reply = await asgi_request(app, "POST", headers, PING)
    module = "serving/_single_body.py"
    assert reply.headers.get("content-type", "").startswith("text/event-stream"), revisit(
        f"how a silent legacy request is answered (content-type {reply.headers.get('content-type')!r}, not SSE)",
        module,
        "single-body",
    )
    events = sse_events(reply)
    assert [set(e) for e in events] == [{"id", "data", "retry"}, {"id", "event", "data"}], revisit(
        f"the SSE framing of a silent legacy request ({events}; expected a priming event, then the response)",
        module,
        "single-body",
    )
    assert (events[0]["data"], events[1]["event"]) == ("", "message"), revisit(
        f"the priming event or the response event ({events})", module, "single-body"
    )
    assert events[1]["data"].startswith('{"jsonrpc":"2.0","id":7,"result":'), revisit(
        f"how it serializes a response (jsonrpc, id, then result is what the stop-gap matches): {events[1]['data']}",
        module,
        "single-body",
    )
    assert b"\r\n\r\n" in reply.body, revisit(
        "the line ends of its SSE events (sse-starlette's \\r\\n)", module, "single-body", who="sse-starlette"
    )


# -- serving/_disconnects.py ---------------------------------------------------------------------------------


async def test_a_modern_client_that_leaves_mid_body_raises_client_disconnect_out_of_the_app() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": MODERN_META}}).encode()
    headers = {**POST, "mcp-protocol-version": MODERN, "mcp-method": "ping"}
    raised: BaseException | None = None
    async with serving(echo_server()) as app:
        try:
            await asgi_request(app, "POST", headers, body, leave_after=10)
        except BaseException as exc:  # what escapes is the point
            raised = exc
    escaped = raised.exceptions if isinstance(raised, BaseExceptionGroup) else [raised]
    assert any(isinstance(e, ClientDisconnect) for e in escaped), revisit(
        f"what a 2026-07-28 request whose client left mid-body raises out of the app ({raised!r}, no ClientDisconnect)",
        "serving/_disconnects.py",
        "disconnects",
    )


async def test_a_legacy_client_that_leaves_mid_body_is_logged_as_a_server_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The legacy half is corrected by ``serving/_request_ids.py``, which reads a session's POST body first."""
    async with serving(echo_server()) as app:
        headers = await open_legacy_session(app)
        caplog.set_level(logging.ERROR, logger="mcp.server.streamable_http")
        reply = await asgi_request(app, "POST", headers, PING, leave_after=10)
    logged = [r for r in caplog.records if r.name == "mcp.server.streamable_http" and r.exc_info]
    disconnects = [r for r in logged if r.exc_info and isinstance(r.exc_info[1], ClientDisconnect)]
    assert (reply.status, bool(disconnects)) == (500, True), revisit(
        f"how a legacy request whose client left mid-body ends (HTTP {reply.status}; logged: "
        f"{[r.getMessage() for r in logged]})",
        "serving/_disconnects.py",
        "disconnects",
    )


# -- serving/_resumable.py -----------------------------------------------------------------------------------


def test_the_event_store_interface_names_no_session() -> None:
    for method, expected in (
        ("store_event", ["self", "stream_id", "message"]),
        ("replay_events_after", ["self", "last_event_id", "send_callback"]),
    ):
        parameters = list(inspect.signature(getattr(EventStore, method)).parameters)
        assert parameters == expected, revisit(
            f"EventStore.{method}'s parameters to {parameters}", "serving/_resumable.py", "resumable"
        )


async def test_one_event_store_replays_a_sessions_events_to_another_session() -> None:
    store = MemoryEventStore()
    server = echo_server()
    async with serving(server, event_store=store, retry_interval=2_000) as app:
        first = await open_legacy_session(app)
        second = await open_legacy_session(app)
        sessions = server.session_manager._server_instances.values()
        assert all(t._event_store is store for t in sessions), revisit(
            "which event store a session's transport gets (not the manager's one store)",
            "serving/_resumable.py",
            "resumable",
        )
        answered = await asgi_request(app, "POST", first, PING)
        priming = sse_events(answered)[0]["id"]
        stolen = {**second, "accept": "text/event-stream", "last-event-id": priming}
        replayed = await asgi_request(app, "GET", stolen, until=lambda r: b'"id":7' in r.body)
    assert b'"id":7,"result"' in replayed.body, revisit(
        "resumption across sessions (session 2 was not replayed session 1's events through a shared store)",
        "serving/_resumable.py",
        "resumable",
    )


async def test_the_manager_hands_each_new_session_the_store_it_holds_at_admission() -> None:
    server = echo_server()
    async with serving(server, event_store=MemoryEventStore(), retry_interval=2_000) as app:
        mine = MemoryEventStore()
        server.session_manager.event_store = mine
        headers = await open_legacy_session(app)
        transport = server.session_manager._server_instances[headers["mcp-session-id"]]
    assert transport._event_store is mine, revisit(
        "when a session's transport takes the manager's event_store (not at admission)",
        "serving/_resumable.py",
        "resumable",
    )


async def test_a_replay_naming_an_answered_requests_stream_is_taken_for_a_live_stream_and_held() -> None:
    store = MemoryEventStore()
    server = echo_server()
    async with serving(server, event_store=store, retry_interval=2_000) as app:
        headers = await open_legacy_session(app)
        priming = sse_events(await asgi_request(app, "POST", headers, PING))[0]["id"]
        resume = {**headers, "accept": "text/event-stream", "last-event-id": priming}
        replayed = await asgi_request(app, "GET", resume, until=lambda r: len(sse_events(r)) >= 2)
    answer, primed_again = sse_events(replayed)[:2]
    assert '"id":7,"result"' in answer.get("data", ""), replayed
    assert primed_again.get("id"), replayed
    assert primed_again.get("data") == "", revisit(
        "what it does with the stream a replay names once the request is answered (it no longer opens it "
        "again as a live stream, to be held until the session ends)",
        "serving/_resumable.py",
        "resumable",
    )


async def test_a_session_holds_one_get_stream_whether_a_get_or_a_replay_opened_it() -> None:
    store = MemoryEventStore()
    server = echo_server()
    async with serving(server, event_store=store, retry_interval=2_000) as app:
        headers = await open_legacy_session(app)
        transport = server.session_manager._server_instances[headers["mcp-session-id"]]
        note = JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed")
        first = await store.store_event(GET_STREAM_KEY, note)
        await store.store_event(GET_STREAM_KEY, note)  # what a replay after the first misses
        stream_headers = {**headers, "accept": "text/event-stream"}
        async with anyio.create_task_group() as tg:
            resumed = {**stream_headers, "last-event-id": first}
            tg.start_soon(lambda: asgi_request(app, "GET", resumed, until=lambda _: False))
            assert await settled(lambda: GET_STREAM_KEY in transport._request_streams), revisit(
                "a replay of the GET stream's events (it no longer opens the GET stream again)",
                "serving/_resumable.py",
                "resumable",
            )
            plain = await asgi_request(app, "GET", stream_headers)
            again = await asgi_request(app, "GET", {**stream_headers, "last-event-id": first})
            tg.cancel_scope.cancel()
    assert plain.status == 409, revisit(
        "a second GET stream of a session (not refused 409)", "serving/_resumable.py", "resumable"
    )
    assert again.status == 200, again
    assert len(sse_events(again)) == 1, revisit(
        f"a replay of the GET stream while it is open (not its one missed event, then the end: {again})",
        "serving/_resumable.py",
        "resumable",
    )


async def test_get_streams_of_one_session_opened_together_all_go_on_live() -> None:
    """The transport serves a GET through ``_handle_get_request(request, send)`` and refuses one with
    ``_create_error_response(message, status)``; it checks for the session's GET stream before a replay
    registers it, and the replay yields in between, so four replays of the GET stream sent together all go on
    live (the stop-gap counts a session's GETs as they arrive)."""
    for method, expected in (
        ("_handle_get_request", ["self", "request", "send"]),
        ("_create_error_response", ["self", "error_message", "status_code", "error_code", "headers"]),
    ):
        parameters = list(inspect.signature(getattr(StreamableHTTPServerTransport, method)).parameters)
        assert parameters == expected, revisit(
            f"StreamableHTTPServerTransport.{method}'s parameters to {parameters}", "serving/_resumable.py", "resumable"
        )
    store = MemoryEventStore()
    server = echo_server()
    async with serving(server, event_store=store, retry_interval=2_000) as app:
        headers = await open_legacy_session(app)
        transport = server.session_manager._server_instances[headers["mcp-session-id"]]
        note = JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed")
        first = await store.store_event(GET_STREAM_KEY, note)
        resumed = {**headers, "accept": "text/event-stream", "last-event-id": first}
        ended: list[object] = []

        async def replay() -> None:
            ended.append(await asgi_request(app, "GET", resumed, until=lambda _: False))

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(replay)
            assert await settled(lambda: GET_STREAM_KEY in transport._request_streams)
            held = not await settled(lambda: bool(ended), passes=1_000)
            tg.cancel_scope.cancel()
    assert held, revisit(
        "replays of one session's GET stream sent together (no longer all held open as live streams)",
        "serving/_resumable.py",
        "resumable",
    )


# -- serving/_legacy.py -------------------------------------------------------------------------------------


async def test_a_legacy_connection_gets_a_new_server_session_per_request_over_one_connection() -> None:
    server = echo_server()
    seen: list[Any] = []

    @server.tool()
    def who(ctx: Context) -> str:
        """Record the session object this request was given."""
        seen.append(ctx.request_context.session)
        return "ok"

    async with Client(server, cache=None, mode="legacy") as client:
        await client.call_tool("who", {})
        await client.call_tool("who", {})
    module, anchor = "serving/_legacy.py", "legacy-connections"
    assert seen[0] is not seen[1], revisit("ServerSession (one object now serves a whole connection)", module, anchor)
    connection = seen[0]._connection
    assert connection is seen[1]._connection, revisit("ServerSession._connection", module, anchor)
    assert isinstance(connection.exit_stack, AsyncExitStack), revisit("a connection's exit_stack", module, anchor)
    fields = {f.name for f in dataclasses.fields(ServerRequestContext)}
    assert "connection" not in fields, revisit(
        "ServerRequestContext: it exposes the connection now, so reach it there", module, anchor
    )


# -- gateway/_server.py: Mcp-Param-* headers of a pinned tool ------------------------------------------------


async def test_mcpserver_looks_a_tools_schema_up_in_its_own_tools_only_and_reads_the_lookup_per_request() -> None:
    server = echo_server()
    lowlevel = server._lowlevel_server
    module, anchor = "gateway/_server.py", "param-headers"
    assert lowlevel.get_tool_input_schema("answered-by-middleware") is None, revisit(
        "MCPServer's tool schema lookup (it now knows tools it does not list itself)", module, anchor
    )
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "answered-by-middleware", "arguments": {"region": "north"}, "_meta": MODERN_META},
    }
    headers = {
        **POST,
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "answered-by-middleware",
        "mcp-param-region": "south",
    }

    def lookup(name: str) -> dict[str, Any] | None:
        if name != "answered-by-middleware":
            return None
        return {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}

    async with serving(server) as app:
        unchecked = await asgi_request(app, "POST", headers, json.dumps(body).encode())
        lowlevel.get_tool_input_schema = lookup
        checked = await asgi_request(app, "POST", headers, json.dumps(body).encode())
    assert unchecked.status == 200, revisit(
        f"a call to a tool MCPServer does not know, with a mismatched Mcp-Param header (HTTP {unchecked.status})",
        module,
        anchor,
    )
    said = json.loads(checked.body)
    assert (checked.status, said.get("error", {}).get("code")) == (400, HEADER_MISMATCH), revisit(
        f"how it finds a tool's schema for Mcp-Param-* checks (the low-level lookup, replaced, was not used: "
        f"{checked.status} {said})",
        module,
        anchor,
    )


def test_mcpserver_offers_no_public_way_to_set_the_schema_lookup() -> None:
    public = {name for name in dir(MCPServer) if not name.startswith("_")}
    offered = {name for name in public if "schema" in name or "param" in name}
    assert not offered, revisit(
        f"MCPServer's public API ({sorted(offered)} may set the tool schema lookup now)",
        "gateway/_server.py",
        "param-headers",
    )
