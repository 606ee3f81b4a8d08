"""The skills service: the snapshot a server serves and everything it decides about it. No MCP SDK.

:class:`SkillService` holds the catalog being served, the policy in force and the per-audience
variants rendered under it, and answers the questions the wire adapters ask: which catalog a
caller sees, which tools a caller may call (each decision audited), which file a URI names, what
``resources/list`` shows, and which cache hints an answer carries. A reload is two steps, so the
blocking one can run off the event loop: :meth:`SkillService.load` reads every source into a new
catalog, :meth:`SkillService.swap` puts it in force and says what changed. Checking a policy never
puts it in force (:meth:`SkillService.check_policy`).

:mod:`skilldeck.server._extension` binds it to the SDK; this module never touches a session.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import unquote

from skilldeck.errors import SkilldeckError, SourceError, shorten
from skilldeck.server._audience import allowed_tools, catalog_for
from skilldeck.server._catalog import Catalog, CatalogDiff
from skilldeck.server._dynamic import DynamicSkill, SkillRequest
from skilldeck.server._remote import RemoteSource
from skilldeck.serving._api import GRANTED, NOT_GRANTED, AuditLog, Caller, Policy, caller_for
from skilldeck.skill import SKILL_MD
from skilldeck.skill._api import DirectorySource, SkillFile, file_uri, load_all, mime_type_for

__all__ = ["SkillService", "VerifiedToken"]


class VerifiedToken(Protocol):
    """What the service reads of a verified access token (the SDK's ``AccessToken`` has these fields)."""

    @property
    def subject(self) -> str | None: ...

    @property
    def client_id(self) -> str: ...

    @property
    def scopes(self) -> list[str]: ...

    @property
    def claims(self) -> Mapping[str, Any] | None: ...


class SkillService:
    """The catalog, the policy and the per-caller views of one skills server (see the module docs).

    The arguments are :class:`~skilldeck.server._extension.SkillsExtension`'s, which documents them.
    """

    def __init__(
        self,
        sources: Iterable[DirectorySource | DynamicSkill | RemoteSource],
        *,
        page_size: int = 50,
        directory_page_size: int = 200,
        ttl_ms: int = 60_000,
        cache_scope: Literal["public", "private"] = "public",
        list_files: bool = True,
        policy: Policy | None = None,
        audit: AuditLog | None = None,
        variant_cache_bytes: int = 256 * 1024 * 1024,
        max_variants: int = 256,
    ) -> None:
        sources = list(sources)
        if page_size < 1 or directory_page_size < 1:
            raise SourceError("page sizes must be at least 1", rule="page-size")
        if ttl_ms < 0:
            raise SourceError("ttl_ms must be >= 0", rule="ttl")
        if variant_cache_bytes < 0 or max_variants < 0:
            raise SourceError("variant_cache_bytes and max_variants must be >= 0", rule="variant-cache")
        self.directories = [s for s in sources if isinstance(s, DirectorySource)]
        self.dynamic = [s for s in sources if isinstance(s, DynamicSkill)]
        self.remote = [s for s in sources if isinstance(s, RemoteSource)]
        unknown = [s for s in sources if not isinstance(s, DirectorySource | DynamicSkill | RemoteSource)]
        if unknown:
            raise SourceError(
                f"not a skill source: {unknown[0]!r} (use DirectorySource, DynamicSkill or a RemoteSource)"
            )
        self.page_size = page_size
        self.directory_page_size = directory_page_size
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope
        self.list_files = list_files
        self.policy = policy
        self.audit = audit or AuditLog()
        self.variant_cache_bytes = variant_cache_bytes
        self.max_variants = max_variants
        self.protocol_tools: frozenset[str] = frozenset()
        """Tools every caller may list and call whatever the policy says (a protocol's own, like Solon's talent tools)."""
        self._variants: OrderedDict[tuple[Any, ...], tuple[Catalog, int]] = OrderedDict()
        self._variant_bytes = 0
        self._catalog = self.load()

    # -- the snapshot ---------------------------------------------------------------------------

    @property
    def roots(self) -> list[Path]:
        """Every folder the directory sources read (what a watcher watches)."""
        return [root for source in self.directories for root in source.roots]

    def load(self) -> Catalog:
        """Read every source into a new catalog (not yet served). Blocking I/O: run it off the event loop."""
        loaded = load_all(self.directories)
        remote = [skill for source in self.remote for skill in source.remote_skills()]
        return Catalog(loaded.skills, self.dynamic, loaded.problems, remote)

    @property
    def catalog(self) -> Catalog:
        """The snapshot being served now."""
        return self._catalog

    @property
    def problems(self) -> list[SkilldeckError]:
        """What the last load refused (path and reason each)."""
        return list(self._catalog.problems)

    def swap(self, newer: Catalog) -> CatalogDiff:
        """Serve ``newer`` from now on; what changed from the snapshot it replaces."""
        diff = self._catalog.diff(newer)
        self._catalog = newer
        self._forget_variants()
        return diff

    # -- the policy -----------------------------------------------------------------------------

    def set_policy(self, policy: Policy | None) -> None:
        """Put ``policy`` in force (``None``: none); every rendered variant is dropped."""
        self.policy = policy
        self._forget_variants()

    def check_policy(self, policy: Policy | None, tool_names: Iterable[str]) -> None:
        """Refuse ``policy`` if it names skills or tools not served; the policy in force is left as it is.

        Raises:
            PolicyError: listing every unknown name.
        """
        if policy is not None:
            policy.validate_against((e.name for e in self._catalog.entries), tool_names)

    # -- the caller -----------------------------------------------------------------------------

    def caller(self, token: VerifiedToken | None, locale_hint: Any = None) -> Caller:
        """Who a request is answered for: the verified token, else the policy's default identity."""
        return caller_for(self.policy, token, locale_hint)

    def view(self, caller: Caller) -> Catalog:
        """The catalog ``caller`` sees (the whole catalog when no policy is set)."""
        if self.policy is None:
            return self._catalog
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

    def tools_for(self, caller: Caller) -> frozenset[str] | None:
        """Tool names ``caller`` may list and call; ``None`` when no policy restricts them."""
        if self.policy is None:
            return None
        return allowed_tools(self.policy, (e.name for e in self._catalog.entries), caller) | self.protocol_tools

    def admit_tool_call(self, caller: Caller, name: str) -> bool:
        """Whether ``caller`` may call tool ``name``; under a policy, the decision is audited."""
        allowed = self.tools_for(caller)
        if allowed is None:
            return True
        if name not in allowed:
            # Kept cut short like an echo: refused names come from anyone, and the log keeps 10,000 records.
            self.audit.record(caller, shorten(name), allowed=False, reason=NOT_GRANTED)
            return False
        self.audit.record(caller, name, allowed=True, reason=GRANTED)
        return True

    def cache_fields(self) -> dict[str, Any]:
        """The ``CacheableResult`` hints every answer about skills carries."""
        # Under a policy, answers depend on the caller's token: no shared cache may hand them on.
        scope = "private" if self.policy is not None else self.cache_scope
        return {"ttlMs": self.ttl_ms, "cacheScope": scope}

    # -- files ----------------------------------------------------------------------------------

    async def read_file(self, uri: str, request: SkillRequest, catalog: Catalog | None = None) -> SkillFile | None:
        """The file served at ``uri`` for this request, or ``None`` if no skill serves it.

        A remote skill's file is fetched now and checked against its entry.

        Raises:
            SkilldeckError: a dynamic skill failed to render, or a remote file could not be fetched
                or did not match its entry (:class:`~skilldeck.errors.VerificationError`).
        """
        catalog = catalog if catalog is not None else self._catalog
        found = catalog.static_file(uri)
        if found is not None:
            return found
        remote = catalog.remote_file(uri)
        if remote is not None:
            data = await remote[0].read(uri)
            path = unquote(uri[len(remote[0].root) + 1 :])
            return SkillFile(uri=uri, path=path, mime_type=mime_type_for(path), data=data)
        dynamic = catalog.dynamic_skill_for(uri)
        if dynamic is None:
            return None
        skill, _rel = dynamic
        files = await skill.render(request)
        for path, data in files.items():
            if file_uri(skill.skill_path, path) == uri:
                return SkillFile(uri=uri, path=path, mime_type=mime_type_for(path), data=data)
        return None

    def listed_resource(self, catalog: Catalog, uri: str) -> dict[str, Any]:
        """The ``resources/list`` entry of one of ``catalog.listing_keys()``."""
        found = catalog.static_file(uri) if self.list_files else None
        remote = catalog.remote_file(uri) if self.list_files and found is None else None
        if remote is not None and remote[1] is not None:
            size, path = remote[1].size, unquote(uri[len(remote[0].root) + 1 :])
            entry = catalog.entry(uri)
            if entry is not None:
                return {**self._skill_md_resource(uri, entry.frontmatter), "size": size}
            return {"uri": uri, "name": path.rsplit("/", 1)[-1], "mimeType": mime_type_for(path), "size": size}
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
