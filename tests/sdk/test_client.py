"""Canaries of the SDK's client side: what its transports, session and OAuth provider do that a stop-gap of
``host/`` or the gateway's relay corrects or relies on, pinned on the real SDK against real servers (in
process, on loopback, or a child process for stdio).

A failure names the module to revisit and its entry in ``docs/sdk-workarounds.md``.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import Context
from mcp.server.session import ServerSession
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CLIENT_CAPABILITIES_META_KEY, ListRootsResult, Root
from pydantic import AnyUrl

from ..gateway.test_upstream_read_error import HOLD, RESET, FaultyRelay
from ..host.hostile_http import serving_in_thread
from ..host.oauth_server import SCOPE, Provider, oauth_server
from .sdk_support import echo_server, revisit

pytestmark = pytest.mark.anyio

HOST_LIMIT = 32 * 1024 * 1024
"""The host's default limit per message (``host/_connect.py``'s ``DEFAULT_MAX_MESSAGE_BYTES``)."""


# -- host/_broken_request.py --------------------------------------------------------------------------------


def test_one_post_whose_connection_breaks_ends_the_whole_session() -> None:
    """A reset under one call fails every other call in flight on the session, through the bare SDK client."""
    app = echo_server("echo").streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    with serving_in_thread(app) as url:
        host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
        relay = FaultyRelay((host, int(port)))
        with relay.running() as relayed:
            outcome = anyio.run(_held_call_beside_a_reset, relayed, relay)
    assert relay.faults == 1, relay.faults
    assert outcome.startswith("lost:"), revisit(
        f"what one POST's broken connection does to the other calls of its session (the held call: {outcome})",
        "host/_broken_request.py",
        "broken-request",
    )


async def _held_call_beside_a_reset(url: str, relay: FaultyRelay) -> str:
    """How the call held in flight ended while another call's connection was reset: ``ok:``, ``error:`` or ``lost:``."""
    outcome = "not run"

    async def held(client: Client) -> None:
        nonlocal outcome
        try:
            result = await client.call_tool("echo", {"text": HOLD.decode()})
            outcome = f"ok: {result.content}"
        except MCPError as exc:
            outcome = f"lost: {exc.error.message}" if "closed" in exc.error.message.lower() else f"error: {exc}"

    async def reset(client: Client) -> None:
        with contextlib.suppress(Exception):  # this call's own failure is expected; the other call is the point
            await client.call_tool("echo", {"text": RESET.decode()})

    try:
        with anyio.fail_after(120):  # a safety net; both calls end as soon as the reset lands
            async with Client(url, cache=None) as client, anyio.create_task_group() as tg:
                tg.start_soon(held, client)
                assert await anyio.to_thread.run_sync(relay.holding.wait, 60), "the held call did not arrive"
                tg.start_soon(reset, client)
    except BaseException as exc:  # the bare client's teardown may raise the transport's error itself
        if outcome == "not run":
            outcome = f"lost: {exc!r}"
    return outcome


# -- host/_stdio_guard.py -----------------------------------------------------------------------------------


