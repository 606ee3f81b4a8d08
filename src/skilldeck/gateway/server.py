"""The gateway on the wire: an ``MCPServer`` whose tools are the meta-tools, bound to a :class:`GatewayService`.

A :class:`GatewayMiddleware` (the SDK's public hook for wrapping requests) answers ``tools/list``
and ``tools/call``:

* ``tools/list``: the four meta-tools, the ``--pin``\\ ned tools, and — on a 2025-11-25 session
  only — the tools that session loaded (*progressive injection*, named ``label__tool`` with the
  upstream schema and annotations unchanged). On 2026-07-28 the list never varies per
  connection (the base revision forbids it): loaded schemas travel in the ``load`` result.
* ``tools/call``: a meta-tool is answered by the service; any other name (a pinned or injected
  tool) goes through the same gate as ``call``. A refusal is a tool result with ``isError`` and
  a reason, and nothing is sent upstream.

After a ``load`` that added tools, a legacy session is sent ``notifications/tools/list_changed``
(``tools.listChanged`` is declared in its ``initialize`` reply).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any, cast

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateCodec
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, SubscriptionBus
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, LOG_LEVEL_META_KEY, LoggingMessageNotificationParams
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skilldeck import __version__
from skilldeck.errors import GateRefused, SkilldeckError
from skilldeck.gateway.activation import MAX_CONVERSATION_CHARS, client_key
from skilldeck.gateway.forward import ForwardedUpstreams
from skilldeck.gateway.meta import CALL, FIND, LOAD, MAX_ID_CHARS, META_TOOLS, READ_SKILL_FILE
from skilldeck.gateway.relay import LOG_LEVELS, call_relay, forward_log_level
from skilldeck.gateway.republish import RepublishedSkills
from skilldeck.gateway.service import GatewayService, tool_id
from skilldeck.select.decide import MAX_NEEDS
from skilldeck.select.project import tool_function_name
from skilldeck.server.app import request_state_security
from skilldeck.server.middleware import locale_hint
from skilldeck.server.notifier import LegacyConnections
from skilldeck.server.policy import HINTS_PREFIX, Caller, caller_for
from skilldeck.skill.tags import neutralise_in

__all__ = ["CONVERSATION_META_KEY", "GatewayMiddleware", "create_gateway"]

logger = logging.getLogger(__name__)

CONVERSATION_META_KEY = HINTS_PREFIX + "conversation"
"""Request ``_meta`` key a 2026-07-28 client may send to keep activations of conversations apart."""

LIST_TTL_MS = 60_000
"""How long a client may reuse the gateway's ``tools/list`` (it changes only when a pinned tool does)."""

INSTRUCTIONS = (
    "This server fronts several MCP servers. Their tools are not listed here: call `find` with the task, "
    "`load` the best card (a skill gives instructions and exactly the tools it needs), then `call` those tools "
    "by LABEL/TOOL. If find abstains, say so instead of guessing."
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def _ok(structured: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text if text is not None else _text(structured)}],
        "structuredContent": structured,
        "isError": False,
    }


