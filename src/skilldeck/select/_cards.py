"""Cards: the short, model-facing description of every skill and tool. Pure functions.

A *skill card* is a skill's name, description, origin label and the tools it names; a *tool
card* is a tool's name and description under its server's label (servers without skills are
shown as their tool cards, grouped by server). Cards are also what the selector indexes, so the
text of a card is a measured design decision: tool names next to descriptions matter (on
LiveMCPBench, server descriptions alone lose about 20 points of Hit@1 — see bench/selection).

Which tools a skill needs, from the first of these that the skill has:

1. ``metadata["dev.skilldeck/tools"]``: space-separated tool names. A name qualified with a
   connected server's label (``label/tool``) points at that server. The key is present-but-empty
   when a server's policy routes the caller no tools, and then the skill needs none. (Keys under
   ``io.modelcontextprotocol/`` are reserved for MCP extensions, which define no tools key, so an
   ``io.modelcontextprotocol/tools`` key is ignored.)
2. The skill's ``allowed-tools`` entries that are tool names of its own server (``Read`` or
   ``Bash(git:*)`` name host tools, and are skipped).
3. Tool names of its own server in backticks in the ``SKILL.md`` body (```` `search_jobs` ````).

A tool named in the metadata key that its server does not list is reported on the card
(``missing_tools``); a skill whose named tools are all missing is not offered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from skilldeck.select._snapshot import CatalogSnapshot, SkillSnapshot
from skilldeck.skill._api import TOOLS_METADATA_KEY

__all__ = ["TOOLS_METADATA_KEY", "Card", "CardSet", "build_cards", "skill_tools"]

_BACKTICKED = re.compile(r"`([A-Za-z0-9_.\-/]+)`")
_SPLIT_NAME = re.compile(r"[_\-./]+|(?<=[a-z])(?=[A-Z])")


def words(name: str) -> str:
    """A tool or skill name as words: ``search_jobs`` / ``searchJobs`` -> ``search jobs``."""
    return " ".join(part for part in _SPLIT_NAME.split(name) if part).lower()


@dataclass(frozen=True)
class Card:
    """One selectable capability: a skill, or a tool of a server."""

    kind: Literal["skill", "tool"]
    server: str
    name: str
    description: str
    uri: str | None = None
    tools: tuple[tuple[str, str], ...] = ()
    """(server label, tool name) pairs: the tools a skill needs, or the tool itself."""
    missing_tools: tuple[str, ...] = ()
    server_description: str = ""

    @property
    def key(self) -> str:
        return f"skill:{self.server}:{self.uri}" if self.kind == "skill" else f"tool:{self.server}:{self.name}"

    @property
    def text(self) -> str:
        """What the selector indexes: name (as words), description, the tools' names, the server."""
        tool_names = " ".join(words(t) for _, t in self.tools if t != self.name)
        return " ".join(
            part
            for part in (words(self.name), self.description, tool_names, words(self.server), self.server_description)
            if part
        )

    def to_json(self) -> dict[str, Any]:
        card: dict[str, Any] = {"kind": self.kind, "server": self.server, "name": self.name}
        if self.uri:
            card["uri"] = self.uri
        card["description"] = self.description
        if self.kind == "skill":
            card["tools"] = [f"{s}/{t}" for s, t in self.tools]
            if self.missing_tools:
                card["missingTools"] = list(self.missing_tools)
        return card


@dataclass
class CardSet:
    """Every card of a catalog, with what was left out and why."""

    cards: list[Card] = field(default_factory=list)
    tools: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)
    """label -> tool name -> MCP Tool object (for projection and the gate)."""
    not_offered: list[str] = field(default_factory=list)
    """Skills withheld, each with its reason (all named tools missing)."""

    @property
    def skill_cards(self) -> list[Card]:
        return [c for c in self.cards if c.kind == "skill"]

    @property
    def tool_cards(self) -> list[Card]:
        return [c for c in self.cards if c.kind == "tool"]


def skill_tools(
    label: str,
    frontmatter: Mapping[str, Any],
    body: str | None,
    server_tools: Mapping[str, Iterable[str]],
) -> tuple[list[tuple[str, str]], list[str]]:
    """The tools a skill needs, as (label, name), and the named ones no server lists (see the module docs)."""
    own = set(server_tools.get(label, ()))
    metadata = frontmatter.get("metadata")
    declared = metadata.get(TOOLS_METADATA_KEY) if isinstance(metadata, Mapping) else None
    found: list[tuple[str, str]] = []
    missing: list[str] = []
    if isinstance(declared, str):
        for item in declared.split():
            target, sep, name = item.partition("/")
            if sep and target in server_tools:
                pair = (target, name)
                listed = name in set(server_tools[target])
            else:
                pair, listed = (label, item), item in own
            if listed:
                if pair not in found:
                    found.append(pair)
            else:
                missing.append(item)
        return found, missing
    allowed = frontmatter.get("allowed-tools")
    if isinstance(allowed, str):
        for name in allowed.split():
            if name in own and (label, name) not in found:
                found.append((label, name))
        if found:
            return found, missing
    for match in _BACKTICKED.finditer(body or ""):
        name = match.group(1)
        if name in own and (label, name) not in found:
            found.append((label, name))
    return found, missing


def build_cards(snapshot: CatalogSnapshot) -> CardSet:
    """Cards for every skill and tool of a catalog snapshot."""
    result = CardSet()
    server_tools = {s.label: [str(t["name"]) for t in s.tools] for s in snapshot.servers}
    for server in snapshot.servers:
        result.tools[server.label] = {str(t["name"]): t for t in server.tools}
        for skill in server.skills:
            card = _skill_card(server.label, server.description, skill, server_tools)
            if card is None:
                result.not_offered.append(
                    f"[{server.label}] {skill.entry.uri}: every tool it names is missing from its server"
                )
                continue
            result.cards.append(card)
        for tool in server.tools:
            result.cards.append(
                Card(
                    kind="tool",
                    server=server.label,
                    name=str(tool["name"]),
                    description=str(tool.get("description") or ""),
                    tools=((server.label, str(tool["name"])),),
                    server_description=server.description,
                )
            )
    return result


def _skill_card(
    label: str, server_description: str, skill: SkillSnapshot, server_tools: Mapping[str, Sequence[str]]
) -> Card | None:
    entry = skill.entry
    tools, missing = skill_tools(label, entry.frontmatter, skill.body, server_tools)
    if missing and not tools:
        return None
    return Card(
        kind="skill",
        server=label,
        name=entry.name,
        description=entry.description,
        uri=entry.uri,
        tools=tuple(tools),
        missing_tools=tuple(missing),
        server_description=server_description,
    )
