"""What sibling packages may use of ``skilldeck.select`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

if TYPE_CHECKING:
    from skilldeck.select._decide import MAX_NEEDS, indexing_note, what_to_check
    from skilldeck.select._encoders import DEFAULT_ENCODER, default_encoder, load_encoder
    from skilldeck.select._project import (
        Payload,
        Render,
        count_tokens,
        history_a,
        history_b,
        render_tools,
        token_summary,
        tool_function_name,
    )
    from skilldeck.select._text import tokens
    from skilldeck.select._vectors import VectorCache

_WHERE = {
    "count_tokens": "skilldeck.select._project",
    "DEFAULT_ENCODER": "skilldeck.select._encoders",
    "default_encoder": "skilldeck.select._encoders",
    "history_a": "skilldeck.select._project",
    "history_b": "skilldeck.select._project",
    "indexing_note": "skilldeck.select._decide",
    "load_encoder": "skilldeck.select._encoders",
    "MAX_NEEDS": "skilldeck.select._decide",
    "Payload": "skilldeck.select._project",
    "Render": "skilldeck.select._project",
    "render_tools": "skilldeck.select._project",
    "token_summary": "skilldeck.select._project",
    "tokens": "skilldeck.select._text",
    "tool_function_name": "skilldeck.select._project",
    "VectorCache": "skilldeck.select._vectors",
    "what_to_check": "skilldeck.select._decide",
}

__all__ = [
    "DEFAULT_ENCODER",
    "MAX_NEEDS",
    "Payload",
    "Render",
    "VectorCache",
    "count_tokens",
    "default_encoder",
    "history_a",
    "history_b",
    "indexing_note",
    "load_encoder",
    "render_tools",
    "token_summary",
    "tokens",
    "tool_function_name",
    "what_to_check",
]


__getattr__ = lazy_names(__name__, _WHERE)
