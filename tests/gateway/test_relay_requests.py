"""An upstream's sampling, elicitation and roots requests during a proxied call reach the client that
made the call, only that one, and the answers go back; a client without the capability is refused.

The upstream (:mod:`.relay_upstream`) is a real ``MCPServer`` whose tools ask through the SDK's
resolvers (``Sample``, ``Elicit``, ``ListRoots``: standalone requests on 2025-11-25,
``input_required`` on 2026-07-28). The gateway reaches it in-process in either era, over streamable
HTTP, or over stdio (where nothing but the protocol could tie a 2025-11-25 request to a call);
clients are the official Python SDK client in both eras. Issue 15, item 1.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp.client import Client
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolResult,
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmptyResult,
    FormElicitationCapability,
    ListRootsResult,
    ListToolsResult,
    Root,
    SamplingCapability,
    SamplingMessage,
    SamplingToolsCapability,
    TextContent,
    Tool,
    ToolChoice,
    UrlElicitationCapability,
)

import skilldeck
from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.gateway._relay import MAX_INPUT_RESPONSES, missing_capability
from skilldeck.host import Host, HttpServer, InProcessServer, ServerSpec, StdioServer

from ..host.hostile_http import serving_in_thread
from ..server.helpers import start_gateway, stop
from .gateway_clients_support import Gateway
from .relay_upstream import Asker, hold_until_cancelled

pytestmark = [
    pytest.mark.anyio,
    # sampling, roots and notifications/message are deprecated as of 2026-07-28; exercised on purpose
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

DOWN = ["modern", "legacy"]
UP = ["modern", "legacy", "legacy-http", "legacy-stdio"]
"""How the gateway reaches the upstream: in-process at 2026-07-28 or 2025-11-25, or at 2025-11-25 over
streamable HTTP or stdio."""
PINS = [
    ("ask", "write"),
    ("ask", "greet"),
    ("ask", "where"),
    ("ask", "together"),
    ("ask", "chatty"),
    ("ask", "wait"),
    ("ask", "impatient"),
    ("ask", "second_thoughts"),
    ("ask", "plan"),
]
UPSTREAM_SCRIPT = Path(__file__).with_name("relay_upstream.py")

SRC = Path(skilldeck.__file__).parent
"""skilldeck's own source: a warning raised from here would reach an operator's stderr."""


class Downstream:
    """A client's answers, each naming the client, and what it was asked."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.asked: list[str] = []

    async def sampling(self, ctx: Any, params: Any) -> CreateMessageResult:
        self.asked.append(f"sampling: {params.messages[0].content.text}")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=f"by {self.who}"), model="m")

    async def elicitation(self, ctx: Any, params: Any) -> ElicitResult:
        self.asked.append(f"elicitation: {params.message}")
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


def opened(asker: Asker, up: str) -> Any:
    """The gateway over ``asker`` (a fresh process of it for ``legacy-stdio``), relaying server requests."""

    @asynccontextmanager
    async def opening() -> AsyncIterator[Gateway]:
        with ExitStack() as stack:
            if up == "legacy-http":
                app = asker.server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
                spec = ServerSpec("ask", HttpServer(stack.enter_context(serving_in_thread(app))), timeout=10)
            elif up == "legacy-stdio":
                spec = ServerSpec("ask", StdioServer(sys.executable, [str(UPSTREAM_SCRIPT)]), timeout=20)
            else:
                spec = ServerSpec("ask", InProcessServer(asker.server), timeout=10)
            async with Host([spec], mode="auto" if up == "modern" else "legacy", server_requests=True) as host:
                assert not host.failures, host.failures
                version = host.connections.connected["ask"].protocol_version
                assert version == ("2026-07-28" if up == "modern" else "2025-11-25")
                service = GatewayService(host, pinned=PINS)
                server, middleware = create_gateway(service)
                yield Gateway(host, service, server, middleware)

    return opening()