def _server_script(tmp_path: Path, lines: list[bytes], then_wait: bool) -> StdioServerParameters:
    """A stdio "server" that writes ``lines`` to stdout, then waits for its stdin to close (or exits)."""
    script = tmp_path / "writer.py"
    data = tmp_path / "lines.bin"
    data.write_bytes(b"".join(lines))
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.stdout.buffer.write(open({str(data)!r}, "rb").read())
            sys.stdout.buffer.flush()
            if {then_wait!r}:
                sys.stdin.read()
            """
        )
    )
    return StdioServerParameters(command=sys.executable, args=[str(script)])


def _log(data: bytes) -> bytes:
    """A log notification line whose data is ``data`` as it stands (not escaped)."""
    return b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"' + data + b'"}}\n'


async def test_the_stdio_client_reads_a_line_over_the_hosts_limit_whole(tmp_path: Path) -> None:
    params = _server_script(tmp_path, [_log(b"x" * HOST_LIMIT)], then_wait=True)
    async with stdio_client(params) as (read, _):
        with anyio.fail_after(120):  # a safety net; the line is read as soon as it is written
            item = await read.receive()
    size = len(item.message.model_dump_json()) if isinstance(item, SessionMessage) else 0
    assert size > HOST_LIMIT, revisit(
        f"how its stdio client reads a line of {HOST_LIMIT + 1}+ bytes ({type(item).__name__}, {size} bytes)",
        "host/_stdio_guard.py",
        "stdio-guard",
    )
    options = [*StdioServerParameters.model_fields, *inspect.signature(stdio_client).parameters]
    assert options == ["command", "args", "env", "cwd", "encoding", "encoding_error_handler", "server", "errlog"], (
        revisit(f"the options of its stdio client ({options}: a line limit?)", "host/_stdio_guard.py", "stdio-guard")
    )


async def test_a_stdio_line_that_is_not_utf8_ends_the_transport_and_the_lines_after_it_are_lost(
    tmp_path: Path,
) -> None:
    params = _server_script(tmp_path, [_log(b"\xff"), _log(b"after")], then_wait=False)
    received: list[Any] = []
    raised: BaseException | None = None
    try:
        async with stdio_client(params) as (read, _):
            with anyio.fail_after(120):  # a safety net; the server exits after writing
                async for item in read:
                    received.append(item)
    except BaseException as exc:  # what escapes is the point
        raised = exc
    escaped = raised.exceptions if isinstance(raised, BaseExceptionGroup) else [raised]
    decoding = [e for e in escaped if isinstance(e, UnicodeDecodeError)]
    assert (received, bool(decoding)) == ([], True), revisit(
        f"what its stdio client does with a line that is not UTF-8 (received {received!r}, raised {raised!r})",
        "host/_stdio_guard.py",
        "stdio-guard",
    )


# -- host/_on_behalf.py -------------------------------------------------------------------------------------


async def test_the_client_stamps_its_own_capabilities_over_those_a_request_carries() -> None:
    server = echo_server()
    seen: list[Any] = []

    @server.tool()
    def declared(ctx: Context) -> str:
        """Record the capabilities this request declared."""
        meta = ctx.request_context.meta
        seen.append((meta or {}).get(CLIENT_CAPABILITIES_META_KEY))
        return "ok"

    async with Client(server, cache=None) as client:
        dispatcher = client.session._dispatcher
        await client.call_tool("declared", {}, meta={CLIENT_CAPABILITIES_META_KEY: {"roots": {}}})
    module, anchor = "host/_on_behalf.py", "on-behalf"
    assert seen == [{}], revisit(
        f"the capabilities a 2026-07-28 request declares when its _meta names others ({seen})", module, anchor
    )
    parameters = list(inspect.signature(dispatcher.send_raw_request).parameters)
    assert parameters == ["method", "params", "opts"], revisit(
        f"ClientSession._dispatcher.send_raw_request's parameters to {parameters}", module, anchor
    )


# -- gateway/_relay.py --------------------------------------------------------------------------------------


async def test_a_request_sent_on_the_request_channel_goes_under_the_id_the_sender_chose() -> None:
    server = echo_server()
    ids: list[Any] = []

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client for its roots under an id of our own, on the channel of this call."""
        outbound = ctx.request_context.session._request_outbound
        raw = await outbound.send_raw_request("roots/list", None, {"request_id": "relay-0123"})
        return json.dumps(raw)

    async def roots(context: ClientRequestContext) -> ListRootsResult:
        ids.append(context.request_id)
        return ListRootsResult(roots=[Root(uri=AnyUrl("file:///canary"))])

    async with Client(server, cache=None, mode="legacy", list_roots_callback=roots) as client:
        result = await client.call_tool("ask", {})
    module, anchor = "gateway/_relay.py", "relay"
    assert ids == ["relay-0123"], revisit(
        f"ServerSession._request_outbound.send_raw_request's request_id option (the client saw ids {ids}; "
        f"the call said {result.content})",
        module,
        anchor,
    )
    parameters = set(inspect.signature(ServerSession.send_request).parameters)
    assert not {"request_id", "id", "opts"} & parameters, revisit(
        f"ServerSession.send_request (it takes a request id now: {sorted(parameters)})", module, anchor
    )


# -- host/_connect.py: answers read under a limit -----------------------------------------------------------


def test_the_streamable_http_client_reads_a_json_answer_over_the_hosts_limit_whole() -> None:
    server = echo_server()

    @server.tool()
    def big(size: int) -> str:
        """``size`` bytes of text."""
        return "x" * size

    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1", json_response=True)
    with serving_in_thread(app) as url:
        text = anyio.run(_call_big, url)
    options = list(inspect.signature(streamable_http_client).parameters)
    assert options == ["url", "http_client", "terminate_on_close", "max_sse_event_size"], revisit(
        f"the options of its streamable HTTP client ({options}: a limit on a JSON answer?)",
        "host/_connect.py",
        "capped-answers",
    )
    assert len(text) == HOST_LIMIT + 1, revisit(
        f"how its streamable HTTP client reads a JSON answer of {HOST_LIMIT + 1}+ bytes (got {len(text)} bytes)",
        "host/_connect.py",
        "capped-answers",
    )


async def _call_big(url: str) -> str:
    with anyio.fail_after(120):  # a safety net
        async with Client(url, cache=None) as client:
            result = await client.call_tool("big", {"size": HOST_LIMIT + 1})
    return "".join(getattr(c, "text", "") for c in result.content)


# -- host/_oauth.py -----------------------------------------------------------------------------------------


class _Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class _NoPerson(Exception):
    """Nobody is there to follow the authorization URL."""


def test_the_oauth_provider_with_nothing_stored_registers_a_client_and_sends_for_a_person() -> None:
    provider = Provider()
    with oauth_server(provider) as url:
        sent = anyio.run(_connect_with_bare_provider, url)
    assert (provider.registrations, len(sent)) == (1, 1), revisit(
        f"what its OAuth provider does on a 401 with nothing stored ({provider.registrations} registrations, "
        f"{len(sent)} authorization URLs handed to the redirect handler)",
        "host/_oauth.py",
        "oauth",
    )


async def _connect_with_bare_provider(url: str) -> list[str]:
    sent: list[str] = []

    async def redirect(authorization_url: str) -> None:
        sent.append(authorization_url)
        raise _NoPerson

    metadata = OAuthClientMetadata(
        client_name="canary",
        redirect_uris=[AnyUrl("http://127.0.0.1/callback")],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=SCOPE,
    )

    async def callback() -> Any:
        raise _NoPerson

    auth = OAuthClientProvider(url, metadata, _Memory(), redirect_handler=redirect, callback_handler=callback)

    @asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
        ):
            yield streams

    try:
        with anyio.fail_after(120):  # a safety net
            async with Client(transport(), cache=None):
                pass
    except BaseException:  # the redirect handler's refusal ends the connection, as it should
        pass
    return sent
