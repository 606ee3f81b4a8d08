"""The gateway on the wire: an ``MCPServer`` whose tools are the meta-tools, bound to a :class:`GatewayService`.

A :class:`GatewayMiddleware` (the SDK's public hook for wrapping requests) answers ``tools/list``
and ``tools/call``:

* ``tools/list``: the four meta-tools, the ``--pin``\\ ned tools, and — on a 2025-11-25 session
  only — the tools that session loaded (*progressive injection*, named ``label__tool`` with the
  upstream schema and annotations unchanged; under ``names="upstream"`` a tool no other upstream
  lists keeps its own name, see :mod:`skilldeck.gateway._names`). On 2026-07-28 the list never varies per
  connection (the base revision forbids it): loaded schemas travel in the ``load`` result.
* ``tools/call``: a meta-tool is answered by the service; any other name (a pinned or injected
  tool) goes through the same gate as ``call``. A refusal is a tool result with ``isError`` and
  a reason, and nothing is sent upstream. A pinned tool's ``Mcp-Param-*`` headers are checked by
  the SDK's own validator, as it checks its own tools', once the policy routes the tool to the caller
  (see :func:`create_gateway`).

After a ``load`` that added tools, a legacy session is sent ``notifications/tools/list_changed``
(``tools.listChanged`` is declared in its ``initialize`` reply).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias, cast

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateCodec
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, SubscriptionBus
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, LoggingMessageNotificationParams
from mcp_types.methods import serialize_server_result

from skilldeck import __version__
from skilldeck.errors import SkilldeckError
from skilldeck.gateway._add import AddTool
from skilldeck.gateway._discovery import Discovery
from skilldeck.gateway._forward import ForwardedUpstreams
from skilldeck.gateway._meta import (
    ADD,
    ADD_TOOL,
    CALL,
    FIND,
    LOAD,
    MAX_ID_CHARS,
    META,
    META_TOOLS,
    READ_SKILL_FILE,
    AddArguments,
    AddResult,
    CallArguments,
    FindArguments,
    FindResult,
    LoadArguments,
    LoadResult,
    ReadSkillFileArguments,
    ReadSkillFileResult,
)
from skilldeck.gateway._names import Naming, kept_tool_names
from skilldeck.gateway._relay import LOG_LEVELS, call_relay, forward_log_level
from skilldeck.gateway._republish import RepublishedSkills
from skilldeck.gateway._service import GatewayService, tool_id
from skilldeck.gateway._upstreams import host_under
from skilldeck.host import Host
from skilldeck.select._api import tool_function_name
from skilldeck.serving._api import (
    CONVERSATION_META_KEY,
    LegacyConnections,
    RequestIdentity,
    caller_for,
    identify,
    is_legacy,
    request_state_security,
)
from skilldeck.skill._api import neutralise_in

__all__ = ["CONVERSATION_META_KEY", "GatewayMiddleware", "create_gateway"]

logger = logging.getLogger(__name__)

LIST_TTL_MS = 60_000
"""How long a client may reuse the gateway's ``tools/list`` (it changes only when a pinned tool does)."""

INSTRUCTIONS = (
    "This server fronts several MCP servers. Their tools are not listed here: call `find` with the task, "
    "`load` the best card (a skill gives instructions and exactly the tools it needs), then `call` those tools "
    "by LABEL/TOOL. If find abstains, say so instead of guessing."
)


ToolResult: TypeAlias = dict[str, Any]
"""A ``tools/call`` result as JSON (``content``, ``structuredContent``, ``isError``), as the upstream or the gateway gave it."""

_MetaHandler: TypeAlias = Callable[[ServerRequestContext[Any, Any], RequestIdentity, Any], Awaitable[ToolResult]]
"""Answers one meta-tool for one request, given its identity and its arguments (an instance of the tool's model)."""


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def _ok(structured: Mapping[str, object], text: str | None = None) -> ToolResult:
    return {
        "content": [{"type": "text", "text": text if text is not None else _text(structured)}],
        "structuredContent": structured,
        "isError": False,
    }


def _refused(reason: str) -> ToolResult:
    return {"content": [{"type": "text", "text": reason}], "isError": True}