def client(gw: Gateway, era: str, **kwargs: Any) -> Client:
    return Client(gw.server, mode="auto" if era == "modern" else "legacy", cache=None, **kwargs)


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("up", UP)
@pytest.mark.parametrize("down", DOWN)
async def test_sampling_elicitation_and_roots_reach_the_caller_and_answers_come_back(down: str, up: str) -> None:
    asker = Asker()
    me = Downstream("ann")
    async with opened(asker, up) as gw, client(gw, down, **me.callbacks()) as c:
        with anyio.fail_after(20):
            result = await c.call_tool("ask__write", {"topic": "tides"})
            assert not result.is_error, result
            assert text(result) == "sampled: by ann"
            result = await c.call_tool("ask__greet", {})
            assert not result.is_error, result
            assert text(result) == "hello ann"
            # through the call meta-tool too
            assert not (await c.call_tool("load", {"ids": ["ask/where"]})).is_error
            result = await c.call_tool("call", {"tool": "ask/where", "arguments": {}})
            assert not result.is_error, result
            # Over stdio nothing ties a roots/list to a call, and a server asks it on its own too and keeps
            # the answer for the session: the gateway answers it, with roots of its own (none).
            assert text(result) == ("" if up == "legacy-stdio" else "file:///home/ann")
    roots = [] if up == "legacy-stdio" else ["roots"]
    assert me.asked == ["sampling: write about tides", "elicitation: What is your name?", *roots]


async def two_at_once(a: Client, b: Client, tool: str) -> dict[str, Any]:
    results: dict[str, Any] = {}

    async def calling(tag: str, c: Client) -> None:
        results[tag] = await c.call_tool(tool, {"topic": tag} if tool != "ask__chatty" else {"tag": tag})

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(calling, "ann", a)
            tg.start_soon(calling, "bob", b)
    return results


@pytest.mark.parametrize("up", ["modern", "legacy", "legacy-http"])
@pytest.mark.parametrize("down", DOWN)
async def test_two_clients_at_once_each_answer_only_their_own_call(down: str, up: str) -> None:
    """Each question is tied to its call: asked inside that call's result (2026-07-28), or arriving in
    the task that serves that call (in-process, and on the call's own HTTP response stream)."""
    asker = Asker()
    ann, bob = Downstream("ann"), Downstream("bob")
    async with (
        opened(asker, up) as gw,
        client(gw, down, **ann.callbacks()) as a,
        client(gw, down, **bob.callbacks()) as b,
    ):
        results = await two_at_once(a, b, "ask__together")
    assert text(results["ann"]) == "sampled: by ann"
    assert text(results["bob"]) == "sampled: by bob"
    assert ann.asked == ["sampling: write about ann"]
    assert bob.asked == ["sampling: write about bob"]


@pytest.mark.parametrize("down", DOWN)
async def test_two_clients_at_once_on_a_stdio_2025_upstream_are_refused_never_crossed(down: str) -> None:
    """On stdio a 2025-11-25 request cannot be tied to one of two waiting calls: neither client is asked."""
    asker = Asker()
    ann, bob = Downstream("ann"), Downstream("bob")
    async with (
        opened(asker, "legacy-stdio") as gw,
        client(gw, down, **ann.callbacks()) as a,
        client(gw, down, **bob.callbacks()) as b,
    ):
        results = await two_at_once(a, b, "ask__together")
        for tag in ("ann", "bob"):
            assert results[tag].is_error, results[tag]
            assert "several proxied calls wait on this server" in text(results[tag])
        assert ann.asked == bob.asked == []
        # one at a time, each is asked again, and only for its own call
        with anyio.fail_after(20):
            assert text(await a.call_tool("ask__write", {"topic": "x"})) == "sampled: by ann"
            assert text(await b.call_tool("ask__write", {"topic": "y"})) == "sampled: by bob"
    assert ann.asked == ["sampling: write about x"]
    assert bob.asked == ["sampling: write about y"]


