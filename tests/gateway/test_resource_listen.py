"""Resource subscriptions through the gateway on a 2026-07-28 upstream (issue 15, item 2: subscriptions).

The upstream (:mod:`.notes_upstream`) is a real 2026-07-28 ``MCPServer`` run over stdio; its notes
change when its ``edit`` tool is called (here through the gateway, as a pinned tool), and it can
say which ``subscriptions/listen`` streams are open on it and end them. Downstream, official Python
SDK clients of both eras subscribe: a 2025-11-25 client with ``resources/subscribe``, a 2026-07-28
client with a ``subscriptions/listen`` filter. The gateway runs in-process here, and as
``skilldeck gateway --http`` in the last test.

A negative ("this client heard nothing of it") is checked by order, not by waiting: the update a
client must not hear is made before one it must hear, so had it been relayed it would come first.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.subscriptions import ResourceUpdated, Subscription
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.gateway._subscriptions import MAX_CLIENT_SUBSCRIPTIONS
from skilldeck.host import Host, ServerSpec, StdioServer
from skilldeck.serving._policy import Match, Policy, SkillPolicy

from ..server.helpers import start_gateway, stop
from .gateway_clients_support import Gateway, Heard

# A 2025-11-25 client subscribes with resources/subscribe, which the SDK marks deprecated for 2026-07-28.
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

SCRIPT = Path(__file__).with_name("notes_upstream.py")
PINS = [("notes", "edit"), ("notes", "streams"), ("notes", "end_streams")]
A, B, C = (f"upstream://notes/note://{name}" for name in "abc")
HIDE_C = Policy(
    skills={"notes/note://c": SkillPolicy(admit=(Match(roles=frozenset({"admin"})),))},
    public_tools=frozenset(f"{label}/{tool}" for label, tool in PINS),
)


@asynccontextmanager
async def notes_gateway(policy: Policy | None = None) -> AsyncIterator[Gateway]:
    spec = ServerSpec("notes", StdioServer(sys.executable, [str(SCRIPT)]), timeout=20)
    async with Host([spec]) as host:
        assert not host.failures, host.failures
        assert host.connections.connected["notes"].protocol_version == "2026-07-28"
        service = GatewayService(host, policy=policy, pinned=PINS)
        server, middleware = create_gateway(service)
        yield Gateway(host, service, server, middleware)


def legacy(server: Any, heard: Heard | None = None) -> Client:
    return Client(server, mode="legacy", cache=None, message_handler=heard)


def modern(server: Any) -> Client:
    return Client(server, mode="auto", cache=None)


async def next_uri(sub: Subscription) -> str:
    with anyio.fail_after(20):
        event = await sub.__anext__()
    assert isinstance(event, ResourceUpdated), event
    return event.uri


async def edit(c: Client, name: str) -> None:
    result = await c.call_tool("notes__edit", {"name": name, "text": f"new {name}"})
    assert not result.is_error, result


async def streams(c: Client) -> list[list[str]]:
    """The resource URIs of each listen stream open on the upstream."""
    result = await c.call_tool("notes__streams", {})
    assert not result.is_error, result
    found: list[list[str]] = json.loads(getattr(result.content[0], "text", ""))
    return found


async def until_streams(c: Client, expected: list[list[str]]) -> None:
    """Wait until the upstream holds exactly ``expected`` (a closed stream is let go in the background)."""
    with anyio.fail_after(20):
        while (found := await streams(c)) != expected:
            await anyio.sleep(0.05)
    assert found == expected


async def test_updates_reach_exactly_the_subscribers_of_both_eras_over_one_upstream_stream() -> None:
    async with notes_gateway() as gw, modern(gw.server) as editor:
        ann_heard, ned_heard = Heard(), Heard()
        async with (
            legacy(gw.server, ann_heard) as ann,  # subscribes to a
            legacy(gw.server, ned_heard) as ned,  # subscribes to b only
            modern(gw.server) as max_,  # listens to a
            modern(gw.server) as bo,  # listens to b only
        ):
            await ann.subscribe_resource(A)
            await ned.subscribe_resource(B)
            async with (
                max_.listen(resource_subscriptions=[A]) as max_sub,
                bo.listen(resource_subscriptions=[B]) as bo_sub,
            ):
                assert max_sub.honored.resource_subscriptions == [A]
                # one stream upstream, naming every resource subscribed there
                await until_streams(editor, [["note://a", "note://b"]])
                await edit(editor, "a")
                assert await ann_heard.until(1) == [A]
                assert await next_uri(max_sub) == A
                await edit(editor, "b")  # heard by ned and bo; ann and max would hear it before the next a
                assert await ned_heard.until(1) == [B]
                assert await next_uri(bo_sub) == B
                await edit(editor, "a")
                assert await ann_heard.until(2) == [A, A]
                assert await next_uri(max_sub) == A
                await edit(editor, "b")
                assert await ned_heard.until(2) == [B, B]
                assert await next_uri(bo_sub) == B
                # the last subscriber of a goes (one each era): the upstream stream names b alone
                await ann.unsubscribe_resource(A)
            # both listen streams closed: only ned's b is left
            await until_streams(editor, [["note://b"]])
            await ned.unsubscribe_resource(B)
            await until_streams(editor, [])  # nothing is left open upstream
            await ned.subscribe_resource(B)  # and a new subscription opens a stream again
            await until_streams(editor, [["note://b"]])
        # ned's connection closed without unsubscribing: the upstream is told all the same
        await until_streams(editor, [])


async def test_a_listen_filter_is_acknowledged_with_only_what_can_be_subscribed() -> None:
    """Hidden by the policy, not an upstream's, over the per-client limit: left out of the acknowledged filter."""
    async with notes_gateway(HIDE_C) as gw, modern(gw.server) as editor, modern(gw.server) as c:
        many = [f"upstream://notes/note://n{i}" for i in range(MAX_CLIENT_SUBSCRIPTIONS)]
        wanted = [A, C, "upstream://nowhere/note://a", *many]
        async with c.listen(resource_subscriptions=wanted) as sub:
            honored = sub.honored.resource_subscriptions or []
            assert honored == [A, *many[: MAX_CLIENT_SUBSCRIPTIONS - 1]]
            assert C not in honored
            await until_streams(editor, [sorted(uri.removeprefix("upstream://notes/") for uri in honored)])
            await edit(editor, "a")
            assert await next_uri(sub) == A
        async with legacy(gw.server) as old:
            with pytest.raises(MCPError) as refused:
                await old.subscribe_resource(C)
            assert refused.value.error.code == INVALID_PARAMS
        await until_streams(editor, [])


