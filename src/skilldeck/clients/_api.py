"""What sibling packages may use of ``skilldeck.clients`` beyond its public names: its face to them.

Another skilldeck package imports from ``skilldeck.clients`` (the public API, in its ``__all__``) or
from here, never from one of its private modules (``tests/test_architecture.py`` checks). Nothing
here is public API: it may change in any release. Each name is imported when first asked for, so
this face costs nothing at start-up that the names it gives do not.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skilldeck.clients._plan import read_any, upstream_servers
    from skilldeck.clients._state import Connections, digest, mode_of, read_bytes, read_text, write_bytes, write_text

_WHERE = {
    "Connections": "skilldeck.clients._state",
    "digest": "skilldeck.clients._state",
    "mode_of": "skilldeck.clients._state",
    "read_any": "skilldeck.clients._plan",
    "read_bytes": "skilldeck.clients._state",
    "read_text": "skilldeck.clients._state",
    "upstream_servers": "skilldeck.clients._plan",
    "write_bytes": "skilldeck.clients._state",
    "write_text": "skilldeck.clients._state",
}

__all__ = [
    "Connections",
    "digest",
    "mode_of",
    "read_any",
    "read_bytes",
    "read_text",
    "upstream_servers",
    "write_bytes",
    "write_text",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