@pytest.mark.parametrize("up", ["modern", "legacy", "legacy-http"])
@pytest.mark.parametrize("down", DOWN)
async def test_a_client_without_the_capability_is_refused_not_hung(down: str, up: str) -> None:
    asker = Asker()
    async with opened(asker, up) as gw, client(gw, down) as c:
        for tool, args, capability in [
            ("ask__write", {"topic": "x"}, "sampling"),
            ("ask__greet", {}, "elicitation"),
            ("ask__where", {}, "roots"),
        ]:
            with anyio.fail_after(20):
                if down == "modern" and up == "modern":  # the 2026-07-28 refusal: the capability it needs, named
                    with pytest.raises(MCPError) as raised:
                        await c.call_tool(tool, args)
                    assert raised.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
                    assert capability in raised.value.error.message
                    required = (raised.value.error.data or {}).get("requiredCapabilities") or {}
                    assert capability in required, raised.value.error.data
                else:  # the upstream's request got an error response and its call failed; the model hears why
                    result = await c.call_tool(tool, args)
                    assert result.is_error, result
                    assert "did not declare the" in text(result), text(result)
                    assert capability in text(result).partition("did not declare the")[2], text(result)
        # the gateway still serves
        assert not (await c.call_tool("find", {"query": "greet"})).is_error


@pytest.mark.parametrize("up", ["legacy", "legacy-http"])
async def test_sampling_with_tools_reaches_only_a_client_that_declared_sampling_tools(up: str) -> None:
    """Two clients declare ``sampling``, one of them ``sampling.tools`` too: a sampling request that offers the
    model a tool reaches only that one; the other's call is refused naming the capability, and it is never asked."""
    plain, tooled = Downstream("pia"), Downstream("tom")
    with_tools = SamplingCapability(tools=SamplingToolsCapability())
    async with (
        opened(Asker(), up) as gw,
        client(gw, "legacy", sampling_capabilities=SamplingCapability(), **plain.callbacks()) as p,
        client(gw, "legacy", sampling_capabilities=with_tools, **tooled.callbacks()) as t,
    ):
        with anyio.fail_after(20):
            refused = await p.call_tool("ask__plan", {"topic": "x"})
            assert refused.is_error, refused
            assert "did not declare the sampling.tools capability" in text(refused), text(refused)
            assert text(await t.call_tool("ask__plan", {"topic": "y"})) == "planned: by tom"
            assert text(await p.call_tool("ask__write", {"topic": "z"})) == "sampled: by pia"  # plain sampling still
    assert plain.asked == ["sampling: write about z"]
    assert tooled.asked == ["sampling: plan y"]


def test_each_question_needs_the_sub_capability_it_uses() -> None:
    """URL elicitation is not form elicitation, and sampling with tools (or a tool choice) is not sampling."""
    form, url = (
        ElicitationCapability(form=FormElicitationCapability()),
        ElicitationCapability(url=UrlElicitationCapability()),
    )
    ask_url = ElicitRequest(params=ElicitRequestURLParams(message="m", url="https://x.test/", elicitation_id="e"))
    ask_form = ElicitRequest(
        params=ElicitRequestFormParams(message="m", requested_schema={"type": "object", "properties": {}})
    )
    message = [SamplingMessage(role="user", content=TextContent(type="text", text="t"))]
    plain = CreateMessageRequest(params=CreateMessageRequestParams(messages=message, max_tokens=5))
    chosen = CreateMessageRequest(
        params=CreateMessageRequestParams(messages=message, max_tokens=5, tool_choice=ToolChoice(mode="none"))
    )
    offered = CreateMessageRequest(
        params=CreateMessageRequestParams(
            messages=message, max_tokens=5, tools=[Tool(name="t", input_schema={"type": "object"})]
        )
    )
    sampling, with_tools = SamplingCapability(), SamplingCapability(tools=SamplingToolsCapability())

    def missing(request: Any, capabilities: ClientCapabilities) -> str | None:
        found = missing_capability(request, capabilities)
        return None if found is None else found[0]

    assert missing(ask_url, ClientCapabilities(elicitation=form)) == "url elicitation"
    assert missing(ask_url, ClientCapabilities(elicitation=ElicitationCapability())) == "url elicitation"
    assert missing(ask_url, ClientCapabilities(elicitation=url)) is None
    assert missing(ask_form, ClientCapabilities(elicitation=url)) == "form elicitation"
    assert missing(ask_form, ClientCapabilities(elicitation=ElicitationCapability())) is None  # the bare form
    assert missing(ask_form, ClientCapabilities(elicitation=form)) is None
    assert missing(plain, ClientCapabilities(sampling=sampling)) is None
    for request in (chosen, offered):
        assert missing(request, ClientCapabilities(sampling=sampling)) == "sampling.tools"
        assert missing(request, ClientCapabilities(sampling=with_tools)) is None
        assert missing(request, ClientCapabilities(elicitation=form)) == "sampling.tools"


