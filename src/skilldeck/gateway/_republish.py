"""Skills re-published: the gateway serves every upstream's skills itself, under ``skill://LABEL/...``.

The gateway declares the Skills extension (``io.modelcontextprotocol/skills``) with skilldeck's
own :class:`~skilldeck.server.SkillsExtension`, fed by :class:`RepublishedSkills`: a
:class:`~skilldeck.server._remote.RemoteSource` over the connected host's registry. Each upstream
skill ``skill://acme/billing/SKILL.md`` of the server labelled ``docs`` is served as
``skill://docs/acme/billing/SKILL.md``, its entry as the upstream listed it (frontmatter, digests
and sizes unchanged), so ``skills/list``, ``skills/get``, ``resources/read``,
``resources/directory/read`` and ``resources/list`` answer for every upstream through one
connection, in both protocol eras, with the extension's paging, cache hints and ``-32602`` errors.

Nothing is fetched until a client reads a file. Then the bytes come from the upstream through
the host's verified loader (the same path ``load`` takes: approvals, the per-server budget, the
size and digest check against the listed entry) and are checked once more against the served
entry before they are passed on; a mismatch is an error to the client, never content.

Generated (``"dynamic"``) upstream skills are re-published only when the host loads them
(``Host(allow_dynamic=True)``, ``--allow-dynamic``); their ``SKILL.md`` is checked against the
listed frontmatter, the rest is unverifiable by nature. Skills of the host's own folders and
skills under other URI schemes are not re-published.

Under the gateway's policy (:attr:`GatewayService.policy`), a caller sees and reads only the
skills admitted to them by id ``LABEL/NAME``, as ``find`` and ``load`` do. When an upstream's
skills change, :meth:`RepublishedSkills.refresh` swaps in the new listing and tells clients
(``notifications/resources/list_changed`` on legacy sessions, ``ResourcesListChanged`` on the
``subscriptions/listen`` bus).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Literal
from urllib.parse import unquote

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import SubscriptionBus

from skilldeck.gateway._service import GatewayService
from skilldeck.host import Host, LoadedSkill, SkillRecord
from skilldeck.server import CatalogDiff, RemoteSkill, SkillsExtension
from skilldeck.serving._api import LegacyConnections
from skilldeck.skill import SCHEME, SKILL_MD, SkillEntry, SkillResource, skill_root_uri
from skilldeck.skill._api import directory_uri, file_uri

__all__ = ["MAX_HELD_SKILLS", "RepublishedSkills"]

MAX_HELD_SKILLS = 64
"""Verified skills held between reads of their files (least recently read dropped first)."""
MAX_HELD_SKILL_MD = 256 * 1024
"""A held skill's ``SKILL.md`` above this size is not kept: its next file read loads it again."""

_PREFIX = f"{SCHEME}://"


def _path_of(uri: str) -> str | None:
    """The decoded ``/`` path of a ``skill://`` URI, or ``None`` if it has an empty or dot segment."""
    if not uri.startswith(_PREFIX):
        return None
    path = unquote(uri[len(_PREFIX) :])
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        return None
    return path


