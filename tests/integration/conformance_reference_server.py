"""The conformance suite's reference server, built with the official SDK (``mcp``, the project's pin).

``python conformance_reference_server.py`` serves, over streamable HTTP on a free loopback port and
in both eras (2026-07-28 and 2025-11-25 on the one endpoint), the fixtures the suite's server
scenarios call (``conformance list --server``): the ``test_*`` tools (text, image, audio, embedded
and mixed content, logging, progress, sampling, elicitation with SEP-1034 defaults and SEP-1330
enums, an error, an ``x-mcp-header`` parameter, a missing client capability, the SEP-2322
``input_required`` rounds, a JSON Schema 2020-12 input schema, an SSE stream closed mid-call), the
``test://`` resources and template, the ``test_*`` prompts, completions, ``logging/setLevel`` and
resource subscriptions. Its SSE streams carry event ids from an in-memory event store, so a
dropped stream can be resumed (SEP-1699).

It prints ``conformance reference server at URL`` once the port is listening and serves until it is
terminated. It is the upstream of ``tests/integration/conformance_server_table.py``, which runs
the suite against it directly and through ``skilldeck gateway``.

No ``from __future__ import annotations`` here: the SDK evaluates the tools' annotations.
"""

import base64
import json
import socket
import sys
import warnings
from collections.abc import Callable
from typing import Annotated, Any

import anyio
import uvicorn
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import Context, MCPServer, RequestStateSecurity
from mcp.server.mcpserver.prompts.base import Prompt, UserMessage
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequest,
    InputRequiredResult,
    JSONRPCMessage,
    ListRootsRequest,
    ListRootsResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

# The suite compares what it gets with these bytes (a 1x1 PNG, a minimal WAV).
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
RETRY_MS = 100
"""The ``retry`` the SSE streams announce: the suite's polling scenario waits this long to reconnect."""

# SEP-1613 / SEP-2106: every 2020-12 keyword here must survive tools/list unchanged.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
JSON_SCHEMA_TOOL = "json_schema_2020_12_tool"


class MemoryEventStore(EventStore):
    """Every SSE event of this process, so a client that lost a stream replays what followed its last id."""

    def __init__(self) -> None:
        self.events: list[tuple[str, JSONRPCMessage | None]] = []
        """``(stream id, message)``; an event's id is its index, as text."""

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        self.events.append((stream_id, message))
        return str(len(self.events) - 1)

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        if not last_event_id.isdigit() or int(last_event_id) >= len(self.events):
            return None
        stream, _ = self.events[int(last_event_id)]
        for index in range(int(last_event_id) + 1, len(self.events)):
            owner, message = self.events[index]
            if owner == stream and message is not None:  # a priming event carries no message
                await send_callback(EventMessage(message, str(index)))
        return stream


def _user(text: str) -> SamplingMessage:
    return SamplingMessage(role="user", content=TextContent(type="text", text=text))


def _ask(message: str, field: str, kind: str = "string") -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _answered(responses: Any, key: str, field: str) -> Any:
    """The ``field`` an elicitation answer under ``key`` carries, else ``None``."""
    answer = (responses or {}).get(key)
    return answer.content.get(field) if isinstance(answer, ElicitResult) and answer.content else None


def _sample(text: str, max_tokens: int) -> CreateMessageRequest:
    return CreateMessageRequest(params=CreateMessageRequestParams(messages=[_user(text)], max_tokens=max_tokens))


class Sep1034Defaults(BaseModel):
    """An elicitation form with a default for each primitive type (SEP-1034)."""

    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active", description="User status", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    verified: bool = Field(default=True, description="Verification status")


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