@pytest.mark.parametrize("up", ["modern", "legacy-http"])
async def test_a_retry_over_the_limits_is_refused_before_anything_is_sent(up: str) -> None:
    asker = Asker()
    me = Downstream("ann")
    async with opened(asker, up) as gw, client(gw, "modern", **me.callbacks()) as c:
        first = await c.session.call_tool("ask__where", {}, allow_input_required=True)
        state = getattr(first, "request_state", None)
        assert getattr(first, "input_requests", None), first
        too_many = {f"k{i}": ListRootsResult(roots=[]) for i in range(MAX_INPUT_RESPONSES + 1)}
        result = await c.session.call_tool(
            "ask__where", {}, input_responses=too_many, request_state=state, allow_input_required=True
        )
        assert getattr(result, "is_error", False), result
        assert f"at most {MAX_INPUT_RESPONSES} answers" in text(result)
        # a forged state never reaches the upstream: the SDK's boundary checks every state the gateway gave
        with pytest.raises(MCPError) as raised:
            await c.session.call_tool(
                "ask__where",
                {},
                input_responses={"q1": ListRootsResult(roots=[])},
                request_state="forged",
                allow_input_required=True,
            )
        assert raised.value.error.code == INVALID_PARAMS
        # the held call (or the upstream's state) still answers the right retry
        answer = {key: ListRootsResult(roots=[Root(uri="file:///ok")]) for key in first.input_requests}  # type: ignore[union-attr]
        result = await c.session.call_tool(
            "ask__where", {}, input_responses=answer, request_state=state, allow_input_required=True
        )
        assert text(result) == "file:///ok", result


async def test_a_held_call_cannot_be_resumed_by_another_client_or_tool() -> None:
    """A 2025-11-25 upstream's held call answers only the caller it asked, for the same tool."""
    asker = Asker()
    async with (
        opened(asker, "legacy") as gw,
        client(gw, "modern", **Downstream("ann").callbacks()) as a,
    ):
        first = await a.session.call_tool("ask__where", {}, allow_input_required=True)
        state = getattr(first, "request_state", None)
        assert isinstance(state, str)
        answer = {"q1": ListRootsResult(roots=[Root(uri="file:///x")])}
        with pytest.raises(MCPError) as raised:  # the state is bound to its tool (the SDK's boundary)
            await a.session.call_tool(
                "ask__greet", {}, input_responses=answer, request_state=state, allow_input_required=True
            )
        assert raised.value.error.code == INVALID_PARAMS
        # another caller of the gateway (another conversation) cannot resume it (the gateway's own check)
        meta: Any = {"dev.skilldeck/conversation": "someone-else"}
        stolen = await a.session.call_tool(
            "ask__where", {}, input_responses=answer, request_state=state, meta=meta, allow_input_required=True
        )
        assert getattr(stolen, "is_error", False), stolen
        assert "names no call of yours" in text(stolen), stolen
        done = await a.session.call_tool(
            "ask__where", {}, input_responses=answer, request_state=state, allow_input_required=True
        )
        assert text(done) == "file:///x"


