"""The host's listing caps at exactly the cap (read whole, no note) and one past it (stopped, reported)."""

from __future__ import annotations

from typing import Any

import pytest

from skilldeck.host import ListingLimits

from .hostile import HostileServer, Skill, open_host


def _pager(pages: int, per_page: int, asked: list[str | None]) -> Any:
    """A listing of ``pages`` pages of ``per_page`` entries; the last page has no ``nextCursor``."""

    def page(cursor: str | None) -> dict[str, Any]:
        asked.append(cursor)
        n = len(asked)
        entries = [Skill(f"p{n}/s{n}-{i}").entry() for i in range(per_page)]
        return {"skills": entries, **({"nextCursor": f"c{n}"} if n < pages else {})}

    return page


@pytest.mark.anyio
@pytest.mark.parametrize(("pages", "note"), [(5, None), (6, "still had more after 5 pages (the cap); stopped")])
async def test_pages_per_listing_at_the_cap_and_one_past_it(pages: int, note: str | None) -> None:
    server = HostileServer()
    asked: list[str | None] = []
    server.pager = _pager(pages, 1, asked)
    async with open_host(("paged", server), limits=ListingLimits(max_pages=5)) as host:
        report = host.report.servers["paged"]
        assert asked == [None, "c1", "c2", "c3", "c4"]  # five pages asked for, either way
        assert report.skills == 5
        assert len(host.registry.skills) == 5
        assert report.notes == ([f"skills/list {note}"] if note else [])


@pytest.mark.anyio
@pytest.mark.parametrize(("entries", "note"), [(6, None), (7, "skills/list stopped at the cap of 6 entries")])
async def test_entries_per_server_at_the_cap_and_one_past_it(entries: int, note: str | None) -> None:
    server = HostileServer(entries=[Skill(f"many/s{i}").entry() for i in range(entries)])
    async with open_host(("many", server), limits=ListingLimits(max_entries=6)) as host:
        report = host.report.servers["many"]
        assert [r.name for r in host.registry.skills] == [f"s{i}" for i in range(6)]
        assert report.notes == ([note] if note else [])


@pytest.mark.anyio
async def test_entry_cap_reached_exactly_on_the_last_of_several_pages_is_no_truncation() -> None:
    server = HostileServer()
    asked: list[str | None] = []
    server.pager = _pager(3, 2, asked)
    async with open_host(("paged", server), limits=ListingLimits(max_pages=3, max_entries=6)) as host:
        assert len(asked) == 3
        assert len(host.registry.skills) == 6
        assert host.report.servers["paged"].notes == []
