"""``--watch`` keeps following a root that is replaced: rm -rf and recreate, a rename deploy, a symlink flip.

Each case replaces the root, waits for the catalog to show the new content, then edits a file in the
new root and waits again: the second step proves the watcher was re-armed on the new folder rather
than reloaded once by chance.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from skilldeck.server import DirectorySource, SkillsExtension
from skilldeck.server._app import watch_and_reload

from .helpers import write_skill

WAIT_S = 20  # generous: a bound, not a figure


def _uris(extension: SkillsExtension) -> list[str]:
    return [e.uri for e in extension.catalog.entries]


async def _until(extension: SkillsExtension, expected: Callable[[list[str]], bool], what: str) -> None:
    try:
        with anyio.fail_after(WAIT_S):
            while not expected(_uris(extension)):
                await anyio.sleep(0.05)
    except TimeoutError:
        pytest.fail(f"catalog did not follow ({what}) within {WAIT_S} s: {_uris(extension)}")


def _rm_and_recreate(root: Path, tmp_path: Path) -> None:
    shutil.rmtree(root)
    write_skill(root, "second")


def _rename_deploy(root: Path, tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    write_skill(staged, "second")
    os.rename(root, tmp_path / "previous")
    os.rename(staged, root)  # the new folder takes the root's name in one step
    shutil.rmtree(tmp_path / "previous")


def _rename_over_empty(root: Path, tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    write_skill(staged, "second")
    shutil.rmtree(root)
    root.mkdir()
    os.replace(staged, root)  # `mv -T staged root`: rename over the (empty) old folder


@pytest.mark.anyio
@pytest.mark.parametrize("replace", [_rm_and_recreate, _rename_deploy, _rename_over_empty])
async def test_watch_follows_a_replaced_root(tmp_path: Path, replace: Callable[[Path, Path], None]) -> None:
    root = tmp_path / "skills"
    write_skill(root, "first")
    extension = SkillsExtension(DirectorySource(root))
    assert _uris(extension) == ["skill://first/SKILL.md"]
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: watch_and_reload(extension, debounce_ms=50))
        await anyio.sleep(0.5)  # let the watcher arm
        replace(root, tmp_path)
        await _until(extension, lambda uris: uris == ["skill://second/SKILL.md"], "replacement")
        await anyio.sleep(0.5)  # changes from here on reach the new folder only through a re-armed watch
        write_skill(root, "third")
        await _until(extension, lambda uris: "skill://third/SKILL.md" in uris, "edit inside the new root")
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_watch_follows_a_symlink_flip_deploy(tmp_path: Path) -> None:
    """``current -> releases/v1`` flipped atomically to ``releases/v2`` (``ln -s v2 tmp && mv -T tmp current``)."""
    releases = tmp_path / "releases"
    write_skill(releases / "v1", "first")
    write_skill(releases / "v2", "second")
    current = tmp_path / "current"
    os.symlink(releases / "v1", current)
    extension = SkillsExtension(DirectorySource(current))
    assert _uris(extension) == ["skill://first/SKILL.md"]
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: watch_and_reload(extension, debounce_ms=50))
        await anyio.sleep(0.5)
        os.symlink(releases / "v2", tmp_path / "current.tmp")
        os.replace(tmp_path / "current.tmp", current)
        await _until(extension, lambda uris: uris == ["skill://second/SKILL.md"], "symlink flip")
        await anyio.sleep(0.5)
        write_skill(releases / "v2", "third")
        await _until(extension, lambda uris: "skill://third/SKILL.md" in uris, "edit inside the new release")
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_watch_survives_the_root_missing_for_a_while(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "first")
    extension = SkillsExtension(DirectorySource(root))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: watch_and_reload(extension, debounce_ms=50))
        await anyio.sleep(0.5)
        shutil.rmtree(root)
        await _until(extension, lambda uris: uris == [], "removal")
        assert any("cannot be opened" in str(p) for p in extension.problems)
        await anyio.sleep(1.5)  # several checks with no root at all
        write_skill(root, "back")
        await _until(extension, lambda uris: uris == ["skill://back/SKILL.md"], "recreation")
        tg.cancel_scope.cancel()
