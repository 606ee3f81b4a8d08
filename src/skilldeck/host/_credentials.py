"""Where OAuth tokens and client registrations of remote servers are kept: the user's credential store.

One record per server, keyed on the server's URL: its tokens (with when the access token expires, as
a time of day, so that a token read back after a restart is refreshed, not sent stale) and the client
registration the tokens were issued to.

Two stores, one chosen by :func:`default_store`:

* :class:`KeyringStore`: the system's credential store through the ``keyring`` package (macOS
  Keychain, Windows Credential Locker, the Secret Service), when ``keyring`` is installed and has a
  real backend (``pip install 'skilldeck[keyring]'``);
* :class:`FileStore`: else one JSON file per server under ``$SKILLDECK_HOME/credentials/``, the
  folder mode 0700 and each file 0600, written whole (a temporary file renamed over the old one).

``SKILLDECK_KEYRING=0`` keeps to the file store even where a keyring exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from skilldeck.errors import CredentialStoreError

__all__ = ["CredentialStore", "FileStore", "KeyringStore", "default_store", "skilldeck_home"]

SERVICE = "skilldeck"
"""The keyring service every record is saved under (the server URL is the user name)."""

_MAX_RECORD = 1024 * 1024
"""Bytes one stored record may take: a larger file is not a record of ours."""


class CredentialStore(Protocol):
    """A place for one JSON-able record per server URL."""

    @property
    def where(self) -> str:
        """Where records go, as a person reads it (``the system keyring (...)``, a folder)."""
        ...

    def load(self, server: str) -> dict[str, Any] | None:
        """The record saved for ``server``, or ``None``."""
        ...

    def save(self, server: str, record: Mapping[str, Any]) -> None:
        """Keep ``record`` for ``server`` in place of any earlier one."""
        ...

    def delete(self, server: str) -> bool:
        """Forget ``server``'s record; whether there was one."""
        ...


