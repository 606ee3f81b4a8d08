"""Folder listings of a loaded skill come from the held entry, never ahead of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilldeck.errors import SkilldeckError
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.server import DynamicSkill, create_server


@pytest.mark.anyio
async def test_listing_answers_from_the_held_entry(tmp_path: Path) -> None:
    skill = tmp_path / "forms"
    (skill / "templates" / "eu").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: forms\ndescription: Forms.\n---\nUse templates/.\n")
    (skill / "templates" / "a b.md").write_text("a")
    (skill / "templates" / "eu" / "x.md").write_text("x")
    server, ext = create_server(tmp_path)
    async with Host([ServerSpec("docs", InProcessServer(server))]) as host:
        loaded = await host.load(host.registry.resolve("docs/forms"))
        (skill / "templates" / "late.md").write_text("added after the listing")
        await ext.reload()  # the server now serves late.md; the held entry does not list it
        children = await host.list_directory(loaded, "templates")
        assert [(c["name"], c["mimeType"]) for c in children] == [
            ("a b.md", "text/markdown"),
            ("eu", "inode/directory"),
        ]
        assert children[0]["uri"] == "skill://forms/templates/a%20b.md"
        top = {c["name"] for c in await host.list_directory(loaded)}
        assert top == {"SKILL.md", "templates"}


@pytest.mark.anyio
async def test_dynamic_skill_folders_are_read_live_from_a_directory_read_server() -> None:
    daily = DynamicSkill(
        "daily", description="Daily.", body=lambda r: "# d\n", files=lambda r: {"data/today.json": "{}"}
    )
    server, _ = create_server(daily)
    async with Host([ServerSpec("gen", InProcessServer(server))], allow_dynamic=True) as host:
        loaded = await host.load(host.registry.resolve("gen/daily"))
        assert not loaded.verified
        assert [c["name"] for c in await host.list_directory(loaded, "data")] == ["today.json"]
        host.connections.connected["gen"].skills = {}  # as if the server had not declared directoryRead
        with pytest.raises(SkilldeckError, match="directoryRead"):
            await host.list_directory(loaded, "data")
