"""Skill entries and manifests: the ``Skill`` / ``SkillResource`` shapes of the Skills extension.

Pure data and pure functions: an entry is built from bytes already in memory, so what a server
publishes is exactly what it will serve.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from skilldeck._validation import Model, parse
from skilldeck.errors import EntryError, SkillLimitError
from skilldeck.skill._uri import SKILL_MD, file_uri

__all__ = [
    "DIGEST_PATTERN",
    "DYNAMIC",
    "MAX_RESOURCES_PER_SKILL",
    "MAX_SKILL_BYTES",
    "EntryError",
    "SkillEntry",
    "SkillResource",
    "build_entry",
    "check_limits",
    "digest_of",
    "entry_from_wire",
]

MAX_RESOURCES_PER_SKILL = 512
"""Skills extension limit: entries in a skill's ``resources``, ``SKILL.md`` included."""

MAX_SKILL_BYTES = 16 * 1024 * 1024
"""Skills extension limit: the sum of ``size`` over a skill's ``resources`` (16 MiB)."""

DYNAMIC: Literal["dynamic"] = "dynamic"
DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")
_UNSAFE_URI = re.compile(r"[\s\"'<>`\\\x00-\x1f\x7f]")  # never in a well-formed URI


def digest_of(data: bytes) -> str:
    """``sha256:<64 lowercase hex>`` of ``data``, the extension's digest format."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class SkillResource:
    """One file of a skill: its URI and the digest and size of its raw bytes."""

    uri: str
    digest: str
    size: int

    def to_wire(self) -> dict[str, Any]:
        return {"uri": self.uri, "digest": self.digest, "size": self.size}


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """The entry ``skills/list`` and ``skills/get`` return for one skill.

    ``resources`` is the complete manifest, or ``"dynamic"`` for generated content.
    """

    uri: str
    frontmatter: Mapping[str, Any]
    resources: tuple[SkillResource, ...] | Literal["dynamic"]

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    @property
    def is_dynamic(self) -> bool:
        return self.resources == DYNAMIC

    def to_wire(self) -> dict[str, Any]:
        resources: list[dict[str, Any]] | str = (
            DYNAMIC if isinstance(self.resources, str) else [r.to_wire() for r in self.resources]
        )
        return {"uri": self.uri, "frontmatter": dict(self.frontmatter), "resources": resources}


def check_limits(skill_path: str, sizes: Mapping[str, int]) -> None:
    """Refuse a skill over the extension's per-skill limits.

    Raises:
        SkillLimitError: naming the skill, the limit and what was counted.
    """
    if len(sizes) > MAX_RESOURCES_PER_SKILL:
        raise SkillLimitError(
            f"skill has {len(sizes)} files; the Skills extension limit is {MAX_RESOURCES_PER_SKILL} per skill "
            "(split it into several skills)",
            path=skill_path,
            rule="limit-files",
        )
    total = sum(sizes.values())
    if total > MAX_SKILL_BYTES:
        raise SkillLimitError(
            f"skill files total {total} bytes; the Skills extension limit is {MAX_SKILL_BYTES} bytes (16 MiB) "
            "per skill (move large assets out of the skill)",
            path=skill_path,
            rule="limit-size",
        )


def build_entry(skill_path: str, frontmatter: Mapping[str, Any], files: Mapping[str, bytes]) -> SkillEntry:
    """The complete entry for a skill whose files (relative ``/`` paths to bytes) are all in ``files``.

    ``files`` must contain ``SKILL.md``; resources are listed in path order, ``SKILL.md`` first.

    Raises:
        SkillLimitError: the skill is over 512 files or 16 MiB.
    """
    if SKILL_MD not in files:
        raise ValueError(f"{skill_path}: files must include {SKILL_MD}")
    check_limits(skill_path, {path: len(data) for path, data in files.items()})
    ordered = sorted(files, key=lambda p: (p != SKILL_MD, p))
    resources = tuple(
        SkillResource(uri=file_uri(skill_path, path), digest=digest_of(files[path]), size=len(files[path]))
        for path in ordered
    )
    # the entry's URI is its SKILL.md resource's (listed first): one string, not two equal ones per skill
    return SkillEntry(uri=resources[0].uri, frontmatter=dict(frontmatter), resources=resources)


class _WireResource(Model, extra="ignore"):
    expected = "an object {uri, digest, size}"
    uri: str = Field(description="the file's URI, inside the skill")
    digest: str = Field(pattern=DIGEST_PATTERN.pattern, description="a digest sha256:<64 lowercase hex digits>")
    size: int = Field(ge=0, description="a size in bytes (a whole number, 0 or more)")


class _WireEntry(Model, extra="ignore"):
    """A ``Skill`` entry as a server sent it; other keys (``_meta`` among them) are passed over."""

    expected = "an object {uri, frontmatter, resources}"
    uri: str = Field(min_length=1, description="the skill's SKILL.md URI")
    frontmatter: dict[str, Any] = Field(description="an object with the skill's name and description")
    resources: Literal["dynamic"] | list[_WireResource] = Field(
        union_mode="left_to_right", description='a list of files or "dynamic"'
    )


def entry_from_wire(raw: object) -> SkillEntry:
    """Validate a ``Skill`` entry as a server sent it, for a host that must not trust it.

    Checks everything checkable from the entry alone: the URI ends in ``/SKILL.md`` and its last
    segment is ``frontmatter.name`` (a valid skill name); ``description`` is present;
    ``resources`` is ``"dynamic"`` or a complete list of well-formed ``{uri, digest, size}``
    triples inside the skill, each once, ``SKILL.md`` included; and the per-skill limits.

    Raises:
        EntryError: with the reason the entry must not be loaded.
    """
    from skilldeck.skill._frontmatter import validate_name
    from skilldeck.skill._uri import skill_name_from_uri, skill_root_uri

    raw_uri = raw.get("uri") if isinstance(raw, dict) else None
    shown = (repr(raw_uri) if _UNSAFE_URI.search(raw_uri) else raw_uri) if isinstance(raw_uri, str) else None
    entry = parse(_WireEntry, raw, lambda message: EntryError(message, uri=shown))
    uri, frontmatter, resources = entry.uri, entry.frontmatter, entry.resources
    if _UNSAFE_URI.search(uri):
        raise EntryError("uri contains spaces, quotes, angle brackets or control characters", uri=shown)
    root = skill_root_uri(uri)
    if root is None:
        raise EntryError(f"uri {uri!r} does not end in /SKILL.md", uri=uri)
    name = frontmatter.get("name")
    problems = validate_name(name)
    if problems:
        raise EntryError("; ".join(problems), uri=uri)
    if skill_name_from_uri(uri) != name:
        raise EntryError(f"the uri's last segment is not the skill name {name!r}", uri=uri)
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description:
        raise EntryError("frontmatter.description is missing or empty", uri=uri)
    if resources == DYNAMIC:
        return SkillEntry(uri=uri, frontmatter=frontmatter, resources=DYNAMIC)
    if len(resources) > MAX_RESOURCES_PER_SKILL:
        raise EntryError(f"{len(resources)} files, over the limit of {MAX_RESOURCES_PER_SKILL}", uri=uri)
    seen: set[str] = set()
    for item in resources:
        r_uri = item.uri
        if _UNSAFE_URI.search(r_uri):
            raise EntryError("a resource uri contains spaces, quotes, angle brackets or control characters", uri=uri)
        if not (r_uri == uri or r_uri.startswith(root + "/")):
            raise EntryError(f"resource {r_uri!r} is outside the skill {root}", uri=uri)
        if "/../" in r_uri + "/" or "/./" in r_uri + "/":
            raise EntryError(f"resource {r_uri!r} has dot segments", uri=uri)
        if r_uri in seen:
            raise EntryError(f"resource {r_uri!r} is listed twice", uri=uri)
        seen.add(r_uri)
    if uri not in seen:
        raise EntryError("resources does not list the skill's own SKILL.md", uri=uri)
    parsed = tuple(SkillResource(uri=r.uri, digest=r.digest, size=r.size) for r in resources)
    total = sum(r.size for r in parsed)
    if total > MAX_SKILL_BYTES:
        raise EntryError(f"{total} bytes in all, over the limit of {MAX_SKILL_BYTES} (16 MiB)", uri=uri)
    return SkillEntry(uri=uri, frontmatter=frontmatter, resources=parsed)