def skilldeck_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$SKILLDECK_HOME``, else ``$XDG_STATE_HOME/skilldeck`` (``~/.local/state/skilldeck``)."""
    env = os.environ if environ is None else environ
    if home := env.get("SKILLDECK_HOME"):
        return Path(home)
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "skilldeck"


class FileStore:
    """Records as files of mode 0600 in a folder of mode 0700 (``home/credentials``), one per server."""

    def __init__(self, home: Path) -> None:
        self.folder = home / "credentials"

    @property
    def where(self) -> str:
        return f"{self.folder} (files of mode 0600; no keyring in use)"

    def path(self, server: str) -> Path:
        """The file of ``server``'s record: a digest of the URL, so that no URL makes a path of its own."""
        return self.folder / (hashlib.sha256(server.encode()).hexdigest()[:32] + ".json")

    def load(self, server: str) -> dict[str, Any] | None:
        """``server``'s record, ``None`` without one; a :class:`CredentialStoreError` for a record (or
        its folder) that another local user could have written: its token endpoint and tokens would
        be theirs, and a refresh would send the client secret where they chose."""
        path = self.path(server)
        try:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CredentialStoreError(f"cannot read the stored credentials {path}: {exc.strerror or exc}") from None
        with os.fdopen(descriptor, "rb") as file:
            self._own(self.folder, os.lstat(self.folder), "folder", "700")
            self._own(path, os.fstat(file.fileno()), "file", "600")
            try:
                raw = file.read(_MAX_RECORD + 1)
            except OSError as exc:
                raise CredentialStoreError(
                    f"cannot read the stored credentials {path}: {exc.strerror or exc}"
                ) from None
        try:
            record = json.loads(raw) if len(raw) <= _MAX_RECORD else None
        except ValueError:
            record = None
        if not isinstance(record, dict) or record.get("server") != server:
            return None  # not ours, or another server's: a login writes it again
        return record

    def save(self, server: str, record: Mapping[str, Any]) -> None:
        self._private_folder()
        path = self.path(server)
        text = json.dumps({**record, "server": server}, indent=1)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                if hasattr(os, "fchmod"):  # the mode of a file left over from an interrupted write too
                    os.fchmod(file.fileno(), 0o600)
                file.write(text)
            os.replace(temporary, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise CredentialStoreError(f"cannot write the credentials {path}: {exc.strerror or exc}") from None

    def delete(self, server: str) -> bool:
        try:
            self.path(server).unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise CredentialStoreError(f"cannot remove {self.path(server)}: {exc.strerror or exc}") from None
        return True

    @staticmethod
    def _own(path: Path, status: os.stat_result, what: str, mode: str) -> None:
        """Refuse a credentials ``what`` not owned by this user, or that others may write (POSIX)."""
        if os.name != "posix":
            return
        if status.st_uid != os.getuid():
            raise CredentialStoreError(
                f"the credentials {what} {path} belongs to another user (uid {status.st_uid}): it is not used; "
                f"remove it and run `skilldeck login` again"
            )
        if status.st_mode & 0o022:
            raise CredentialStoreError(
                f"the credentials {what} {path} may be written by others (mode {stat.S_IMODE(status.st_mode):o}): "
                f"it is not used; make it private (chmod {mode} {path}) or remove it and run `skilldeck login` again"
            )

    def _private_folder(self) -> None:
        """Make the folder (0700), or refuse one that others may read or that is not a folder."""
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            mode = self.folder.lstat().st_mode
        except OSError as exc:
            raise CredentialStoreError(f"cannot make {self.folder}: {exc.strerror or exc}") from None
        if not stat.S_ISDIR(mode):
            raise CredentialStoreError(f"{self.folder} is not a folder: remove it, or set SKILLDECK_HOME elsewhere")
        if os.name == "posix" and mode & 0o077:
            try:
                self.folder.chmod(0o700)
            except OSError as exc:
                raise CredentialStoreError(
                    f"{self.folder} may be read by others (mode {stat.S_IMODE(mode):o}) and cannot be made "
                    f"private: {exc.strerror or exc}"
                ) from None


class KeyringStore:
    """Records in the system's credential store, through a ``keyring`` module with a real backend."""

    def __init__(self, keyring: ModuleType) -> None:
        self._keyring = keyring

    @property
    def where(self) -> str:
        backend = self._keyring.get_keyring()
        return f"the system keyring ({type(backend).__name__}, service {SERVICE!r})"

    def load(self, server: str) -> dict[str, Any] | None:
        try:
            raw = self._keyring.get_password(SERVICE, server)
        except Exception as exc:  # keyring's errors are its backends' own
            raise CredentialStoreError(f"cannot read the keyring: {exc}") from None
        try:
            record = json.loads(raw) if raw else None
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    def save(self, server: str, record: Mapping[str, Any]) -> None:
        try:
            self._keyring.set_password(SERVICE, server, json.dumps({**record, "server": server}))
        except Exception as exc:
            raise CredentialStoreError(f"cannot write to the keyring: {exc}") from None

    def delete(self, server: str) -> bool:
        if self.load(server) is None:
            return False
        try:
            self._keyring.delete_password(SERVICE, server)
        except Exception as exc:
            raise CredentialStoreError(f"cannot remove from the keyring: {exc}") from None
        return True


def _keyring() -> ModuleType | None:
    """The ``keyring`` module when it is installed and has a backend that keeps anything, else ``None``."""
    try:  # an optional extra: imported by name, so that nothing needs it installed
        keyring = importlib.import_module("keyring")
        fail = importlib.import_module("keyring.backends.fail")
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return keyring


def default_store(environ: Mapping[str, str] | None = None) -> CredentialStore:
    """The keyring where one is usable (and ``SKILLDECK_KEYRING`` is not ``0``), else the file store."""
    env = os.environ if environ is None else environ
    if env.get("SKILLDECK_KEYRING", "") not in ("0", "false", "no"):
        module = _keyring()
        if module is not None:
            return KeyringStore(module)
    return FileStore(skilldeck_home(env))
