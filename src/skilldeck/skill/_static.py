"""What a skill pack holds in memory once read: skills with their files' bytes, and directory listings. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from skilldeck.errors import SkillError
from skilldeck.skill._manifest import SkillEntry
from skilldeck.skill._uri import DIRECTORY_MIME_TYPE, directory_uri, file_uri, mime_type_for

__all__ = ["DirectoryChild", "LoadResult", "SkillFile", "StaticSkill", "children_of"]


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One served file: its URI, type and the exact bytes its digest covers."""

    uri: str
    path: str
    mime_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class StaticSkill:
    """A skill whose files were snapshotted at load: ``files`` maps ``/`` paths (relative to the skill root) to bytes."""

    skill_path: str
    entry: SkillEntry
    files: Mapping[str, bytes]
    origin: str = ""
    """Where it was loaded from (a folder), for reports."""


@dataclass(frozen=True, slots=True)
class DirectoryChild:
    """A direct child of a directory resource, as ``resources/directory/read`` lists it."""

    uri: str
    name: str
    mime_type: str
    size: int | None = None

    def to_wire(self) -> dict[str, object]:
        wire: dict[str, object] = {"uri": self.uri, "name": self.name, "mimeType": self.mime_type}
        if self.size is not None:
            wire["size"] = self.size
        return wire


def children_of(prefix: str, paths: Iterable[str], sizes: Mapping[str, int] | None = None) -> list[DirectoryChild]:
    """Direct children of the directory ``prefix`` (a ``/`` path, ``""`` for the top) among file ``paths``.

    URIs are ``skill://`` URIs of the full paths; sorted by name, folders and files alike.
    """
    base = f"{prefix}/" if prefix else ""
    found: dict[str, DirectoryChild] = {}
    for path in paths:
        if not path.startswith(base):
            continue
        rest = path[len(base) :]
        head, sep, _ = rest.partition("/")
        full = base + head
        skill_path, _, file_path = full.rpartition("/")
        if sep:
            found.setdefault(head, DirectoryChild(uri=directory_uri(full), name=head, mime_type=DIRECTORY_MIME_TYPE))
        else:
            uri = file_uri(skill_path, file_path) if skill_path else directory_uri(file_path)
            found[head] = DirectoryChild(
                uri=uri, name=head, mime_type=mime_type_for(head), size=None if sizes is None else sizes.get(path)
            )
    return [found[name] for name in sorted(found)]


@dataclass
class LoadResult:
    """What one load produced: the skills to serve and everything refused on the way."""

    skills: list[StaticSkill] = field(default_factory=list)
    problems: list[SkillError] = field(default_factory=list)
