"""What sibling packages may use of ``skilldeck.learning`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

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


__getattr__ = lazy_names(__name__, _WHERE)
