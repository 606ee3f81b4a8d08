"""``server-everything`` behind the gateway: what it asks and reports during a call reaches the caller.

The reference server (npm, over stdio, 2025-11-25) exercises every server-to-client path: its
``trigger-sampling-request`` samples, ``trigger-elicitation-request`` elicits, ``get-roots-list`` lists
the client's roots (it offers those tools only to a client that declares the capabilities, so their
being listed shows the gateway declared them), and ``trigger-long-running-operation`` reports
progress. The official Python client drives each through the gateway in both eras (a 2026-07-28
client answers in ``input_required`` rounds while the gateway holds the upstream call open).
Issue 15, item 1.

Its ``roots/list`` is never a call's: it asks on its own (350 ms after its handshake, and on
``notifications/roots/list_changed``), over stdio nothing ties a request to a call, and it keeps the
answer for the session every client shares (``get-roots-list`` answers from that cache). The gateway
answers it with its own roots, none, and no client is asked, even while one call is the only one
waiting (issue 42, item 6).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp_types import (
    CreateMessageResult,
    ElicitResult,
    InputRequest,
    ListRootsRequest,
    ListRootsResult,
    Root,
    TextContent,
)

from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.host import Host, ServerSpec, StdioServer

pytestmark = [
    pytest.mark.thirdparty,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

ERAS = ["modern", "legacy"]
PINS = [
    ("everything", "trigger-sampling-request"),
    ("everything", "trigger-elicitation-request"),
    ("everything", "get-roots-list"),
    ("everything", "trigger-long-running-operation"),
]
NPM_ENV = {"npm_config_yes": "true", "npm_config_loglevel": "error", "npm_config_update_notifier": "false"}


class Downstream:
    """A client's answers, each naming the client, and what it was asked."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.asked: list[str] = []

    async def sampling(self, ctx: Any, params: Any) -> CreateMessageResult:
        self.asked.append("sampling")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=f"by {self.who}"), model="m")

    async def elicitation(self, ctx: Any, params: Any) -> ElicitResult:
        self.asked.append("elicitation")
        return ElicitResult(action="accept", content={"name": self.who})

    async def roots(self, ctx: Any) -> ListRootsResult:
        self.asked.append("roots")
        return ListRootsResult(roots=[Root(uri=f"file:///home/{self.who}", name=self.who)])

    def callbacks(self) -> dict[str, Any]:
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.roots,
        }


class RootsAsked:
    """Each ``roots/list`` the upstream sends, as the gateway answered it (it wraps the gateway's handler)."""

    def __init__(self, host: Host) -> None:
        relay = host.connections.server_request_handler
        assert relay is not None  # the gateway set it
        self.answers: list[Any] = []
        self._changed = anyio.Event()

        async def recording(label: str, request: InputRequest) -> Any:
            answer = await relay(label, request)
            if isinstance(request, ListRootsRequest):
                self.answers.append(answer)
                self._changed.set()
            return answer

        host.answer_server_requests(recording)

    async def until(self, count: int) -> None:
        """Return once ``count`` roots requests have been answered."""
        while len(self.answers) < count:
            self._changed = anyio.Event()
            await self._changed.wait()


@asynccontextmanager
async def gateway(npx: str, spec: str) -> AsyncIterator[tuple[Any, Host, RootsAsked]]:
    upstream = ServerSpec("everything", StdioServer(npx, ["-y", spec], env=NPM_ENV), timeout=120)
    async with Host([upstream], server_requests=True) as host:
        assert not host.failures, host.failures
        assert host.connections.connected["everything"].protocol_version == "2025-11-25"
        server, _ = create_gateway(GatewayService(host, pinned=PINS))
        yield server, host, RootsAsked(host)


