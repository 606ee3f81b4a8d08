"""The ``ServerMiddleware`` half of the Skills extension, and the request-to-service glue both halves share.

Why a middleware as well as the extension: the SDK's ``Extension`` contributes *new* methods and a
fixed set of resources at construction, but skill files change on reload and ``resources/read`` is
a core method an extension may not bind. The middleware is the SDK's public seam for that: it
answers ``resources/read`` for the skill files of the current snapshot, adds them to
``resources/list``, filters ``tools/list`` to what the caller may call, passes every other request
through untouched, and hands legacy sessions to the notifier so they can be told when the catalog
changes. It reads the extension only through :class:`ServedSkills` (its public surface).

Legacy (2025-11-25) clients: the SDK drops ``capabilities.extensions`` from the legacy
``initialize`` reply (that schema names no such field), so the middleware puts the declaration
back: under ``capabilities.extensions`` (the 2025-11-25 schema keeps capabilities open to
additional keys) and mirrored under ``capabilities.experimental["io.modelcontextprotocol/skills"]``
for clients that only look there.
"""

from __future__ import annotations

import base64
import contextvars
import logging
import weakref
from typing import Any, Protocol

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skilldeck.errors import NotServedError, PeerError, Refused, SkilldeckError, shorten
from skilldeck.server._catalog import Catalog, page_keys
from skilldeck.server._dynamic import SkillRequest
from skilldeck.server._notifier import ChangeNotifier
from skilldeck.server._service import SkillService
from skilldeck.serving._api import LISTENING_CALLER, Caller, locale_hint
from skilldeck.serving._api import caller_of as caller_from_request
from skilldeck.skill._api import SkillFile, is_text_mime_type

__all__ = ["ServedSkills", "SkillsMiddleware", "caller_of", "file_contents", "in_middleware", "locale_hint", "view_of"]

logger = logging.getLogger(__name__)

_FILES_CURSOR = "skilldeck-files:"
"""``resources/list`` cursors past the server's own resources, into the skill files."""

_UNKNOWN_PROMPT = "Unknown prompt:"
"""How the SDK's ``MCPServer.get_prompt`` begins the error for a name it has no prompt for."""

_IN_MIDDLEWARE: contextvars.ContextVar[bool] = contextvars.ContextVar("skilldeck_in_middleware", default=False)

REPLIES_PER_CATALOG = 1024
"""Wire replies kept per served catalog (the snapshot, or one audience's variant of it)."""
REPLY_BYTES_PER_CATALOG = 32 * 1024 * 1024
"""Bytes of file contents those kept replies may hold, per catalog."""
KEPT_FILE_BYTES = 1024 * 1024
"""A file bigger than this is encoded for each read (its reply is never kept)."""


class _Replies:
    """The wire replies already built for one catalog: ``skills/list`` pages and static file reads.

    A catalog never changes once built (a reload or a new policy serves new catalog objects), so a
    reply built for it stays right for as long as it is served; it is keyed by everything else the
    reply depends on (method, cursor or URI, protocol version, page size, cache hints). Only
    replies of requests that succeeded are kept, so every key names a page or file the catalog
    serves: the table is bounded by the catalog, and by the limits above.
    """

    __slots__ = ("bytes", "replies")

    def __init__(self) -> None:
        self.replies: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.bytes = 0

    def keep(self, key: tuple[Any, ...], reply: dict[str, Any], size: int = 0) -> None:
        if len(self.replies) >= REPLIES_PER_CATALOG or self.bytes + size > REPLY_BYTES_PER_CATALOG:
            return
        self.replies[key] = reply
        self.bytes += size


class ServedSkills(Protocol):
    """What the middleware reads of the extension it belongs to."""

    identifier: str
    service: SkillService
    notifier: ChangeNotifier

    def settings(self) -> dict[str, Any]: ...


def in_middleware() -> bool:
    """Whether the current request passed through a :class:`SkillsMiddleware`."""
    return _IN_MIDDLEWARE.get()


def caller_of(service: SkillService, ctx: ServerRequestContext[Any, Any]) -> Caller:
    """Who the request is answered for under ``service``'s policy (see :func:`skilldeck.serving._identity.caller_of`)."""
    return caller_from_request(service.policy, ctx)


def view_of(service: SkillService, ctx: ServerRequestContext[Any, Any]) -> Catalog:
    """The catalog this request's caller sees (the whole catalog when no policy is set)."""
    return service.catalog if service.policy is None else service.view(caller_of(service, ctx))


def tools_of(service: SkillService, ctx: ServerRequestContext[Any, Any]) -> frozenset[str] | None:
    """Tool names this request's caller may list and call; ``None`` when no policy restricts them."""
    return None if service.policy is None else service.tools_for(caller_of(service, ctx))


def invalid_params(exc: NotServedError) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=str(exc), data={"uri": exc.uri} if exc.uri else None)


def skill_request(ctx: ServerRequestContext[Any, Any]) -> SkillRequest:
    meta = dict(ctx.meta) if ctx.meta else {}
    return SkillRequest(protocol_version=ctx.protocol_version, meta=meta)


