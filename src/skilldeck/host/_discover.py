"""Discovery: page every connected server's ``skills/list`` and ``tools/list`` into the registry.

Listings are paged under caps (pages and entries per server); a server that pages forever or
repeats a cursor is stopped and reported, and what was read so far is kept. ``skills/list`` is
called only on servers that declared the Skills extension. Nothing here reads a skill file:
discovery never prefetches content. :func:`list_server` is the one way a server's listings are
read: :func:`discover` uses it for every server at once, ``Host.relist`` for one server again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio

from skilldeck.host._connect import Connected, Connections
from skilldeck.host._registry import Registry, Rejection
from skilldeck.host._wire import SkillsWire

__all__ = [
    "DiscoveryReport",
    "Listing",
    "ListingLimits",
    "ServerReport",
    "discover",
    "list_server",
    "page_skills",
    "page_tools",
]


@dataclass(frozen=True)
class ListingLimits:
    """Caps on what one server's listing may make the host read."""

    max_pages: int = 100
    max_entries: int = 10_000


@dataclass
class ServerReport:
    """What discovery found on one server."""

    label: str
    protocol_version: str
    skills_declared: bool
    skills: int = 0
    tools: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Caps hit and listing errors, in words."""
    error: str | None = None
    """Set when the server could not be listed at all (it stopped answering within its timeout)."""


@dataclass
class DiscoveryReport:
    servers: dict[str, ServerReport] = field(default_factory=dict)


async def _page(fetch: Any, what: str, limits: ListingLimits) -> tuple[list[Any], str | None]:
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for page_number in range(1, limits.max_pages + 1):
        page_items, cursor = await fetch(cursor)
        items.extend(page_items)
        if len(items) > limits.max_entries:
            return items[: limits.max_entries], f"{what} stopped at the cap of {limits.max_entries} entries"
        if not cursor:
            return items, None
        if cursor in seen:
            return items, f"{what} repeated a cursor on page {page_number}; stopped"
        seen.add(cursor)
    return items, f"{what} still had more after {limits.max_pages} pages (the cap); stopped"


async def page_skills(wire: SkillsWire, limits: ListingLimits) -> tuple[list[Any], str | None]:
    """All ``skills/list`` entries (raw) under the caps, and a note when a cap stopped the paging."""

    async def fetch(cursor: str | None) -> tuple[list[Any], str | None]:
        result = await wire.list_skills(cursor)
        skills = result.get("skills")
        next_cursor = result.get("nextCursor")
        return (skills if isinstance(skills, list) else []), (next_cursor if isinstance(next_cursor, str) else None)

    return await _page(fetch, "skills/list", limits)


async def page_tools(connected: Connected, limits: ListingLimits) -> tuple[list[dict[str, Any]], str | None]:
    """All tools (as MCP ``Tool`` JSON) under the caps."""

    async def fetch(cursor: str | None) -> tuple[list[Any], str | None]:
        result = await connected.client.list_tools(cursor=cursor)
        tools = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools]
        return tools, result.next_cursor

    return await _page(fetch, "tools/list", limits)


@dataclass
class Listing:
    """One server's ``tools/list`` and ``skills/list`` as read, under the caps and the server's timeout."""

    tools: list[dict[str, Any]] | None = None
    """``None`` when tools were not listed (not declared, failed, or out of time)."""
    entries: list[Any] | None = None
    """The raw ``skills/list`` entries; ``None`` when skills were not listed."""
    notes: list[str] = field(default_factory=list)
    """Caps hit and listing errors, in words."""
    timed_out: bool = False


async def list_server(connected: Connected, limits: ListingLimits) -> Listing:
    """Read one server's listings — discovery and re-listing both go through here.

    A server gets its configured timeout for listing too, so it cannot hold the others up; what was
    read before the timeout is kept on the :class:`Listing`.
    """
    listing = Listing()
    with anyio.move_on_after(connected.spec.timeout) as scope:
        if connected.client.server_capabilities.tools is not None:
            try:
                listing.tools, note = await page_tools(connected, limits)
                listing.notes += [note] if note else []
            except Exception as exc:
                listing.notes.append(f"tools/list failed: {connected.explain(exc)}")
        if connected.skills is not None:
            try:
                listing.entries, note = await page_skills(connected.wire, limits)
                listing.notes += [note] if note else []
            except Exception as exc:
                listing.notes.append(f"skills/list failed: {connected.explain(exc)}")
    listing.timed_out = scope.cancelled_caught
    return listing


async def discover(
    connections: Connections, registry: Registry, limits: ListingLimits | None = None
) -> DiscoveryReport:
    """List skills and tools of every connected server, in parallel, into ``registry``."""
    limits = limits or ListingLimits()
    report = DiscoveryReport()
    async with anyio.create_task_group() as tg:
        for label, connected in connections.connected.items():
            server_report = ServerReport(label, connected.protocol_version, connected.skills is not None)
            report.servers[label] = server_report
            tg.start_soon(_discover_within_timeout, connected, registry, limits, server_report)
    return report


async def _discover_within_timeout(
    connected: Connected, registry: Registry, limits: ListingLimits, report: ServerReport
) -> None:
    listing = await list_server(connected, limits)
    report.notes.extend(listing.notes)
    if listing.timed_out or connected.failure is not None:
        registry.remove_server(connected.label)
        report.error = connected.failure or (
            f"connected, but listing did not finish within {connected.spec.timeout:g}s (timed out)"
        )
        return
    if listing.tools is not None:
        registry.set_tools(connected.label, listing.tools)
        report.tools = len(listing.tools)
    if listing.entries is not None:
        report.rejected = registry.add_listing(connected.label, listing.entries)
        report.skills = len(listing.entries) - len(report.rejected)
