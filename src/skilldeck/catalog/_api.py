"""What sibling packages may use of ``skilldeck.catalog`` beyond its public names: its face to them.

Another skilldeck package imports from ``skilldeck.catalog`` (the public API, in its ``__all__``) or
from here, never from one of its private modules (``tests/test_architecture.py`` checks). Nothing
here is public API: it may change in any release. Each name is imported when first asked for, so
this face costs nothing at start-up that the names it gives do not.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skilldeck.catalog._consent import launch_refusal, what_runs
    from skilldeck.catalog._entries import DEFAULT_LIMITS
    from skilldeck.catalog._fetch import Fetched, merged
    from skilldeck.catalog._launch import ADDED_META, LABEL
    from skilldeck.catalog._runtimes import prepare

_WHERE = {
    "ADDED_META": "skilldeck.catalog._launch",
    "DEFAULT_LIMITS": "skilldeck.catalog._entries",
    "Fetched": "skilldeck.catalog._fetch",
    "LABEL": "skilldeck.catalog._launch",
    "launch_refusal": "skilldeck.catalog._consent",
    "merged": "skilldeck.catalog._fetch",
    "prepare": "skilldeck.catalog._runtimes",
    "what_runs": "skilldeck.catalog._consent",
}

__all__ = [
    "ADDED_META",
    "DEFAULT_LIMITS",
    "LABEL",
    "Fetched",
    "launch_refusal",
    "merged",
    "prepare",
    "what_runs",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
