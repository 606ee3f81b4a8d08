"""The host facade: connect, discover, load — the pieces of ``skilldeck.host`` wired together.

::

    async with Host(load_config("mcp.json"), approvals=ApprovalStore(path), cache=ContentCache(dir)) as host:
        for record in host.skills: ...
        loaded = await host.load(host.resolve("docs/pdf-processing"))
        data = await host.read(loaded, "references/FORMS.md")
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from types import MappingProxyType, TracebackType
from typing import Any, Literal
from urllib.parse import unquote

import anyio

from skilldeck._awaitable import maybe_await
from skilldeck.errors import ConfigError, CrossOriginRead, NotApproved, PeerError, SkilldeckError
from skilldeck.host._approvals import ApprovalRequest, ApprovalStore, Approver
from skilldeck.host._backoff import Backoff
from skilldeck.host._cache import ContentCache, VerifiedBytes
from skilldeck.host._config import ServerSpec
from skilldeck.host._connect import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Connected,
    Connections,
    Failure,
    MessageListener,
    ServerRequestHandler,
    Transition,
)
from skilldeck.host._discover import DiscoveryReport, ListingLimits, ServerReport, discover, list_server
from skilldeck.host._index import LocalIndex, SkillIndex, WireIndex
from skilldeck.host._loader import DEFAULT_BUDGET, LoadedSkill, SkillLoader
from skilldeck.host._registry import LOCAL_LABEL, Collision, Registry, SkillRecord, ToolRecord
from skilldeck.host._watch import CatalogChange, GateLike, HostWatcher, OnChange
from skilldeck.skill import entry_from_wire, skill_root_uri
from skilldeck.skill._api import children_of

__all__ = ["Host", "NotApproved"]


class Host:
    """Many labelled servers (and optional local skill folders) behind one registry and loader set.

    Args:
        servers: the servers to connect to.
        local: folders of skills installed on the host (origin ``local``).
        approvals: where approvals persist (in memory when omitted).
        approver: asked before a skill is loaded when ``require_approval`` is set, and whenever a
            grant (``allowed-tools``) is requested; returns whether the user approves.
        require_approval: ask before loading any MCP-served skill not approved for its content.
        cache: an on-demand cache of verified content.
        budget_bytes: what one server may make the host download (per ``budget_window`` when set).
        budget_window: seconds after which each server's budget starts again; ``None`` (the default)
            gives one budget for the life of the host, as suits one command; a long-running host
            (the gateway) sets a window.
        allow_dynamic: load ``"dynamic"`` skills (unverifiable) instead of refusing them.
        read_timeout: seconds any single request may take; by default each server's own ``timeout``
            (the one it has to connect and to list), so one timeout bounds every request to it.
        mode: ``"auto"`` negotiates 2026-07-28 where a server speaks it; ``"legacy"`` forces 2025-11-25.
        max_message_bytes: the most one HTTP response body, SSE event or stdio line of a server may
            take (32 MiB by default); a server that sends more is dropped with that reason.
        server_requests: declare the sampling, elicitation and roots capabilities to every server and
            hand what they ask to the handler given to :meth:`answer_server_requests` (the gateway relays it to its caller).
        restart: supervise the servers (restart a stdio server that exits, reconnect an HTTP one that
            drops or was down at start) on this backoff schedule; ``None``: a server lost stays lost.
            A server that comes back gets a fresh loader, so its skills are verified again.
        on_transition: told ``(label, text)`` for each loss of a supervised server (logged by default).
    """

    def __init__(
        self,
        servers: Iterable[ServerSpec] = (),
        *,
        local: Sequence[str | os.PathLike[str]] = (),
        approvals: ApprovalStore | None = None,
        approver: Approver | None = None,
        require_approval: bool = False,
        cache: ContentCache | None = None,
        budget_bytes: int = DEFAULT_BUDGET,
        budget_window: float | None = None,
        allow_dynamic: bool = False,
        limits: ListingLimits | None = None,
        read_timeout: float | None = None,
        mode: Literal["auto", "legacy"] = "auto",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        server_requests: bool = False,
        restart: Backoff | None = None,
        on_transition: Transition | None = None,
    ) -> None:
        self.connections = Connections(
            servers,
            read_timeout=read_timeout,
            mode=mode,
            max_message_bytes=max_message_bytes,
            server_requests=server_requests,
            restart=restart,
            on_transition=on_transition,
        )
        self.connections.add_state_listener(self._session_changed)
        self.registry = Registry()
        self.approvals = approvals or ApprovalStore()
        self.approver = approver
        self.require_approval = require_approval
        self.cache = cache
        self.verified = VerifiedBytes()
        """Verified skill files held in memory for every later read, whoever asks (see :class:`VerifiedBytes`);
        with a ``cache`` folder that folder holds them instead."""
        self.budget_bytes = budget_bytes
        self.budget_window = budget_window
        self.allow_dynamic = allow_dynamic
        self.limits = limits or ListingLimits()
        self.report = DiscoveryReport()
        if local and any(spec.label == LOCAL_LABEL for spec in self.connections.specs):
            raise ConfigError(
                f"the label {LOCAL_LABEL!r} is reserved for the host's own skill folders; give that server another label"
            )
        self._local = [LocalIndex(*local)] if local else []
        self._loaders: dict[str, SkillLoader] = {}
        self._removed: set[str] = set()
        self.reconnecting: dict[str, anyio.Event] = {}
        """Servers being connected again (a reload changed their entry), each set once that is done: a call
        to one waits for it rather than being refused."""

    def _session_changed(self, label: str, up: bool) -> None:
        """A loader holds its server's session: a server lost or back gets a fresh one (which verifies again)."""
        self._loaders.pop(label, None)

    async def __aenter__(self) -> Host:
        await self.connections.__aenter__()
        try:
            await self.refresh()
        except BaseException:
            await self.connections.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.connections.__aexit__(exc_type, exc, tb)

    # -- what the applications read (the CLI, the gateway, the agent adapters) -----------------

    @property
    def failures(self) -> dict[str, Failure]:
        return self.connections.failures

    @property
    def sessions(self) -> Mapping[str, Connected]:
        """The servers connected now, by label (a read-only view: it follows connects and losses)."""
        return MappingProxyType(self.connections.connected)

    @property
    def specs(self) -> list[ServerSpec]:
        """Every server the host was given or added since (connected or not)."""
        return list(self.connections.specs)

    @property
    def skills(self) -> list[SkillRecord]:
        """Every skill listed, in label then URI order."""
        return self.registry.skills

    @property
    def labels(self) -> list[str]:
        """Every label that lists skills or tools."""
        return self.registry.labels

    def tools(self, label: str | None = None) -> list[ToolRecord]:
        """The tools ``label`` lists (every server's, in label order, when ``None``)."""
        return self.registry.tools(label)

    def skill(self, label: str, uri: str) -> SkillRecord | None:
        """The skill ``label`` lists at ``uri``, if it does."""
        return self.registry.get(label, uri)

    def skill_id(self, record: SkillRecord) -> str:
        """The skill's name unique among all listed: ``label/name`` (``label/<skill path>`` when needed)."""
        return self.registry.qualified_name(record)

    def resolve(self, reference: str) -> SkillRecord:
        """One skill by id, ``label:uri``, bare URI or bare name (see :meth:`Registry.resolve`)."""
        return self.registry.resolve(reference)

    def collisions(self) -> list[Collision]:
        """Every name used by more than one skill, inside one server or across origins."""
        return self.registry.collisions()

    def stderr(self, label: str) -> str:
        """What a stdio server wrote to stderr so far (when it went to a file of its own)."""
        return self.connections.stderr(label)

    def rejected_probe(self, label: str) -> bool:
        """Whether a stdio server spoke 2025-11-25 after refusing the 2026-07-28 probe (its stderr shows a trace)."""
        return self.connections.rejected_probe(label)

    # -- what the gateway hooks in ----------------------------------------------------------------

    @property
    def server_requests(self) -> bool:
        """Whether the servers were told they may ask sampling, elicitation and roots (``server_requests``)."""
        return self.connections.server_requests

    def answer_server_requests(self, handler: ServerRequestHandler) -> None:
        """Hand every sampling, elicitation or roots request a server sends to ``handler``, with its label."""
        self.connections.server_request_handler = handler

    def add_message_listener(self, listener: MessageListener) -> None:
        """Hear every message any server sends outside a response (notifications, mostly), with its label."""
        self.connections.add_message_listener(listener)

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``func(*args)`` in the background for as long as the host is open (``RuntimeError`` once closed)."""
        self.connections.start_soon(func, *args)

    async def refresh(self) -> DiscoveryReport:
        """Re-list every server (and local folder) into a fresh registry."""
        self.registry = Registry()
        self.report = await discover(self.connections, self.registry, self.limits)
        for index in self._local:
            entries, _ = await index.entries()
            rejected = self.registry.add_listing(index.label, entries, origin="local")
            self.report.servers[index.label] = ServerReport(
                index.label, "local", True, skills=len(entries) - len(rejected), rejected=rejected
            )
        return self.report

    async def relist(self, label: str, reasons: Iterable[str] = ()) -> CatalogChange:
        """Re-list one connected server into :attr:`registry` and say what changed.

        The listings are read first (under the host's caps and the server's timeout) and swapped in
        whole, so the registry never holds half of an old and half of a new listing.
        """
        why = frozenset(reasons)
        connected = self.connections.connected.get(label)
        if connected is None:
            return CatalogChange(label, why, error=f"server {label!r} is not connected")
        listing = await list_server(connected, self.limits)
        if self.connections.connected.get(label) is not connected:
            # removed (a reload) or connected again meanwhile: this listing is of a session that is gone, and
            # writing it would put a removed server's tools back, or an old listing over the new session's
            return CatalogChange(label, why, error=f"server {label!r} was removed or reconnected while it was listed")
        tools, entries, notes = listing.tools, listing.entries, listing.notes
        if listing.timed_out:
            notes.append(f"re-listing did not finish within {connected.spec.timeout:g}s (timed out)")

        # From here on no await: the swap and the diff see one registry, whatever else runs.
        registry = self.registry
        old_tools = {t.name: dict(t.tool) for t in registry.tools(label)}
        old_skills = {r.entry.uri: r for r in registry.skills if r.label == label}
        registry.remove_server(label)
        if tools is not None:
            registry.set_tools(label, tools)
        elif old_tools:
            registry.set_tools(label, old_tools.values())
        rejected = []
        if entries is not None:
            rejected = registry.add_listing(label, entries)
        else:
            for record in old_skills.values():
                registry.add(record)
        new_tools: dict[str, dict[str, Any]] = {t.name: dict(t.tool) for t in registry.tools(label)}
        new_skills = {r.entry.uri: r for r in registry.skills if r.label == label}
        self.report.servers[label] = ServerReport(
            label,
            connected.protocol_version,
            connected.skills is not None,
            skills=len(new_skills),
            tools=len(new_tools),
            rejected=rejected,
            notes=notes,
        )
        return CatalogChange(
            label,
            why,
            skills_added=tuple(sorted(new_skills.keys() - old_skills.keys())),
            skills_removed=tuple(sorted(old_skills.keys() - new_skills.keys())),
            skills_changed=tuple(
                sorted(
                    uri
                    for uri in new_skills.keys() & old_skills.keys()
                    if new_skills[uri].entry.to_wire() != old_skills[uri].entry.to_wire()
                )
            ),
            tools_added=tuple(sorted(new_tools.keys() - old_tools.keys())),
            tools_removed=tuple(sorted(old_tools.keys() - new_tools.keys())),
            tools_changed=tuple(sorted(n for n in new_tools.keys() & old_tools.keys() if new_tools[n] != old_tools[n])),
            rejected=tuple(str(r) for r in rejected),
            error="; ".join(notes) or None,
            tools=tuple(tools) if tools is not None else None,
        )

    def watch(self, *, gates: Iterable[GateLike] = (), on_change: OnChange | None = None) -> HostWatcher:
        """Keep the registry (and ``gates``) in step with the servers' change events; use as ``async with``.

        The watcher listens; each change it hears is applied by :meth:`relist`. See
        :class:`skilldeck.host._watch.HostWatcher`.
        """
        return HostWatcher(self, gates=gates, on_change=on_change)

    def index(self, label: str) -> SkillIndex:
        if label in self._removed:
            raise SkilldeckError(f"server {label!r} was removed")
        for local in self._local:
            if local.label == label:
                return local
        connected = self.connections.connected.get(label)
        if connected is None:
            reason = self.failures.get(label)
            raise SkilldeckError(f"server {label!r} is not connected" + (f": {reason.reason}" if reason else ""))
        return WireIndex(connected, self.limits)

    def loader(self, label: str) -> SkillLoader:
        if label not in self._loaders:
            self._loaders[label] = SkillLoader(
                self.index(label),
                budget_bytes=self.budget_bytes,
                budget_window=self.budget_window,
                allow_dynamic=self.allow_dynamic,
                cache=self.cache,
                held=self.verified if self.cache is None else None,
            )
        return self._loaders[label]

    async def record_for_uri(self, label: str, uri: str) -> SkillRecord:
        """A skill known only by URI (e.g. a pointer in server instructions), confirmed with ``skills/get``."""
        existing = self.registry.get(label, uri)
        if existing is not None:
            return existing
        entry = entry_from_wire(await self.index(label).get_entry(uri))
        if entry.uri != uri:
            raise PeerError(f"skills/get {uri} answered with another skill ({entry.uri}); refused", label=label)
        record = SkillRecord(label, entry, origin=self.index(label).origin)
        self.registry.add(record)
        return record

    async def _ask(self, record: SkillRecord, changed: bool) -> bool:
        if self.approver is None:
            return False
        allowed = record.entry.frontmatter.get("allowed-tools")
        answer = self.approver(
            ApprovalRequest(record.label, record.entry, allowed if isinstance(allowed, str) else None, changed)
        )
        return bool(await maybe_await(answer))

    async def approve(self, record: SkillRecord, *, allowed_tools: bool = False) -> None:
        self.approvals.approve(record.label, record.entry, allowed_tools=allowed_tools)

    async def load(self, record: SkillRecord) -> LoadedSkill:
        """Load one skill, verified; asks for approval first when ``require_approval`` is set.

        Raises:
            NotApproved: approval was required and not given.
            VerificationError, BudgetExceeded, DynamicSkillRefused: see :class:`SkillLoader`.
        """
        if record.origin == "mcp" and self.require_approval:
            status = self.approvals.status(record.label, record.entry)
            if status != "approved":
                if not await self._ask(record, changed=status == "changed"):
                    raise NotApproved(f"[{record.label}] {record.entry.uri} was not approved")
                self.approvals.approve(record.label, record.entry)
        return await self.loader(record.label).load(record.entry)

    def allowed_tools(self, loaded: LoadedSkill) -> list[str]:
        """The ``allowed-tools`` grant in effect: local skills' as written; MCP skills' only if explicitly approved."""
        value = loaded.entry.frontmatter.get("allowed-tools")
        if not isinstance(value, str):
            return []
        if loaded.origin == "mcp" and not self.approvals.allows_tools(loaded.label, loaded.entry):
            return []
        return value.split()

    async def read(self, loaded: LoadedSkill, reference: str, *, via: str | None = None) -> bytes:
        """Read a supporting file of ``loaded`` from the skill's own server.

        ``via`` names the server the read would go to; a different one than the skill's is refused
        (a skill from one server must never cause a read on another).
        """
        if via is not None and via != loaded.label:
            raise CrossOriginRead(
                f"{loaded.uri} comes from {loaded.label!r}; reading {reference!r} through {via!r} is refused"
            )
        return await self.loader(loaded.label).read(loaded, reference)

    async def list_directory(self, loaded: LoadedSkill, folder: str = "") -> list[dict[str, object]]:
        """The direct children of a folder of a loaded skill (``""`` for its root).

        For a skill with a manifest the answer comes from the held entry alone, so a file the
        server added since cannot appear. For a dynamic skill it is a live
        ``resources/directory/read``, sent only to a server that declared ``directoryRead``.
        """
        root = skill_root_uri(loaded.uri) or ""
        target = self.loader(loaded.label).resolve(loaded, folder) if folder else root
        if not isinstance(loaded.entry.resources, str):
            prefix = unquote(target.split("://", 1)[1])
            paths = {unquote(r.uri.split("://", 1)[1]): r.size for r in loaded.entry.resources}
            return [c.to_wire() for c in children_of(prefix, paths, paths)]
        connected = self.connections.connected.get(loaded.label)
        if connected is None or not connected.directory_read:
            raise SkilldeckError(f"{loaded.label} did not declare directoryRead; its folders cannot be listed")
        result = await connected.wire.read_directory(target)
        children = result.get("resources")
        return [c for c in children if isinstance(c, dict)] if isinstance(children, list) else []

    async def add_server(self, spec: ServerSpec) -> bool:
        """Connect one more server, or one removed before, while the others go on; whether it connected.

        Its catalog is not listed here: :meth:`relist` it (a watcher's ``request_refresh`` does).
        A failure is in :attr:`failures` with the reason.
        """
        self._removed.discard(spec.label)
        self._loaders.pop(spec.label, None)
        return await self.connections.add(spec) is not None

    def remove_server(self, label: str, *, drain: float = 0.0) -> None:
        """Forget a server: close its session, drop its registry entries, approvals and cached content.

        ``drain``: seconds the calls in flight on its session have to finish before it is torn down.
        """
        self._removed.add(label)
        self._loaders.pop(label, None)
        self.connections.close(label, drain=drain)
        self.registry.remove_server(label)
        self.approvals.remove_server(label)
        if self.cache is not None:
            self.cache.remove_server(label)
        self.verified.remove_server(label)