def client(server: Any, era: str, **kwargs: Any) -> Client:
    return Client(server, mode="auto" if era == "modern" else "legacy", cache=None, **kwargs)


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("era", ERAS)
async def test_everything_asks_and_reports_to_the_caller(era: str, npx: str, npm_server_specs: dict[str, str]) -> None:
    ann = Downstream("ann")
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async with (
        gateway(npx, npm_server_specs["everything"]) as (server, _, roots_asked),
        client(server, era, **ann.callbacks()) as c,
    ):
        listed = {t.name for t in (await c.list_tools()).tools}
        assert {f"everything__{tool}" for _, tool in PINS} <= listed, listed
        with anyio.fail_after(60):
            sampled = await c.call_tool("everything__trigger-sampling-request", {"prompt": "tides", "maxTokens": 5})
            assert not sampled.is_error, sampled
            assert "by ann" in text(sampled)
            elicited = await c.call_tool("everything__trigger-elicitation-request", {})
            assert not elicited.is_error, elicited
            assert '"name": "ann"' in text(elicited), text(elicited)
            assert not (await c.call_tool("load", {"ids": ["everything/get-roots-list"]})).is_error
            roots = await c.call_tool("call", {"tool": "everything/get-roots-list", "arguments": {}})
            assert not roots.is_error, roots
            # the roots it knows are the gateway's (none), whether it asked inside the call or before it
            assert "no roots are currently configured" in text(roots), text(roots)
            ran = await c.call_tool(
                "everything__trigger-long-running-operation",
                {"duration": 1, "steps": 2},
                progress_callback=on_progress,
            )
            assert not ran.is_error, ran
    assert ann.asked == ["sampling", "elicitation"]
    assert roots_asked.answers == [ListRootsResult(roots=[])] * len(roots_asked.answers), roots_asked.answers
    assert progress == [(1.0, 2.0), (2.0, 2.0)]


@pytest.mark.parametrize("era", ERAS)
async def test_everything_refuses_a_client_without_sampling(
    era: str, npx: str, npm_server_specs: dict[str, str]
) -> None:
    async with gateway(npx, npm_server_specs["everything"]) as (server, _, _), client(server, era) as c:
        with anyio.fail_after(60):
            # its sampling request got an error response; what it makes of that is its own result
            result = await c.call_tool("everything__trigger-sampling-request", {"prompt": "x", "maxTokens": 5})
            assert "did not declare the sampling capability" in text(result), result
            # the gateway and the upstream still serve
            assert not (
                await c.call_tool("everything__trigger-long-running-operation", {"duration": 0.2, "steps": 1})
            ).is_error


async def test_everything_never_hands_one_clients_request_to_another(
    npx: str, npm_server_specs: dict[str, str]
) -> None:
    """Its own roots request, sent while one client's call is the only one waiting, reaches no client (the
    gateway answers it); then two clients sample at once over the one stdio session: each gets its own
    answer or a refusal, never the other's."""
    ann, bob = Downstream("ann"), Downstream("bob")
    results: dict[str, Any] = {}
    in_call, release = anyio.Event(), anyio.Event()

    async def held_sampling(ctx: Any, params: Any) -> CreateMessageResult:
        in_call.set()
        await release.wait()
        return await ann.sampling(ctx, params)

    async with (
        gateway(npx, npm_server_specs["everything"]) as (server, host, roots_asked),
        client(server, "legacy") as plain,
        client(server, "legacy", **{**ann.callbacks(), "sampling_callback": held_sampling}) as a,
        client(server, "modern", **bob.callbacks()) as b,
    ):

        async def calling(tag: str, c: Client) -> None:
            results[tag] = await c.call_tool("everything__trigger-sampling-request", {"prompt": tag, "maxTokens": 5})

        with anyio.fail_after(60):
            # Once it has synced its roots (by itself after its handshake, or for this call, whichever came
            # first; a client without roots makes it), it asks again on roots/list_changed.
            await plain.call_tool("everything__get-roots-list", {})
            asked_before = len(roots_asked.answers)
            async with anyio.create_task_group() as tg:
                tg.start_soon(calling, "first", a)
                await in_call.wait()  # ann's call is the only one waiting on the upstream, held there
                await host.connections.connected["everything"].client.session.send_roots_list_changed()
                await roots_asked.until(asked_before + 1)  # asked for no call, answered while ann's call waits
                release.set()
            assert "by ann" in text(results.pop("first"))
            assert ann.asked == ["sampling"], ann.asked  # not the roots
            async with anyio.create_task_group() as tg:
                tg.start_soon(calling, "ann", a)
                tg.start_soon(calling, "bob", b)
    assert roots_asked.answers == [ListRootsResult(roots=[])] * len(roots_asked.answers), roots_asked.answers
    assert "by bob" not in text(results["ann"])
    assert "by ann" not in text(results["bob"])
    asked = {"ann": ann.asked[1:], "bob": bob.asked}  # in the calls made at once
    for tag in ("ann", "bob"):
        assert asked[tag] in ([], ["sampling"]), asked
        assert (f"by {tag}" in text(results[tag])) == (asked[tag] == ["sampling"]), (tag, text(results[tag]))
