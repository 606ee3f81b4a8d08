"""What sibling packages may use of ``skilldeck.learning`` beyond its public names: its face to them.

Another skilldeck package imports from ``skilldeck.learning`` (the public API, in its ``__all__``) or
from here, never from one of its private modules (``tests/test_architecture.py`` checks). Nothing
here is public API: it may change in any release. Each name is imported when first asked for, so
this face costs nothing at start-up that the names it gives do not.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skilldeck.learning._ledger import ANONYMOUS, CardRef, history_by_key, normalise_question
    from skilldeck.learning._stores import DEFAULT_LEDGER_TIMEOUT
    from skilldeck.learning._updates import HistoryUpdates

_WHERE = {
    "ANONYMOUS": "skilldeck.learning._ledger",
    "CardRef": "skilldeck.learning._ledger",
    "DEFAULT_LEDGER_TIMEOUT": "skilldeck.learning._stores",
    "history_by_key": "skilldeck.learning._ledger",
    "HistoryUpdates": "skilldeck.learning._updates",
    "normalise_question": "skilldeck.learning._ledger",
}

__all__ = [
    "ANONYMOUS",
    "DEFAULT_LEDGER_TIMEOUT",
    "CardRef",
    "HistoryUpdates",
    "history_by_key",
    "normalise_question",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
