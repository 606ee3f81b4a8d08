"""A card's past questions and whether they are trusted: what the learning ledger hands selection. Pure.

Its own module, with nothing of numpy, so that the ledger (and the CLI that reads it) need not load the
ranking to name it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["Taught", "trusted"]


class Taught(list[str]):
    """A card's past questions, and whether enough callers taught them to be trusted.

    Trusted past questions were taught by at least two distinct callers, or in an audience with a
    single caller (a desktop's only user teaches fully); their server view is capped with
    :attr:`~skilldeck.select._config.RankConfig.history_trusted_floor`. One caller's questions in an
    audience of several stay capped by the card's own evidence, as any plain sequence. (Equal to a
    list of the same questions: the trust is read by the ranker only.)"""

    def __init__(self, questions: Iterable[str] = (), trusted: bool = False) -> None:
        super().__init__(questions)
        self.trusted = trusted

    def __repr__(self) -> str:
        return f"Taught({list(self)!r}, trusted={self.trusted})"


def trusted(past: Sequence[str]) -> bool:
    """Whether ``past`` (a card's past questions) are trusted (:class:`Taught`)."""
    return bool(getattr(past, "trusted", False))
