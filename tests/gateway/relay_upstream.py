"""An upstream whose tools ask their client (sampling, elicitation, roots) and log: in-process, over
HTTP, or over stdio (``python relay_upstream.py`` serves it on stdin/stdout). ``Asker(legacy_only=True)``
refuses ``server/discover`` over HTTP, so a client in ``auto`` mode speaks 2025-11-25 to it, as to a
server of that era.

No ``from __future__ import annotations`` here: the resolvers the tools name are local to the
constructor, and the SDK evaluates the annotations when the tools are registered.
"""

import contextlib
import threading
from typing import Annotated, Any, NoReturn

import anyio
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    METHOD_NOT_FOUND,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
    Tool,
)
from pydantic import BaseModel

PATIENCE = 1.0
"""Seconds ``impatient`` waits for its sampling answer before it cancels the request."""


class Name(BaseModel):
    name: str


class Asker:
    """``ask``: tools that sample, elicit and list roots of their client (the gateway, relaying)."""

    def __init__(self, *, legacy_only: bool = False) -> None:
        self.server: MCPServer[Any] = MCPServer("ask", middleware=[refuse_discover] if legacy_only else None)
        self.arrived = 0
        self._both: anyio.Event | None = None  # made in the upstream's own event loop (it may run in a thread)

        async def both_in_flight() -> None:
            if self._both is None:
                self._both = anyio.Event()
            self.arrived += 1
            if self.arrived >= 2:
                self._both.set()
            with anyio.fail_after(10):
                await self._both.wait()

        def to_sample(topic: str) -> Sample:
            text = TextContent(type="text", text=f"write about {topic}")
            return Sample([SamplingMessage(role="user", content=text)], max_tokens=20)

        async def ask_directly(ctx: Context, request: Any, result: type[Any], patience: float | None = None) -> Any:
            """A 2025-11-25 request of this call's client, sent on the session (an SDK resolver cannot time out)."""
            related = ServerMessageMetadata(related_request_id=ctx.request_context.request_id)
            return await ctx.session.send_request(
                request, result, request_read_timeout_seconds=patience, metadata=related
            )

        def sampling(topic: str) -> CreateMessageRequest:
            text = TextContent(type="text", text=f"write about {topic}")
            message = SamplingMessage(role="user", content=text)
            return CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=20))

        def to_elicit() -> Elicit[Name]:
            return Elicit("What is your name?", Name)

        def to_list_roots() -> ListRoots:
            return ListRoots()

        async def after_both(topic: str) -> Sample:
            """Holds until two calls are in flight, then samples (two callers ask at once)."""
            await both_in_flight()
            return to_sample(topic)

        @self.server.tool()
        async def write(topic: str, sampled: Annotated[CreateMessageResult, Resolve(to_sample)]) -> str:
            """Write about a topic (samples the client's model)."""
            assert isinstance(sampled.content, TextContent)
            return f"sampled: {sampled.content.text}"

        @self.server.tool()
        async def greet(who: Annotated[Name, Resolve(to_elicit)]) -> str:
            """Greet the user (asks their name)."""
            return f"hello {who.name}"

        @self.server.tool()
        async def where(found: Annotated[ListRootsResult, Resolve(to_list_roots)]) -> str:
            """Name the client's roots."""
            return ",".join(str(r.uri) for r in found.roots)

        @self.server.tool()
        async def together(topic: str, sampled: Annotated[CreateMessageResult, Resolve(after_both)]) -> str:
            """Sample once another call is in flight too."""
            assert isinstance(sampled.content, TextContent)
            return f"sampled: {sampled.content.text}"

        self.started = threading.Event()
        self.cancelled = threading.Event()

        @self.server.tool()
        async def wait() -> str:
            """Wait until cancelled (and record that it was)."""
            self.started.set()
            await hold_until_cancelled(self.cancelled)

        @self.server.tool()
        async def impatient(topic: str, ctx: Context) -> str:
            """Samples, and gives up after PATIENCE seconds: the SDK then cancels the request (2025-11-25 only)."""
            try:
                sampled = await ask_directly(ctx, sampling(topic), CreateMessageResult, PATIENCE)
            except MCPError as exc:
                return f"gave up: {exc.error.message}"
            return f"sampled: {sampled.content.text}"

        @self.server.tool()
        async def second_thoughts(ctx: Context) -> str:
            """Asks for the roots; meanwhile asks for a sample and withdraws it 0.3 s later (2025-11-25 only)."""

            async def withdrawn() -> None:
                await anyio.sleep(0.1)
                with contextlib.suppress(MCPError):  # withdrawn: the SDK cancels it when its 0.3 s are up
                    await ask_directly(ctx, sampling("second thoughts"), CreateMessageResult, 0.3)

            async with anyio.create_task_group() as tg:
                tg.start_soon(withdrawn)
                found = await ask_directly(ctx, ListRootsRequest(), ListRootsResult)
            return ",".join(str(r.uri) for r in found.roots)

        @self.server.tool()
        async def plan(topic: str, ctx: Context) -> str:
            """Samples with a tool the model may call: needs ``sampling.tools``, not only ``sampling`` (2025-11-25 only)."""
            text = TextContent(type="text", text=f"plan {topic}")
            lookup = Tool(name="lookup", input_schema={"type": "object"})
            params = CreateMessageRequestParams(
                messages=[SamplingMessage(role="user", content=text)], max_tokens=20, tools=[lookup]
            )
            sampled = await ask_directly(ctx, CreateMessageRequest(params=params), CreateMessageResultWithTools)
            return f"planned: {sampled.content.text}"

        @self.server.tool()
        async def chatty(tag: str, ctx: Context) -> str:
            """Log the tag at info once another call is in flight too."""
            await both_in_flight()
            await ctx.log("info", f"chatty: {tag}")
            return tag


async def hold_until_cancelled(cancelled: anyio.Event | threading.Event) -> NoReturn:
    """Wait until the calling task is cancelled, then set ``cancelled`` and let the cancellation go on."""
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        cancelled.set()
        raise
    raise AssertionError("sleep_forever returned")  # pragma: no cover


async def refuse_discover(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
    """As a 2025-11-25 server answers the 2026-07-28 probe: the method is unknown."""
    if ctx.method == "server/discover":
        raise MCPError(code=METHOD_NOT_FOUND, message="Method not found")
    return await call_next(ctx)


if __name__ == "__main__":
    anyio.run(Asker().server.run_stdio_async)