def _call_refusal(name: object, arguments: object) -> str | None:
    """Why a ``tools/call`` cannot name a tool with ``name`` and ``arguments``, or ``None``."""
    if not isinstance(name, str):
        return "tools/call needs a tool name"
    if len(name) > MAX_ID_CHARS:
        return f"a tool name is at most {MAX_ID_CHARS} characters; nothing was sent"
    if arguments is not None and not isinstance(arguments, dict):
        return "arguments must be an object"
    return None


def _find_text(result: FindResult) -> str:
    if result["abstain"]:
        lines = [f"No card fits well enough: {result['reason']}"]
        if result["cards"]:
            lines.append(
                "The closest cards, none a clear match (load one only if its description does what was asked):"
            )
    elif result.get("low_confidence"):
        lines = [
            f"Closest matches, low confidence ({result['confidence']:.2f}): {result['reason']}. "
            "If it does, load it by id:"
        ]
    elif "worked_before" in result:
        first = result["cards"][0]["id"] if result["cards"] else "the first card"
        lines = [
            f"Best matches: {first} worked before for this question ({result['worked_before']!r} led to a "
            "successful call); load one by id:"
        ]
    elif "like_before" in result:
        first = result["cards"][0]["id"] if result["cards"] else "the first card"
        led_to = result.get("like_before_card", first)
        who = first if led_to == first else f"{first}'s server"
        lines = [
            f"Best matches (confidence {result['confidence']:.2f}): {who} served a question like this one before "
            f"({result['like_before']!r} led to a successful call of {led_to}); load one by id:"
        ]
    else:
        lines = [f"Best matches (confidence {result['confidence']:.2f}); load one by id:"]
    lines += [f"- {c['id']} [{c['kind']}] {c['description'][:160]}" for c in result["cards"]]
    for item in result.get("unavailable", []):
        lines.append(f"(server {item['server']} is unavailable: {item['reason']})")
    if result.get("catalog"):
        lines.append("Not installed; a person can add one (call `add` with its id, they are asked first):")
        lines += [
            f"- {c['id']} [server, not installed] {c['description'][:160]} (runs {_runs_text(c['runs'])})"
            for c in result["catalog"]
        ]
    return "\n".join(lines)


def _runs_text(runs: Mapping[str, Any]) -> str:
    if "url" in runs:
        return str(runs["url"])
    return f"{runs.get('registryType')} {runs.get('package')} {runs.get('version')}"


def _add_text(result: AddResult) -> str:
    return f"Added {result['id']} as {result['server']!r}: {result['reason']}"


def _load_text(result: LoadResult) -> str:
    parts = [s["content"] for s in result["skills"]]
    if result["tools"]:
        parts.append(
            "Active tools (call them with `call`):\n"
            + "\n".join(
                f"- {t['name']}: {t.get('description', '')[:160]}\n  input schema: {json.dumps(t['inputSchema'])}"
                for t in result["tools"]
            )
        )
    parts += [f"Refused {r['id']}: {r['reason']}" for r in result["refused"]]
    return "\n\n".join(parts) or "Nothing loaded."


