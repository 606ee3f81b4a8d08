"""Catalog snapshots: what ``skilldeck snapshot`` writes and ``skilldeck select`` reads. Pure data.

Format (JSON)::

    {"servers": [
        {"label": "jobs",
         "description": "optional words about the server",
         "tools": [ MCP Tool objects: {"name", "description", "inputSchema", ...} ],
         "skills": [ skills/list entries as the server sent them, each optionally with
                     "body": the SKILL.md text ] }
    ]}
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skilldeck._documents import load_document
from skilldeck.errors import EntryError, SnapshotError
from skilldeck.skill.manifest import SkillEntry, entry_from_wire

__all__ = ["CatalogSnapshot", "ServerSnapshot", "SkillSnapshot", "load_snapshot", "parse_snapshot"]


@dataclass(frozen=True)
class SkillSnapshot:
    entry: SkillEntry
    body: str | None = None


@dataclass(frozen=True)
class ServerSnapshot:
    label: str
    description: str = ""
    tools: tuple[Mapping[str, Any], ...] = ()
    skills: tuple[SkillSnapshot, ...] = ()


@dataclass(frozen=True)
class CatalogSnapshot:
    servers: tuple[ServerSnapshot, ...] = ()
    rejected: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        out = []
        for s in self.servers:
            server: dict[str, Any] = {"label": s.label}
            if s.description:
                server["description"] = s.description
            server["tools"] = [dict(t) for t in s.tools]
            server["skills"] = [
                {**k.entry.to_wire(), **({"body": k.body} if k.body is not None else {})} for k in s.skills
            ]
            out.append(server)
        return {"servers": out}


def parse_snapshot(data: object) -> CatalogSnapshot:
    """Validate a snapshot document; skill entries that break the extension's rules are dropped and listed.

    Raises:
        SnapshotError: the document's shape is wrong (with the path of the bad field).
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("servers"), list):
        raise SnapshotError('a snapshot is {"servers": [...]}')
    servers: list[ServerSnapshot] = []
    rejected: list[str] = []
    labels: set[str] = set()
    for i, raw in enumerate(data["servers"]):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("label"), str) or not raw["label"]:
            raise SnapshotError(f"servers[{i}] needs a non-empty 'label'")
        label = raw["label"]
        if label in labels:
            raise SnapshotError(f"servers[{i}]: label {label!r} appears twice")
        labels.add(label)
        tools = raw.get("tools", [])
        if not isinstance(tools, list) or not all(
            isinstance(t, Mapping) and isinstance(t.get("name"), str) for t in tools
        ):
            raise SnapshotError(f"servers[{i}] ({label}): 'tools' must be a list of MCP Tool objects with a name")
        skills: list[SkillSnapshot] = []
        raw_skills = raw.get("skills", [])
        if not isinstance(raw_skills, list):
            raise SnapshotError(f"servers[{i}] ({label}): 'skills' must be a list of skill entries")
        for raw_skill in raw_skills:
            body = raw_skill.get("body") if isinstance(raw_skill, Mapping) else None
            entry_raw = (
                {k: v for k, v in raw_skill.items() if k != "body"} if isinstance(raw_skill, Mapping) else raw_skill
            )
            try:
                skills.append(SkillSnapshot(entry_from_wire(entry_raw), body if isinstance(body, str) else None))
            except EntryError as exc:
                rejected.append(f"[{label}] {exc}")
        description = raw.get("description")
        servers.append(
            ServerSnapshot(
                label=label,
                description=description if isinstance(description, str) else "",
                tools=tuple(dict(t) for t in tools),
                skills=tuple(skills),
            )
        )
    return CatalogSnapshot(tuple(servers), tuple(rejected))


def load_snapshot(path: str | os.PathLike[str]) -> CatalogSnapshot:
    """Read and validate a snapshot file.

    Raises:
        SnapshotError: missing, not JSON, or not in the documented format.
    """
    return load_document(path, parse_snapshot, SnapshotError, what="snapshot")