def log_recorder(into: list[tuple[str, Any]]) -> Any:
    async def on_log(params: Any) -> None:
        into.append((params.level, params.data))

    return on_log


@pytest.mark.parametrize("up", ["modern", "legacy", "legacy-http", "legacy-stdio"])
async def test_log_messages_of_concurrent_calls_reach_each_caller_or_none(up: str) -> None:
    """A log message that arrives in the task serving a call goes to that call's client, even with two
    waiting; on stdio it cannot be tied to either of two waiting calls, and goes to neither."""
    asker = Asker()
    heard: dict[str, list[tuple[str, Any]]] = {"ann": [], "bob": []}
    async with (
        opened(asker, up) as gw,
        client(gw, "modern", logging_callback=log_recorder(heard["ann"]), log_level="info") as a,
        client(gw, "modern", logging_callback=log_recorder(heard["bob"]), log_level="info") as b,
    ):
        await two_at_once(a, b, "ask__chatty")
    if up == "legacy-stdio":
        assert heard == {"ann": [], "bob": []}
    else:
        assert heard == {"ann": [("info", "chatty: ann")], "bob": [("info", "chatty: bob")]}


class Levels:
    """``levels``: a low-level server that honours ``logging/setLevel`` (recording each) and whose ``say``
    logs at debug, info and warning."""

    def __init__(self) -> None:
        self.set_to: list[str] = []

        async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
            return ListToolsResult(
                tools=[Tool(name="say", description="Log at three levels.", input_schema={"type": "object"})]
            )

        async def call_tool(ctx: Any, params: Any) -> CallToolResult:
            for level in ("debug", "info", "warning"):
                await ctx.session.send_log_message(level, f"say: {level}", related_request_id=ctx.request_id)
            return CallToolResult(content=[TextContent(type="text", text="said")])

        async def set_level(ctx: Any, params: Any) -> EmptyResult:
            self.set_to.append(params.level)
            return EmptyResult()

        self.server = Server("levels", on_list_tools=list_tools, on_call_tool=call_tool, on_set_logging_level=set_level)


async def test_set_level_is_forwarded_upstream_and_each_client_hears_its_own_level() -> None:
    """``logging/setLevel`` of a 2025-11-25 client reaches the shared upstream session as the most verbose
    level any client set; each client still hears only the messages at or above its own level."""
    levels = Levels()
    spec = ServerSpec("levels", InProcessServer(levels.server), timeout=10)
    heard: dict[str, list[tuple[str, Any]]] = {"ann": [], "bob": []}
    async with Host([spec], mode="legacy", server_requests=True) as host:
        server, _ = create_gateway(GatewayService(host, pinned=[("levels", "say")]))
        async with (
            Client(server, mode="legacy", cache=None, logging_callback=log_recorder(heard["ann"])) as a,
            Client(server, mode="legacy", cache=None, logging_callback=log_recorder(heard["bob"])) as b,
        ):
            assert a.server_capabilities is not None
            assert a.server_capabilities.logging is not None  # the gateway declares logging/setLevel
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                await a.session.set_logging_level("warning")
                await b.session.set_logging_level("info")
            # the test's own client is warned; the gateway forwarding it upstream says nothing on the operator's stderr
            assert [w.filename for w in caught if SRC in Path(w.filename).parents] == []
            assert levels.set_to == ["warning", "info"]
            assert not (await a.call_tool("levels__say", {})).is_error
            assert not (await b.call_tool("levels__say", {})).is_error
    assert heard == {"ann": [("warning", "say: warning")], "bob": [("info", "say: info"), ("warning", "say: warning")]}


