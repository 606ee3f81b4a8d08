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

from skilldeck.errors import SkillLimitError
from skilldeck.skill.uri import SKILL_MD, file_uri

__all__ = [
    "DIGEST_PATTERN",
    "DYNAMIC",
    "MAX_RESOURCES_PER_SKILL",
    "MAX_SKILL_BYTES",
    "SkillEntry",
    "SkillResource",
    "build_entry",
    "check_limits",
    "digest_of",
]

MAX_RESOURCES_PER_SKILL = 512
"""Skills extension limit: entries in a skill's ``resources``, ``SKILL.md`` included."""

MAX_SKILL_BYTES = 16 * 1024 * 1024
"""Skills extension limit: the sum of ``size`` over a skill's ``resources`` (16 MiB)."""

DYNAMIC: Literal["dynamic"] = "dynamic"
DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")


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
    return SkillEntry(uri=file_uri(skill_path), frontmatter=dict(frontmatter), resources=resources)