class Sep1330Enums(BaseModel):
    """An elicitation form with each enum shape of SEP-1330."""

    untitledSingle: str = Field(
        description="Simple enum without titles", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    titledSingle: str = Field(
        description="Enum with titled options (oneOf)",
        json_schema_extra={
            "oneOf": _titled(("low", "Low Priority"), ("medium", "Medium Priority"), ("high", "High Priority"))
        },
    )
    untitledMulti: list[str] = Field(
        description="Multi-select without titles",
        json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
    )
    titledMulti: list[str] = Field(
        description="Multi-select with titled options",
        json_schema_extra={
            "items": {"anyOf": _titled(("feature", "New Feature"), ("bug", "Bug Fix"), ("docs", "Documentation"))}
        },
    )
    legacyEnum: str = Field(
        description="Legacy enum with enumNames",
        json_schema_extra={
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    )


class Answer(BaseModel):
    response: str = Field(description="User's response")


async def _list_with_2020_12_schema(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """``tools/list`` with :data:`JSON_SCHEMA_2020_12` as the input schema of :data:`JSON_SCHEMA_TOOL`."""
    result = await call_next(ctx)
    if ctx.method == "tools/list" and isinstance(result, dict):
        result = {
            **result,
            "tools": [
                {**t, "inputSchema": JSON_SCHEMA_2020_12} if t.get("name") == JSON_SCHEMA_TOOL else t
                for t in result.get("tools", [])
            ],
        }
    return result


def build_server() -> MCPServer[Any]:
    """The reference server: every fixture the suite's server scenarios call (see the module docs)."""
    server: MCPServer[Any] = MCPServer(
        "mcp-conformance-test-server",
        version="1.0.0",
        log_level="WARNING",
        request_state_security=RequestStateSecurity.ephemeral(),
        middleware=[_list_with_2020_12_schema],
    )
    _content_tools(server)
    _session_tools(server)
    _input_required_tools(server)
    _list_changes(server)
    _resources(server)
    _prompts(server)
    return server


def _content_tools(server: MCPServer[Any]) -> None:
    @server.tool()
    def test_simple_text() -> str:
        """Tests simple text content response"""
        return "This is a simple text response for testing."

    @server.tool()
    def test_image_content() -> list[ImageContent]:
        """Tests image content response"""
        return [ImageContent(type="image", data=PNG, mime_type="image/png")]

    @server.tool()
    def test_audio_content() -> list[AudioContent]:
        """Tests audio content response"""
        return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]

    @server.tool()
    def test_embedded_resource() -> list[EmbeddedResource]:
        """Tests embedded resource content response"""
        text = "This is an embedded resource content."
        resource = TextResourceContents(uri="test://embedded-resource", mime_type="text/plain", text=text)
        return [EmbeddedResource(type="resource", resource=resource)]

    @server.tool()
    def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        """Tests response with multiple content types (text, image, resource)"""
        data = json.dumps({"test": "data", "value": 123})
        resource = TextResourceContents(uri="test://mixed-content-resource", mime_type="application/json", text=data)
        return [
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=resource),
        ]

    @server.tool()
    def test_error_handling() -> str:
        """Tests error response handling"""
        raise RuntimeError("This tool intentionally returns an error for testing")

    @server.tool()
    def test_x_mcp_header(
        region: Annotated[
            str,
            Field(
                description="Mirrored into the Mcp-Param-Region header", json_schema_extra={"x-mcp-header": "Region"}
            ),
        ] = "<none>",
    ) -> str:
        """Tests SEP-2243 Mcp-Param-* header validation (the suite skips without an x-mcp-header tool)"""
        return f"region={region}"

    @server.tool(name=JSON_SCHEMA_TOOL)
    def json_schema_tool() -> str:
        """Tests JSON Schema 2020-12 keyword preservation in tools/list"""
        return JSON_SCHEMA_TOOL


def _session_tools(server: MCPServer[Any]) -> None:
    """The tools that talk back to the client while they run: logs, progress, sampling, elicitation."""

    async def log(ctx: Context, text: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging is deprecated on 2026-07-28
            await ctx.info(text)

    @server.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Tests tool that emits log messages during execution"""
        for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await log(ctx, step)
            await anyio.sleep(0.05)
        return "Tool with logging executed successfully"

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Tests tool that reports progress notifications"""
        for step in (0, 50, 100):
            await ctx.report_progress(progress=step, total=100, message=f"Completed step {step} of 100")
            await anyio.sleep(0.05)
        meta = ctx.request_context.meta if ctx.request_context else None
        return str((meta or {}).get("progress_token", 0))

    @server.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str | InputRequiredResult:
        """Tests server-initiated sampling (LLM completion request)"""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:  # no server requests: the client's retry answers
            answer = (ctx.input_responses or {}).get("sample")
            if answer is None:
                return InputRequiredResult(input_requests={"sample": _sample(prompt, 100)})
            result = answer if isinstance(answer, CreateMessageResult) else None
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # a 2025-11-25 server request
                result = await ctx.session.create_message(
                    messages=[_user(prompt)], max_tokens=100, related_request_id=ctx.request_id
                )
        content = result.content if result is not None else None
        return f"LLM response: {content.text if isinstance(content, TextContent) else 'No response'}"

    def elicitation(name: str, message: str, schema: type[BaseModel], prefix: str) -> Callable[..., Any]:
        async def elicit(ctx: Context) -> str | InputRequiredResult:
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:  # as for test_sampling
                answer = (ctx.input_responses or {}).get("form")
                if not isinstance(answer, ElicitResult):
                    form = ElicitRequestFormParams(message=message, requested_schema=schema.model_json_schema())
                    return InputRequiredResult(input_requests={"form": ElicitRequest(params=form)})
                content = json.dumps(answer.content) if answer.action == "accept" else "{}"
                return f"{prefix}: action={answer.action}, content={content}"
            result = await ctx.elicit(message=message, schema=schema)
            content = result.data.model_dump_json() if result.action == "accept" else "{}"
            return f"{prefix}: action={result.action}, content={content}"

        elicit.__name__ = name
        return elicit

    @server.tool()
    async def test_elicitation(message: str, ctx: Context) -> str | InputRequiredResult:
        """Tests server-initiated elicitation (user input request)"""
        answer: str | InputRequiredResult = await elicitation("ask", message, Answer, "User response")(ctx)
        return answer

    server.add_tool(
        elicitation("defaults", "Please provide user information", Sep1034Defaults, "Elicitation result"),
        name="test_elicitation_sep1034_defaults",
        description="Tests elicitation with default values for all primitive types (SEP-1034)",
    )
    server.add_tool(
        elicitation(
            "enums", "Please select values using different enum schema types", Sep1330Enums, "Elicitation completed"
        ),
        name="test_elicitation_sep1330_enums",
        description="Tests elicitation with enum schema variations per SEP-1330",
    )

    @server.tool()
    async def test_missing_capability(ctx: Context) -> str:
        """Tests a MISSING_REQUIRED_CLIENT_CAPABILITY error when the client declared no sampling"""
        capabilities = ctx.client_capabilities
        if capabilities is None or capabilities.sampling is None:
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="This tool requires the client 'sampling' capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "Client declared sampling capability; proceeding."

    @server.tool()
    async def test_reconnection(ctx: Context) -> str:
        """Tests SSE polling by closing the stream mid-call (SEP-1699)"""
        await log(ctx, "Before disconnect")
        await ctx.close_sse_stream()
        await anyio.sleep(0.2)  # the client reconnects with Last-Event-ID meanwhile
        await log(ctx, "After reconnect")
        return "Reconnection test completed"


def _list_changes(server: MCPServer[Any]) -> None:
    """SEP-2575: tools that change the tool or prompt list and tell the ``subscriptions/listen`` streams."""

    def dynamic() -> str:
        """Added and removed again by test_trigger_tool_change and test_trigger_prompt_change"""
        return "dynamic"

    @server.tool()
    async def test_trigger_tool_change(ctx: Context) -> str:
        """Changes the tool list and announces it (SEP-2575)"""
        server.add_tool(dynamic, name="test_dynamic_tool")
        server.remove_tool("test_dynamic_tool")
        await ctx.notify_tools_changed()
        return "tool list changed"

    @server.tool()
    async def test_trigger_prompt_change(ctx: Context) -> str:
        """Changes the prompt list and announces it (SEP-2575)"""
        server.add_prompt(Prompt.from_function(dynamic, name="test_dynamic_prompt", description="dynamic"))
        server.remove_prompt("test_dynamic_prompt")
        await ctx.notify_prompts_changed()
        return "prompt list changed"


def _input_required_tools(server: MCPServer[Any]) -> None:
    """SEP-2322: tools that answer ``input_required`` until the client's retry carries the answers."""

    @server.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
        """Tests InputRequiredResult with a single elicitation request"""
        if ctx.input_responses and "user_name" in ctx.input_responses:
            return f"Hello, {_answered(ctx.input_responses, 'user_name', 'name') or '?'}!"
        return InputRequiredResult(input_requests={"user_name": _ask("What is your name?", "name")})

    @server.tool()
    async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
        """Tests InputRequiredResult with a single sampling request"""
        answer = (ctx.input_responses or {}).get("capital_question")
        if answer is not None:
            content = answer.content if isinstance(answer, CreateMessageResult) else None
            return f"Model said: {content.text if isinstance(content, TextContent) else '?'}"
        return InputRequiredResult(input_requests={"capital_question": _sample("What is the capital of France?", 100)})

    @server.tool()
    async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
        """Tests InputRequiredResult with a single roots/list request"""
        answer = (ctx.input_responses or {}).get("client_roots")
        if answer is not None:
            return f"Client exposed {len(answer.roots) if isinstance(answer, ListRootsResult) else 0} root(s)."
        return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})

    @server.tool()
    async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
        """Tests requestState round-tripping in the InputRequiredResult flow"""
        if ctx.input_responses and "confirm" in ctx.input_responses and ctx.request_state == "request-state-nonce":
            return "state-ok: confirmation received"
        confirm = _ask("Please confirm", "ok", "boolean")
        return InputRequiredResult(input_requests={"confirm": confirm}, request_state="request-state-nonce")

    @server.tool()
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
        """Tests InputRequiredResult carrying elicitation, sampling and roots requests together"""
        if ctx.input_responses and {"user_name", "greeting", "client_roots"} <= ctx.input_responses.keys():
            return "All inputs received."
        requests: dict[str, InputRequest] = {
            "user_name": _ask("What is your name?", "name"),
            "greeting": _sample("Generate a greeting", 50),
            "client_roots": ListRootsRequest(),
        }
        return InputRequiredResult(input_requests=requests, request_state="multiple-inputs")

    @server.tool()
    async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
        """Tests a three-round InputRequiredResult flow with evolving requestState"""
        state = json.loads(ctx.request_state) if ctx.request_state else {"round": 0}
        responses = ctx.input_responses or {}
        if state.get("round") == 1 and "step1" in responses:
            name = _answered(responses, "step1", "name")
            step2 = _ask("Step 2: What is your favorite color?", "color")
            return InputRequiredResult(
                input_requests={"step2": step2}, request_state=json.dumps({"round": 2, "name": name})
            )
        if state.get("round") == 2 and "step2" in responses:
            return f"{state.get('name')} likes {_answered(responses, 'step2', 'color')}."
        # the first round, or an answer missing or out of order: from the start
        step1 = _ask("Step 1: What is your name?", "name")
        return InputRequiredResult(input_requests={"step1": step1}, request_state=json.dumps({"round": 1}))

    @server.tool()
    async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
        """Tests that a tampered requestState echo is refused (the SDK's request-state boundary does)"""
        if ctx.request_state is None:
            confirm = _ask("Please confirm", "ok", "boolean")
            return InputRequiredResult(input_requests={"confirm": confirm}, request_state="round-1")
        return f"state-ok: {ctx.request_state}"

    @server.tool()
    async def test_input_required_result_capabilities(ctx: Context) -> InputRequiredResult:
        """Tests that inputRequests only include methods the client declared support for"""
        capabilities = ctx.client_capabilities
        requests: dict[str, InputRequest] = {}
        if capabilities is None or capabilities.sampling is not None:
            requests["sample"] = _sample("Say hello", 50)
        if capabilities is None or capabilities.elicitation is not None:
            requests["ask"] = _ask("What is your name?", "name")
        return InputRequiredResult(input_requests=requests, request_state="capability-gated")


