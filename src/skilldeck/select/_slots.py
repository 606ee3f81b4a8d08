"""Whether a question gives a value a tool needs: a clock time for a tool that converts one, a URL for
a tool that fetches one.

A person who asks "if it's 9:00 in Berlin, what time is it in Singapore" gives the time a
``convert_time(time: "HH:MM", ...)`` needs; "what time is it in Tokyo" gives none, and the tool
that tells the current time is what it asks for. Tools say what a required argument holds in its
JSON Schema (``format``) or its description (``HH:MM``, ``URL``); a question says it by a value of
that shape. Pure rules, no model.

:func:`slot_kinds` reads what a tool's required arguments hold; :func:`question_slots` what values
a question gives; :func:`fit` says how the two agree: +1 when the question gives a value of a kind
the tool needs, -1 when the tool needs a clock time the question does not give (a time to convert is
never implied), 0 otherwise (a URL is often left for later: "scrape the text of a website").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["SlotKind", "fit", "question_slots", "slot_kinds"]

SlotKind = Literal["clock", "url"]

_KIND_OF_ARGUMENT: tuple[tuple[SlotKind, re.Pattern[str]], ...] = (
    ("clock", re.compile(r"\bhh:mm\b|\b24-hour\b|\btime of day\b", re.IGNORECASE)),
    ("url", re.compile(r"\burl\b|\buri\b", re.IGNORECASE)),
)
_FORMATS: dict[str, SlotKind] = {"time": "clock", "uri": "url", "url": "url"}
_VALUES: dict[SlotKind, re.Pattern[str]] = {
    "clock": re.compile(r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.)(?!\w)|\bnoon\b|\bmidnight\b", re.I),
    "url": re.compile(r"\bhttps?://\S+|\bwww\.\S+|\b[\w-]+\.(?:com|org|net|io|dev|gov|edu)\b", re.I),
}
MAX_CHARS = 2_000
"""Characters of a question read for values (a long question's tail is not read)."""


def slot_kinds(tool: Mapping[str, Any] | None) -> frozenset[SlotKind]:
    """The kinds of value ``tool``'s required string arguments hold (an MCP Tool, as listed)."""
    schema = tool.get("inputSchema") if isinstance(tool, Mapping) else None
    if not isinstance(schema, Mapping):
        return frozenset()
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return frozenset()
    kinds: set[SlotKind] = set()
    for name in required:
        prop = properties.get(name) if isinstance(name, str) else None
        if not isinstance(prop, Mapping) or prop.get("type", "string") != "string":
            continue
        declared = prop.get("format")
        if isinstance(declared, str) and declared.lower() in _FORMATS:
            kinds.add(_FORMATS[declared.lower()])
            continue
        text = f"{name} {prop.get('description', '')}"
        kinds.update(kind for kind, pattern in _KIND_OF_ARGUMENT if pattern.search(text))
    return frozenset(kinds)


def question_slots(question: str) -> frozenset[SlotKind]:
    """The kinds of value ``question`` gives (a clock time, a URL)."""
    text = question[:MAX_CHARS]
    return frozenset(kind for kind, pattern in _VALUES.items() if pattern.search(text))


def fit(given: frozenset[SlotKind], needed: frozenset[SlotKind], *, names_action: bool = False) -> float:
    """+1 when the question gives a value of a kind the tool needs, -1 when the tool needs a clock time
    the question neither gives nor names the tool's action ("timezone conversion" asks for
    ``convert_time`` with the time left to ask), 0 otherwise."""
    if given & needed:
        return 1.0
    if "clock" in needed and not names_action:
        return -1.0
    return 0.0


_NAME_WORD = re.compile(r"[a-z]{5,}")
_QUESTION_WORD = re.compile(r"[a-z]+")


def names_action(question: str, tool_name: str) -> bool:
    """Whether ``question`` names a word of ``tool_name`` of five letters or more, by its first five
    (``convert_time``: "conversion", "converting")."""
    stems = {word[:5] for word in _NAME_WORD.findall(tool_name.lower().replace("_", " ").replace("-", " "))}
    return bool(stems) and any(word[:5] in stems for word in _QUESTION_WORD.findall(question[:MAX_CHARS].lower()))
