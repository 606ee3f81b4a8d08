"""What sibling packages may use of ``skilldeck.server`` beyond its public names: its face to them.

Another skilldeck package imports from ``skilldeck.server`` (the public API, in its ``__all__``) or
from here, never from one of its private modules (``tests/test_architecture.py`` checks). Nothing
here is public API: it may change in any release. Each name is imported when first asked for, so
this face costs nothing at start-up that the names it gives do not.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
