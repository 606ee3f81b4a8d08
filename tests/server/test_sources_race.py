"""Folders swapped for symlinks while a load runs: no byte from outside the root is ever published.

The attacker can write inside the skills root (a shared checkout, an upload folder) but not read
the secret; the server can. Swapping a skill sub-folder for a symlink to a folder outside the root
between the walk and the read must not publish the secret, whatever the interleaving.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skilldeck.skill._pack import MAX_DEPTH, DirectorySource, LoadResult

from .helpers import write_skill

SECRET = b"root:x:0:0:TOP-SECRET-OUTSIDE-THE-ROOT"
HARMLESS = b"harmless reference\n"


def _pack(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A root with skill ``team/leaky`` holding ``refs/passwd``; outside it, folders of the same shape with secrets."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_bytes(SECRET)
    (outside / "SKILL.md").write_bytes(b"---\nname: leaky\ndescription: " + SECRET + b"\n---\n")
    decoy = tmp_path / "elsewhere" / "leaky"  # the shape of the skill folder, outside the root
    (decoy / "refs").mkdir(parents=True)
    (decoy / "refs" / "passwd").write_bytes(SECRET)
    (decoy / "SKILL.md").write_bytes((outside / "SKILL.md").read_bytes())
    root = tmp_path / "skills"
    folder = write_skill(root, "team/leaky", files={"refs/passwd": HARMLESS, "refs/more/notes.md": "notes\n"})
    return root, folder, outside


def _published(result: LoadResult) -> list[bytes]:
    return [data for skill in result.skills for data in skill.files.values()]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


def _swap_to_symlink(folder: Path, outside: Path) -> Path:
    hold = folder.with_name(folder.name + ".hold")
    os.rename(folder, hold)
    os.symlink(outside, folder)
    return hold


def _swap_back(folder: Path, hold: Path) -> None:
    os.unlink(folder)
    os.rename(hold, folder)


@pytest.mark.parametrize("level", ["refs", "skill", "category"])
def test_folder_swapped_for_symlink_between_walk_and_read_leaks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    """Deterministic: the swap happens right after the walk reports ``refs/passwd`` and before it is read."""
    root, skill_folder, outside = _pack(tmp_path)
    target = {"refs": skill_folder / "refs", "skill": skill_folder, "category": skill_folder.parent}[level]
    # Each decoy has the shape of what it replaces, so the rest of the load carries on through it.
    decoy = {"refs": outside, "skill": tmp_path / "elsewhere" / "leaky", "category": tmp_path / "elsewhere"}[level]
    original = DirectorySource._walk_files
    swapped: list[Path] = []

    def walk_then_swap(self: DirectorySource, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for item in original(self, *args, **kwargs):
            if item[0] == "refs/passwd" and not swapped:
                swapped.append(_swap_to_symlink(target, decoy))
            yield item

    monkeypatch.setattr(DirectorySource, "_walk_files", walk_then_swap)
    result = DirectorySource(root).load()
    assert swapped, "the walk never reported refs/passwd"
    assert all(SECRET not in data for data in _published(result))
    served = {rel: data for skill in result.skills for rel, data in skill.files.items()}
    # Read through the descriptor opened during the walk: the file that was inside the root.
    assert served.get("refs/passwd", HARMLESS) == HARMLESS


def test_swapping_thread_never_publishes_a_byte_from_outside_in_300_loads(tmp_path: Path) -> None:
    """A thread keeps swapping ``refs`` (and the skill folder) for symlinks to an outside folder while loads run."""
    root, skill_folder, outside = _pack(tmp_path)
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        swaps_to = [(skill_folder / "refs", outside), (skill_folder, tmp_path / "elsewhere" / "leaky")]
        while not stop.is_set():
            for target, decoy in swaps_to:
                hold = _swap_to_symlink(target, decoy)
                os.sched_yield()
                _swap_back(target, hold)
                swaps += 1
                time.sleep(0)  # let the loads run with the real folder in place too, even on a busy machine

    source = DirectorySource(root)
    gc.collect()  # close what earlier tests left for the collector, so it is not closed mid-test
    fds_before = _open_fds()
    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    leaks = 0
    loads_with_passwd = 0
    try:
        # 300 loads, and on until one saw the real folder (a busy machine can starve the loads of it),
        # within a deadline
        loads = 0
        deadline = time.monotonic() + 120
        while loads < 300 or (loads_with_passwd == 0 and time.monotonic() < deadline):
            result = source.load()
            loads += 1
            leaks += sum(SECRET in data for data in _published(result))
            loads_with_passwd += any("refs/passwd" in s.files for s in result.skills)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert swaps > 0
    assert loads_with_passwd > 0, "the race never let a load see the folder; the test proves nothing"
    assert leaks == 0, f"{leaks} files with bytes from outside the root were published"
    # every descriptor opened on the way was closed, refusals included (another test's leftover may close meanwhile)
    assert _open_fds() <= fds_before


def test_in_root_symlinks_are_resolved_inside_the_root_and_escapes_refused(tmp_path: Path) -> None:
    """Symlinked files keep working when they stay inside (relative, absolute, through a linked folder)."""
    root = tmp_path / "skills"
    folder = write_skill(root, "linked", files={"docs/real.md": "real", "docs/sub/deep.md": "deep"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_bytes(SECRET)
    os.symlink("docs", folder / "docs-link")  # a symlinked folder: not walked, but usable inside a file link
    links = {
        "relative.md": "docs/real.md",
        "absolute.md": str(folder / "docs" / "real.md"),
        "resolved.md": os.path.realpath(folder / "docs" / "sub" / "deep.md"),
        "through-folder.md": "docs-link/sub/deep.md",
        "chain.md": "relative.md",
        "up-and-back.md": "../linked/docs/real.md",
        "escape-dots.md": "../../outside/secret.md",
        "escape-absolute.md": str(outside / "secret.md"),
        "escape-via-root-name.md": "../../skills/../outside/secret.md",
        "loop.md": "loop.md",
    }
    for name, target in links.items():
        os.symlink(target, folder / name)
    result = DirectorySource(root).load()
    (skill,) = result.skills
    assert skill.files["relative.md"] == b"real"
    assert skill.files["absolute.md"] == b"real"
    assert skill.files["resolved.md"] == b"deep"
    assert skill.files["through-folder.md"] == b"deep"
    assert skill.files["chain.md"] == b"real"
    assert skill.files["up-and-back.md"] == b"real"
    assert all(SECRET not in data for data in _published(result))
    refused = {Path(p.path or "").name: p.rule for p in result.problems}
    assert refused["escape-dots.md"] == "symlink-escape"
    assert refused["escape-absolute.md"] == "symlink-escape"
    assert refused["escape-via-root-name.md"] == "symlink-escape"
    assert refused["loop.md"] == "unreadable"
    assert refused["docs-link"] == "symlink-folder"


def test_folders_nested_past_the_depth_limit_are_reported_not_walked(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    folder = write_skill(root, "deep")
    nested = folder.joinpath(*["d"] * (MAX_DEPTH + 3))
    nested.mkdir(parents=True)
    (nested / "bottom.md").write_text("too deep")
    (folder / "d" / "shallow.md").write_text("ok")
    result = DirectorySource(root).load()
    (skill,) = result.skills
    assert "d/shallow.md" in skill.files
    assert not any(rel.endswith("bottom.md") for rel in skill.files)
    (problem,) = [p for p in result.problems if p.rule == "limit-depth"]
    assert f"more than {MAX_DEPTH} levels" in str(problem)
