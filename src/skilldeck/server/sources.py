"""Skill sources: where a server's skills come from. This is the server's only filesystem I/O.

:class:`DirectorySource` walks one or more folders: every folder holding a ``SKILL.md`` is a skill,
its path below the root is its skill path (``acme/billing/refunds``), and every file under it is
read into memory at load, so the manifest published always matches the bytes served, whatever
happens on disk afterwards. What cannot be served safely is refused and reported, never served:

* a symlink whose target lies outside the root (or a symlinked folder, which is not followed);
* a special file (FIFO, socket, device) or a file that cannot be read;
* a skill whose ``SKILL.md`` is not valid, whose name differs from its folder, or that is over
  the per-skill limits (512 files, 16 MiB).

A refused *file* leaves the rest of its skill served; a refused *skill* leaves the other skills
served. Each refusal is a :class:`~skilldeck.errors.SkillError` naming the path and the rule.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from skilldeck.errors import FrontmatterError, SkillError, SourceError
from skilldeck.server.catalog import StaticSkill
from skilldeck.skill.frontmatter import parse_skill_md, validate_frontmatter
from skilldeck.skill.manifest import MAX_RESOURCES_PER_SKILL, MAX_SKILL_BYTES, build_entry, check_limits
from skilldeck.skill.uri import SKILL_MD

__all__ = ["DEFAULT_IGNORE", "DirectorySource", "LoadResult"]

DEFAULT_IGNORE = frozenset({".git", ".hg", ".svn", "__pycache__", ".DS_Store", ".pytest_cache", ".mypy_cache"})
"""Names never treated as skill files (version-control and cache folders)."""


@dataclass
class LoadResult:
    """What one load produced: the skills to serve and everything refused on the way."""

    skills: list[StaticSkill] = field(default_factory=list)
    problems: list[SkillError] = field(default_factory=list)


class DirectorySource:
    """Skills from folders on disk.

    Args:
        roots: folders to scan. A root that itself holds a ``SKILL.md`` is one skill, served
            under the root's own name.
        prefix: an organizational prefix put before every skill path (``"acme"`` serves
            ``billing/refunds`` as ``acme/billing/refunds``).
        ignore: file and folder names to skip.

    Raises:
        SourceError: a root does not exist or is not a folder.
    """

    def __init__(
        self, *roots: str | os.PathLike[str], prefix: str = "", ignore: Iterable[str] = DEFAULT_IGNORE
    ) -> None:
        if not roots:
            raise SourceError("DirectorySource needs at least one folder", rule="no-roots")
        self.roots: tuple[Path, ...] = tuple(Path(r) for r in roots)
        for root in self.roots:
            if not root.is_dir():
                raise SourceError("is not a folder (pass the folder that holds your skills)", path=str(root))
        self.prefix = prefix.strip("/")
        self.ignore = frozenset(ignore)

    def load(self) -> LoadResult:
        """Scan every root and snapshot every skill. Blocking I/O: run it off the event loop."""
        result = LoadResult()
        seen: dict[str, str] = {}
        for root in self.roots:
            for skill in self._load_root(root, result.problems):
                if skill.skill_path in seen:
                    result.problems.append(
                        SkillError(
                            f"skill path {skill.skill_path!r} is already served from {seen[skill.skill_path]}",
                            path=skill.origin,
                            rule="duplicate-path",
                        )
                    )
                    continue
                seen[skill.skill_path] = skill.origin
                result.skills.append(skill)
        return result

    # -- one root ------------------------------------------------------------------------------

    def _load_root(self, root: Path, problems: list[SkillError]) -> list[StaticSkill]:
        real_root = Path(os.path.realpath(root))
        skill_dirs: list[Path] = []
        if (root / SKILL_MD).exists() or (root / SKILL_MD).is_symlink():
            skill_dirs.append(root)
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in self.ignore)
            here = Path(dirpath)
            if here != root and SKILL_MD in filenames:
                skill_dirs.append(here)
            for name in filenames if SKILL_MD not in filenames else ():
                if name.lower() == SKILL_MD.lower():  # skill.md, Skill.md: said, not silently skipped
                    problems.append(
                        SkillError(
                            f"not a skill: the file must be named {SKILL_MD} (in capitals); rename it",
                            path=str(here / name),
                            rule="skill-md-name",
                        )
                    )
        skills = []
        for skill_dir in sorted(skill_dirs):
            rel = root.resolve().name if skill_dir == root else skill_dir.relative_to(root).as_posix()
            skill_path = f"{self.prefix}/{rel}" if self.prefix else rel
            try:
                skills.append(self._load_skill(skill_dir, skill_path, real_root, problems))
            except SkillError as exc:
                problems.append(exc)
        return skills

    def _load_skill(self, skill_dir: Path, skill_path: str, real_root: Path, problems: list[SkillError]) -> StaticSkill:
        files: dict[str, bytes] = {}
        total = 0
        for rel, path in self._walk_files(skill_dir, real_root, problems):
            data = self._read_file(path, real_root, problems)
            if data is None:
                if rel == SKILL_MD:
                    raise SkillError(
                        "SKILL.md cannot be served (see the problem above)", path=str(path), rule="skill-md"
                    )
                continue
            files[rel] = data
            total += len(data)
            if total > MAX_SKILL_BYTES or len(files) > MAX_RESOURCES_PER_SKILL:
                # Stop reading early; check_limits below words the error.
                check_limits(str(skill_dir), {**{p: len(d) for p, d in files.items()}})
        if SKILL_MD not in files:
            raise SkillError("has no readable SKILL.md", path=str(skill_dir), rule="skill-md")
        skill_md = skill_dir / SKILL_MD
        try:
            text = files[SKILL_MD].decode("utf-8")
        except UnicodeDecodeError:
            raise FrontmatterError("SKILL.md is not valid UTF-8", path=str(skill_md), rule="encoding") from None
        parsed = parse_skill_md(text, path=str(skill_md))
        validate_frontmatter(parsed.frontmatter, directory_name=skill_dir.resolve().name, path=str(skill_md))
        try:
            entry = build_entry(skill_path, parsed.frontmatter, files)
        except SkillError as exc:
            raise type(exc)(exc.reason, path=str(skill_dir), rule=exc.rule) from None
        return StaticSkill(skill_path=skill_path, entry=entry, files=files, origin=str(skill_dir))

    def _walk_files(self, skill_dir: Path, real_root: Path, problems: list[SkillError]) -> list[tuple[str, Path]]:
        found: list[tuple[str, Path]] = []
        for dirpath, dirnames, filenames in os.walk(skill_dir, followlinks=False):
            here = Path(dirpath)
            kept = []
            for d in sorted(dirnames):
                if d in self.ignore:
                    continue
                if (here / d).is_symlink():
                    problems.append(
                        SkillError(
                            "symlinked folder is not followed; copy its files into the skill instead",
                            path=str(here / d),
                            rule="symlink-folder",
                        )
                    )
                    continue
                kept.append(d)
            dirnames[:] = kept
            for name in sorted(filenames):
                if name in self.ignore:
                    continue
                path = here / name
                found.append(((path.relative_to(skill_dir)).as_posix(), path))
        return found

    @staticmethod
    def _read_file(path: Path, real_root: Path, problems: list[SkillError]) -> bytes | None:
        """The bytes of one file, or ``None`` (with a problem recorded) when it must not be served."""
        try:
            if path.is_symlink():
                target = Path(os.path.realpath(path))
                if not target.is_relative_to(real_root):
                    problems.append(
                        SkillError(
                            f"symlink points outside the skills root ({real_root}); refused",
                            path=str(path),
                            rule="symlink-escape",
                        )
                    )
                    return None
            # O_NOFOLLOW on the final open would refuse even in-root symlinks; instead the
            # target was checked above and is opened by its resolved path.
            real = Path(os.path.realpath(path))
            st = os.stat(real)
            if not stat.S_ISREG(st.st_mode):
                problems.append(
                    SkillError(
                        "is not a regular file (FIFO, socket or device); refused", path=str(path), rule="special-file"
                    )
                )
                return None
            if st.st_size > MAX_SKILL_BYTES:
                problems.append(
                    SkillError(
                        f"file is {st.st_size} bytes, over the 16 MiB per-skill limit; refused",
                        path=str(path),
                        rule="limit-size",
                    )
                )
                return None
            with open(real, "rb") as fh:
                return fh.read(MAX_SKILL_BYTES + 1)
        except OSError as exc:
            problems.append(
                SkillError(f"cannot be read ({exc.strerror or exc}); refused", path=str(path), rule="unreadable")
            )
            return None


def load_all(sources: Sequence[DirectorySource]) -> LoadResult:
    """Load several directory sources into one result, refusing skill paths served twice."""
    merged = LoadResult()
    seen: set[str] = set()
    for source in sources:
        result = source.load()
        merged.problems.extend(result.problems)
        for skill in result.skills:
            if skill.skill_path in seen:
                merged.problems.append(
                    SkillError(
                        f"skill path {skill.skill_path!r} is served twice", path=skill.origin, rule="duplicate-path"
                    )
                )
                continue
            seen.add(skill.skill_path)
            merged.skills.append(skill)
    return merged
