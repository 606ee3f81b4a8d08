"""The servers a person added from a catalog: ``$SKILLDECK_HOME/added.json``, apart from their own config.

The file is an ``mcpServers`` document (what ``--config`` reads), with a format version of its
own (``"dev.skilldeck/format"``, :data:`ADDED_FORMAT`) and, in each entry, where it came from
(``"dev.skilldeck/registry"``: name, version, registry, when, and the names of its secrets). The
gateway starts its servers beside the configured ones; it never writes the user's own config.

The file may hold secrets (the values a person gave), so it is written with mode 0600 in a
folder of mode 0700. Every change is a read, a change and a rename of a whole new file, under
an exclusive lock on ``added.json.lock``: two processes adding at once (a gateway's ``add`` and a
``skilldeck servers add``) both land, and a reader never sees half a file. A file that cannot
be read, or of a newer format, is never overwritten: the change is refused, naming the file.
At most :data:`MAX_ADDED` servers are kept, and a file over :data:`MAX_ADDED_BYTES` is not read.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from skilldeck.catalog._launch import ADDED_META
from skilldeck.errors import AddRefused, ConfigError
from skilldeck.host import ServerSpec, parse_config

__all__ = ["ADDED_FILE", "ADDED_FORMAT", "FORMAT_KEY", "MAX_ADDED", "MAX_ADDED_BYTES", "AddedServers"]

ADDED_FILE = "added.json"
ADDED_FORMAT = 1
"""The version of ``added.json`` this skilldeck writes; it reads this one and none newer."""
FORMAT_KEY = "dev.skilldeck/format"
MAX_ADDED = 64
"""Servers ``added.json`` holds at most."""
MAX_ADDED_BYTES = 1024 * 1024
"""The largest ``added.json`` read."""


class AddedServers:
    """``added.json`` in ``home`` (see the module docs)."""

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.home = Path(home)
        self.path = self.home / ADDED_FILE

    # -- reading ---------------------------------------------------------------------------------

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every added server's ``mcpServers`` entry, by label (none when there is no file).

        Raises:
            ConfigError: the file cannot be read, is not an ``added.json``, or is of a newer format.
        """
        try:
            with self.path.open("rb") as file:
                raw = file.read(MAX_ADDED_BYTES + 1)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        if len(raw) > MAX_ADDED_BYTES:
            raise ConfigError(f"{self.path} is over {MAX_ADDED_BYTES:,} bytes; it is not read (remove servers from it)")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ConfigError(
                f"{self.path} is not JSON ({exc}); fix or remove it (nothing is written over it)"
            ) from None
        if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
            raise ConfigError(f'{self.path} is not an added.json (no "mcpServers" object); fix or remove it')
        version = data.get(FORMAT_KEY, ADDED_FORMAT)
        if not isinstance(version, int) or version > ADDED_FORMAT:
            raise ConfigError(f"{self.path} is of format {version!r}, written by a newer skilldeck; upgrade to read it")
        return {str(label): dict(entry) for label, entry in data["mcpServers"].items() if isinstance(entry, Mapping)}

    def specs(self, *, timeout: float) -> list[ServerSpec]:
        """The added servers as upstream specs (their ``source`` this file).

        Raises:
            ConfigError: the file cannot be read, or an entry is not a server entry (naming it).
        """
        entries = self.entries()
        try:
            specs = parse_config({"mcpServers": entries}, timeout=timeout, environ={})
        except ConfigError as exc:
            raise ConfigError(f"{self.path}: {exc}") from None
        return [
            ServerSpec(
                s.label, s.transport, s.timeout, hidden=_secrets(entries.get(s.label, {})), source=str(self.path)
            )
            for s in specs
        ]

    def find(self, name: str) -> str | None:
        """The label of the added server ``name`` names (a label, or a registry name), or ``None``."""
        entries = self.entries()
        if name in entries:
            return name
        return next((label for label, entry in entries.items() if _origin(entry).get("name") == name), None)

    # -- changing --------------------------------------------------------------------------------

    def add(self, label: str, entry: Mapping[str, Any]) -> None:
        """Keep ``entry`` under ``label``.

        Raises:
            AddRefused: the label is taken (``label``), the server is added already (``added``), or the file
                holds :data:`MAX_ADDED` servers (``added``).
            ConfigError: the file cannot be read or written.
        """
        with self._locked():
            entries = self.entries()
            name = _origin(entry).get("name")
            for held_label, held in entries.items():
                if name and _origin(held).get("name") == name:
                    raise AddRefused(
                        f"{name} is added already (as {held_label!r}); remove it first: skilldeck servers remove {held_label}",
                        code="added",
                    )
            if label in entries:
                raise AddRefused(
                    f"the label {label!r} is taken by another added server; remove it first: skilldeck servers remove {label}",
                    code="label",
                )
            if len(entries) >= MAX_ADDED:
                raise AddRefused(f"{self.path} holds {MAX_ADDED} servers, its most; remove one first", code="added")
            entries[label] = dict(entry)
            self._write(entries)

    def remove(self, name: str) -> str | None:
        """Forget the added server ``name`` names (a label or a registry name); its label, or ``None``."""
        with self._locked():
            label = self.find(name)
            if label is None:
                return None
            entries = self.entries()
            del entries[label]
            self._write(entries)
            return label

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self.home / (ADDED_FILE + ".lock")
        try:
            self.home.mkdir(mode=0o700, parents=True, exist_ok=True)  # new: private; the file itself is always 0600
            descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:
            raise ConfigError(f"cannot lock {lock}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _write(self, entries: Mapping[str, Any]) -> None:
        text = json.dumps({FORMAT_KEY: ADDED_FORMAT, "mcpServers": dict(entries)}, indent=1, ensure_ascii=False)
        temporary = self.path.with_name(f".{ADDED_FILE}.{os.getpid()}.tmp")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                os.fchmod(file.fileno(), 0o600)  # also a file left over from an interrupted write
                file.write(text + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise ConfigError(f"cannot write {self.path}: {exc.strerror or exc}") from None


def _origin(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    origin = entry.get(ADDED_META)
    return origin if isinstance(origin, Mapping) else {}


def _secrets(entry: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(value, "<NAME>")`` for each secret an added entry holds, so messages about it redact them."""
    names = _origin(entry).get("secrets")
    if not isinstance(names, list):
        return ()
    found: list[tuple[str, str]] = []
    for where in ("env", "headers"):
        values = entry.get(where)
        if isinstance(values, Mapping):
            found += [(str(values[n]), f"<{n}>") for n in names if isinstance(n, str) and values.get(n)]
    return tuple(sorted(found, key=lambda kv: -len(kv[0])))
