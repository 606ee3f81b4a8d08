"""``server-everything`` behind the gateway: what it asks and reports during a call reaches the caller.

The reference server (npm, over stdio, 2025-11-25) exercises every server-to-client path: its
``trigger-sampling-request`` samples, ``trigger-elicitation-request`` elicits, ``get-roots-list`` lists
the client's roots (it offers those tools only to a client that declares the capabilities, so their
being listed shows the gateway declared them), and ``trigger-long-running-operation`` reports
progress. The official Python client drives each through the gateway in both eras (a 2026-07-28
client answers in ``input_required`` rounds while the gateway holds the upstream call open).
Issue 15, item 1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp_types import (
    INVALID_REQUEST,
    CreateMessageResult,
    ElicitResult,
    ErrorData,
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


@asynccontextmanager
async def gateway(npx: str, spec: str, *, settled: bool = False) -> AsyncIterator[Any]:
    """The gateway over server-everything; with ``settled``, once the server's own roots request is answered.

    The server asks for its client's roots on its own, once, 350 ms after its handshake (``syncRoots``), for
    no call. Over stdio in 2025-11-25 nothing ties a server's request to a client's call, so the gateway
    gives such a request to the only call waiting, if there is one: the request that came for no call goes
    to whichever call happens to be alone then. ``settled`` waits for it (answered, as the gateway answers
    it with no call waiting: refused) before the gateway serves, so what a test's calls are asked is theirs.
    """
    upstream = ServerSpec("everything", StdioServer(npx, ["-y", spec], env=NPM_ENV), timeout=120)
    host = Host([upstream], server_requests=True)
    seen = anyio.Event()

    async def before_serving(label: str, request: Any) -> ErrorData:
        if request.method == "roots/list":
            seen.set()
        return ErrorData(code=INVALID_REQUEST, message=f"{request.method} refused: no call is waiting")

    if settled:
        host.answer_server_requests(before_serving)
    async with host:
        assert not host.failures, host.failures
        assert host.connections.connected["everything"].protocol_version == "2025-11-25"
        if settled:
            with anyio.fail_after(60):  # a guard: the server sends it 350 ms after its handshake
                await seen.wait()
        server, _ = create_gateway(GatewayService(host, pinned=PINS))
        yield server


def client(server: Any, era: str, **kwargs: Any) -> Client:
    return Client(server, mode="auto" if era == "modern" else "legacy", cache=None, **kwargs)


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("era", ERAS)
async def test_everything_asks_and_reports_to_the_caller(era: str, npx: str, npm_server_specs: dict[str, str]) -> None:
    ann = Downstream("ann")
    logs: list[tuple[str, Any]] = []
    progress: list[tuple[float, float | None]] = []

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async with (
        gateway(npx, npm_server_specs["everything"]) as server,
        client(server, era, logging_callback=on_log, log_level="info", **ann.callbacks()) as c,
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
            asked_before = len(ann.asked)
            roots = await c.call_tool("call", {"tool": "everything/get-roots-list", "arguments": {}})
            asked_in_call = ann.asked[asked_before:]
            assert not roots.is_error, roots
            assert "file:///home/ann" in text(roots), text(roots)
            ran = await c.call_tool(
                "everything__trigger-long-running-operation",
                {"duration": 1, "steps": 2},
                progress_callback=on_progress,
            )
            assert not ran.is_error, ran
    # (it may also ask for the roots on its own early on: the only caller waiting then is this one)
    assert [q for q in ann.asked if q != "roots"] == ["sampling", "elicitation"], ann.asked
    assert "roots" in ann.asked
    assert progress == [(1.0, 2.0), (2.0, 2.0)]
    # The server logs "Roots updated" when it fetches the roots, once per session: inside get-roots-list
    # (the call waits, so the log reaches its caller), unless its own sync after the handshake already
    # fetched them while another call of ann's waited (that log may come after that call ended, with no
    # call to carry it, and get-roots-list then answers from its cache without asking or logging).
    if "roots" in asked_in_call:
        assert any("Roots updated" in str(data) for _, data in logs), logs
    else:
        assert ann.asked.count("roots") == 1, ann.asked  # asked once, earlier, and answered by ann


@pytest.mark.parametrize("era", ERAS)
async def test_everything_refuses_a_client_without_sampling(
    era: str, npx: str, npm_server_specs: dict[str, str]
) -> None:
    async with gateway(npx, npm_server_specs["everything"]) as server, client(server, era) as c:
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
    """Two clients sample at once over one stdio session: each gets its own answer or a refusal, never the other's.

    Once the server's own roots request (for no call) is answered, before the calls: when it fell while one
    of the two calls waited alone, that call was asked it, and which one depended on the machine's load
    (the flaky failures of this test)."""
    ann, bob = Downstream("ann"), Downstream("bob")
    results: dict[str, Any] = {}
    async with (
        gateway(npx, npm_server_specs["everything"], settled=True) as server,
        client(server, "legacy", **ann.callbacks()) as a,
        client(server, "modern", **bob.callbacks()) as b,
    ):

        async def calling(tag: str, c: Client) -> None:
            results[tag] = await c.call_tool("everything__trigger-sampling-request", {"prompt": tag, "maxTokens": 5})

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(calling, "ann", a)
                tg.start_soon(calling, "bob", b)
    assert "by bob" not in text(results["ann"])
    assert "by ann" not in text(results["bob"])
    for who in (ann, bob):  # only its own call's sampling request, if any: never a roots request
        assert who.asked in ([], ["sampling"]), (who.who, who.asked)
    for tag, who in (("ann", ann), ("bob", bob)):
        assert (f"by {tag}" in text(results[tag])) == (who.asked == ["sampling"]), (tag, text(results[tag]))
