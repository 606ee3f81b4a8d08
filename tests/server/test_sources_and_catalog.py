"""Loading skill folders (adversarial cases included) and the catalog built from them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from skilldeck.errors import NotServedError, SourceError
from skilldeck.server._catalog import Catalog
from skilldeck.server._dynamic import DynamicSkill
from skilldeck.skill import _pack
from skilldeck.skill._manifest import MAX_SKILL_BYTES, digest_of
from skilldeck.skill._pack import DirectorySource, load_all

from .helpers import write_skill


def _catalog(*roots: Path, **kwargs: object) -> Catalog:
    loaded = DirectorySource(*roots, **kwargs).load()  # type: ignore[arg-type]
    return Catalog(loaded.skills, (), loaded.problems)


def test_examples_load_without_problems(examples_dir: Path) -> None:
    catalog = _catalog(examples_dir)
    assert catalog.problems == []
    uris = [e.uri for e in catalog.entries]
    assert "skill://acme/billing/refunds/SKILL.md" in uris
    assert "skill://code-review/security-review/SKILL.md" in uris  # nested skills are published flat
    enclosing = catalog.get("skill://code-review/SKILL.md")
    assert not isinstance(enclosing.resources, str)
    # Completeness: the enclosing skill lists the nested skill's files too.
    assert "skill://code-review/security-review/SKILL.md" in {r.uri for r in enclosing.resources}


def test_manifest_matches_bytes_snapshotted_at_load(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "alpha", files={"notes.md": "v1\n"})
    catalog = _catalog(tmp_path)
    (folder / "notes.md").write_text("changed on disk\n")
    served = catalog.static_file("skill://alpha/notes.md")
    assert served is not None
    assert served.data == b"v1\n"
    entry = catalog.get("skill://alpha/SKILL.md")
    assert not isinstance(entry.resources, str)
    assert {r.uri: r.digest for r in entry.resources}["skill://alpha/notes.md"] == digest_of(b"v1\n")


def test_root_that_is_itself_a_skill(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "solo")
    catalog = _catalog(folder)
    assert [e.uri for e in catalog.entries] == ["skill://solo/SKILL.md"]


def test_prefix_is_prepended(tmp_path: Path) -> None:
    write_skill(tmp_path, "billing/refunds")
    catalog = _catalog(tmp_path, prefix="acme")
    assert [e.uri for e in catalog.entries] == ["skill://acme/billing/refunds/SKILL.md"]


def test_bad_skills_are_refused_with_path_and_rule_and_others_still_served(tmp_path: Path) -> None:
    write_skill(tmp_path, "good")
    bad_name = tmp_path / "mismatch"
    bad_name.mkdir()
    (bad_name / "SKILL.md").write_text("---\nname: other-name\ndescription: d\n---\n")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: broken\ndescription: [unclosed\n---\n")
    nofm = tmp_path / "nofm"
    nofm.mkdir()
    (nofm / "SKILL.md").write_text("# just markdown\n")
    catalog = _catalog(tmp_path)
    assert [e.uri for e in catalog.entries] == ["skill://good/SKILL.md"]
    by_rule = {p.rule: str(p) for p in catalog.problems}
    assert "name-directory" in by_rule
    assert str(bad_name / "SKILL.md") in by_rule["name-directory"]
    assert "must equal its folder name 'mismatch'" in by_rule["name-directory"]
    assert "yaml-syntax" in by_rule
    assert str(broken / "SKILL.md") in by_rule["yaml-syntax"]
    assert "frontmatter-missing" in by_rule
    assert str(nofm / "SKILL.md") in by_rule["frontmatter-missing"]


def test_oversize_skill_is_refused_naming_skill_and_limit(tmp_path: Path) -> None:
    write_skill(tmp_path, "small")
    big = write_skill(tmp_path, "big")
    chunk = b"x" * (4 * 1024 * 1024)
    for i in range(5):  # 20 MiB in files of 4 MiB, each under the per-file check
        (big / f"part{i}.bin").write_bytes(chunk)
    catalog = _catalog(tmp_path)
    assert [e.uri for e in catalog.entries] == ["skill://small/SKILL.md"]
    (problem,) = catalog.problems
    assert problem.rule == "limit-size"
    assert str(big) in str(problem)
    assert "16 MiB" in str(problem)


def test_too_many_files_is_refused(tmp_path: Path) -> None:
    many = write_skill(tmp_path, "many")
    for i in range(512):
        (many / f"f{i:03}.txt").write_text("x")
    (problem,) = _catalog(tmp_path).problems
    assert problem.rule == "limit-files"
    assert "512" in str(problem)


def test_single_file_over_limit_is_refused_before_reading(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "sparse")
    with open(folder / "huge.bin", "wb") as fh:  # sparse: size without the bytes
        fh.truncate(MAX_SKILL_BYTES + 1)
    catalog = _catalog(tmp_path)
    assert catalog.static_file("skill://sparse/huge.bin") is None
    assert any(p.rule == "limit-size" and "huge.bin" in str(p) for p in catalog.problems)


def test_symlink_escaping_the_root_is_refused_and_leaks_nothing(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET")
    root = tmp_path / "skills"
    folder = write_skill(root, "leaky", files={"ok.md": "fine"})
    os.symlink(secret, folder / "secret.txt")
    os.symlink(secret.parent, folder / "outdir")
    catalog = _catalog(root)
    entry = catalog.get("skill://leaky/SKILL.md")
    assert not isinstance(entry.resources, str)
    assert {r.uri for r in entry.resources} == {"skill://leaky/SKILL.md", "skill://leaky/ok.md"}
    assert catalog.static_file("skill://leaky/secret.txt") is None
    assert all(b"TOP SECRET" not in f.data for f in catalog.files)
    rules = {p.rule for p in catalog.problems}
    assert {"symlink-escape", "symlink-folder"} <= rules


def test_symlink_inside_the_root_is_served(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "linked", files={"real.md": "real"})
    os.symlink(folder / "real.md", folder / "alias.md")
    catalog = _catalog(tmp_path)
    served = catalog.static_file("skill://linked/alias.md")
    assert served is not None
    assert served.data == b"real"


def test_special_and_dangling_files_are_refused(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "odd")
    os.mkfifo(folder / "pipe")
    os.symlink(folder / "missing.md", folder / "dangling.md")
    catalog = _catalog(tmp_path)
    assert catalog.get("skill://odd/SKILL.md")
    rules = {p.rule: str(p) for p in catalog.problems}
    assert "special-file" in rules
    assert "pipe" in rules["special-file"]
    assert "unreadable" in rules
    assert "dangling.md" in rules["unreadable"]


def test_missing_root_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="is not a folder"):
        DirectorySource(tmp_path / "nope")


def test_same_skill_path_from_two_roots_keeps_the_first(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", "dup", description="first")
    write_skill(tmp_path / "b", "dup", description="second")
    catalog = _catalog(tmp_path / "a", tmp_path / "b")
    assert catalog.get("skill://dup/SKILL.md").description == "first"
    assert [p.rule for p in catalog.problems] == ["duplicate-path"]


def test_a_duplicate_skill_path_names_where_the_kept_one_came_from_in_every_merge(tmp_path: Path) -> None:
    first = write_skill(tmp_path / "a", "dup")
    second = write_skill(tmp_path / "b", "dup")
    merged = load_all([DirectorySource(tmp_path / "a"), DirectorySource(tmp_path / "b")])
    roots = DirectorySource(tmp_path / "a", tmp_path / "b").load()
    catalog = Catalog([*roots.skills, *merged.skills])
    for problems in (merged.problems, roots.problems, catalog.problems):
        (problem,) = problems
        assert problem.rule == "duplicate-path"
        assert f"'dup' is already served from {first}" in str(problem)
    assert str(second) in str(merged.problems[0])


def test_ignored_names_are_not_files(tmp_path: Path) -> None:
    write_skill(tmp_path, "clean", files={".git/config": "x", "__pycache__/a.pyc": b"\0", "keep.md": "k"})
    entry = _catalog(tmp_path).get("skill://clean/SKILL.md")
    assert not isinstance(entry.resources, str)
    assert {r.uri for r in entry.resources} == {"skill://clean/SKILL.md", "skill://clean/keep.md"}


def test_pagination_is_stable_and_rejects_forged_cursors(tmp_path: Path) -> None:
    for i in range(7):
        write_skill(tmp_path, f"s{i}")
    catalog = _catalog(tmp_path)
    seen, cursor = [], None
    while True:
        page, cursor = catalog.list_page(cursor, 3)
        assert len(page) <= 3
        seen.extend(e.uri for e in page)
        if cursor is None:
            break
    assert seen == sorted(seen)
    assert len(seen) == len(set(seen)) == 7
    with pytest.raises(NotServedError, match="invalid cursor"):
        catalog.list_page("!!not-base64!!", 3)


def test_only_cursors_this_catalog_hands_out_are_taken(tmp_path: Path) -> None:
    import base64

    for i in range(5):
        write_skill(tmp_path, f"s{i}")
    catalog = _catalog(tmp_path)
    _, cursor = catalog.list_page(None, 2)
    assert cursor is not None
    assert [e.name for e in catalog.list_page(cursor, 2)[0]] == ["s2", "s3"]
    bare = base64.urlsafe_b64encode(b"skill://s1/SKILL.md").decode()  # a position, but not in our format
    for foreign in [bare, base64.b64encode(b"foreign").decode(), cursor[:4] + base64.b64encode(b"x").decode()]:
        with pytest.raises(NotServedError, match="invalid cursor"):
            catalog.list_page(foreign, 2)
        with pytest.raises(NotServedError, match="invalid cursor"):
            Catalog.page_children(catalog.directory_children("skill://s1"), foreign, 1)


def test_unknown_uris_are_echoed_cut_short(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    catalog = _catalog(tmp_path)
    long_uri = "skill://" + "x" * 10_000
    for call in (lambda: catalog.get(long_uri), lambda: catalog.directory_children(long_uri)):
        with pytest.raises(NotServedError) as info:
            call()
        assert len(str(info.value)) < 250
        assert info.value.uri is not None
        assert len(info.value.uri) == 200
        assert info.value.uri.endswith("\u2026")


def test_directories_cover_prefixes_skill_roots_and_subfolders(examples_dir: Path) -> None:
    catalog = _catalog(examples_dir)
    top = {c.name: c.mime_type for c in catalog.directory_children("skill://acme")}
    assert top == {"billing": "inode/directory"}
    refunds = {c.name: c.mime_type for c in catalog.directory_children("skill://acme/billing/refunds")}
    assert refunds["examples"] == "inode/directory"
    assert refunds["SKILL.md"] == "text/markdown"
    regional = catalog.directory_children("skill://pdf-forms/templates")
    assert {c.uri for c in regional} >= {
        "skill://pdf-forms/templates/regional",
        "skill://pdf-forms/templates/invoice.md",
    }
    with pytest.raises(NotServedError, match="is not a directory resource"):
        catalog.directory_children("skill://pdf-forms/SKILL.md")
    with pytest.raises(NotServedError, match="No directory"):
        catalog.directory_children("skill://pdf-forms/nope")


def test_diff_reports_added_removed_changed(tmp_path: Path) -> None:
    write_skill(tmp_path, "keep")
    write_skill(tmp_path, "change")
    write_skill(tmp_path, "gone")
    before = _catalog(tmp_path)
    (tmp_path / "change" / "new.md").write_text("new file")
    (tmp_path / "gone" / "SKILL.md").unlink()
    write_skill(tmp_path, "fresh")
    diff = before.diff(_catalog(tmp_path))
    assert diff.added == ("skill://fresh/SKILL.md",)
    assert diff.removed == ("skill://gone/SKILL.md",)
    assert diff.changed == ("skill://change/SKILL.md",)


def test_dynamic_skill_entry_and_duplicate_paths(tmp_path: Path) -> None:
    write_skill(tmp_path, "reports/daily")
    loaded = DirectorySource(tmp_path).load()
    dyn = DynamicSkill("reports/daily", description="generated", body=lambda r: "x")
    other = DynamicSkill("reports/weekly", description="generated", body=lambda r: "x")
    catalog = Catalog(loaded.skills, [dyn, other])
    assert catalog.get("skill://reports/weekly/SKILL.md").resources == "dynamic"
    assert [p.rule for p in catalog.problems] == ["duplicate-path"]


def test_dynamic_skill_validates_its_frontmatter() -> None:
    with pytest.raises(SourceError, match="lowercase"):
        DynamicSkill("reports/Daily", description="x", body=lambda r: "")


def test_a_folder_is_the_run_of_uris_under_it_and_nothing_else(tmp_path: Path) -> None:
    """Folders are read from the sorted file URIs: a sibling whose name extends another's (``a/b``,
    ``a/b-c``; ``d``, ``d.e``, ``d e``: ``-``, ``.`` and ``%`` sort before ``/``) stays out of its run; a folder spelled
    other than canonically, with a trailing slash, the scheme alone, or a file is no folder; a
    generated skill's root is a folder child whose SKILL.md is not listed as a file."""
    write_skill(tmp_path, "a/b", files={"x y.md": "12345"})
    write_skill(tmp_path, "a/b-c")
    write_skill(tmp_path, "s", files={"d/x.md": "x", "d.e/y.md": "y", "d-f/z.md": "z", "d e/w.md": "w"})
    loaded = DirectorySource(tmp_path).load()
    catalog = Catalog(loaded.skills, [DynamicSkill("a/gen", description="generated", body=lambda r: "x")])
    listed = {c.name: (c.uri, c.mime_type, c.size) for c in catalog.directory_children("skill://a/b")}
    assert listed == {
        "SKILL.md": ("skill://a/b/SKILL.md", "text/markdown", len((tmp_path / "a/b/SKILL.md").read_bytes())),
        "x y.md": ("skill://a/b/x%20y.md", "text/markdown", 5),
    }
    assert [c.name for c in catalog.directory_children("skill://a")] == ["b", "b-c", "gen"]
    assert [c.name for c in catalog.directory_children("skill://s/d")] == ["x.md"]
    assert [c.uri for c in catalog.directory_children("skill://s/d%20e")] == ["skill://s/d%20e/w.md"]
    assert {c.mime_type for c in catalog.directory_children("skill://a")} == {"inode/directory"}
    assert catalog.directory_children("skill://a/gen") == []  # generated: its SKILL.md is read, not listed
    for not_a_folder in ("skill://%61/b", "skill://a/", "skill://", "skill:/", "skill://a/b/SKILL.md", "skill://a/b-"):
        assert not catalog.is_directory(not_a_folder), not_a_folder
        with pytest.raises(NotServedError):
            catalog.directory_children(not_a_folder)
    assert catalog.is_directory("skill://a/b")
    assert catalog.is_directory("skill://a/gen")


def test_a_root_that_opens_but_cannot_be_listed_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_skill(tmp_path / "root", "s0")
    write_skill(tmp_path / "other", "s1")
    real = _pack.os.scandir

    def refusing(fd: Any) -> Any:
        if os.path.samefile(f"/proc/self/fd/{fd}", tmp_path / "root"):
            raise PermissionError(13, "Permission denied")
        return real(fd)

    monkeypatch.setattr(_pack.os, "scandir", refusing)
    result = DirectorySource(tmp_path / "root", tmp_path / "other").load()
    assert [s.skill_path for s in result.skills] == ["s1"]  # the other root is still served
    (problem,) = result.problems
    assert problem.rule == "unreadable"
    assert str(problem) == f"{tmp_path / 'root'}: folder cannot be listed (Permission denied)"
