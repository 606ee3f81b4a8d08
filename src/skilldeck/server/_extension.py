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

The extension is thin: it binds ``skills/list``, ``skills/get`` and ``resources/directory/read``
and the tool-call hook to a sans-I/O :class:`~skilldeck.server._service.SkillService` (the snapshot,
the policy, per-caller views, file reads), tells clients of changes through a
:class:`~skilldeck.server._notifier.ChangeNotifier`, and hands ``resources/read``/``resources/list``
to its :class:`~skilldeck.server._middleware.SkillsMiddleware` (see there why a middleware is
needed). The handlers refuse to run without the middleware, with an error saying how to register
it. All methods are served in both protocol eras.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import unquote

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.subscriptions import InMemorySubscriptionBus, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolRequestParams, PaginatedRequestParams, RequestParams

from skilldeck.errors import NotServedError, SkilldeckError, shorten
from skilldeck.server._audience import offered
from skilldeck.server._catalog import Catalog, CatalogDiff
from skilldeck.server._dynamic import DynamicSkill
from skilldeck.server._middleware import (
    SkillsMiddleware,
    caller_of,
    in_middleware,
    invalid_params,
    skill_request,
    tools_of,
    view_of,
)
from skilldeck.server._notifier import ChangeNotifier
from skilldeck.server._remote import RemoteSource
from skilldeck.server._service import SkillService
from skilldeck.serving._api import AuditLog, Caller, LegacyConnections, Policy, ScopedBus
from skilldeck.skill._api import EXTENSION_ID, DirectorySource, children_of, skill_name_from_uri

__all__ = ["CATALOG_VERSION_META", "EXTENSION_ID", "SkillsExtension", "SkillsMiddleware"]

CATALOG_VERSION_META = "dev.skilldeck/catalogVersion"
"""The ``_meta`` key of every ``skills/list`` result holding the served snapshot's version (``Catalog.version``)."""

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