@pytest.mark.parametrize("up", ["legacy", "legacy-http"])
async def test_a_held_call_is_let_go_when_its_caller_does_not_come_back(up: str) -> None:
    """The upstream hears that no answer came once the TTL passes, and the held call is forgotten."""
    asker = Asker()
    async with opened(asker, up) as gw, client(gw, "modern", **Downstream("ann").callbacks()) as c:
        gw.service.parked.ttl = 0.5
        first = await c.session.call_tool("ask__where", {}, allow_input_required=True)
        state = getattr(first, "request_state", None)
        assert isinstance(state, str)
        assert len(gw.service.parked) == 1
        with anyio.fail_after(20):
            while len(gw.service.parked):
                await anyio.sleep(0.05)
        late = await c.session.call_tool(
            "ask__where",
            {},
            input_responses={"q1": ListRootsResult(roots=[])},
            request_state=state,
            allow_input_required=True,
        )
        assert getattr(late, "is_error", False), late
        assert "names no call of yours" in text(late)


async def test_held_calls_are_bounded_the_oldest_is_cancelled_upstream() -> None:
    asker = Asker()
    async with opened(asker, "legacy") as gw, client(gw, "modern", **Downstream("ann").callbacks()) as c:
        gw.service.parked.limit = 1
        first = await c.session.call_tool("ask__where", {}, allow_input_required=True)
        second = await c.session.call_tool("ask__greet", {}, allow_input_required=True)
        assert len(gw.service.parked) == 1
        stale = await c.session.call_tool(
            "ask__where",
            {},
            input_responses={"q1": ListRootsResult(roots=[])},
            request_state=getattr(first, "request_state", None),
            allow_input_required=True,
        )
        assert getattr(stale, "is_error", False), stale
        assert "names no call of yours" in text(stale)
        done = await c.session.call_tool(
            "ask__greet",
            {},
            input_responses={"q1": ElicitResult(action="accept", content={"name": "ann"})},
            request_state=getattr(second, "request_state", None),
            allow_input_required=True,
        )
        assert text(done) == "hello ann", done


@pytest.mark.parametrize("up", ["legacy", "legacy-http"])
async def test_a_cancelled_call_of_a_modern_client_is_cancelled_on_a_2025_upstream(up: str) -> None:
    """The held upstream call of a 2026-07-28 caller is cancelled upstream when the caller cancels."""
    asker = Asker()
    async with opened(asker, up) as gw, client(gw, "modern", **Downstream("ann").callbacks()) as c:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(c.call_tool, "ask__wait", {})
                assert await anyio.to_thread.run_sync(asker.started.wait, 10)
                tg.cancel_scope.cancel()
        assert await anyio.to_thread.run_sync(asker.cancelled.wait, 10)
        with anyio.fail_after(10):
            while len(gw.service.parked):
                await anyio.sleep(0.05)


