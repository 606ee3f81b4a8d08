"""What sibling packages may use of ``skilldeck.server`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

if TYPE_CHECKING:
    from skilldeck.server._audience import allowed_tools, catalog_for
    from skilldeck.server._console import ServeConsole

_WHERE = {
    "allowed_tools": "skilldeck.server._audience",
    "catalog_for": "skilldeck.server._audience",
    "ServeConsole": "skilldeck.server._console",
}

__all__ = [
    "ServeConsole",
    "allowed_tools",
    "catalog_for",
]


__getattr__ = lazy_names(__name__, _WHERE)
