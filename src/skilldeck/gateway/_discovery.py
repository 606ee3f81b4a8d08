"""The gateway's catalogs: what ``find`` offers beyond the configured upstreams, and what ``add`` starts.

:class:`Discovery` holds the catalogs the operator named (``--registry URL``, ``--registry-file
PATH``; none by default, so no network by surprise). At start each is read (only what changed
since the cached copy, when there is one), then again every ``refresh_every`` seconds; a registry
that cannot be read leaves its last good catalog in force, said once with its age. The entries of
all of them are one :class:`~skilldeck.catalog._search.CatalogIndex` (a name in two catalogs is
the first catalog's).

* :meth:`Discovery.offer`: when the upstreams' answer to a ``find`` is weak (it abstains, or its
  best card is of low confidence), up to three catalog cards this caller could add are added to it
  (``catalog``), each of kind ``server`` and ``installed: false``. Nothing is run, fetched from a
  package registry or connected to.
* :meth:`Discovery.card` / :meth:`Discovery.add`: the ``add`` meta-tool's checks before a person
  is asked (the card exists at that version, the policy allows it for this caller, something here
  can run it, its label is free), then, once they accepted, the server started as an upstream (by
  the ``starter`` the running gateway gives: supervised, verified, indexed, and every client of
  both eras told) and kept in ``$SKILLDECK_HOME/added.json`` only when it answered.

How a person is asked is :mod:`skilldeck.gateway._add`'s (MCP elicitation); what is asked and
what an answer decides is :mod:`skilldeck.catalog._consent`'s.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2

from skilldeck.catalog import (
    AddedServers,
    CatalogCache,
    CatalogEntry,
    CatalogIndex,
    CatalogLimits,
    Launch,
    RegistryClient,
    Runtimes,
    catalog_card,
    choose,
    cli_command,
    policy_refusal,
    read_registry_file,
)
from skilldeck.catalog._api import ADDED_META, DEFAULT_LIMITS, Fetched, launch_refusal, merged, prepare
from skilldeck.errors import AddRefused, ConfigError, RegistryError, ServerEntryError, shorten
from skilldeck.gateway._service import GatewayService
from skilldeck.host import ServerSpec
from skilldeck.serving._api import Caller

__all__ = ["REFRESH_EVERY", "Discovery", "Source", "Starter"]

logger = logging.getLogger(__name__)

REFRESH_EVERY = 3_600.0
"""Seconds between two refreshes of a catalog (``--registry-refresh``)."""
RETRY_AFTER = 300.0
"""Seconds before a catalog that could not be read is tried again (when that is sooner than a refresh)."""
MAX_SKIPPED_SHOWN = 3
"""Skipped entries named, with their reasons, in the line that says a catalog was read."""

Report = Callable[[str, str], None]
Starter = Callable[[ServerSpec], Awaitable[str | None]]
"""Starts an added server as an upstream: ``None`` once it answered and is served, else why not."""
Stopper = Callable[[str], Awaitable[None]]
"""Takes an upstream out again (by label): the server started, but could not be kept."""


@dataclass(frozen=True)
class Source:
    """A catalog the operator named: a registry's base URL, or a registry file."""

    where: str
    kind: Literal["registry", "file"]