class GatewayMiddleware:
    """Answers ``tools/list`` and ``tools/call`` for the gateway (see the module docs).

    ``legacy`` is the process's one table of live legacy connections (:func:`create_gateway` shares it
    with the forwarded upstreams and the re-published skills); one is made when omitted. ``names``
    is how upstream tools are listed (see :mod:`skilldeck.gateway._names`). ``host`` is the one the
    upstreams run on: a client's ``logging/setLevel`` is passed on to its sessions.
    """

    def __init__(
        self,
        service: GatewayService,
        host: Host,
        subscriptions: SubscriptionBus | None = None,
        legacy: LegacyConnections | None = None,
        names: Naming = "label",
    ) -> None:
        self.service = service
        self.host = host
        """The host the upstreams run on (``logging/setLevel`` is passed on to its sessions)."""
        self.names = names
        self.subscriptions: SubscriptionBus = subscriptions or InMemorySubscriptionBus()
        """Where 2026-07-28 listeners hear of changes (the server's ``subscriptions/listen`` bus)."""
        self.skills: RepublishedSkills | None = None
        """The upstream skills the gateway re-publishes, when it does (see :func:`create_gateway`)."""
        self.forwarded: ForwardedUpstreams | None = None
        """The upstreams' resources, prompts and completions, forwarded (see :mod:`skilldeck.gateway._forward`)."""
        self.legacy = legacy if legacy is not None else LegacyConnections()
        """Live legacy connections (bounded); a connection forgotten takes its activation with it."""
        self.legacy.on_forget(self._forget)
        self._activation_keys: dict[int, str] = {}
        self._meta: dict[str, _MetaHandler] = {
            FIND: self._find,
            LOAD: self._load,
            READ_SKILL_FILE: self._read_skill_file,
            CALL: self._call_loaded,
        }
        """Each meta-tool's handler, by name (the tools themselves are declared in :mod:`skilldeck.gateway._meta`)."""
        self.discovery: Discovery | None = None
        """The catalogs behind ``find``'s catalog cards and ``add`` (see :meth:`discover`); ``None``: none."""
        self._adding: AddTool | None = None

    def discover(self, discovery: Discovery) -> None:
        """Offer ``discovery``'s catalogs: ``find`` adds their cards to weak answers, and ``add`` is listed."""
        self.discovery = discovery
        self._adding = AddTool(discovery)
        self._meta[ADD] = self._add

    # -- who is asking -----------------------------------------------------------------------------

    def identify(self, ctx: ServerRequestContext[Any, Any]) -> RequestIdentity:
        """Who the request behind ``ctx`` is answered for, and its activation (see :mod:`skilldeck.serving._identity`)."""
        who = identify(ctx, self.service.policy, self.legacy)
        if who.connection is not None:  # one activation per live legacy connection, dropped with it
            self._activation_keys[who.connection] = who.client
        return who

    def _forget(self, connection: int) -> None:
        key = self._activation_keys.pop(connection, None)
        if key is not None:
            self.service.activations.drop(key)

    # -- the hook ----------------------------------------------------------------------------------

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/list":
            return serialize_server_result("tools/list", ctx.protocol_version, self._list(ctx))
        if ctx.method == "tools/call":
            result = await self._call(ctx)
            return serialize_server_result("tools/call", ctx.protocol_version, {"resultType": "complete", **result})
        if ctx.method == "initialize":
            return self._declare_list_changed(await call_next(ctx))
        if ctx.method == "logging/setLevel" and is_legacy(ctx):
            return await self._set_log_level(ctx)
        return await call_next(ctx)

    async def _set_log_level(self, ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        """A 2025-11-25 client's ``logging/setLevel``: kept for its relayed messages, forwarded upstream.

        The upstream sessions are shared by every client, so each is asked for the most verbose level
        any live client set; each client then gets only the messages at or above its own level.
        """
        params: Any = ctx.params if isinstance(ctx.params, dict) else {}
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise MCPError(code=INVALID_PARAMS, message=f"level must be one of {', '.join(LOG_LEVELS)}")
        self.legacy.connection(ctx.session)[1].log_level = level
        await forward_log_level(self.host, min(self.legacy.log_levels(), key=LOG_LEVELS.index))
        return {}

    def _list(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        tools = [dict(t) for t in META_TOOLS]
        if self.discovery is not None:
            tools.append(ADD_TOOL.listed())
        listed = set()
        who = self.identify(ctx)
        routed = self.service.tools_for(who.caller)
        shown = [p for p in self.service.pinned if routed is None or tool_id(*p) in routed]
        if who.legacy:  # a legacy session: the tools it loaded are listed too
            activation = self.service.activations.peek(who.client)
            if activation is not None:
                shown += [t for t in activation.tools if t not in shown]
        registry_tools = {(t.label, t.name): t.tool for t in self.service.upstreams.tools()}
        kept = self.kept_tools() if self.names == "upstream" else frozenset()
        for label, name in shown:
            upstream = registry_tools.get((label, name))
            if upstream is None or (label, name) in listed:
                continue
            listed.add((label, name))
            tools.append(self.injected(label, name, upstream, keep=name in kept))
        # Without a policy, the same list for every 2026-07-28 caller (meta-tools and pins): any cache may
        # keep it a while. Under a policy, the pins shown depend on the caller's token: no shared cache.
        scope = "public" if routed is None else "private"
        return {"resultType": "complete", "tools": tools, "ttlMs": LIST_TTL_MS, "cacheScope": scope}

    def listed_input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of the pinned tool the gateway lists as ``name`` (``label__tool``, or the
        upstream's own name where ``names="upstream"`` keeps it), else ``None``.

        What the SDK's streamable HTTP transport checks a 2026-07-28 ``tools/call``'s ``Mcp-Param-*``
        headers against (see :func:`create_gateway`). Only pinned tools: they are what a 2026-07-28
        client lists, so what its SDK mirrors into headers. A tool it loaded is called through ``call``
        (or by a name it never listed), so no client sends headers for it; checking them would refuse
        every conforming call.

        The policy decides first: a pin not routed to the caller (the verified token, else the policy's
        default identity) has no schema here, so the call reaches the gate and is refused with the
        policy's reason rather than ``-32020`` for headers the caller was never shown.
        """
        kept = self.kept_tools() if self.names == "upstream" else frozenset()
        routed = self.service.tools_for(caller_for(self.service.policy, get_access_token()))
        for label, tool in self.service.pinned:
            if routed is not None and tool_id(label, tool) not in routed:
                continue
            if (tool if tool in kept else tool_function_name(label, tool)) == name:
                for listed in self.service.upstreams.tools(label):
                    if listed.name == tool:
                        schema = listed.tool.get("inputSchema")
                        return schema if isinstance(schema, Mapping) else None
        return None

    def kept_tools(self) -> frozenset[str]:
        """The upstream tool names listed as they are under ``names="upstream"`` (see :mod:`skilldeck.gateway._names`)."""
        listed: dict[str, list[str]] = {}
        for record in self.service.upstreams.tools():
            listed.setdefault(record.label, []).append(record.name)
        return kept_tool_names(listed, META)

    @staticmethod
    def injected(label: str, name: str, upstream: Any, *, keep: bool = False) -> dict[str, Any]:
        """An upstream tool as the gateway lists it: ``label__tool`` (its own name with ``keep``), schema and
        annotations unchanged."""
        tool = dict(upstream)
        tool["name"] = name if keep else tool_function_name(label, name)
        description = str(tool.get("description") or "")
        tool["description"] = f"[{label}] {description}".strip()
        return cast(dict[str, Any], neutralise_in(tool))  # the upstream's prose cannot forge an origin tag

    async def _call(self, ctx: ServerRequestContext[Any, Any]) -> ToolResult:
        """``tools/call``: a meta-tool, checked by its model and answered by its handler; else a listed upstream tool."""
        params = ctx.params if isinstance(ctx.params, dict) else {}
        name, arguments = params.get("name"), params.get("arguments")
        refusal = _call_refusal(name, arguments)
        if refusal is not None:
            return _refused(refusal)
        args: dict[str, Any] = arguments or {}
        try:
            who = self.identify(ctx)
            if who.refusal is not None:
                return _refused(who.refusal)
            meta = META.get(str(name)) or (ADD_TOOL if name == ADD and self._adding is not None else None)
            if meta is None:  # a pinned or injected tool, by the name the gateway listed it under
                return await self._upstream_call(ctx, who, str(name), args)
            return await self._meta[meta.name](ctx, who, meta.arguments.parse(args))
        except SkilldeckError as exc:  # a refusal (GateRefused, InvalidArguments) or any other known failure
            return _refused(str(exc))

    async def _find(self, ctx: ServerRequestContext[Any, Any], who: RequestIdentity, args: Any) -> ToolResult:
        find: FindArguments = args
        found = cast(
            FindResult,
            await self.service.find_learned(who.caller, who.client, find.query, find.limit, needs=find.needs),
        )
        await self.service.usage.share_found(
            who.client, find.query, found
        )  # on the shared path: another replica may load
        if self.discovery is not None:  # a weak answer: servers of the catalogs a person could add
            self.discovery.offer(who.caller, who.client, find.query, cast(dict[str, Any], found))
        return _ok(found, _find_text(found))

    async def _add(self, ctx: ServerRequestContext[Any, Any], who: RequestIdentity, args: Any) -> ToolResult:
        assert self._adding is not None
        add: AddArguments = args
        result = await self._adding(ctx, who, add)
        if result.get("resultType") == "input_required":  # 2026-07-28: the person is asked, the retry answers
            return result
        added = cast(AddResult, result)
        return _ok(added, _add_text(added))

    async def _load(self, ctx: ServerRequestContext[Any, Any], who: RequestIdentity, args: Any) -> ToolResult:
        load: LoadArguments = args
        loaded = cast(LoadResult, await self.service.load(who.caller, who.client, load.ids))
        if loaded["tools"] and who.legacy:
            await self._announce(ctx.session)
        answer = _ok(loaded, _load_text(loaded))
        answer["isError"] = not loaded["skills"] and not loaded["tools"]  # nothing loaded: a model must notice
        return answer

    async def _read_skill_file(
        self, ctx: ServerRequestContext[Any, Any], who: RequestIdentity, args: Any
    ) -> ToolResult:
        read_file: ReadSkillFileArguments = args
        read = cast(
            ReadSkillFileResult, await self.service.read_skill_file(who.client, read_file.skill, read_file.path)
        )
        return _ok(read, read.get("text") or f"{read['uri']} ({read.get('mimeType')}, base64 in blob)")

    async def _call_loaded(self, ctx: ServerRequestContext[Any, Any], who: RequestIdentity, args: Any) -> ToolResult:
        call: CallArguments = args
        return await self._upstream_call(ctx, who, call.tool, call.arguments)

    async def _upstream_call(
        self, ctx: ServerRequestContext[Any, Any], who: RequestIdentity, tool: str, arguments: dict[str, Any] | None
    ) -> ToolResult:
        """An upstream tool through the gate, its progress, questions and log messages relayed to this request."""
        result = await self.service.call(
            who.caller,
            who.client,
            tool,
            arguments,
            progress=_progress_relay(ctx),
            relay=call_relay(ctx),
            **_log_relay(ctx, who),
        )
        if self.forwarded is None:
            return result
        await self.forwarded.refresh_names()  # the links of the result name what clients read
        return self.forwarded.tool_result(result)

    async def _announce(self, session: ServerSession) -> None:
        try:
            await session.send_tool_list_changed()
        except Exception:  # a client without a stream for notifications still gets the load result
            logger.debug("could not send tools/list_changed", exc_info=True)

    async def tools_changed(self) -> None:
        """Tell every legacy session that its tool list changed."""
        for _, session in self.legacy.items():
            await self._announce(session)

    @staticmethod
    def _declare_list_changed(result: HandlerResult) -> HandlerResult:
        if not isinstance(result, dict):
            return result
        capabilities = dict(result.get("capabilities") or {})
        capabilities["tools"] = {**dict(capabilities.get("tools") or {}), "listChanged": True}
        capabilities.setdefault("logging", {})  # logging/setLevel is kept and forwarded (see _set_log_level)
        return {**result, "capabilities": capabilities}


def _progress_relay(ctx: ServerRequestContext[Any, Any]) -> ProgressFnT:
    """Where an upstream's progress for this call goes: this request's own progress channel.

    The SDK's request-scoped ``report_progress`` sends ``notifications/progress`` with this request's
    progress token on its stream (or calls the in-process caller's callback), and is a no-op when the
    client asked for no progress. (An in-process caller sends no token in ``_meta``, so the token
    alone cannot tell whether progress was asked for: the upstream is always asked.)
    """
    return ctx.session.report_progress


def _log_relay(ctx: ServerRequestContext[Any, Any], who: RequestIdentity) -> dict[str, Any]:
    """``log``/``log_level`` for :meth:`GatewayService.call`: the upstream's log messages go to this request.

    A 2026-07-28 client gets them only when its request opted in (``_meta`` log level), at that level
    and above (the SDK's gate on this request's session); a 2025-11-25 client gets those at or above
    the level it set with ``logging/setLevel`` (every level until it does).
    """
    if who.log_level is None:
        return {}
    level, minimum = ("debug", who.log_level) if who.legacy else (who.log_level, "debug")
    session, request_id = ctx.session, ctx.request_id

    async def relay(params: LoggingMessageNotificationParams) -> None:
        if LOG_LEVELS.index(params.level) >= LOG_LEVELS.index(minimum):
            await session.send_log_message(params.level, params.data, params.logger, related_request_id=request_id)

    return {"log": relay, "log_level": level}


def create_gateway(
    service: GatewayService,
    *,
    host: Host | None = None,
    name: str = "skilldeck-gateway",
    token_verifier: Any = None,
    auth: Any = None,
    extra_middleware: Iterable[Any] = (),
    extensions: Iterable[Any] = (),
    subscriptions: SubscriptionBus | None = None,
    republish_skills: bool = True,
    request_state_keys: Sequence[str | bytes] | None = None,
    request_state_codec: RequestStateCodec | None = None,
    names: Naming = "label",
) -> tuple[MCPServer[Any], GatewayMiddleware]:
    """An ``MCPServer`` serving the gateway's meta-tools over ``service``; returns it and its middleware.

    With ``republish_skills`` (the default) the gateway also declares the Skills extension and
    serves every upstream's skills under ``skill://LABEL/...`` (``middleware.skills``; see
    :mod:`skilldeck.gateway._republish`), on the same ``subscriptions/listen`` bus. The upstreams'
    resources, prompts and completions are forwarded by label (``middleware.forwarded``; see
    :mod:`skilldeck.gateway._forward`).
    ``host`` is the one the upstreams run on (by default the one ``service`` was given, under its
    :class:`~skilldeck.gateway._upstreams.HostUpstreams`): the forwarded requests, the re-published
    skills and ``logging/setLevel`` go to its sessions.
    ``request_state_keys`` and ``request_state_codec`` are as for :func:`skilldeck.server._app.create_server`
    (replicas share them). ``names`` is how upstream tools, prompts and resources are named: ``"label"``
    (``LABEL__NAME``, ``upstream://LABEL/URI``) or ``"upstream"`` (their own names where they do not
    collide, see :mod:`skilldeck.gateway._names`).
    """
    host = host if host is not None else host_under(service.upstreams)
    legacy = LegacyConnections()  # the process's one table of legacy connections, shared by all three
    skills = RepublishedSkills(service, host, subscriptions=subscriptions, legacy=legacy) if republish_skills else None
    middleware = GatewayMiddleware(
        service, host, skills.subscriptions if skills is not None else subscriptions, legacy, names=names
    )
    middleware.skills = skills
    forwarded = middleware.forwarded = ForwardedUpstreams(
        service, host, middleware.subscriptions, skills_republished=skills is not None, legacy=legacy, names=names
    )
    server: MCPServer[Any] = MCPServer(
        name,
        version=__version__,
        instructions=INSTRUCTIONS,
        middleware=[middleware, *([skills.middleware] if skills is not None else []), forwarded, *extra_middleware],
        extensions=[*([skills.extension] if skills is not None else []), *extensions],
        subscriptions=middleware.subscriptions,
        log_level="WARNING",
        token_verifier=token_verifier,
        auth=auth,
        request_state_security=request_state_security(request_state_keys, request_state_codec),
    )
    _check_param_headers(server, middleware)
    return server, middleware


def _check_param_headers(server: MCPServer[Any], middleware: GatewayMiddleware) -> None:
    """Have the SDK check ``Mcp-Param-*`` headers of a call to a pinned tool as it checks its own tools'.

    The SDK's 2026-07-28 transport validates a ``tools/call``'s ``Mcp-Param-*`` headers against the
    tool's ``x-mcp-header`` annotations (a missing, extra, mismatched or malformed Base64 value is
    ``-32020`` with HTTP 400, before any handler runs), looking the schema up with the low-level
    server's ``get_tool_input_schema``. ``MCPServer`` points that at its own tool manager, which knows
    none of the tools the gateway's middleware answers; this looks up the pinned tools first. The
    SDK's validator does the checking. (``MCPServer`` offers no public way to set the lookup, so its
    low-level server is reached directly: ``docs/sdk-workarounds.md#param-headers``.)
    """
    lowlevel = server._lowlevel_server
    own = lowlevel.get_tool_input_schema

    def input_schema(name: str) -> Mapping[str, Any] | None:
        schema = middleware.listed_input_schema(name)
        return schema if schema is not None or own is None else own(name)

    lowlevel.get_tool_input_schema = input_schema