class _Option:
    """An option of the extension that lives on its service (read and set through the extension)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: SkillsExtension | None, objtype: type | None = None) -> Any:
        return self if obj is None else getattr(obj.service, self.name)

    def __set__(self, obj: SkillsExtension, value: Any) -> None:
        setattr(obj.service, self.name, value)


class SkillsExtension(Extension):
    """Serve Agent Skills through the MCP Skills extension.

    Args:
        sources: :class:`DirectorySource` folders, :class:`DynamicSkill` objects and
            remote sources (:class:`~skilldeck.server._remote.RemoteSource`: skills held elsewhere, read on demand).
        page_size: entries per ``skills/list`` page (entries are never split).
        directory_page_size: children per ``resources/directory/read`` page.
        ttl_ms: the ``CacheableResult`` ``ttlMs`` hint on ``skills/list``, ``skills/get``,
            ``resources/directory/read`` and skill-file reads.
        cache_scope: the ``cacheScope`` hint on the same results.
        list_files: add every skill file to ``resources/list`` (``SKILL.md`` entries carry the
            skill's name and description); set ``False`` for very large catalogs.
        subscriptions: the ``subscriptions/listen`` bus to publish catalog changes on; pass the
            same bus to ``MCPServer(subscriptions=...)``. One is created when omitted.
        variant_cache_bytes: under a policy, the rendered per-audience variants kept (least
            recently used dropped first) may hold about this many bytes beyond the snapshot they
            share; at most ``max_variants`` are kept. A variant bigger than the whole budget is
            served without being kept.
        legacy: the process's table of live legacy connections, told of catalog changes (the
            gateway shares its own); one is kept when omitted.
    """

    identifier = EXTENSION_ID

    page_size = _Option()
    directory_page_size = _Option()
    ttl_ms = _Option()
    cache_scope = _Option()
    list_files = _Option()
    policy = _Option()
    audit = _Option()
    variant_cache_bytes = _Option()
    max_variants = _Option()

    def __init__(
        self,
        *sources: DirectorySource | DynamicSkill | RemoteSource,
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
        legacy: LegacyConnections | None = None,
    ) -> None:
        self.service = SkillService(
            sources,
            page_size=page_size,
            directory_page_size=directory_page_size,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
            list_files=list_files,
            policy=policy,
            audit=audit,
            variant_cache_bytes=variant_cache_bytes,
            max_variants=max_variants,
        )
        # listeners hear a change only when their caller may see one of the skills it concerns
        self.subscriptions: SubscriptionBus = ScopedBus(subscriptions or InMemorySubscriptionBus(), self._offered)
        self.notifier = ChangeNotifier(self.subscriptions, legacy)
        self.middleware = SkillsMiddleware(self)

    # -- the service, with changes told to clients ------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """The snapshot being served now."""
        return self.service.catalog

    @property
    def problems(self) -> list[SkilldeckError]:
        """What the last load refused (path and reason each)."""
        return self.service.problems

    async def reload(self) -> CatalogDiff:
        """Re-read every source, swap in the new snapshot, and tell connected clients if anything changed.

        2026-07-28 sessions hear a ``resources`` list-changed event on ``subscriptions/listen``;
        legacy sessions get ``notifications/resources/list_changed``.
        """
        diff = self.service.swap(await anyio.to_thread.run_sync(self.service.load))
        if diff:
            names = {skill_name_from_uri(uri) for uri in (*diff.added, *diff.removed, *diff.changed)}
            # only a policy makes callers see different skills: without one every listener is told, unnamed
            scoped = None if self.service.policy is None or None in names else {n for n in names if n is not None}
            await self.notify_changed(tools=self.service.policy is not None, names=scoped)
        return diff

    def _offered(self, caller: Caller, name: str) -> bool:
        policy = self.service.policy
        return policy is None or offered(policy, name, caller)

    async def set_policy(self, policy: Policy | None) -> None:
        """Swap the policy in force and tell clients: what they may see and call may have changed."""
        self.service.set_policy(policy)
        await self.notify_changed(tools=True)

    async def check_policy(self, server: Any, policy: Policy | None = None) -> None:
        """Refuse ``policy`` (by default the one in force) if it names skills or tools this server does not serve.

        Call it once tools are added. The policy in force is not changed, whatever the outcome.

        Raises:
            PolicyError: listing every unknown name.
        """
        policy = policy if policy is not None else self.service.policy
        if policy is None:
            return
        self.service.check_policy(policy, [t.name for t in await server.list_tools()])

    async def notify_changed(self, *, tools: bool = False, names: set[str] | None = None) -> None:
        """Tell connected clients that the catalog changed (both eras); ``tools`` also for tool lists.

        With ``names`` (the skills that changed), a 2026-07-28 listener whose caller may see none of
        them is not told; without, everyone is.
        """
        await self.notifier.notify_changed(tools=tools, names=names)

    @property
    def legacy_session_count(self) -> int:
        """Legacy (2025-11-25) connections that will be told of catalog changes."""
        return self.notifier.legacy_session_count

    @property
    def cached_variants(self) -> tuple[int, int]:
        """How many per-audience variants are kept, and about how many bytes they hold."""
        return self.service.cached_variants

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        """Who the request is answered for: the verified token, else the policy's default identity."""
        return caller_of(self.service, ctx)

    def view(self, ctx: ServerRequestContext[Any, Any]) -> Catalog:
        """The catalog this request's caller sees (the whole catalog when no policy is set)."""
        return view_of(self.service, ctx)

    def tools_for(self, ctx: ServerRequestContext[Any, Any]) -> frozenset[str] | None:
        """Tool names this request's caller may list and call; ``None`` when no policy restricts them."""
        return tools_of(self.service, ctx)

    # -- Extension API ------------------------------------------------------------------------------

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Refuse, before it runs, a call of a tool no admitted route grants this caller; audit every call."""
        if self.service.policy is not None and not self.service.admit_tool_call(
            caller_of(self.service, ctx), params.name
        ):
            raise MCPError(
                code=INVALID_PARAMS, message=f"Tool {shorten(params.name)!r} is not available to this caller"
            )
        return await call_next(ctx)

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True}

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", ListSkillsParams, self._list_skills),
            MethodBinding("skills/get", GetSkillParams, self._get_skill),
            MethodBinding("resources/directory/read", ReadDirectoryParams, self._read_directory),
        )

    @staticmethod
    def _require_middleware() -> None:
        if not in_middleware():
            raise MCPError(code=INTERNAL_ERROR, message=_MISSING_MIDDLEWARE)

    async def _list_skills(self, ctx: ServerRequestContext[Any, Any], params: ListSkillsParams) -> HandlerResult:
        self._require_middleware()
        try:
            entries, next_cursor = view_of(self.service, ctx).list_page(params.cursor, self.service.page_size)
        except NotServedError as exc:
            raise invalid_params(exc) from None
        page = self._page("skills", [e.to_wire() for e in entries], next_cursor)
        # The whole snapshot's version, not the caller's view: replicas serving one catalog agree on it.
        page["_meta"] = {CATALOG_VERSION_META: self.service.catalog.version}
        return page

    def _page(self, key: str, items: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
        """One page of a listing, with the cache hints every skills answer carries."""
        result: dict[str, Any] = {"resultType": "complete", key: items, **self.service.cache_fields()}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _get_skill(self, ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> HandlerResult:
        self._require_middleware()
        try:
            entry = view_of(self.service, ctx).get(params.uri)
        except NotServedError as exc:
            raise invalid_params(exc) from None
        return {"resultType": "complete", "skill": entry.to_wire(), **self.service.cache_fields()}

    async def _read_directory(self, ctx: ServerRequestContext[Any, Any], params: ReadDirectoryParams) -> HandlerResult:
        self._require_middleware()
        catalog = view_of(self.service, ctx)
        try:
            dynamic = catalog.dynamic_root(params.uri)
            if dynamic is not None:
                skill, encoded = dynamic
                folder = unquote(encoded)
                files = await skill.render(skill_request(ctx))
                if folder in files:
                    raise NotServedError(f"{shorten(params.uri)} is not a directory resource", uri=params.uri)
                if folder and not any(p.startswith(folder + "/") for p in files):
                    raise NotServedError(f"No directory is served at {shorten(params.uri)}", uri=params.uri)
                full = {f"{skill.skill_path}/{p}": len(d) for p, d in files.items()}
                children = children_of(f"{skill.skill_path}/{folder}" if folder else skill.skill_path, full, full)
            else:
                children = catalog.directory_children(params.uri)
            page, next_cursor = Catalog.page_children(children, params.cursor, self.service.directory_page_size)
        except NotServedError as exc:
            raise invalid_params(exc) from None
        # 2026-07-28 clients validate this reply as a CacheableResult (the TypeScript SDK's SkillsClient
        # and MCP Inspector refuse it without `ttlMs` and `cacheScope`), as they do skills/list's.
        return self._page("resources", [c.to_wire() for c in page], next_cursor)
