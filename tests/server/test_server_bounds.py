"""What an outsider can make the server spend: work per resources/list page, renders per locale hint,
legacy sessions. Each test drives a real server (in-process or over HTTP on loopback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from skilldeck.server import DirectorySource, SkillsExtension
from skilldeck.server.policy import Policy

from .helpers import write_skill

ERAS = ["auto", "legacy"]


class CountingExtension(SkillsExtension):
    """The extension, counting the ``resources/list`` entries it builds for ``SKILL.md`` files."""

    built: ClassVar[list[str]] = []

    @staticmethod
    def _skill_md_resource(uri: str, frontmatter: Any) -> dict[str, Any]:
        CountingExtension.built.append(uri)
        return SkillsExtension._skill_md_resource(uri, frontmatter)


def counting_server(root: Path, **options: Any) -> tuple[MCPServer[Any], CountingExtension]:
    ext = CountingExtension(DirectorySource(root), **options)
    server: MCPServer[Any] = MCPServer(
        "bounds", extensions=[ext], middleware=[ext.middleware], subscriptions=ext.subscriptions
    )
    return server, ext


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("policy", [None, Policy()], ids=["no-policy", "policy"])
async def test_resources_list_pages_do_not_rebuild_the_whole_listing(
    tmp_path: Path, mode: str, policy: Policy | None
) -> None:
    for i in range(300):
        write_skill(tmp_path, f"s{i:03d}", files={"notes.md": "n"})
    server, ext = counting_server(tmp_path, directory_page_size=10, policy=policy)
    async with Client(server, mode=mode, cache=None) as client:
        first = await client.list_resources()
        assert len(first.resources) == 10
        cursor = first.next_cursor
        seen = [str(r.uri) for r in first.resources]
        for _ in range(5):
            CountingExtension.built.clear()
            page = await client.list_resources(cursor=cursor)
            # a page builds its own entries (5 SKILL.md among 10 files), not all 300 skills' again
            assert len(CountingExtension.built) <= 10
            seen += [str(r.uri) for r in page.resources]
            cursor = page.next_cursor
        assert seen == sorted(seen)
        assert len(set(seen)) == 60
        catalog = ext.catalog
        assert catalog.listing_keys() is catalog.listing_keys()  # sorted once per snapshot, then kept
        write_skill(tmp_path, "s004a", files={"new.md": "n"})
        await ext.reload()
        second = await client.list_resources(cursor=first.next_cursor)
        assert str(second.resources[0].uri) == "skill://s004a/SKILL.md"  # the new snapshot's listing
