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
from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from skilldeck._documents import load_document
from skilldeck._validation import Model, parse
from skilldeck.errors import EntryError, SnapshotError
from skilldeck.skill import SkillEntry, entry_from_wire

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


def _named(tool: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(tool.get("name"), str):
        raise ValueError("an MCP Tool object needs a 'name' string")
    return tool


class _Server(Model, extra="ignore"):
    expected = "an object with a 'label', 'tools' and 'skills'"
    label: str = Field(min_length=1, description="the server's label, a non-empty string")
    description: Any = ""
    tools: list[Annotated[dict[str, Any], AfterValidator(_named)]] = Field(
        default=[], description="a list of MCP Tool objects with a name"
    )
    skills: list[Any] = Field(default=[], description="a list of skill entries")


class _Snapshot(Model, extra="ignore"):
    expected = '{"servers": [...]}'
    servers: list[_Server] = Field(description="a list of servers")

    @model_validator(mode="after")
    def _labels_once(self) -> _Snapshot:
        seen: set[str] = set()
        for i, server in enumerate(self.servers):
            if server.label in seen:
                raise ValueError(f"servers[{i}]: label {server.label!r} appears twice")
            seen.add(server.label)
        return self


def _skill(label: str, raw: object, rejected: list[str]) -> SkillSnapshot | None:
    """A listed skill (``body`` beside its entry); a rejected entry is noted and dropped."""
    body = raw.get("body") if isinstance(raw, Mapping) else None
    entry = {k: v for k, v in raw.items() if k != "body"} if isinstance(raw, Mapping) else raw
    try:
        return SkillSnapshot(entry_from_wire(entry), body if isinstance(body, str) else None)
    except EntryError as exc:
        rejected.append(f"[{label}] {exc}")
        return None


def parse_snapshot(data: object) -> CatalogSnapshot:
    """Validate a snapshot document; skill entries that break the extension's rules are dropped and listed.

    Raises:
        SnapshotError: the document's shape is wrong (with the path of the bad field).
    """
    rejected: list[str] = []
    servers = tuple(
        ServerSnapshot(
            label=server.label,
            description=server.description if isinstance(server.description, str) else "",
            tools=tuple(server.tools),
            skills=tuple(s for raw in server.skills if (s := _skill(server.label, raw, rejected)) is not None),
        )
        for server in parse(_Snapshot, data, SnapshotError).servers
    )
    return CatalogSnapshot(servers, tuple(rejected))


def load_snapshot(path: str | os.PathLike[str]) -> CatalogSnapshot:
    """Read and validate a snapshot file.

    Raises:
        SnapshotError: missing, not JSON, or not in the documented format.
    """
    return load_document(path, parse_snapshot, SnapshotError, what="snapshot")