def _resources(server: MCPServer[Any]) -> None:
    subscribed: set[str] = set()

    @server.resource("test://static-text")
    def static_text() -> str:
        """A static text resource for testing"""
        return "This is the content of the static text resource."

    @server.resource("test://static-binary")
    def static_binary() -> bytes:
        """A static binary resource (image) for testing"""
        return base64.b64decode(PNG)

    @server.resource("test://template/{id}/data")
    def template(id: str) -> str:
        """A resource template with parameter substitution"""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource("test://watched-resource")
    def watched() -> str:
        """A resource that can be subscribed to for updates"""
        return "Watched resource content"

    async def subscribe(ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        subscribed.add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        subscribed.discard(str(params.uri))
        return EmptyResult()

    async def set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        return EmptyResult()

    # MCPServer has no public registration for these 2025-11-25 methods; the low-level server
    # declares the capabilities (resources.subscribe, logging) from the handlers it holds.
    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        return Completion(values=[], total=0, has_more=False)


def _prompts(server: MCPServer[Any]) -> None:
    @server.prompt()
    def test_simple_prompt() -> list[UserMessage]:
        """A simple prompt without arguments"""
        return [UserMessage(role="user", content=TextContent(type="text", text="This is a simple prompt for testing."))]

    @server.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        """A prompt with required arguments"""
        text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
        return [UserMessage(role="user", content=TextContent(type="text", text=text))]

    @server.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        """A prompt that includes an embedded resource"""
        text = "Embedded resource content for testing."
        resource = TextResourceContents(uri=resourceUri, mime_type="text/plain", text=text)
        return [
            UserMessage(role="user", content=EmbeddedResource(type="resource", resource=resource)),
            UserMessage(
                role="user", content=TextContent(type="text", text="Please process the embedded resource above.")
            ),
        ]

    @server.prompt()
    def test_prompt_with_image() -> list[UserMessage]:
        """A prompt that includes image content"""
        return [
            UserMessage(role="user", content=ImageContent(type="image", data=PNG, mime_type="image/png")),
            UserMessage(role="user", content=TextContent(type="text", text="Please analyze the image above.")),
        ]

    @server.prompt()
    async def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | InputRequiredResult:
        """Tests InputRequiredResult from prompts/get (SEP-2322 non-tool request)"""
        if ctx.input_responses and "user_context" in ctx.input_responses:
            text = _answered(ctx.input_responses, "user_context", "context") or "?"
            return [
                UserMessage(role="user", content=TextContent(type="text", text=f"Use the following context: {text}"))
            ]
        ask = _ask("What context should the prompt use?", "context")
        return InputRequiredResult(input_requests={"user_context": ask})


async def serve(sock: socket.socket) -> None:
    app = build_server().streamable_http_app(event_store=MemoryEventStore(), retry_interval=RETRY_MS)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    host, port = sock.getsockname()[:2]
    print(f"conformance reference server at http://{host}:{port}/mcp", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # listening before the URL is printed: a reader that connects at once is not refused
    anyio.run(serve, sock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
