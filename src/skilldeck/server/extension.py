"""The Skills extension (``io.modelcontextprotocol/skills``) on the MCP SDK's ``Extension`` API.

Use it inside any ``MCPServer``::

    from mcp.server.mcpserver import MCPServer
    from skilldeck.server import DirectorySource, SkillsExtension

    skills = SkillsExtension(DirectorySource("skills/"))
    server = MCPServer(
        "docs",
        extensions=[skills],               # skills/list, skills/get, resources/directory/read
        middleware=[skills.middleware],    # resources/read + resources/list of skill files
        subscriptions=skills.subscriptions,  # list_changed events on 2026-07-28 sessions
    )

Why a middleware as well as the extension: the SDK's ``Extension`` contributes *new* methods and a
fixed set of resources at construction, but skill files change on :meth:`SkillsExtension.reload`
and ``resources/read`` is a core method an extension may not bind. The middleware is the SDK's
public seam for that: it answers ``resources/read`` for the skill files of the current snapshot,
adds them to ``resources/list``, passes every other request through untouched, and keeps note of
legacy sessions so they can be told when the catalog changes. The extension's own handlers refuse
to run without it, with an error saying how to register it.

Legacy (2025-11-25) clients: the SDK drops ``capabilities.extensions`` from the legacy
``initialize`` reply (that schema names no such field), so the middleware puts the declaration
back: under ``capabilities.extensions`` (the 2025-11-25 schema keeps capabilities open to
additional keys) and mirrored under ``capabilities.experimental["io.modelcontextprotocol/skills"]``
for clients that only look there. All methods are served in both eras.
"""

from __future__ import annotations

import base64
import contextvars
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import unquote

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, SubscriptionBus, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolRequestParams, PaginatedRequestParams, RequestParams
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skilldeck.errors import NotServedError, SkilldeckError, SourceError, shorten
from skilldeck.server.audience import allowed_tools, catalog_for
from skilldeck.server.audit import AuditLog
from skilldeck.server.catalog import Catalog, CatalogDiff, page_keys
from skilldeck.server.dynamic import DynamicSkill, SkillRequest
from skilldeck.server.policy import HINTS_PREFIX, Caller, Policy, caller_from_claims
from skilldeck.skill.pack import DirectorySource, SkillFile, children_of, load_all
from skilldeck.skill.uri import SKILL_MD, file_uri, is_text_mime_type, mime_type_for

__all__ = ["EXTENSION_ID", "SkillsExtension", "SkillsMiddleware"]

logger = logging.getLogger(__name__)

EXTENSION_ID = "io.modelcontextprotocol/skills"

_FILES_CURSOR = "skilldeck-files:"
"""``resources/list`` cursors past the server's own resources, into the skill files."""

_IN_MIDDLEWARE: contextvars.ContextVar[bool] = contextvars.ContextVar("skilldeck_in_middleware", default=False)

_MISSING_MIDDLEWARE = (
    "skilldeck's SkillsExtension is registered without its middleware, so skill files cannot be read. "
    "Construct the server as MCPServer(..., extensions=[skills], middleware=[skills.middleware], "
    "subscriptions=skills.subscriptions), or use skilldeck.server.create_server()."
)


class ListSkillsParams(PaginatedRequestParams):
    """``skills/list`` params: an optional cursor."""


class GetSkillParams(RequestParams):
    """``skills/get`` params: the URI of a skill's ``SKILL.md``."""

    uri: str


class ReadDirectoryParams(PaginatedRequestParams):
    """``resources/directory/read`` params: a directory URI and an optional cursor."""

    uri: str


def _invalid(exc: NotServedError) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=str(exc), data={"uri": exc.uri} if exc.uri else None)