class Blocking:
    """A client whose sampling callback never answers: it waits until it is cancelled, and records that."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.cancelled = anyio.Event()

    async def sampling(self, ctx: Any, params: Any) -> CreateMessageResult:
        self.asked.set()
        await hold_until_cancelled(self.cancelled)


@pytest.mark.parametrize("up", ["legacy", "legacy-http", "legacy-stdio"])
async def test_a_request_the_upstream_withdraws_is_cancelled_at_the_legacy_client(up: str) -> None:
    """The upstream gives up on its sampling request (its own timeout: it sends ``notifications/cancelled``);
    the request the gateway relayed is cancelled at the client too: its callback task is cancelled."""
    asker = Asker()
    me = Blocking()
    async with opened(asker, up) as gw, client(gw, "legacy", sampling_callback=me.sampling) as c:
        with anyio.fail_after(20):
            result = await c.call_tool("ask__impatient", {"topic": "tides"})
            assert me.asked.is_set()
            await me.cancelled.wait()
    assert text(result).startswith("gave up: "), result


@pytest.mark.parametrize("up", ["legacy", "legacy-http"])
async def test_a_question_the_upstream_withdraws_is_dropped_from_a_modern_callers_rounds(up: str) -> None:
    """A 2026-07-28 caller of a 2025-11-25 upstream: a question the upstream withdrew before the caller came
    back for it is never handed out; the caller's next round gets the call's result. (Not over stdio, where
    the gateway answers the tool's roots/list itself, tied to no call.)"""
    asker = Asker()
    me = Downstream("ann")
    async with opened(asker, up) as gw, client(gw, "modern", **me.callbacks()) as c:
        first = await c.session.call_tool("ask__second_thoughts", {}, allow_input_required=True)
        questions = getattr(first, "input_requests", None) or {}
        assert [q.method for q in questions.values()] == ["roots/list"], first
        await anyio.sleep(1.5)  # meanwhile the upstream asks for a sample and withdraws it (0.1 s, then 0.3 s)
        answers = {key: ListRootsResult(roots=[Root(uri="file:///home/ann")]) for key in questions}
        with anyio.fail_after(20):
            done = await c.session.call_tool(
                "ask__second_thoughts",
                {},
                input_responses=answers,
                request_state=getattr(first, "request_state", None),
                allow_input_required=True,
            )
        assert text(done) == "file:///home/ann", done
        assert len(gw.service.parked) == 0
    assert me.asked == []  # the client's own callbacks were never used: the gateway asked by input_required


@contextmanager
def gateway_cli_before_legacy_http_asker(tmp_path: Path, pin: str) -> Iterator[str]:
    """``skilldeck gateway --http --pin PIN`` in front of a 2025-11-25 ``Asker`` over HTTP; yields its URL and
    checks, once the block ends, that the gateway is still running."""
    asker = Asker(legacy_only=True)
    app = asker.server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    with serving_in_thread(app) as upstream_url:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"ask": {"url": upstream_url}}}))
        proc, match = start_gateway(config, tmp_path / "gateway.log", "--pin", pin)
        try:
            yield match["url"]
            assert proc.poll() is None, (tmp_path / "gateway.log").read_text(errors="replace")
        finally:
            stop(proc)


async def test_skilldeck_gateway_over_http_cancels_a_withdrawn_request_at_a_legacy_client(tmp_path: Path) -> None:
    """``skilldeck gateway --http`` in front of a 2025-11-25 upstream (over HTTP, as such a server answers the
    2026-07-28 probe): a legacy client over streamable HTTP hears the cancellation of the sampling request the
    upstream withdrew, on the stream of its call."""
    me = Blocking()
    with gateway_cli_before_legacy_http_asker(tmp_path, "ask/impatient") as url:
        async with Client(url, mode="legacy", cache=None, sampling_callback=me.sampling) as c:
            with anyio.fail_after(30):
                result = await c.call_tool("ask__impatient", {"topic": "tides"})
                assert me.asked.is_set(), result
                await me.cancelled.wait()
    assert text(result).startswith("gave up: "), result


async def test_skilldeck_gateway_over_http_withdraws_a_question_when_a_legacy_caller_cancels_its_call(
    tmp_path: Path,
) -> None:
    """A 2025-11-25 client over HTTP cancels its call while the gateway relays a sampling question from a
    2025-11-25 upstream: the question is withdrawn at the client (``notifications/cancelled`` on its
    session's GET stream, since the call's own stream has closed) and its callback is cancelled. It ran to
    the end: the SDK's notice went to the call's closed stream."""
    me = Blocking()
    with gateway_cli_before_legacy_http_asker(tmp_path, "ask/write") as url:
        async with Client(url, mode="legacy", cache=None, sampling_callback=me.sampling) as c:
            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(c.call_tool, "ask__write", {"topic": "tides"})
                    await me.asked.wait()
                    tg.cancel_scope.cancel()  # the caller gives up on its call
                await me.cancelled.wait()
