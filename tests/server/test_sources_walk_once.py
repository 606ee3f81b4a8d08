"""A load lists each folder of a pack once, and says what it refuses as it did when it listed them twice.

The root walk that finds the skills and each skill's read pass through the same folders; the first to
list one keeps the listing for the second (on a large pack, listings were most of the load's system
calls), and only until then. These tests pin the count, that the refusals and messages did not change, and
the string helpers that replaced ``pathlib`` and ``quote`` on the hot path.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from skilldeck.skill import _beneath, _pack, _uri
from skilldeck.skill._beneath import Root, read_at_most
from skilldeck.skill._pack import DirectorySource

from .helpers import write_skill


def _count_listings(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = os.scandir

    def counting(path: Any = ".") -> Any:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(_pack.os, "scandir", counting)
    return calls


def test_each_folder_is_listed_once_per_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(5):
        write_skill(tmp_path, f"team/s{i}", files={"references/guide.md": "g", "assets/deep/x.txt": "x"})
    write_skill(tmp_path, "team/s0/nested", files={"notes.md": "n"})  # a skill inside another's folder
    folders = sum(1 for _ in tmp_path.rglob("*") if _.is_dir()) + 1  # the root too
    calls = _count_listings(monkeypatch)
    result = DirectorySource(tmp_path).load()
    listed = len(calls)
    assert sorted(s.skill_path for s in result.skills) == sorted([*(f"team/s{i}" for i in range(5)), "team/s0/nested"])
    assert listed == folders + 1  # the nested skill's own folder twice: for s0, and for itself
    nested = next(s for s in result.skills if s.skill_path == "team/s0/nested")
    outer = next(s for s in result.skills if s.skill_path == "team/s0")
    assert set(nested.files) == {"SKILL.md", "notes.md"}
    assert {"nested/SKILL.md", "nested/notes.md", "references/guide.md", "assets/deep/x.txt"} <= set(outer.files)


def test_a_second_load_lists_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listings are kept for one load only: a file added between loads is served by the next."""
    folder = write_skill(tmp_path, "one", files={"a.md": "a"})
    source = DirectorySource(tmp_path)
    assert set(source.load().skills[0].files) == {"SKILL.md", "a.md"}
    (folder / "b.md").write_text("b")
    calls = _count_listings(monkeypatch)
    assert set(source.load().skills[0].files) == {"SKILL.md", "a.md", "b.md"}
    assert len(calls) == 2


def test_a_symlinked_folder_in_a_skill_is_refused_once(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "skills", "linked", files={"ok.md": "ok"})
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", folder / "docs")
    result = DirectorySource(tmp_path / "skills").load()
    refused = [(p.rule, p.path) for p in result.problems]
    assert refused == [("symlink-folder", str(folder / "docs"))]
    assert set(result.skills[0].files) == {"SKILL.md", "ok.md"}


def test_a_listing_that_failed_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The skill's read lists ``refs`` first and fails: said once, its file not served; the root walk lists it again."""
    write_skill(tmp_path, "one", files={"refs/a.md": "a"})
    real = os.scandir
    refs: list[str] = []

    def fail_first_refs(path: Any = ".") -> Any:
        if os.listdir(path) == ["a.md"]:
            refs.append("failed" if not refs else "listed")
            if refs == ["failed"]:
                raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(_pack.os, "scandir", fail_first_refs)
    result = DirectorySource(tmp_path).load()
    assert refs == ["failed", "listed"]
    assert set(result.skills[0].files) == {"SKILL.md"}
    assert [(p.rule, p.path) for p in result.problems] == [("unreadable", str(tmp_path / "one" / "refs"))]


@pytest.mark.parametrize("skills", [10, 40])
def test_listings_are_held_only_between_the_two_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skills: int
) -> None:
    """However many skills, only a few listings are held at any moment: none waits for the whole pack's walk."""
    for i in range(skills):
        write_skill(tmp_path, f"s{i:03d}", files={"references/guide.md": "g", "assets/x.txt": "x"})
    held: list[int] = []
    real = DirectorySource._list

    def watching(self: DirectorySource, ctx: Root, *args: Any) -> Any:
        held.append(len(ctx.listings))
        return real(self, ctx, *args)

    monkeypatch.setattr(DirectorySource, "_list", watching)
    result = DirectorySource(tmp_path).load()
    assert len(result.skills) == skills
    assert max(held) <= 3  # the root's, and at most one skill's folders not yet passed by the root walk


@pytest.mark.parametrize("root", [".", "/", "//", "skills", "a/b", "/abs/path", "./x/../y", "trailing/"])
def test_shown_path_is_what_pathlib_would_print(root: str) -> None:
    ctx = Root(fd=-1, path=Path(root), shown=str(Path(root)), name="x", absolute=())
    for parts in [(), ("one",), ("one", "two"), ("a b", "SKILL.md")]:
        assert ctx.shown_path(*parts) == str(Path(root).joinpath(*parts))