def _refused(reason: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": reason}], "isError": True}


_TOO_LONG = f"at most {MAX_ID_CHARS} characters"


def _too_long(value: object) -> bool:
    return isinstance(value, str) and len(value) > MAX_ID_CHARS


def _find_text(result: dict[str, Any]) -> str:
    if result["abstain"]:
        lines = [f"No card fits well enough: {result['reason']}"]
        if result["cards"]:
            lines.append("Closest (not recommended):")
    elif result.get("low_confidence"):
        lines = [f"Closest matches, low confidence ({result['confidence']:.2f}): check one fits, then load it by id:"]
    else:
        lines = [f"Best matches (confidence {result['confidence']:.2f}); load one by id:"]
    lines += [f"- {c['id']} [{c['kind']}] {c['description'][:160]}" for c in result["cards"]]
    for item in result.get("unavailable", []):
        lines.append(f"(server {item['server']} is unavailable: {item['reason']})")
    return "\n".join(lines)


def _load_text(result: dict[str, Any]) -> str:
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
    """Answers ``tools/list`` and ``tools/call`` for the gateway (see the module docs)."""

    def __init__(self, service: GatewayService, subscriptions: SubscriptionBus | None = None) -> None:
        self.service = service
        self.subscriptions: SubscriptionBus = subscriptions or InMemorySubscriptionBus()
        """Where 2026-07-28 listeners hear of changes (the server's ``subscriptions/listen`` bus)."""
        self.skills: RepublishedSkills | None = None
        """The upstream skills the gateway re-publishes, when it does (see :func:`create_gateway`)."""
        self.forwarded: ForwardedUpstreams | None = None
        """The upstreams' resources, prompts and completions, forwarded (see :mod:`skilldeck.gateway.forward`)."""
        self.legacy = LegacyConnections(on_forget=self._forget)
        """Live legacy connections (bounded); a connection forgotten takes its activation with it."""
        self._activation_keys: dict[int, str] = {}
        self._log_levels: dict[int, str] = {}

    # -- who is asking -----------------------------------------------------------------------------

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        return caller_for(self.service.policy, get_access_token(), locale_hint(ctx))

    def client(self, ctx: ServerRequestContext[Any, Any], caller: Caller) -> str:
        """The activation key of the client behind ``ctx`` (see :mod:`skilldeck.gateway.activation`)."""
        access = get_access_token()
        who = {"client_id": caller.client_id, "token": access.token if access is not None else None}
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            connection = self.legacy.remember(ctx.session)  # one activation per live legacy connection
            key = client_key(f"session:{connection}", caller.subject, **who)
            self._activation_keys[connection] = key
            return key
        meta = ctx.meta or {}
        conversation = meta.get(CONVERSATION_META_KEY) if isinstance(meta, dict) else None
        return client_key("http" if ctx.request is not None else "local", caller.subject, conversation, **who)

    def _forget(self, connection: int) -> None:
        self._log_levels.pop(connection, None)
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
        if ctx.method == "logging/setLevel" and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
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
        self._log_levels[self.legacy.remember(ctx.session)] = level
        await forward_log_level(self.service.host, min(self._log_levels.values(), key=LOG_LEVELS.index))
        return {}

    def _log_level(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """The level a 2025-11-25 client set with ``logging/setLevel`` (``debug``, every message, until it does)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return "debug"
        return self._log_levels.get(self.legacy.remember(ctx.session), "debug")

    def _list(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        tools = [dict(t) for t in META_TOOLS]
        listed = set()
        caller = self.caller(ctx)
        routed = self.service.tools_for(caller)
        shown = [p for p in self.service.pinned if routed is None or tool_id(*p) in routed]
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            activation = self.service.activations.peek(self.client(ctx, caller))
            if activation is not None:
                shown += [t for t in activation.tools if t not in shown]
        registry_tools = {(t.label, t.name): t.tool for t in self.service.host.registry.tools()}
        for label, name in shown:
            upstream = registry_tools.get((label, name))
            if upstream is None or (label, name) in listed:
                continue
            listed.add((label, name))
            tools.append(self.injected(label, name, upstream))
        # Without a policy, the same list for every 2026-07-28 caller (meta-tools and pins): any cache may
        # keep it a while. Under a policy, the pins shown depend on the caller's token: no shared cache.
        scope = "public" if routed is None else "private"
        return {"resultType": "complete", "tools": tools, "ttlMs": LIST_TTL_MS, "cacheScope": scope}

    @staticmethod
    def injected(label: str, name: str, upstream: Any) -> dict[str, Any]:
        """An upstream tool as the gateway lists it: ``label__tool``, schema and annotations unchanged."""
        tool = dict(upstream)
        tool["name"] = tool_function_name(label, name)
        description = str(tool.get("description") or "")
        tool["description"] = f"[{label}] {description}".strip()
        return cast(dict[str, Any], neutralise_in(tool))  # the upstream's prose cannot forge an origin tag

    async def _call(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str):
            return _refused("tools/call needs a tool name")
        if _too_long(name):
            return _refused(f"a tool name is {_TOO_LONG}; nothing was sent")
        if arguments is not None and not isinstance(arguments, dict):
            return _refused("arguments must be an object")
        conversation = self._conversation_refusal(ctx)
        if conversation is not None:
            return _refused(conversation)
        caller = self.caller(ctx)
        client = self.client(ctx, caller)
        args: dict[str, Any] = arguments or {}
        service = self.service
        try:
            if name == FIND:
                query, limit = args.get("query"), args.get("limit")
                _check_args(name, args, {"query", "limit", "needs"})
                if not isinstance(query, str) or not query.strip() or len(query) > 2_000:
                    return _refused("find needs a query: the task in your own words, at most 2,000 characters")
                if limit is not None and (
                    not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50
                ):
                    return _refused("limit must be a whole number from 1 to 50")
                needs = args.get("needs")
                if needs is not None and not (
                    isinstance(needs, list)
                    and 1 <= len(needs) <= MAX_NEEDS
                    and all(isinstance(n, str) and n.strip() and len(n) <= 2_000 for n in needs)
                ):
                    return _refused(
                        f"needs must be a list of 1 to {MAX_NEEDS} non-empty texts of at most 2,000 characters each"
                    )
                found = service.find(caller, client, query, limit, needs=needs)
                return _ok(found, _find_text(found))
            if name == LOAD:
                _check_args(name, args, {"ids"})
                ids = args.get("ids")
                if isinstance(ids, str):
                    ids = [ids]
                if not isinstance(ids, list) or not ids or len(ids) > 20 or not all(isinstance(i, str) for i in ids):
                    return _refused("load needs ids: a list of 1 to 20 card ids from find (LABEL/NAME)")
                if any(_too_long(i) for i in ids):
                    return _refused(f"a card id is {_TOO_LONG} (LABEL/NAME, as find returned it); nothing was loaded")
                loaded = await service.load(caller, client, ids)
                if loaded["tools"] and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                    await self._announce(ctx.session)
                answer = _ok(loaded, _load_text(loaded))
                answer["isError"] = not loaded["skills"] and not loaded["tools"]  # nothing loaded: a model must notice
                return answer
            if name == READ_SKILL_FILE:
                _check_args(name, args, {"skill", "path"})
                skill, path = args.get("skill"), args.get("path")
                if not isinstance(skill, str) or not isinstance(path, str) or len(path) > 1_024:
                    return _refused("read_skill_file needs skill (a loaded skill id) and path (a file of it)")
                if _too_long(skill):
                    return _refused(f"a skill id is {_TOO_LONG} (LABEL/NAME, as load returned it)")
                read = await service.read_skill_file(client, skill, path)
                return _ok(read, read.get("text") or f"{read['uri']} ({read.get('mimeType')}, base64 in blob)")
            if name == CALL:
                _check_args(name, args, {"tool", "arguments"})
                tool, tool_args = args.get("tool"), args.get("arguments")
                if not isinstance(tool, str):
                    return _refused("call needs tool: a LABEL/TOOL name you loaded")
                if _too_long(tool):
                    return _refused(f"a tool name is {_TOO_LONG} (LABEL/TOOL, as load returned it); nothing was sent")
                if tool_args is not None and not isinstance(tool_args, dict):
                    return _refused("arguments must be an object matching the tool's input schema")
            else:  # a pinned or injected tool, by the name the gateway listed it under
                tool, tool_args = name, args
            result = await service.call(
                caller,
                client,
                tool,
                tool_args,
                progress=_progress_relay(ctx),
                relay=call_relay(ctx),
                **_log_relay(ctx, self._log_level(ctx)),
            )
            return result if self.forwarded is None else self.forwarded.tool_result(result)
        except GateRefused as exc:
            return _refused(str(exc))
        except SkilldeckError as exc:
            return _refused(str(exc))

    @staticmethod
    def _conversation_refusal(ctx: ServerRequestContext[Any, Any]) -> str | None:
        """Why a 2026-07-28 request's conversation id cannot be used, or ``None``.

        An unusable id is refused rather than ignored: ignoring it would answer the request from the
        caller's shared (no conversation) activation, which the client asked to be kept apart from.
        """
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        meta: Any = ctx.meta or {}
        if not isinstance(meta, dict) or CONVERSATION_META_KEY not in meta:
            return None
        value = meta[CONVERSATION_META_KEY]
        if isinstance(value, str) and 0 < len(value) <= MAX_CONVERSATION_CHARS and value.isprintable():
            return None
        return (
            f"_meta[{CONVERSATION_META_KEY!r}] must be a printable string of 1 to {MAX_CONVERSATION_CHARS} "
            "characters; nothing was done. Send a shorter id, or none to use your shared activation."
        )

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


def _log_relay(ctx: ServerRequestContext[Any, Any], minimum: str = "debug") -> dict[str, Any]:
    """``log``/``log_level`` for :meth:`GatewayService.call`: the upstream's log messages go to this request.

    A 2026-07-28 client gets them only when its request opted in (``_meta`` log level), at that level
    and above (the SDK's gate on this request's session); a 2025-11-25 client gets those at or above
    ``minimum``, the level it set with ``logging/setLevel`` (every level until it does).
    """
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        meta: Any = ctx.meta or {}
        level = meta.get(LOG_LEVEL_META_KEY) if isinstance(meta, dict) else None
        if not isinstance(level, str):
            return {}
    else:
        level = "debug"
    session, request_id = ctx.session, ctx.request_id

    async def relay(params: LoggingMessageNotificationParams) -> None:
        if LOG_LEVELS.index(params.level) >= LOG_LEVELS.index(minimum):
            await session.send_log_message(params.level, params.data, params.logger, related_request_id=request_id)

    return {"log": relay, "log_level": level}


def _check_args(tool: str, args: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise GateRefused(f"{tool} takes only {', '.join(sorted(allowed))}; unknown: {', '.join(unknown)[:200]}")


def create_gateway(
    service: GatewayService,
    *,
    name: str = "skilldeck-gateway",
    token_verifier: Any = None,
    auth: Any = None,
    extra_middleware: Iterable[Any] = (),
    extensions: Iterable[Any] = (),
    subscriptions: SubscriptionBus | None = None,
    republish_skills: bool = True,
    request_state_keys: Sequence[str | bytes] | None = None,
    request_state_codec: RequestStateCodec | None = None,
) -> tuple[MCPServer[Any], GatewayMiddleware]:
    """An ``MCPServer`` serving the gateway's meta-tools over ``service``; returns it and its middleware.

    With ``republish_skills`` (the default) the gateway also declares the Skills extension and
    serves every upstream's skills under ``skill://LABEL/...`` (``middleware.skills``; see
    :mod:`skilldeck.gateway.republish`), on the same ``subscriptions/listen`` bus. The upstreams'
    resources, prompts and completions are forwarded by label (``middleware.forwarded``; see
    :mod:`skilldeck.gateway.forward`).
    ``request_state_keys`` and ``request_state_codec`` are as for :func:`skilldeck.server.app.create_server`
    (replicas share them).
    """
    skills = RepublishedSkills(service, subscriptions=subscriptions) if republish_skills else None
    middleware = GatewayMiddleware(service, skills.subscriptions if skills is not None else subscriptions)
    middleware.skills = skills
    forwarded = middleware.forwarded = ForwardedUpstreams(
        service, middleware.subscriptions, skills_republished=skills is not None
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
    return server, middleware


def pinned_pairs(values: Iterable[str]) -> list[tuple[str, str]]:
    """``LABEL/TOOL`` strings as pairs (the CLI's ``--pin``)."""
    pairs = []
    for value in values:
        label, sep, tool = value.partition("/")
        if not sep or not label or not tool:
            raise SkilldeckError(f"--pin takes LABEL/TOOL, got {value!r}")
        pairs.append((label, tool))
    return pairs