class SkillsExtension(Extension):
    """Serve Agent Skills through the MCP Skills extension.

    Args:
        sources: :class:`DirectorySource` folders and :class:`DynamicSkill` objects.
        page_size: entries per ``skills/list`` page (entries are never split).
        directory_page_size: children per ``resources/directory/read`` page.
        ttl_ms, cache_scope: the ``CacheableResult`` hints on ``skills/list``, ``skills/get``,
            ``resources/directory/read`` and skill-file reads.
        list_files: add every skill file to ``resources/list`` (``SKILL.md`` entries carry the
            skill's name and description); set ``False`` for very large catalogs.
        subscriptions: the ``subscriptions/listen`` bus to publish catalog changes on; pass the
            same bus to ``MCPServer(subscriptions=...)``. One is created when omitted.
        variant_cache_bytes: under a policy, the rendered per-audience variants kept (least
            recently used dropped first) may hold about this many bytes beyond the snapshot they
            share; at most ``max_variants`` are kept. A variant bigger than the whole budget is
            served without being kept.
    """

    identifier = EXTENSION_ID

    def __init__(
        self,
        *sources: DirectorySource | DynamicSkill,
        page_size: int = 50,
        directory_page_size: int = 200,
        ttl_ms: int = 60_000,
        cache_scope: Literal["public", "private"] = "public",
        list_files: bool = True,
        subscriptions: SubscriptionBus | None = None,
        policy: Policy | None = None,
        audit: AuditLog | None = None,
        variant_cache_bytes: int = 256 * 1024 * 1024,
        max_variants: int = 256,
    ) -> None:
        if page_size < 1 or directory_page_size < 1:
            raise SourceError("page sizes must be at least 1", rule="page-size")
        if ttl_ms < 0:
            raise SourceError("ttl_ms must be >= 0", rule="ttl")
        if variant_cache_bytes < 0 or max_variants < 0:
            raise SourceError("variant_cache_bytes and max_variants must be >= 0", rule="variant-cache")
        self._directories = [s for s in sources if isinstance(s, DirectorySource)]
        self._dynamic = [s for s in sources if isinstance(s, DynamicSkill)]
        unknown = [s for s in sources if not isinstance(s, DirectorySource | DynamicSkill)]
        if unknown:
            raise SourceError(f"not a skill source: {unknown[0]!r} (use DirectorySource or DynamicSkill)")
        self.page_size = page_size
        self.directory_page_size = directory_page_size
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope
        self.list_files = list_files
        self.subscriptions: SubscriptionBus = subscriptions or InMemorySubscriptionBus()
        self.middleware = SkillsMiddleware(self)
        self._legacy_sessions: dict[int, ServerSession] = {}
        self.policy = policy
        self.audit = audit or AuditLog()
        self.variant_cache_bytes = variant_cache_bytes
        self.max_variants = max_variants
        self._variants: OrderedDict[tuple[Any, ...], tuple[Catalog, int]] = OrderedDict()
        self._variant_bytes = 0
        self._catalog = self._build_catalog()

    # -- catalog ----------------------------------------------------------------------------------

    def _build_catalog(self) -> Catalog:
        loaded = load_all(self._directories)
        return Catalog(loaded.skills, self._dynamic, loaded.problems)

    @property
    def catalog(self) -> Catalog:
        """The snapshot being served now."""
        return self._catalog

    @property
    def problems(self) -> list[SkilldeckError]:
        """What the last load refused (path and reason each)."""
        return list(self._catalog.problems)

    async def reload(self) -> CatalogDiff:
        """Re-read every source, swap in the new snapshot, and tell connected clients if anything changed.

        2026-07-28 sessions hear a ``resources`` list-changed event on ``subscriptions/listen``;
        legacy sessions get ``notifications/resources/list_changed``.
        """
        newer = await anyio.to_thread.run_sync(self._build_catalog)
        diff = self._catalog.diff(newer)
        self._catalog = newer
        self._forget_variants()
        if diff:
            await self.notify_changed(tools=self.policy is not None)
        return diff

    async def set_policy(self, policy: Policy | None) -> None:
        """Swap the policy in force and tell clients: what they may see and call may have changed."""
        self.policy = policy
        self._forget_variants()
        await self.notify_changed(tools=True)

    async def check_policy(self, server: Any) -> None:
        """Refuse a policy naming skills or tools this server does not serve (call once tools are added).

        Raises:
            PolicyError: listing every unknown name.
        """
        if self.policy is None:
            return
        tools = [t.name for t in await server.list_tools()]
        self.policy.validate_against((e.name for e in self._catalog.entries), tools)

    # -- the caller ----------------------------------------------------------------------------------

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        """Who the request is answered for: the verified token, else the policy's default identity."""
        meta = ctx.meta or {}
        policy = self.policy
        # Only a locale the policy lists: each one is a rendered variant, and the hint is anyone's.
        hint = meta.get(HINTS_PREFIX + "locale") if isinstance(meta, dict) else None
        locale = policy.locale_for(hint) if policy else "en"
        token = get_access_token()
        if token is not None:
            return caller_from_claims(
                subject=token.subject,
                client_id=token.client_id,
                scopes=token.scopes,
                claims=token.claims,
                tenant_claim=policy.tenant_claim if policy else "tenant",
                roles_claim=policy.roles_claim if policy else "roles",
                locale=locale,
            )
        identity = policy.default_identity if policy else Caller()
        return replace(identity, locale=locale)

    def view(self, ctx: ServerRequestContext[Any, Any]) -> Catalog:
        """The catalog this request's caller sees (the whole catalog when no policy is set)."""
        if self.policy is None:
            return self._catalog
        caller = self.caller(ctx)
        key = caller.audience
        kept = self._variants.get(key)
        if kept is not None:
            self._variants.move_to_end(key)
            return kept[0]
        variant = catalog_for(self._catalog, self.policy, caller)
        size = variant.footprint(self._catalog)
        if size > self.variant_cache_bytes or self.max_variants == 0:
            return variant  # served, not kept: it alone would fill the cache
        while self._variants and (
            len(self._variants) >= self.max_variants or self._variant_bytes + size > self.variant_cache_bytes
        ):
            _, (_, freed) = self._variants.popitem(last=False)
            self._variant_bytes -= freed
        self._variants[key] = (variant, size)
        self._variant_bytes += size
        return variant

    def _forget_variants(self) -> None:
        self._variants.clear()
        self._variant_bytes = 0

    @property
    def cached_variants(self) -> tuple[int, int]:
        """How many per-audience variants are kept, and about how many bytes they hold."""
        return len(self._variants), self._variant_bytes

    def tools_for(self, ctx: ServerRequestContext[Any, Any]) -> frozenset[str] | None:
        """Tool names this request's caller may list and call; ``None`` when no policy restricts them."""
        if self.policy is None:
            return None
        return allowed_tools(self.policy, (e.name for e in self._catalog.entries), self.caller(ctx))

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Refuse, before it runs, a call of a tool no admitted route grants this caller; audit every call."""
        allowed = self.tools_for(ctx)
        if allowed is None:
            return await call_next(ctx)
        caller = self.caller(ctx)
        if params.name not in allowed:
            # Kept cut short like an echo: refused names come from anyone, and the log keeps 10,000 records.
            self.audit.record(caller, shorten(params.name), allowed=False, reason="not granted by any admitted skill")
            raise MCPError(
                code=INVALID_PARAMS, message=f"Tool {shorten(params.name)!r} is not available to this caller"
            )
        self.audit.record(caller, params.name, allowed=True, reason="granted")
        return await call_next(ctx)

    async def notify_changed(self, *, tools: bool = False) -> None:
        """Tell every connected client that the catalog changed (both eras); ``tools`` also for tool lists."""
        await self.subscriptions.publish(ResourcesListChanged())
        if tools:
            await self.subscriptions.publish(ToolsListChanged())
        for session in list(self._legacy_sessions.values()):
            try:
                await session.send_resource_list_changed()
                if tools:
                    await session.send_tool_list_changed()
            except Exception:  # a gone session must not stop the others
                logger.debug("dropping a legacy session that could not be notified", exc_info=True)
                self._legacy_sessions.pop(id(session), None)

    def _remember_legacy_session(self, session: ServerSession) -> None:
        """Keep one session per live legacy connection, forgotten when the connection closes.

        The SDK builds a ``ServerSession`` per request, so the session must be tied to its
        connection's lifetime: the connection's ``exit_stack`` is the SDK's documented place for
        per-connection cleanup from middleware. (It is reached through the session until the SDK's
        pending context rework exposes the connection on the request context.)
        """
        connection = getattr(session, "_connection", None)
        key = id(connection if connection is not None else session)
        if key in self._legacy_sessions:
            return
        if len(self._legacy_sessions) >= 10_000:  # a hard bound even if a transport never cleans up
            self._legacy_sessions.pop(next(iter(self._legacy_sessions)))
        self._legacy_sessions[key] = session
        exit_stack = getattr(connection, "exit_stack", None)
        if exit_stack is not None:
            exit_stack.callback(self._legacy_sessions.pop, key, None)

    @property
    def legacy_session_count(self) -> int:
        """Legacy (2025-11-25) connections that will be told of catalog changes."""
        return len(self._legacy_sessions)

    # -- Extension API ------------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True}

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", ListSkillsParams, self._list_skills),
            MethodBinding("skills/get", GetSkillParams, self._get_skill),
            MethodBinding("resources/directory/read", ReadDirectoryParams, self._read_directory),
        )

    def _cache_fields(self) -> dict[str, Any]:
        # Under a policy, answers depend on the caller's token: no shared cache may hand them on.
        scope = "private" if self.policy is not None else self.cache_scope
        return {"ttlMs": self.ttl_ms, "cacheScope": scope}

    @staticmethod
    def _require_middleware() -> None:
        if not _IN_MIDDLEWARE.get():
            raise MCPError(code=INTERNAL_ERROR, message=_MISSING_MIDDLEWARE)

    async def _list_skills(self, ctx: ServerRequestContext[Any, Any], params: ListSkillsParams) -> HandlerResult:
        self._require_middleware()
        try:
            entries, next_cursor = self.view(ctx).list_page(params.cursor, self.page_size)
        except NotServedError as exc:
            raise _invalid(exc) from None
        result: dict[str, Any] = {
            "resultType": "complete",
            "skills": [e.to_wire() for e in entries],
            **self._cache_fields(),
        }
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _get_skill(self, ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> HandlerResult:
        self._require_middleware()
        try:
            entry = self.view(ctx).get(params.uri)
        except NotServedError as exc:
            raise _invalid(exc) from None
        return {"resultType": "complete", "skill": entry.to_wire(), **self._cache_fields()}

    async def _read_directory(self, ctx: ServerRequestContext[Any, Any], params: ReadDirectoryParams) -> HandlerResult:
        self._require_middleware()
        catalog = self.view(ctx)
        try:
            dynamic = catalog.dynamic_root(params.uri)
            if dynamic is not None:
                skill, encoded = dynamic
                folder = unquote(encoded)
                files = await skill.render(_skill_request(ctx))
                if folder in files:
                    raise NotServedError(f"{shorten(params.uri)} is not a directory resource", uri=params.uri)
                if folder and not any(p.startswith(folder + "/") for p in files):
                    raise NotServedError(f"No directory is served at {shorten(params.uri)}", uri=params.uri)
                full = {f"{skill.skill_path}/{p}": len(d) for p, d in files.items()}
                children = children_of(f"{skill.skill_path}/{folder}" if folder else skill.skill_path, full, full)
            else:
                children = catalog.directory_children(params.uri)
            page, next_cursor = Catalog.page_children(children, params.cursor, self.directory_page_size)
        except NotServedError as exc:
            raise _invalid(exc) from None
        # 2026-07-28 clients validate this reply as a CacheableResult (the TypeScript SDK's SkillsClient
        # and MCP Inspector refuse it without `ttlMs` and `cacheScope`), as they do skills/list's.
        result: dict[str, Any] = {
            "resultType": "complete",
            "resources": [c.to_wire() for c in page],
            **self._cache_fields(),
        }
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    # -- what the middleware serves ------------------------------------------------------------------

    async def read_file(self, uri: str, request: SkillRequest, catalog: Catalog | None = None) -> SkillFile | None:
        """The file served at ``uri`` for this request, or ``None`` if no skill serves it."""
        catalog = catalog if catalog is not None else self._catalog
        found = catalog.static_file(uri)
        if found is not None:
            return found
        dynamic = catalog.dynamic_skill_for(uri)
        if dynamic is None:
            return None
        skill, _rel = dynamic
        files = await skill.render(request)
        for path, data in files.items():
            if file_uri(skill.skill_path, path) == uri:
                return SkillFile(uri=uri, path=path, mime_type=mime_type_for(path), data=data)
        return None

    def listed_resources(self, catalog: Catalog | None = None) -> list[dict[str, Any]]:
        """``resources/list`` entries for every static skill file (wire form), in URI order."""
        catalog = catalog if catalog is not None else self._catalog
        return [self.listed_resource(catalog, uri) for uri in catalog.listing_keys(self.list_files)]

    def listed_resource(self, catalog: Catalog, uri: str) -> dict[str, Any]:
        """The ``resources/list`` entry of one of ``catalog.listing_keys()``."""
        found = catalog.static_file(uri) if self.list_files else None
        entry = catalog.entry(uri) if found is None or found.path.endswith(SKILL_MD) else None
        if entry is not None:
            resource = self._skill_md_resource(uri, entry.frontmatter)
            return resource if found is None else {**resource, "size": len(found.data)}
        assert found is not None, uri  # listing keys are files or entries
        return {"uri": uri, "name": found.path.rsplit("/", 1)[-1], "mimeType": found.mime_type, "size": len(found.data)}

    @staticmethod
    def _skill_md_resource(uri: str, frontmatter: Any) -> dict[str, Any]:
        return {
            "uri": uri,
            "name": str(frontmatter["name"]),
            "description": str(frontmatter["description"]),
            "mimeType": "text/markdown",
        }


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


def _skill_request(ctx: ServerRequestContext[Any, Any]) -> SkillRequest:
    meta = dict(ctx.meta) if ctx.meta else {}
    return SkillRequest(protocol_version=ctx.protocol_version, meta=meta)


def file_contents(file: SkillFile) -> dict[str, Any]:
    """``resources/read`` contents for a skill file: text when the type is textual and the bytes are UTF-8."""
    if is_text_mime_type(file.mime_type):
        try:
            return {"uri": file.uri, "mimeType": file.mime_type, "text": file.data.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"uri": file.uri, "mimeType": file.mime_type, "blob": base64.b64encode(file.data).decode("ascii")}


class SkillsMiddleware:
    """The ``ServerMiddleware`` half of :class:`SkillsExtension` (see the module docs)."""

    def __init__(self, extension: SkillsExtension) -> None:
        self._ext = extension

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        token = _IN_MIDDLEWARE.set(True)
        try:
            method = ctx.method
            if method == "resources/read":
                return await self._read(ctx, call_next)
            if method == "resources/list":
                cursor = ctx.params.get("cursor") if isinstance(ctx.params, dict) else None
                if isinstance(cursor, str) and cursor.startswith(_FILES_CURSOR):
                    return self._files_page(ctx, cursor[len(_FILES_CURSOR) :])
                return self._add_listed(ctx, await call_next(ctx))
            if method == "tools/list":
                return self._filter_tools(ctx, await call_next(ctx))
            if method == "initialize":
                return self._mirror_declaration(await call_next(ctx))
            if method == "notifications/initialized" and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                self._ext._remember_legacy_session(ctx.session)
            return await call_next(ctx)
        finally:
            _IN_MIDDLEWARE.reset(token)

    async def _read(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        uri = params.get("uri") if isinstance(params, dict) else None
        if not isinstance(uri, str):
            return await call_next(ctx)
        try:
            found = await self._ext.read_file(uri, _skill_request(ctx), self._ext.view(ctx))
        except SkilldeckError as exc:
            logger.warning("rendering %s failed: %s", uri, exc)
            raise MCPError(code=INTERNAL_ERROR, message=f"could not render {uri}") from None
        if found is None:
            try:
                return await call_next(ctx)
            except MCPError as exc:
                raise _without_long_echo(exc, uri) from None
        result = {"resultType": "complete", "contents": [file_contents(found)], **self._ext._cache_fields()}
        # Shaped by the negotiated version's schema: legacy replies drop the 2026-only fields.
        return serialize_server_result("resources/read", ctx.protocol_version, result)

    def _skill_resources_page(
        self, ctx: ServerRequestContext[Any, Any], after: str | None
    ) -> tuple[list[Any], str | None]:
        """One page of skill-file resources after the (encoded) URI ``after``, keyed by URI like skills/list.

        The sorted keys are built once per catalog (snapshot or audience variant); a page builds
        only its own entries.
        """
        catalog = self._ext.view(ctx)
        keys, next_key = page_keys(catalog.listing_keys(self._ext.list_files), after, self._ext.directory_page_size)
        return [self._ext.listed_resource(catalog, k) for k in keys], (_FILES_CURSOR + next_key) if next_key else None

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
            raise _invalid(exc) from None
        result: dict[str, Any] = {"resultType": "complete", "resources": page, **self._ext._cache_fields()}
        if next_cursor:
            result["nextCursor"] = next_cursor
        return serialize_server_result("resources/list", ctx.protocol_version, result)

    def _filter_tools(self, ctx: ServerRequestContext[Any, Any], result: HandlerResult) -> HandlerResult:
        allowed = self._ext.tools_for(ctx)
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
        extensions[EXTENSION_ID] = self._ext.settings()
        capabilities["extensions"] = extensions
        experimental = dict(capabilities.get("experimental") or {})
        experimental[EXTENSION_ID] = self._ext.settings()
        capabilities["experimental"] = experimental
        resources = dict(capabilities.get("resources") or {})
        resources["listChanged"] = True  # reload() sends notifications/resources/list_changed
        capabilities["resources"] = resources
        return {**result, "capabilities": capabilities}
