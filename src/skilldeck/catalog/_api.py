"""What sibling packages may use of ``skilldeck.catalog`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

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


__getattr__ = lazy_names(__name__, _WHERE)