def _age(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "of unknown age"
    if seconds < 120:
        return f"{seconds:.0f} s old"
    if seconds < 7_200:
        return f"{seconds / 60:.0f} min old"
    if seconds < 172_800:
        return f"{seconds / 3_600:.0f} h old"
    return f"{seconds / 86_400:.0f} days old"


class Discovery:
    """The catalogs behind ``find`` and ``add`` for one gateway (see the module docs).

    Args:
        sources: the catalogs, in the order given (a name in two is the first's).
        service: the gateway's decisions (its policy, encoder, vector cache, decision log and upstreams).
        home: ``$SKILLDECK_HOME`` (the cache under ``catalog/``, ``added.json``, PyPI venvs under ``venvs/``).
        runtimes: what this machine runs packages with.
        report: where each line for the operator goes (``level``, ``text``).
        limits: the bounds of every catalog read.
        refresh_every: seconds between two refreshes.
        transport: an httpx2 transport for the registries (tests).
    """

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        service: GatewayService,
        home: str | Path,
        runtimes: Runtimes,
        report: Report,
        limits: CatalogLimits = DEFAULT_LIMITS,
        refresh_every: float = REFRESH_EVERY,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.sources = list(sources)
        self.service = service
        self.home = Path(home)
        self.runtimes = runtimes
        self.report = report
        self.limits = limits
        self.refresh_every = refresh_every
        self.transport = transport
        self.added = AddedServers(self.home)
        self.cache = CatalogCache(self.home / "catalog", limits=limits)
        self.catalogs: dict[str, list[CatalogEntry]] = {}
        """Each source's entries, by its ``where``."""
        self.skipped: dict[str, ServerEntryError] = {}
        """Entries skipped when read, by name (at most ``limits.max_skipped``)."""
        self.index: CatalogIndex | None = None
        self.starter: Starter | None = None
        """Set by the running gateway: how an added server is started (``None``: nothing can be added yet)."""
        self.stopper: Stopper | None = None
        self._failing: set[str] = set()
        """Sources whose last read failed (said once until one is read again)."""
        self._adding = anyio.Lock()
        self._added_seen: tuple[tuple[int, int], frozenset[str]] | None = None

    # -- the catalogs ----------------------------------------------------------------------------

    @property
    def entries(self) -> list[CatalogEntry]:
        """Every catalog's entries, a name in two being the first catalog's."""
        seen: dict[str, CatalogEntry] = {}
        for source in self.sources:
            for entry in self.catalogs.get(source.where, ()):
                seen.setdefault(entry.name, entry)
        return list(seen.values())

    async def load(self) -> None:
        """Read every catalog at start (each from its cache first, then what changed since), and index them."""
        for source in self.sources:
            cached = self.cache.read(source.where) if source.kind == "registry" else None
            if cached is not None:
                self.catalogs[source.where] = cached[0]
            await self._refresh(source, cached_age=cached[1] if cached is not None else None)
        self._reindex()

    async def refresh(self) -> None:
        """Read every catalog again (a registry: only what changed); index them again if anything did."""
        before = {where: [e.raw for e in entries] for where, entries in self.catalogs.items()}
        for source in self.sources:
            await self._refresh(source)
        if {where: [e.raw for e in entries] for where, entries in self.catalogs.items()} != before:
            self._reindex()

    async def run(self) -> None:
        """Refresh every ``refresh_every`` seconds (sooner, every :data:`RETRY_AFTER`, while one fails)."""
        while True:
            await anyio.sleep(min(self.refresh_every, RETRY_AFTER) if self._failing else self.refresh_every)
            await self.refresh()

    async def _refresh(self, source: Source, cached_age: float | None = None) -> None:
        held = self.catalogs.get(source.where)
        try:
            if source.kind == "file":
                fetched = await anyio.to_thread.run_sync(lambda: read_registry_file(source.where, limits=self.limits))
                entries = fetched.entries
            else:
                client = RegistryClient(source.where, limits=self.limits, transport=self.transport)
                since = max((e.updated_at for e in held or () if e.updated_at), default="") or None
                fetched = await client.servers(updated_since=since if held else None, held=len(held or ()))
                entries = merged(held or (), fetched.entries) if fetched.incremental else fetched.entries
                entries = entries[: self.limits.max_entries]
                await anyio.to_thread.run_sync(lambda: self.cache.write(source.where, entries))
        except RegistryError as exc:
            self._failed(source, exc, held, cached_age)
            return
        except OSError as exc:  # the cache folder cannot be written: the catalog read is still used
            self.report("warning", f"catalog {source.where}: its cache cannot be written ({exc}); it is used uncached")
            return
        self.catalogs[source.where] = entries
        self._skipped(fetched.skipped)
        self._failing.discard(source.where)
        self._said(source, fetched, entries)

    def _failed(
        self, source: Source, exc: RegistryError, held: list[CatalogEntry] | None, cached_age: float | None
    ) -> None:
        if source.where in self._failing:
            logger.info("catalog %s still cannot be read: %s", source.where, exc)
            return
        self._failing.add(source.where)
        why = str(exc).removeprefix(f"[{source.where}] ")
        if held:
            age = f", {_age(cached_age)}" if cached_age is not None else ""
            self.report(
                "warning",
                f"catalog {source.where} cannot be read ({why}); the last good catalog is served: "
                f"{len(held)} servers{age}",
            )
        else:
            self.report(
                "warning",
                f"catalog {source.where} cannot be read ({why}); no cached copy, so find offers none of its "
                f"servers until it is read (tried again in {min(self.refresh_every, RETRY_AFTER):g} s)",
            )

    def _skipped(self, skipped: Iterable[ServerEntryError]) -> None:
        for error in skipped:
            if len(self.skipped) < self.limits.max_skipped or error.name in self.skipped:
                self.skipped[error.name] = error

    def _said(self, source: Source, fetched: Fetched, entries: Sequence[CatalogEntry]) -> None:
        what = "changes read" if fetched.incremental else "read"
        line = (
            f"catalog {source.where}: {len(entries)} servers ({what}: {fetched.pages} pages, "
            f"{fetched.bytes:,} bytes in {fetched.seconds:.2f} s)"
        )
        if fetched.truncated:
            line += f"; the catalog holds its most, {self.limits.max_entries:,}: the rest was not read"
        self.report("info", line)
        if fetched.skipped:
            named = "; ".join(f"{e.name}: {e.reason}" for e in fetched.skipped[:MAX_SKIPPED_SHOWN])
            more = (
                f" (and {len(fetched.skipped) - MAX_SKIPPED_SHOWN} more)"
                if len(fetched.skipped) > MAX_SKIPPED_SHOWN
                else ""
            )
            self.report("warning", f"catalog {source.where}: {len(fetched.skipped)} entries skipped: {named}{more}")

    def _reindex(self) -> None:
        old, service = self.index, self.service
        self.index = CatalogIndex(self.entries, encoder=service.encoder, cache=service.vectors)
        if old is not None:
            old.close()

    # -- find ------------------------------------------------------------------------------------

    def _added_names(self) -> frozenset[str]:
        """The registry names ``added.json`` holds, read again only when the file changed (``find`` asks each time)."""
        try:
            stamp = self.added.path.stat()
            key: tuple[int, int] | None = (stamp.st_mtime_ns, stamp.st_size)
        except OSError:
            key = None
        if key is not None and self._added_seen is not None and self._added_seen[0] == key:
            return self._added_seen[1]
        try:
            entries = self.added.entries()
        except ConfigError:
            entries = {}
        names = frozenset(str(entry.get(ADDED_META, {}).get("name")) for entry in entries.values())
        self._added_seen = (key, names) if key is not None else None
        return names

    def offerable(self, caller: Caller) -> Callable[[CatalogEntry], Launch | None]:
        """For ``caller``: how each entry would run, when they could add it (else ``None``)."""
        policy = self.service.policy
        added = self._added_names()

        def allowed(launch: Launch) -> str | None:
            return launch_refusal(policy.registry, launch) if policy is not None else None

        def offer(entry: CatalogEntry) -> Launch | None:
            if entry.name in added or policy_refusal(policy, caller, entry) is not None:
                return None
            return choose(entry, self.runtimes, allowed)[0]

        return offer

    def offer(self, caller: Caller, client: str, query: str, found: dict[str, Any]) -> None:
        """Add catalog cards to a weak ``find`` answer (see the module docs); a sure answer is left as it is."""
        index = self.index
        if index is None or not (found.get("abstain") or found.get("low_confidence")):
            return
        cards = [catalog_card(f) for f in index.search(query, self.offerable(caller))]
        if cards:
            found["catalog"] = cards
        self.service.log.record("catalog", client, query=shorten(query), cards=[c["id"] for c in cards])

    # -- add -------------------------------------------------------------------------------------

    def card(self, caller: Caller, card_id: str) -> Launch:
        """The launch a person would be asked to agree to for ``card_id``, checked (see the module docs).

        Raises:
            AddRefused: no such card at that version, added already, refused by the policy, nothing here
                runs it, or its label is taken.
        """
        name, at, version = card_id.rpartition("@")
        entry = next((e for e in self.entries if e.name == name), None) if at else None
        if entry is None:
            skipped = self.skipped.get(name)
            if skipped is not None:
                raise AddRefused(f"{name} was skipped when its catalog was read: {skipped.reason}", code="unknown")
            raise AddRefused(
                f"no catalog card has the id {shorten(card_id, 120)!r}; ids come from find's catalog cards (NAME@VERSION)",
                code="unknown",
            )
        if entry.version != version:
            raise AddRefused(
                f"the catalog has {name} at {entry.version} now, not {shorten(version, 40)}; call find again",
                code="unknown",
            )
        if entry.name in self._added_names():
            raise AddRefused(f"{name} is added already; call find: its tools are cards", code="added")
        policy = self.service.policy
        refusal = policy_refusal(policy, caller, entry)
        if refusal is not None:
            raise AddRefused(f"{refusal}; nothing was added", code="policy")

        def allowed(launch: Launch) -> str | None:
            return launch_refusal(policy.registry, launch) if policy is not None else None

        launch, reasons = choose(entry, self.runtimes, allowed)
        if launch is None:
            code = "policy" if any(r.startswith("the policy") for r in reasons) else "not_runnable"
            raise AddRefused(f"{name} cannot be added here: {'; '.join(reasons)}", code=code)
        self._label_free(launch)
        return launch

    def _label_free(self, launch: Launch) -> None:
        label = launch.label
        if label in self.service.upstreams.configured:
            raise AddRefused(
                f"the label {label!r} is taken by another upstream; a person can add {launch.entry.name} under "
                f"another label: {cli_command(launch.entry)} --label OTHER",
                code="label",
            )

    async def add(self, launch: Launch, values: Mapping[str, str], *, client: str) -> dict[str, Any]:
        """Start the server a person agreed to, and keep it in ``added.json`` once it answered.

        Raises:
            AddRefused: it could not be made ready, did not start, or could not be kept (``failed``); its
                label was taken meanwhile (``label``); the gateway cannot start servers now (``failed``).
        """
        if self.starter is None:
            raise AddRefused("the gateway is not serving yet; nothing was added", code="failed")
        entry, label = launch.entry, launch.label
        async with self._adding:  # one add at a time: two of one server, or of one label, cannot both start
            self._label_free(launch)
            await prepare(launch)
            spec = launch.spec(values)
            failure = await self.starter(spec)
            if failure is not None:
                self.service.log.record("add", client, name=entry.name, version=entry.version, error=failure)
                raise AddRefused(f"{entry.name} did not start: {failure}; nothing was added", code="failed")
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            try:
                await anyio.to_thread.run_sync(
                    lambda: self.added.add(label, launch.config_entry(values, added_at=stamp))
                )
            except (AddRefused, ConfigError) as exc:
                if self.stopper is not None:
                    await self.stopper(label)
                code = exc.code if isinstance(exc, AddRefused) else "failed"
                raise AddRefused(f"{exc}; {entry.name} was stopped again, nothing was added", code=code) from None
        tools = len(self.service.upstreams.tool_names(label))
        self.service.log.record(
            "add",
            client,
            name=entry.name,
            version=entry.version,
            label=label,
            runs=launch.command_line(),
            inputs=[i.name for i in launch.inputs],
            tools=tools,
        )
        self.report("info", f"[{label}] added from the catalog: {entry.name} {entry.version} ({tools} tools)")
        return {
            "added": True,
            "id": entry.id,
            "server": label,
            "runs": launch.command_line(),
            "tools": tools,
            "reason": f"{entry.name} runs as upstream {label!r} with {tools} tools; call find again to use them",
        }
