"""The files ``skilldeck clients`` changes, and what it keeps to undo it: the I/O beside the pure plan.

* Every write goes to a temporary file beside the target and is renamed over it, after checking
  that the target still holds what the plan was made from (a client that rewrote its file meanwhile
  is not overwritten: run the command again). A symbolic link is followed (a dotfiles checkout
  keeps its link), and a file keeps its mode; one that holds secrets gets 0600.
* Before ``connect`` first changes a client's file for a scope it keeps a copy of it, byte for
  byte, in ``$SKILLDECK_HOME/clients/`` (mode 0600: client files hold tokens), and records the
  connection in ``connections.json`` there (versioned, at most :data:`MAX_CONNECTIONS`) with a
  digest of what it wrote. ``disconnect`` puts the copy back, unless the file was edited since
  (its digest differs), which it says and refuses without ``--force``. Two scopes in one file
  (Claude Code's user and local entries in ``~/.claude.json``) stack: each copy is the file as that
  connect found it, so they are undone last first.
* One process at a time: the whole of a ``connect`` or ``disconnect`` holds an exclusive lock on
  ``$SKILLDECK_HOME/clients/lock``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skilldeck.errors import ClientFileError

__all__ = [
    "MAX_CONNECTIONS",
    "MAX_FILE_BYTES",
    "Connection",
    "Connections",
    "digest",
    "read_text",
    "write_text",
]

MAX_CONNECTIONS = 256
"""Connections recorded at most (clients x scopes x projects); a connect past it is refused."""
MAX_FILE_BYTES = 16 * 1024 * 1024
"""A client's file larger than this is not read (``~/.claude.json`` grows with history, but not so)."""
VERSION = 1


def digest(data: bytes | None) -> str:
    return "" if data is None else hashlib.sha256(data).hexdigest()


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, ``None`` when there is none."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ClientFileError(f"{path} is a folder, not a file") from None
    except OSError as exc:
        raise ClientFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ClientFileError(f"{path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; it is not read")
    return data


def read_text(path: str) -> str | None:
    """The file's text as it is (line endings and a byte-order mark kept), ``None`` when there is none."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ClientFileError(f"{path} is not UTF-8 text; it is not changed") from None


def write_bytes(path: str, data: bytes, *, expected: bytes | None, private: bool, mode: int | None = None) -> None:
    """Put ``data`` in ``path`` (through a rename), if the file still holds ``expected``.

    The file keeps its mode (``mode`` when given); a new file gets the umask's, and ``private`` makes it 0600.

    Raises:
        ClientFileError: the file changed since it was read, or it cannot be written.
    """
    target = os.path.realpath(path)  # a link stays a link: its target is written
    if read_bytes(target) != expected:
        raise ClientFileError(f"{path} changed while this ran (is its client writing it?); run the command again")
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, exist_ok=True)
        existing = os.stat(target).st_mode if expected is not None else None
        if mode is None:
            mode = stat.S_IMODE(existing) if existing is not None else 0o666 & ~_umask()
        if private:
            mode &= 0o600
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".skilldeck-")
        try:
            with os.fdopen(handle, "wb") as file:
                os.fchmod(file.fileno(), mode) if hasattr(os, "fchmod") else None
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise ClientFileError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_text(path: str, text: str, *, expected: str | None, private: bool = False) -> None:
    write_bytes(
        path,
        text.encode("utf-8"),
        expected=None if expected is None else expected.encode("utf-8"),
        private=private,
    )


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def mode_of(path: str) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class Connection:
    """A client file ``connect`` changed: where its copy is, and the digest of what ``connect`` wrote."""

    client: str
    scope: str
    path: str
    upstreams: str
    written: str
    """sha256 of the file as ``connect`` left it."""
    backup: str | None
    """The copy's file name in the state folder; ``None``: there was no file before."""
    mode: int | None
    at: str


class Connections:
    """``$SKILLDECK_HOME/clients``: the connection records and the copies of the files as they were."""

    def __init__(self, home: Path) -> None:
        self.folder = home / "clients"
        self.records = self.folder / "connections.json"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The folder (0700) made, and held by this process alone until the block ends."""
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise ClientFileError(f"cannot use {self.folder}: {exc.strerror or exc}") from None
        try:
            _lock(handle)
            yield
        finally:
            os.close(handle)  # closing releases the lock

    def load(self) -> list[Connection]:
        data = read_bytes(str(self.records))
        if data is None:
            return []
        try:
            document = json.loads(data)
        except ValueError:
            raise ClientFileError(f"{self.records} is not JSON; remove it (the copies beside it stay)") from None
        if not isinstance(document, dict) or document.get("version") != VERSION:
            raise ClientFileError(
                f"{self.records} is of another version ({document.get('version') if isinstance(document, dict) else '?'}); "
                "use the skilldeck that wrote it"
            )
        return [Connection(**record) for record in document.get("connections", [])]

    def save(self, connections: list[Connection]) -> None:
        if len(connections) > MAX_CONNECTIONS:
            raise ClientFileError(
                f"{len(connections)} connections would be recorded, more than {MAX_CONNECTIONS}; "
                "disconnect some first (skilldeck clients lists them)"
            )
        text = json.dumps({"version": VERSION, "connections": [asdict(c) for c in connections]}, indent=1)
        write_bytes(str(self.records), text.encode(), expected=read_bytes(str(self.records)), private=True)

    @staticmethod
    def find(client: str, scope: str, path: str, connections: list[Connection]) -> Connection | None:
        return next((c for c in connections if (c.client, c.scope, c.path) == (client, scope, path)), None)

    def keep_copy(self, key: str, data: bytes, suffix: str = "orig") -> str:
        """A copy of ``data`` (a file as it was), mode 0600, under a name made from ``key``; that name."""
        name = f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.{suffix}"
        write_bytes(
            str(self.folder / name), data, expected=read_bytes(str(self.folder / name)), private=True, mode=0o600
        )
        return name

    def copy(self, name: str) -> bytes:
        data = read_bytes(str(self.folder / name))
        if data is None:
            raise ClientFileError(f"the copy {self.folder / name} is gone; the file cannot be restored from it")
        return data

    def drop_copy(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.folder / name).unlink()

    def record(self, **fields: Any) -> Connection:
        return Connection(at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields)


def _lock(handle: int) -> None:
    if os.name == "nt":  # pragma: no cover - Windows
        import msvcrt

        msvcrt.locking(handle, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined,unused-ignore]
    else:
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_EX)
