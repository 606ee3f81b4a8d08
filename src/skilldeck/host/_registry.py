"""The host's registry: every skill and tool it knows, keyed by origin. Sans-I/O.

Identity is ``(label, uri)`` everywhere: two servers may both serve ``skill://refunds/SKILL.md``
and those are two unrelated skills. Names are labels, not identifiers: collisions inside one
server, across servers and with local skills are recorded and shown, and every skill gets a
*qualified name* that is unique (``label/name``, or ``label/prefix/name`` when one server has
two skills of that name). Nothing shadows anything: a bare name that matches several skills
resolves to none of them, with the candidates listed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from skilldeck.errors import AmbiguousName, EntryError, UnknownSkill
from skilldeck.skill import SkillEntry, entry_from_wire, skill_root_uri

__all__ = [
    "LOCAL_LABEL",
    "Collision",
    "Registry",
    "Rejection",
    "SkillRecord",
    "ToolRecord",
]

LOCAL_LABEL = "local"
"""The origin label of skills installed on the host itself (never a server's label)."""

Origin = Literal["mcp", "local"]


@dataclass(frozen=True)
class SkillRecord:
    """One skill as the host knows it: where it came from and its (validated) entry."""

    label: str
    entry: SkillEntry
    origin: Origin = "mcp"

    @property
    def key(self) -> tuple[str, str]:
        return (self.label, self.entry.uri)

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def description(self) -> str:
        return self.entry.description

    @property
    def skill_path(self) -> str:
        root = skill_root_uri(self.entry.uri) or self.entry.uri
        # skill:// paths read as plain paths; any other scheme keeps its full URI, so two schemes
        # serving the same path never share a qualified name
        return root[len("skill://") :] if root.startswith("skill://") else root


@dataclass(frozen=True)
class ToolRecord:
    """One tool a server listed (the MCP ``Tool`` object as JSON), under its server's label."""

    label: str
    tool: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.tool.get("name", ""))

    @property
    def description(self) -> str:
        return str(self.tool.get("description") or "")

    @property
    def input_schema(self) -> Mapping[str, Any]:
        schema = self.tool.get("inputSchema")
        return schema if isinstance(schema, Mapping) else {"type": "object"}


@dataclass(frozen=True)
class Rejection:
    """An entry the host refused to register, and why."""

    label: str
    uri: str | None
    reason: str

    def __str__(self) -> str:
        return f"[{self.label}] {self.uri}: {self.reason}" if self.uri else f"[{self.label}] {self.reason}"


@dataclass(frozen=True)
class Collision:
    """Several skills sharing one name; ``scope`` says whether inside one server or across origins."""

    name: str
    records: tuple[SkillRecord, ...]
    scope: Literal["within-server", "across-origins"]

    def __str__(self) -> str:
        where = ", ".join(f"{r.label}:{r.entry.uri}" for r in self.records)
        return f"name {self.name!r} is used by {len(self.records)} skills ({self.scope}): {where}"


