"""An upstream whose tools ask their client (sampling, elicitation, roots) and log: in-process, over
HTTP, or over stdio (``python relay_upstream.py`` serves it on stdin/stdout).

No ``from __future__ import annotations`` here: the resolvers the tools name are local to the
constructor, and the SDK evaluates the annotations when the tools are registered.
"""

import threading
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp_types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
from pydantic import BaseModel


class Name(BaseModel):
    name: str


class Asker:
    """``ask``: tools that sample, elicit and list roots of their client (the gateway, relaying)."""

    def __init__(self) -> None:
        self.server: MCPServer[Any] = MCPServer("ask")
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
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
            return "never"

        @self.server.tool()
        async def chatty(tag: str, ctx: Context) -> str:
            """Log the tag at info once another call is in flight too."""
            await both_in_flight()
            await ctx.log("info", f"chatty: {tag}")
            return tag


if __name__ == "__main__":
    anyio.run(Asker().server.run_stdio_async)
