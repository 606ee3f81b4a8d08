"""An upstream whose tools show what a gateway in front of it changes: the capabilities a call declared,
``Mcp-Param-*`` headers, questions asked only of a client that declared them, a stream worth resuming.

No ``from __future__ import annotations`` here: the SDK evaluates the tools' annotations when they
are registered.
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp_types import (
    ClientCapabilities,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
)
from pydantic import Field

REGION_HEADER = "Region"
"""The ``x-mcp-header`` of ``locate``'s ``region`` argument (``Mcp-Param-Region``)."""


def _sample() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="a word"))], max_tokens=5)


def _declared(capabilities: ClientCapabilities | None) -> str:
    return json.dumps(capabilities.model_dump(by_alias=True, mode="json", exclude_none=True) if capabilities else {})


def transparency_upstream() -> MCPServer[Any]:
    """``see``: ``locate`` (an ``x-mcp-header`` argument), ``declared``, ``needs_sampling``, ``ask_what_you_can``,
    ``slow`` (answers after ``seconds``, with a progress notification first); the prompt ``declared_prompt``,
    the template ``see://declared/{what}`` and every completion answer with the capabilities declared too."""
    server: MCPServer[Any] = MCPServer("see")

    @server.tool()
    def locate(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": REGION_HEADER})]) -> str:
        """Say where (the region travels in a header too)."""
        return f"at {region}"

    @server.tool()
    def declared(ctx: Context) -> str:
        """The client capabilities this request declared, as JSON."""
        return _declared(ctx.client_capabilities)

    @server.tool()
    def needs_sampling(sampled: Annotated[CreateMessageResult, Resolve(_sample)]) -> str:
        """Runs only for a client that declared sampling (else -32021, as the SDK answers)."""
        assert isinstance(sampled.content, TextContent)
        return f"sampled {sampled.content.text}"

    @server.tool()
    def ask_what_you_can(ctx: Context) -> InputRequiredResult | str:
        """Asks for a sample and a name, each only of a client that declared the capability it needs."""
        if ctx.input_responses:
            return "answered " + ",".join(sorted(ctx.input_responses))
        capabilities = ctx.client_capabilities
        asks: dict[str, Any] = {}
        if capabilities is not None and capabilities.sampling is not None:
            text = TextContent(type="text", text="a word")
            message = SamplingMessage(role="user", content=text)
            asks["word"] = CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=5))
        if capabilities is not None and capabilities.elicitation is not None:
            schema = {"type": "object", "properties": {"name": {"type": "string"}}}
            asks["name"] = ElicitRequest(params=ElicitRequestFormParams(message="Your name?", requested_schema=schema))
        if not asks:
            return "nothing asked"
        return InputRequiredResult(input_requests=asks)

    @server.prompt()
    def declared_prompt(ctx: Context) -> str:
        """The client capabilities ``prompts/get`` declared, as JSON."""
        return _declared(ctx.client_capabilities)

    @server.resource("see://declared/{what}")
    def declared_resource(what: str, ctx: Context) -> str:
        """The client capabilities ``resources/read`` declared, as JSON."""
        return _declared(ctx.client_capabilities)

    async def complete(ctx: ServerRequestContext[Any], params: CompleteRequestParams) -> CompleteResult:
        """Completes any argument with the client capabilities the request declared, as JSON."""
        return CompleteResult(completion=Completion(values=[_declared(ctx.session.client_capabilities)]))

    server._lowlevel_server.add_request_handler("completion/complete", CompleteRequestParams, complete)

    @server.tool()
    async def slow(seconds: float, ctx: Context) -> str:
        """Reports progress, then answers after ``seconds``."""
        await ctx.report_progress(1, 2, "halfway")
        await anyio.sleep(seconds)
        return f"slept {seconds:g}"

    return server


PINS = ["see/locate", "see/ask_what_you_can", "see/slow"]
"""What :func:`gateway_in_front` pins (``--pin``)."""


@contextmanager
def gateway_in_front(tmp: Path, *extra: str) -> Iterator[tuple[str, Path]]:
    """``skilldeck gateway --http --pin ... EXTRA...`` in front of this upstream over streamable HTTP on loopback:
    its URL and its log. Checks, once the block ends, that the gateway is still running."""
    from ..host.hostile_http import serving_in_thread
    from ..server.helpers import start_gateway, stop

    app = transparency_upstream().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    with serving_in_thread(app) as upstream_url:
        config = tmp / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"see": {"url": upstream_url}}}))
        log = tmp / "gateway.log"
        proc, match = start_gateway(config, log, *[arg for pin in PINS for arg in ("--pin", pin)], *extra)
        try:
            yield match["url"], log
            assert proc.poll() is None, log.read_text(errors="replace")
        finally:
            stop(proc)