class RepublishedSkills:
    """The host's upstream skills as a :class:`~skilldeck.server._remote.RemoteSource` (see the module docs).

    Args:
        service: the gateway service (its policy).
        host: the host the upstreams run on (their sessions).
        subscriptions: the ``subscriptions/listen`` bus the gateway serves (one is created when omitted).
        page_size, ttl_ms, cache_scope: as :class:`~skilldeck.server.SkillsExtension`'s.
        max_held: verified skills held between reads of their files.
        legacy: the gateway's table of live legacy connections (told of skill list changes).
    """

    def __init__(
        self,
        service: GatewayService,
        host: Host,
        *,
        subscriptions: SubscriptionBus | None = None,
        page_size: int = 50,
        ttl_ms: int = 60_000,
        cache_scope: Literal["public", "private"] = "public",
        max_held: int = MAX_HELD_SKILLS,
        legacy: LegacyConnections | None = None,
    ) -> None:
        self.gateway = service
        self.host = host
        self.max_held = max_held
        self._held: OrderedDict[tuple[str, str], LoadedSkill] = OrderedDict()
        self.extension = SkillsExtension(
            self,
            page_size=page_size,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
            subscriptions=subscriptions,
            policy=service.policy,
            legacy=legacy,
        )

    @property
    def subscriptions(self) -> SubscriptionBus:
        return self.extension.subscriptions

    # -- what is served --------------------------------------------------------------------------

    def remote_skills(self) -> Iterator[RemoteSkill]:
        """Every upstream skill the gateway re-publishes, as the registry holds it now."""
        host = self.host
        for record in host.skills:
            if record.origin != "mcp" or (record.entry.is_dynamic and not host.allow_dynamic):
                continue
            served = self._served(record)
            if served is None:
                continue
            skill_path, entry, upstream = served
            yield RemoteSkill(
                skill_path=skill_path,
                entry=entry,
                fetch=partial(self._fetch, record, upstream),
                key=host.skill_id(record),
                origin=f"[{record.label}] {record.entry.uri}",
            )

    @staticmethod
    def _served(record: SkillRecord) -> tuple[str, SkillEntry, Callable[[str], str]] | None:
        """Where ``record`` is served, its entry there, and the upstream URI of each served URI."""
        upstream_root = skill_root_uri(record.entry.uri)
        upstream_path = _path_of(upstream_root) if upstream_root else None
        if upstream_root is None or upstream_path is None or "/" in record.label:
            return None
        skill_path = f"{record.label}/{upstream_path}"
        served_root = directory_uri(skill_path)
        if isinstance(record.entry.resources, str):
            entry = SkillEntry(uri=file_uri(skill_path), frontmatter=record.entry.frontmatter, resources="dynamic")
            return skill_path, entry, lambda uri: upstream_root + uri[len(served_root) :]
        to_upstream: dict[str, str] = {}
        resources = []
        for resource in record.entry.resources:
            rel = _path_of(_PREFIX + resource.uri[len(upstream_root) + 1 :])
            if rel is None:
                return None
            uri = file_uri(skill_path, rel)
            to_upstream[uri] = resource.uri
            resources.append(SkillResource(uri=uri, digest=resource.digest, size=resource.size))
        entry = SkillEntry(
            uri=file_uri(skill_path, SKILL_MD), frontmatter=record.entry.frontmatter, resources=tuple(resources)
        )
        return skill_path, entry, to_upstream.__getitem__

    # -- reading on demand -----------------------------------------------------------------------

    async def _fetch(self, record: SkillRecord, upstream: Callable[[str], str], uri: str) -> bytes:
        """The bytes of the served ``uri``, read from the upstream and verified by the host's loader."""
        host = self.host
        target = upstream(uri)
        loaded = await self._loaded(record)
        if target == record.entry.uri:
            return loaded.text.encode("utf-8")
        data = await host.read(loaded, target)
        loaded.files.pop(target, None)  # passed on, not kept: the client holds it now
        return data

    async def _loaded(self, record: SkillRecord) -> LoadedSkill:
        """The skill verified against ``record``'s entry: held between reads (not a generated one)."""
        held = self._held.get(record.key)
        if held is not None and held.entry is record.entry:
            self._held.move_to_end(record.key)
            return held
        loaded = await self.host.load(record)  # approvals, budget, size, digest, frontmatter
        if loaded.verified and len(loaded.text) <= MAX_HELD_SKILL_MD:
            self._held[record.key] = loaded
            self._held.move_to_end(record.key)
            while len(self._held) > self.max_held:
                self._held.popitem(last=False)
        return loaded

    @property
    def held(self) -> int:
        """How many verified skills are held now (at most ``max_held``)."""
        return len(self._held)

    # -- keeping up ------------------------------------------------------------------------------

    def _sync_policy(self) -> None:
        if self.extension.service.policy is not self.gateway.policy:
            self.extension.service.set_policy(self.gateway.policy)

    async def refresh(self) -> CatalogDiff:
        """Serve what the host's registry holds now; tell clients (both eras) if anything changed."""
        self._sync_policy()
        service = self.extension.service
        diff = service.swap(service.load())
        host = self.host
        for key in [k for k, held in self._held.items() if (r := host.skill(*k)) is None or r.entry is not held.entry]:
            del self._held[key]  # no longer listed as it was: its next read loads what is listed now
        if diff:
            await self.extension.notify_changed()
        return diff

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """The extension's middleware, under the gateway's policy as it stands."""
        self._sync_policy()
        return await self.extension.middleware(ctx, call_next)