def test_encoding_a_path_is_quote_per_segment() -> None:
    """The unchanged-path shortcut gives exactly what quoting each segment gives."""
    rng = random.Random(5)
    alphabet = "aZ09-._~!$&'()*+,;=/ #%?\u00e9\u65e5:@[]"
    paths = ["skill-00001/SKILL.md", "acme/billing/refunds", "a/b c", "caf\u00e9/x", "", "/"]
    paths += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) for _ in range(2_000)]
    for path in paths:
        assert _uri._encode_path(path) == "/".join(quote(s, safe=_uri._SAFE) for s in path.split("/")), path


@pytest.mark.parametrize("first", [1, 5, 6, 7, 1 << 20])
def test_reading_a_file_does_not_depend_on_the_size_first_asked(tmp_path: Path, first: int) -> None:
    """``first`` is fstat's size plus one; a file that grew since (or a wrong size) is still read to its end."""
    path = tmp_path / "f"
    path.write_bytes(b"x" * 5 + b"y" * 3000)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_at_most(fd, 10_000, first=first) == b"x" * 5 + b"y" * 3000
        os.lseek(fd, 0, os.SEEK_SET)
        assert read_at_most(fd, 7, first=first) == b"xxxxxyy"  # the limit still bounds it
    finally:
        os.close(fd)


def test_strings_every_skill_repeats_are_held_once(tmp_path: Path) -> None:
    """File names, paths in a skill and frontmatter keys are one string each, and a file's URI is its manifest's."""
    for name in ("one", "two"):
        write_skill(tmp_path, name, files={"references/guide.md": "g"})
    one, two = DirectorySource(tmp_path).load().skills
    assert [a is b for a, b in zip(one.files, two.files, strict=True)] == [True, True]
    assert [a is b for a, b in zip(one.entry.frontmatter, two.entry.frontmatter, strict=True)] == [True, True]
    pack = _pack.Pack(_pack.LoadResult(skills=[one, two]))
    assert not isinstance(one.entry.resources, str)
    for resource in one.entry.resources:
        found = pack.static_file(resource.uri)
        assert found is not None
        assert found.uri is resource.uri


def test_a_file_of_the_size_fstat_gave_is_read_with_one_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A short read ends a regular file: no second read to learn that it ended (one system call per file saved)."""
    path = tmp_path / "f"
    path.write_bytes(b"z" * 3000)
    reads: list[int] = []
    real = os.read

    def counting(fd: int, n: int) -> bytes:
        reads.append(n)
        return real(fd, n)

    monkeypatch.setattr(_pack.os, "read", counting)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_at_most(fd, 10_000, first=3001) == b"z" * 3000
        assert reads == [3001]
        reads.clear()
        os.lseek(fd, 0, os.SEEK_SET)
        assert (
            read_at_most(fd, 10_000, first=3000) == b"z" * 3000
        )  # the size asked exactly: one more read finds the end
        assert reads == [3000, 10_000 - 3000]  # the rest the limit allows
    finally:
        os.close(fd)


def _root_of(path: Path) -> Root:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    parts = Path(os.path.abspath(path)).parts
    return Root(fd=fd, path=path, shown=str(path), name=path.name, absolute=(parts,))


def test_a_file_the_listing_saw_plain_then_swapped_for_a_symlink_out_is_refused(tmp_path: Path) -> None:
    """The listing's word that a name is a regular file skips the lstat, never the symlink check: the open
    with O_NOFOLLOW fails on the link swapped in since, and the link is resolved, and refused, as before."""
    root = tmp_path / "skills"
    root.mkdir()
    (tmp_path / "secret").write_text("s")
    os.symlink(tmp_path / "secret", root / "guide.md")  # was a plain file when listed
    ctx = _root_of(root)
    try:
        with pytest.raises(_beneath._Escape):
            _beneath.open_beneath(ctx, ctx.fd, (), "guide.md", plain=True)
        problems: list[Any] = []
        assert _pack.DirectorySource._read_file(ctx, ctx.fd, (), "guide.md", "guide.md", problems, plain=True) is None
        assert [p.rule for p in problems] == ["symlink-escape"]
    finally:
        os.close(ctx.fd)


def test_a_file_the_listing_saw_plain_then_swapped_for_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "guide.md")
    ctx = _root_of(tmp_path)
    try:
        problems: list[Any] = []
        assert _pack.DirectorySource._read_file(ctx, ctx.fd, (), "guide.md", "guide.md", problems, plain=True) is None
        assert [p.rule for p in problems] == ["special-file"]
    finally:
        os.close(ctx.fd)


def test_a_root_is_closed_and_its_listings_dropped_when_its_block_ends_even_by_an_error(tmp_path: Path) -> None:
    """The one place a root's descriptor is opened for a load (this process's or a worker's) closes it."""
    (tmp_path / "link").symlink_to(tmp_path)
    seen: list[Root] = []

    def use_and_fail() -> None:
        with Root.open(tmp_path / "link") as root:
            seen.append(root)
            assert os.path.samefile(f"/proc/self/fd/{root.fd}", tmp_path)  # the configured path may be a link
            assert (root.name, root.shown) == (tmp_path.name, str(tmp_path / "link"))
            root.listings[()] = ([], {}, ())
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        use_and_fail()
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(seen[0].fd)  # closed, not left open for the process's life
    assert seen[0].listings == {}
