"""The check every edit of another program's file passes before it may be written. Pure."""

from __future__ import annotations

from collections.abc import Callable

from skilldeck.errors import ClientFileError

__all__ = ["checked"]


def checked(new: str, expected: object, what: str, read: Callable[[str], object]) -> str:
    """``new``, once it reads back (with ``read``) to exactly ``expected``: the data of the old text with
    the one change made, nothing lost, nothing else changed.

    Raises:
        ClientFileError: it does not read, or reads to other data (nothing is to be written).
    """
    try:
        got = read(new)
    except ClientFileError as exc:
        raise ClientFileError(f"{what} would break the file ({exc}); nothing was written") from None
    if got != expected:
        raise ClientFileError(f"{what} would change more than it should; nothing was written")
    return new