@dataclass
class Registry:
    """Skills and tools per origin label."""

    _skills: dict[tuple[str, str], SkillRecord] = field(default_factory=dict)
    _names: dict[tuple[str, str], int] = field(default_factory=dict)
    """How many skills of each (label, name): qualified names in constant time."""
    _tools: dict[str, list[ToolRecord]] = field(default_factory=dict)
    rejections: list[Rejection] = field(default_factory=list)

    # -- filling -----------------------------------------------------------------------------------

    def add_listing(self, label: str, raw_entries: Iterable[object], *, origin: Origin = "mcp") -> list[Rejection]:
        """Validate and register a server's ``skills/list`` entries; returns what was refused."""
        refused: list[Rejection] = []
        seen: set[str] = set()
        for raw in raw_entries:
            try:
                entry = entry_from_wire(raw)
            except EntryError as exc:
                refused.append(Rejection(label, exc.uri, exc.reason))
                continue
            if entry.uri in seen:
                refused.append(Rejection(label, entry.uri, "listed twice in one listing; the first is kept"))
                continue
            seen.add(entry.uri)
            self.add(SkillRecord(label=label, entry=entry, origin=origin))
        self.rejections.extend(refused)
        return refused

    def add(self, record: SkillRecord) -> None:
        """Register (or refresh) one skill under its ``(label, uri)`` identity."""
        previous = self._skills.get(record.key)
        if previous is not None:
            self._count(previous, -1)
        self._skills[record.key] = record
        self._count(record, +1)

    def _count(self, record: SkillRecord, delta: int) -> None:
        key = (record.label, record.name)
        self._names[key] = self._names.get(key, 0) + delta
        if self._names[key] <= 0:
            del self._names[key]

    def set_tools(self, label: str, tools: Iterable[Mapping[str, Any]]) -> None:
        self._tools[label] = [ToolRecord(label, dict(t)) for t in tools]

    def remove_server(self, label: str) -> None:
        """Forget everything from ``label``."""
        for key in [k for k in self._skills if k[0] == label]:
            self._count(self._skills.pop(key), -1)
        self._tools.pop(label, None)

    # -- reading -----------------------------------------------------------------------------------

    @property
    def skills(self) -> list[SkillRecord]:
        return sorted(self._skills.values(), key=lambda r: (r.label, r.entry.uri))

    def tools(self, label: str | None = None) -> list[ToolRecord]:
        if label is not None:
            return list(self._tools.get(label, []))
        return [t for lbl in sorted(self._tools) for t in self._tools[lbl]]

    @property
    def labels(self) -> list[str]:
        return sorted({k[0] for k in self._skills} | set(self._tools))

    def get(self, label: str, uri: str) -> SkillRecord | None:
        return self._skills.get((label, uri))

    def collisions(self) -> list[Collision]:
        """Every name used by more than one skill, inside one server or across origins."""
        by_name: dict[str, list[SkillRecord]] = defaultdict(list)
        for record in self.skills:
            by_name[record.name].append(record)
        found = []
        for name, records in sorted(by_name.items()):
            if len(records) < 2:
                continue
            labels = {r.label for r in records}
            scope: Literal["within-server", "across-origins"] = (
                "within-server" if len(labels) == 1 else "across-origins"
            )
            found.append(Collision(name, tuple(records), scope))
        return found

    def qualified_name(self, record: SkillRecord) -> str:
        """A name unique in this registry: ``label/name``, or ``label/<skill path>`` when needed."""
        same = self._names.get((record.label, record.name), 0)
        return f"{record.label}/{record.skill_path if same > 1 else record.name}"

    def resolve(self, reference: str) -> SkillRecord:
        """Find one skill by qualified name, ``label:uri``, bare URI or bare name.

        A bare name or URI that more than one skill answers to is ambiguous: it resolves to none.

        Raises:
            UnknownSkill: nothing matches.
            AmbiguousName: several skills match; the candidates are listed.
        """
        matches = [r for r in self._skills.values() if self.qualified_name(r) == reference]
        if not matches and "://" in reference:  # label:scheme://... (labels may hold ':' themselves)
            before, _, rest = reference.partition("://")
            label, sep, scheme = before.rpartition(":")
            record = self._skills.get((label, f"{scheme}://{rest}")) if sep else None
            matches = [record] if record else []
        if not matches:
            matches = [r for r in self._skills.values() if r.entry.uri == reference]
        if not matches:
            matches = [r for r in self._skills.values() if r.name == reference]
        if not matches:
            raise UnknownSkill(f"no skill named {reference!r}; known: {', '.join(self.qualified_names()) or 'none'}")
        if len(matches) > 1:
            raise AmbiguousName(reference, sorted(self.qualified_name(r) for r in matches))
        return matches[0]

    def qualified_names(self) -> list[str]:
        return [self.qualified_name(r) for r in self.skills]
