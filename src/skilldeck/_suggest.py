"""A "did you mean" for a name that matches nothing, from the names that exist."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``known`` to ``name``, ``""`` when none is close."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
