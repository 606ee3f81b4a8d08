"""Limits at exactly the limit and one past it, reading that stops once a skill is over, and skills
whose paths are prefixes of each other (``pdf`` next to ``pdf-forms``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from skilldeck.errors import NotServedError
from skilldeck.host._wire import SkillsWire
from skilldeck.server import DynamicSkill, SkillRequest, create_server
from skilldeck.server._audience import catalog_for
from skilldeck.server._catalog import Catalog
from skilldeck.serving._policy import Caller, parse_policy
from skilldeck.skill._manifest import MAX_RESOURCES_PER_SKILL, MAX_SKILL_BYTES
from skilldeck.skill._pack import DirectorySource

from .helpers import write_skill

MIB = 1024 * 1024


def _catalog(*roots: Path, dynamic: tuple[DynamicSkill, ...] = ()) -> Catalog:
    loaded = DirectorySource(*roots).load()
    return Catalog(loaded.skills, dynamic, loaded.problems)


def _names(catalog: Catalog, uri: str) -> list[str]:
    return [c.name for c in catalog.directory_children(uri)]


# -- an oversize skill: refused without reading the rest of it ---------------------------------------------


def test_reading_an_oversize_skill_stops_once_it_is_over_the_limit(tmp_path: Path) -> None:
    """Ten 4 MiB files: the skill is over 16 MiB after the fourth, and the fifth is never opened.

    After each big file comes a FIFO; reaching one records a ``special-file`` problem without
    reading anything, so the problems show how far the reader went into the skill.
    """
    folder = write_skill(tmp_path, "heavy")
    chunk = b"x" * (4 * MIB)
    for i in range(10):
        (folder / f"f{i}.bin").write_bytes(chunk)
        os.mkfifo(folder / f"f{i}.pipe")
    catalog = _catalog(tmp_path)
    assert catalog.entries == []
    reached = sorted(Path(p.path or "").name for p in catalog.problems if p.rule == "special-file")
    over = [p for p in catalog.problems if p.rule == "limit-size"]
    assert len(over) == 1
    assert str(folder) in str(over[0])
    # SKILL.md + f0..f3 (16 MiB and a bit) were read; the pipes before f3 were reached, no further.
    assert reached == ["f0.pipe", "f1.pipe", "f2.pipe"]


# -- exactly at the per-skill limits and one past them --------------------------------------------------------


def test_512_files_are_served_and_513_are_refused(tmp_path: Path) -> None:
    at = write_skill(tmp_path / "a", "at-limit")
    past = write_skill(tmp_path / "b", "past-limit")
    for i in range(MAX_RESOURCES_PER_SKILL - 1):  # plus SKILL.md: exactly 512
        (at / f"f{i:03}.txt").write_text("x")
        (past / f"f{i:03}.txt").write_text("x")
    (past / "one-more.txt").write_text("x")
    catalog = _catalog(tmp_path / "a", tmp_path / "b")
    entry = catalog.get("skill://at-limit/SKILL.md")
    assert isinstance(entry.resources, tuple)
    assert len(entry.resources) == MAX_RESOURCES_PER_SKILL
    assert [e.name for e in catalog.entries] == ["at-limit"]
    (problem,) = catalog.problems
    assert problem.rule == "limit-files"
    assert str(past) in str(problem)


def test_16_mib_in_all_is_served_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    at = write_skill(tmp_path / "a", "at-limit")
    past = write_skill(tmp_path / "b", "past-limit")
    (at / "blob.bin").write_bytes(b"\0" * (MAX_SKILL_BYTES - (at / "SKILL.md").stat().st_size))
    (past / "blob.bin").write_bytes(b"\0" * (MAX_SKILL_BYTES + 1 - (past / "SKILL.md").stat().st_size))
    catalog = _catalog(tmp_path / "a", tmp_path / "b")
    entry = catalog.get("skill://at-limit/SKILL.md")
    assert isinstance(entry.resources, tuple)
    assert sum(r.size for r in entry.resources) == MAX_SKILL_BYTES
    (problem,) = catalog.problems
    assert problem.rule == "limit-size"
    assert str(past) in str(problem)


def test_a_file_of_exactly_16_mib_is_not_refused_alone_so_its_skill_is_refused_whole(tmp_path: Path) -> None:
    """Over 16 MiB alone, a file is dropped and its skill served without it; at exactly 16 MiB it is
    a file like any other, and SKILL.md next to it takes the skill over the limit."""
    folder = write_skill(tmp_path, "edge")
    with open(folder / "exact.bin", "wb") as fh:
        fh.truncate(MAX_SKILL_BYTES)
    catalog = _catalog(tmp_path)
    assert catalog.entries == []
    (problem,) = catalog.problems
    assert problem.rule == "limit-size"
    assert problem.path == str(folder)  # the skill, not the file


# -- pages that end exactly on a boundary ---------------------------------------------------------------------


def test_a_listing_that_ends_exactly_on_a_page_boundary_has_no_next_cursor(tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d"):
        write_skill(tmp_path, name)
    catalog = _catalog(tmp_path)
    first, cursor = catalog.list_page(None, 2)
    assert [e.name for e in first] == ["a", "b"]
    assert cursor is not None
    second, cursor = catalog.list_page(cursor, 2)
    assert [e.name for e in second] == ["c", "d"]
    assert cursor is None
    whole, cursor = catalog.list_page(None, 4)
    assert len(whole) == 4
    assert cursor is None
    children = catalog.directory_children("skill://a")
    assert Catalog.page_children(children, None, 1)[1] is None  # one child, page size one


@pytest.mark.anyio
async def test_the_wire_listing_of_exactly_two_pages_ends_without_a_cursor(tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d"):
        write_skill(tmp_path, name)
    server, _ = create_server(tmp_path, page_size=2, directory_page_size=1)
    async with Client(server, mode="auto", cache=None) as client:
        wire = SkillsWire(client)
        first = await wire.list_skills()
        second = await wire.list_skills(first["nextCursor"])
        assert [e["frontmatter"]["name"] for e in second["skills"]] == ["c", "d"]
        assert "nextCursor" not in second
        only = await wire.read_directory("skill://a")
        assert [c["name"] for c in only["resources"]] == ["SKILL.md"]
        assert "nextCursor" not in only


# -- pdf next to pdf-forms ------------------------------------------------------------------------------


def test_a_sibling_whose_name_starts_with_the_folder_name_is_not_its_child(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf", files={"guide.md": "g"})
    write_skill(tmp_path, "pdf-forms", files={"forms/w9.md": "w"})
    catalog = _catalog(tmp_path)
    assert _names(catalog, "skill://pdf") == ["SKILL.md", "guide.md"]
    assert _names(catalog, "skill://pdf-forms") == ["SKILL.md", "forms"]
    assert not catalog.is_directory("skill://pdf/forms")
    with pytest.raises(NotServedError):
        catalog.directory_children("skill://pdf/forms")


def test_dynamic_siblings_are_told_apart(tmp_path: Path) -> None:
    def body(text: str) -> Any:
        return lambda request: text

    pdf = DynamicSkill("pdf", description="PDF tools.", body=body("# pdf"))
    forms = DynamicSkill(
        "pdf-forms",
        description="Fill PDF forms.",
        body=body("# pdf-forms"),
        files=lambda request: {"forms/w9.md": "w9", "forms-index.md": "index"},
    )
    catalog = Catalog((), (pdf, forms))
    found = catalog.dynamic_skill_for("skill://pdf-forms/SKILL.md")
    assert found is not None
    assert found[0] is forms
    assert found[1] == "SKILL.md"
    root = catalog.dynamic_root("skill://pdf-forms")
    assert root is not None
    assert root[0] is forms
    assert catalog.dynamic_skill_for("skill://pdf/forms/w9.md") == (pdf, "forms/w9.md")  # pdf's own (missing) file


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_dynamic_and_static_siblings_over_the_wire(tmp_path: Path, mode: str) -> None:
    write_skill(tmp_path, "pdf", files={"guide.md": "g"})
    write_skill(tmp_path, "pdf-forms", files={"forms/w9.md": "w"})

    def body(request: SkillRequest) -> str:
        return "# generated"

    gen = DynamicSkill("gen", description="Generated.", body=body)
    gen_forms = DynamicSkill(
        "gen-forms", description="Generated forms.", body=body, files=lambda request: {"forms/a.md": "a"}
    )
    server, _ = create_server(tmp_path, gen, gen_forms)
    async with Client(server, mode=mode, cache=None) as client:
        wire = SkillsWire(client)
        pdf = await wire.read_directory("skill://pdf")
        assert [c["name"] for c in pdf["resources"]] == ["SKILL.md", "guide.md"]
        text, _ = await wire.read_bytes("skill://gen-forms/SKILL.md")
        assert "name: gen-forms" in text.decode()
        assert [c["name"] for c in (await wire.read_directory("skill://gen-forms"))["resources"]] == [
            "SKILL.md",
            "forms",
        ]
        # `form` is a prefix of the folder `forms`, not a folder of its own.
        with pytest.raises(MCPError) as info:
            await wire.read_directory("skill://gen-forms/form")
        assert info.value.error.code == -32602
        for missing in ("skill://pdf/forms", "skill://gen/forms"):
            with pytest.raises(MCPError) as info:
                await wire.read_directory(missing)
            assert info.value.error.code == -32602


def test_a_hidden_sibling_does_not_take_files_from_a_visible_skill(tmp_path: Path) -> None:
    """``pdf-forms`` is hidden from users; ``pdf``'s own ``forms/`` folder must stay whole."""
    write_skill(tmp_path, "pdf", files={"forms/guide.md": "g"})
    write_skill(tmp_path, "pdf-forms")
    base = _catalog(tmp_path)
    policy = parse_policy({"skills": {"pdf-forms": {"admit": {"roles": ["admin"]}}}})
    view = catalog_for(base, policy, Caller(roles=frozenset({"user"})))
    assert [e.name for e in view.entries] == ["pdf"]
    entry = view.get("skill://pdf/SKILL.md")
    assert isinstance(entry.resources, tuple)
    assert [r.uri for r in entry.resources] == ["skill://pdf/SKILL.md", "skill://pdf/forms/guide.md"]
    assert view.static_file("skill://pdf/forms/guide.md") is not None
