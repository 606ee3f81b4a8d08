"""What sibling packages may use of ``skilldeck.clients`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

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


__getattr__ = lazy_names(__name__, _WHERE)
