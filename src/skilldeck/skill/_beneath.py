"""Opening and reading files below a root folder without following links out of it.

Nothing below a root is opened by path: each folder and file is opened relative to its parent's
descriptor with ``O_NOFOLLOW`` (:func:`open_beneath` resolves a symlink one component at a time and
refuses one that leaves the root) and read from the descriptor that was checked (:func:`read_at_most`),
so renames racing with a load can make a file fail to load but never publish a byte from outside
the root. Used by :class:`~skilldeck.skill._pack.DirectorySource`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from skilldeck.errors import SkillError

__all__ = [
    "MAX_SYMLINK_HOPS",
    "O_FILE",
    "O_FOLDER",
    "O_ROOT",
    "Listing",
    "Root",
    "entry_name",
    "open_beneath",
    "read_at_most",
]

MAX_SYMLINK_HOPS = 40
"""Symlinks followed while resolving one file (the kernel's own limit); more is a loop."""

O_ROOT = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
O_FOLDER = O_ROOT | os.O_NOFOLLOW
O_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC  # a FIFO never blocks the open


Listing = tuple[list[str], dict[str, bool], tuple[SkillError, ...]]
"""One folder's sub-folders and files (names, sorted; a file with whether it is a regular one) and the
symlinked folders refused in it."""


def entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


@dataclass(frozen=True)
class Root:
    """One root during one load: its descriptor, and the names absolute symlinks may use for it."""

    fd: int
    path: Path  # as configured, for messages only
    shown: str  # ``str(path)``
    name: str  # the real folder's name (the skill name when the root is itself a skill)
    absolute: tuple[tuple[str, ...], ...]  # the root's absolute path as configured and resolved, as parts
    listings: dict[tuple[str, ...], Listing] = field(default_factory=dict)
    """Each folder's listing, by its parts below the root, as the root walk found it (this load only)."""

    @classmethod
    @contextmanager
    def open(cls, path: Path) -> Iterator[Root]:
        """``path`` opened for one load, closed (and its listings dropped) when the block ends. The
        configured path itself may be a link: the user chose it. Raises ``OSError``."""
        real = Path(os.path.realpath(path))
        root = cls(
            fd=os.open(path, O_ROOT),
            path=path,
            shown=str(path),
            name=real.name,
            absolute=(PurePosixPath(os.path.abspath(path)).parts, PurePosixPath(real).parts),
        )
        try:
            yield root
        finally:
            os.close(root.fd)
            root.listings.clear()

    def shown_path(self, *parts: str) -> str:
        """``str(self.path.joinpath(*parts))`` for names (no ``/``, not ``.`` or ``..``), without pathlib's cost."""
        if not parts:
            return self.shown
        joined = "/".join(parts)
        if self.shown == ".":
            return joined
        return self.shown + joined if self.shown.endswith("/") else f"{self.shown}/{joined}"


class _Escape(Exception):
    """A symlink resolves outside the root."""


class _NotRegular(Exception):
    """The file is a FIFO, socket, device or folder: it is not opened at all."""


def open_beneath(ctx: Root, dir_fd: int, dir_parts: tuple[str, ...], name: str, *, plain: bool = False) -> int:
    """Open file ``name`` of the open folder ``dir_fd`` (at ``dir_parts`` below the root) for reading.

    A regular file is opened with ``O_NOFOLLOW`` right there: at once when the folder's listing saw
    one (``plain``; if it was swapped for a symlink since, the open fails with ``ELOOP`` and the
    link is resolved as below; the caller checks with ``fstat`` what it opened, and ``O_NONBLOCK``
    keeps a FIFO swapped in from blocking), else after an ``lstat`` says it is one. A symlink is
    resolved by hand from the root descriptor: each component is opened with ``O_NOFOLLOW``, each
    link met is read and spliced in, ``..`` steps back along the descriptors already opened, and an
    absolute target must name the root as configured or as resolved. Anything that would leave the
    root raises :class:`_Escape`; a rename racing with this can only make an open fail, never reach
    outside.
    """
    if plain:
        try:
            return os.open(name, O_FILE, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISLNK(st.st_mode):
        if not stat.S_ISREG(st.st_mode):
            raise _NotRegular
        return os.open(name, O_FILE, dir_fd=dir_fd)
    pending = [*dir_parts, name]
    stack = [os.dup(ctx.fd)]
    hops = 0
    try:
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if len(stack) == 1:
                    raise _Escape
                os.close(stack.pop())
                continue
            here = stack[-1]
            st = os.stat(part, dir_fd=here, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
                target = PurePosixPath(os.readlink(part, dir_fd=here))
                if target.is_absolute():
                    inside = next((target.parts[len(a) :] for a in ctx.absolute if target.parts[: len(a)] == a), None)
                    if inside is None:
                        raise _Escape
                    while len(stack) > 1:
                        os.close(stack.pop())
                    pending[:0] = inside
                else:
                    pending[:0] = target.parts
                continue
            if pending:
                stack.append(os.open(part, O_FOLDER, dir_fd=here))
                continue
            if not stat.S_ISREG(st.st_mode):
                raise _NotRegular
            return os.open(part, O_FILE, dir_fd=here)
        raise _NotRegular  # the link resolves to the root folder itself
    finally:
        for fd in stack:
            os.close(fd)


def read_at_most(fd: int, limit: int, first: int = 1 << 20) -> bytes:
    """Up to ``limit`` bytes of ``fd``, to its end. The first read asks for ``first`` (what ``fstat`` gave, plus
    one), later ones for 1 MiB: a small file is not read through a 1 MiB buffer."""
    chunks: list[bytes] = []
    size = 0
    ask = first
    while size < limit:
        want = max(1, min(ask, limit - size))
        chunk = os.read(fd, want)
        ask = 1 << 20
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if len(chunk) < want:  # a regular file reads short only at its end: no read to learn it
            break
    return b"".join(chunks)