def _without_long_echo(exc: MCPError, echoed: str) -> MCPError:
    """``exc`` with a long request input it echoes (in its message or ``data.uri``) cut as :func:`shorten` cuts it.

    The SDK's own answers (``Unknown resource: <uri>``, with the URI again in ``data``) would
    otherwise send a 4 MiB URI back twice.
    """
    short = shorten(echoed)
    if short == echoed:
        return exc
    data = exc.error.data
    if isinstance(data, dict) and data.get("uri") == echoed:
        data = {**data, "uri": short}
    return MCPError(code=exc.error.code, message=exc.error.message.replace(echoed, short), data=data)


def file_contents(file: SkillFile) -> dict[str, Any]:
    """``resources/read`` contents for a skill file: text when the type is textual and the bytes are UTF-8."""
    if is_text_mime_type(file.mime_type):
        try:
            return {"uri": file.uri, "mimeType": file.mime_type, "text": file.data.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"uri": file.uri, "mimeType": file.mime_type, "blob": base64.b64encode(file.data).decode("ascii")}


class SkillsMiddleware:
    """The ``ServerMiddleware`` half of :class:`~skilldeck.server._extension.SkillsExtension` (see the module docs)."""

    def __init__(self, extension: ServedSkills) -> None:
        self._ext = extension
        self._service = extension.service
        # Replies built once per catalog and audience (see _Replies), dropped with the catalog.
        self._replies: weakref.WeakKeyDictionary[Catalog, _Replies] = weakref.WeakKeyDictionary()

    def _kept(self, ctx: ServerRequestContext[Any, Any], catalog: Catalog) -> _Replies | None:
        """The replies kept for ``catalog``, or ``None`` when this request must take the SDK's full path.

        A legacy session that has not completed ``initialize`` is answered by the SDK (which refuses
        it), never from what other sessions were sent.
        """
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and ctx.session.client_params is None:
            return None
        kept = self._replies.get(catalog)
        if kept is None:
            kept = self._replies[catalog] = _Replies()
        return kept

    async def _list_skills(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """``skills/list``: a page built (and shaped by the SDK) once per catalog, then sent as it was built.

        The first request for a page takes the SDK's whole path (params validation, the extension's
        handler, the SDK's shaping of the result for the negotiated version); its reply is kept and
        later requests for the same page, version and settings get that same reply.
        """
        params = ctx.params
        cursor = params.get("cursor") if isinstance(params, dict) else None
        if not (params is None or isinstance(params, dict)) or not (cursor is None or isinstance(cursor, str)):
            return await call_next(ctx)  # the SDK refuses malformed params
        service = self._service
        kept = self._kept(ctx, view_of(service, ctx))
        if kept is None:
            return await call_next(ctx)
        key = ("skills/list", cursor, ctx.protocol_version, service.page_size, service.ttl_ms, service.cache_scope)
        reply = kept.replies.get(key)
        if reply is not None:
            return reply
        result = await call_next(ctx)
        if isinstance(result, dict):
            kept.keep(key, result)
        return result

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        token = _IN_MIDDLEWARE.set(True)
        try:
            method = ctx.method
            if method == "resources/read":
                return await self._read(ctx, call_next)
            if method == "skills/list":
                return await self._list_skills(ctx, call_next)
            if method == "resources/list":
                cursor = ctx.params.get("cursor") if isinstance(ctx.params, dict) else None
                if isinstance(cursor, str) and cursor.startswith(_FILES_CURSOR):
                    return self._files_page(ctx, cursor[len(_FILES_CURSOR) :])
                return self._add_listed(ctx, await call_next(ctx))
            if method == "tools/list":
                return self._filter_tools(ctx, await call_next(ctx))
            if method == "initialize":
                return self._mirror_declaration(await call_next(ctx))
            if method == "prompts/get":
                return await self._get_prompt(ctx, call_next)
            if method == "notifications/initialized" and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                self._ext.notifier.remember_legacy_session(ctx.session)
            if method == "subscriptions/listen":
                # the stream subscribes while this request runs: its events are scoped to this caller,
                # who is worked out from its token under the policy in force when each event arrives
                access, hint, service = get_access_token(), locale_hint(ctx), self._service
                listening = LISTENING_CALLER.set(lambda: service.caller(access, hint))
                try:
                    return await call_next(ctx)
                finally:
                    LISTENING_CALLER.reset(listening)
            return await call_next(ctx)
        finally:
            _IN_MIDDLEWARE.reset(token)

    @staticmethod
    async def _get_prompt(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """``prompts/get``: a name the server has no prompt for is the client's mistake (``-32602``).

        The SDK raises a bare ``ValueError`` for it, which reaches the client as an internal error
        (``-32603``; code ``0`` on 2025-11-25) after a traceback in the server's log.
        """
        try:
            return await call_next(ctx)
        except ValueError as exc:
            if not str(exc).startswith(_UNKNOWN_PROMPT):
                raise
            name = ctx.params.get("name") if isinstance(ctx.params, dict) else None
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"unknown prompt {shorten(str(name))!r}: prompts/list names the prompts this server has",
            ) from None

    async def _read(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        uri = params.get("uri") if isinstance(params, dict) else None
        if not isinstance(uri, str):
            return await call_next(ctx)
        service = self._service
        catalog = view_of(service, ctx)
        static = catalog.static_file(uri)
        if static is not None and len(static.data) <= KEPT_FILE_BYTES:
            kept = self._kept(ctx, catalog)
            if kept is not None:  # a file of the snapshot: encoded once per catalog, version and hints
                key = ("resources/read", uri, ctx.protocol_version, service.ttl_ms, service.cache_scope)
                reply = kept.replies.get(key)
                if reply is None:
                    reply = self._file_reply(ctx, static)
                    kept.keep(key, reply, len(static.data))
                return reply
        try:
            found = await service.read_file(uri, skill_request(ctx), catalog)
        except NotServedError as exc:
            raise invalid_params(exc) from None
        except (PeerError, Refused) as exc:  # a remote skill's origin failed, refused, or sent other bytes
            logger.warning("fetching %s failed: %s", uri, exc)
            raise MCPError(
                code=INTERNAL_ERROR,
                message=f"could not serve {shorten(uri)}: {shorten(str(exc), 600)}",
                data={"uri": shorten(uri)},
            ) from None
        except SkilldeckError as exc:
            logger.warning("rendering %s failed: %s", uri, exc)
            raise MCPError(code=INTERNAL_ERROR, message=f"could not render {uri}") from None
        if found is None:
            try:
                return await call_next(ctx)
            except MCPError as exc:
                raise _without_long_echo(exc, uri) from None
        return self._file_reply(ctx, found)

    def _file_reply(self, ctx: ServerRequestContext[Any, Any], found: SkillFile) -> dict[str, Any]:
        result = {"resultType": "complete", "contents": [file_contents(found)], **self._service.cache_fields()}
        # Shaped by the negotiated version's schema: legacy replies drop the 2026-only fields.
        return serialize_server_result("resources/read", ctx.protocol_version, result)

    def _skill_resources_page(
        self, ctx: ServerRequestContext[Any, Any], after: str | None
    ) -> tuple[list[Any], str | None]:
        """One page of skill-file resources after the (encoded) URI ``after``, keyed by URI like skills/list.

        The sorted keys are built once per catalog (snapshot or audience variant); a page builds
        only its own entries.
        """
        catalog = view_of(self._service, ctx)
        service = self._service
        keys, next_key = page_keys(catalog.listing_keys(service.list_files), after, service.directory_page_size)
        return [service.listed_resource(catalog, k) for k in keys], (_FILES_CURSOR + next_key) if next_key else None

    def _add_listed(self, ctx: ServerRequestContext[Any, Any], result: HandlerResult) -> HandlerResult:
        """After the server's own resources (their last page), skill files follow, paged by our own cursor."""
        if not isinstance(result, dict) or result.get("nextCursor"):
            return result
        page, next_cursor = self._skill_resources_page(ctx, None)
        merged = {**result, "resources": [*result.get("resources", []), *page]}
        if next_cursor:
            merged["nextCursor"] = next_cursor
        return merged

    def _files_page(self, ctx: ServerRequestContext[Any, Any], after: str) -> HandlerResult:
        try:
            page, next_cursor = self._skill_resources_page(ctx, after)
        except NotServedError as exc:
            raise invalid_params(exc) from None
        result: dict[str, Any] = {"resultType": "complete", "resources": page, **self._service.cache_fields()}
        if next_cursor:
            result["nextCursor"] = next_cursor
        return serialize_server_result("resources/list", ctx.protocol_version, result)

    def _filter_tools(self, ctx: ServerRequestContext[Any, Any], result: HandlerResult) -> HandlerResult:
        allowed = tools_of(self._service, ctx)
        if allowed is None or not isinstance(result, dict):
            return result
        return {**result, "tools": [t for t in result.get("tools", []) if t.get("name") in allowed]}

    def _mirror_declaration(self, result: HandlerResult) -> HandlerResult:
        if not isinstance(result, dict):
            return result
        capabilities = dict(result.get("capabilities") or {})
        # The 2025-11-25 schema leaves ServerCapabilities open ("not a closed set"), so the
        # declaration can stand where 2026 hosts look for it as well as under `experimental`.
        extensions = dict(capabilities.get("extensions") or {})
        extensions[self._ext.identifier] = self._ext.settings()
        capabilities["extensions"] = extensions
        experimental = dict(capabilities.get("experimental") or {})
        experimental[self._ext.identifier] = self._ext.settings()
        capabilities["experimental"] = experimental
        resources = dict(capabilities.get("resources") or {})
        resources["listChanged"] = True  # reload() sends notifications/resources/list_changed
        capabilities["resources"] = resources
        return {**result, "capabilities": capabilities}