async def test_an_upstream_stream_that_ends_is_opened_again_and_subscribers_are_told() -> None:
    """Updates of the gap cannot be replayed: after the stream is reopened every subscriber hears its resource."""
    async with notes_gateway() as gw, modern(gw.server) as editor:
        heard = Heard()
        async with legacy(gw.server, heard) as ann, modern(gw.server) as max_:
            await ann.subscribe_resource(A)
            async with max_.listen(resource_subscriptions=[B]) as sub:
                await until_streams(editor, [["note://a", "note://b"]])
                result = await editor.call_tool("notes__end_streams", {})
                assert not result.is_error, result
                assert await heard.until(1) == [A]  # told without an edit: it may have changed meanwhile
                assert await next_uri(sub) == B
                await until_streams(editor, [["note://a", "note://b"]])
                await edit(editor, "a")
                assert await heard.until(2) == [A, A]


async def test_skilldeck_gateway_over_http_relays_a_2026_upstreams_updates_to_both_eras(tmp_path: Path) -> None:
    """``skilldeck gateway --http`` as a user runs it, the notes upstream over stdio, HTTP clients of both eras."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {"command": sys.executable, "args": [str(SCRIPT)]}}}))
    pins = [arg for label, tool in PINS for arg in ("--pin", f"{label}/{tool}")]
    proc, match = start_gateway(config, tmp_path / "gateway.log", *pins)
    url = match["url"]
    try:
        ann_heard, ned_heard = Heard(), Heard()
        async with (
            modern(url) as editor,
            legacy(url, ann_heard) as ann,
            legacy(url, ned_heard) as ned,
            modern(url) as max_,
        ):
            await ann.subscribe_resource(A)
            await ned.subscribe_resource(B)
            async with max_.listen(resource_subscriptions=[A]) as sub:
                await edit(editor, "b")
                await edit(editor, "a")
                assert await ann_heard.until(1) == [A]
                assert await next_uri(sub) == A  # b, made first, never came
                assert await ned_heard.until(1) == [B]
                assert ann_heard.uris == [A]
            await ann.unsubscribe_resource(A)
            await until_streams(editor, [["note://b"]])
        assert proc.poll() is None, (tmp_path / "gateway.log").read_text(errors="replace")
    finally:
        stop(proc)
