"""Verified skill content kept by the host: on disk across runs (:class:`ContentCache`), in memory across
clients (:class:`VerifiedBytes`).

Layout: ``<root>/<label>/<uri>``, both percent-encoded into one path segment each, so the
originating server and the URI are recoverable from the path and two servers' same-URI skills
never meet. Every ``get`` re-hashes the cached bytes against the digest of the *current* entry
(a stored label or a modification time is not verification); a mismatch deletes the file and
reports a miss. Each server folder carries an origin marker (``origin: mcp``) so content read
back after a restart is still treated as having arrived over MCP. Removing a server removes its
folder. The cache folder must not be a filesystem-skill discovery path.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections import OrderedDict
from pathlib import Path
from urllib.parse import quote, unquote

from skilldeck.skill import digest_of

__all__ = ["DEFAULT_HELD_BYTES", "MAX_HELD_FILE_BYTES", "ContentCache", "VerifiedBytes"]

DEFAULT_HELD_BYTES = 32 * 1024 * 1024
"""Bytes of verified content a host holds in memory by default."""
MAX_HELD_FILE_BYTES = 4 * 1024 * 1024
"""A file larger than this is not held in memory (it is fetched again when asked for again)."""

_MARKER = ".origin.json"
_MAX_NAME = 200


def _segment(value: str) -> str:
    encoded = quote(value, safe="")
    if encoded in ("", ".", ".."):
        encoded = encoded.replace(".", "%2E") or "%00"
    if len(encoded) > _MAX_NAME:  # long URIs: a stable hash, still unique per URI
        encoded = "sha256-" + hashlib.sha256(value.encode("utf-8")).hexdigest()
    return encoded


class ContentCache:
    """Verified skill content on disk, keyed by (label, uri)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path_for(self, label: str, uri: str) -> Path:
        return self.root / _segment(label) / _segment(uri)

    def get(self, label: str, uri: str, digest: str) -> bytes | None:
        """The cached bytes when they still hash to ``digest`` (the current entry's); else ``None``."""
        path = self.path_for(label, uri)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if digest_of(data) != digest:
            path.unlink(missing_ok=True)
            return None
        return data

    def put(self, label: str, uri: str, data: bytes) -> None:
        """Store verified bytes (written to a temporary file, then renamed: never modified in place)."""
        folder = self.root / _segment(label)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        marker = folder / _MARKER
        if not marker.exists():
            marker.write_text(json.dumps({"origin": "mcp", "label": label}), encoding="utf-8")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        path = self.path_for(label, uri)
        os.replace(tmp, path)
        if path.name.startswith("sha256-"):  # a hashed name: keep the URI beside it, recoverable
            path.with_name(path.name + ".uri").write_text(uri, encoding="utf-8")

    def origin_of(self, path: str | os.PathLike[str]) -> tuple[str, str] | None:
        """``(label, uri)`` recovered from a cached file's path, or ``None`` if it is not one."""
        p = Path(path)
        try:
            rel = p.resolve().relative_to(self.root.resolve())
        except ValueError:
            return None
        if len(rel.parts) != 2:
            return None
        label, name = unquote(rel.parts[0]), rel.parts[1]
        if name.startswith("sha256-"):
            try:
                return label, p.with_name(name + ".uri").read_text(encoding="utf-8")
            except OSError:
                return None
        return label, unquote(name)

    def labels(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(unquote(p.name) for p in self.root.iterdir() if (p / _MARKER).exists())

    def remove_server(self, label: str) -> None:
        """Delete everything cached from ``label``."""
        shutil.rmtree(self.root / _segment(label), ignore_errors=True)


class VerifiedBytes:
    """Bytes a server sent that were verified against the digest its entry lists, held in memory by (label, digest).

    Bytes that hashed to a digest once are those bytes for good: a long-running host (the gateway)
    answers every later read of them, whoever asks, from here, without asking the server again or
    spending its download budget. Before, one client reading a 3 KB file in a loop spent a server's
    whole budget and every client was refused its files for the rest of the window. At most
    ``max_bytes`` are held, the least recently used going first; a file over ``max_file_bytes`` is
    not held.
    """

    def __init__(self, max_bytes: int = DEFAULT_HELD_BYTES, max_file_bytes: int = MAX_HELD_FILE_BYTES) -> None:
        if max_bytes < 0 or max_file_bytes < 0:
            raise ValueError("max_bytes and max_file_bytes are numbers of bytes, at least 0")
        self.max_bytes = max_bytes
        self.max_file_bytes = max_file_bytes
        self.held_bytes = 0
        self._held: OrderedDict[tuple[str, str], bytes] = OrderedDict()

    def get(self, label: str, digest: str, size: int) -> bytes | None:
        data = self._held.get((label, digest))
        if data is None or len(data) != size:
            return None
        self._held.move_to_end((label, digest))
        return data

    def put(self, label: str, digest: str, data: bytes) -> None:
        """Hold ``data``, which the caller verified against ``digest``."""
        key = (label, digest)
        if len(data) > min(self.max_file_bytes, self.max_bytes) or key in self._held:
            return
        self._held[key] = data
        self.held_bytes += len(data)
        while self.held_bytes > self.max_bytes:
            _, dropped = self._held.popitem(last=False)
            self.held_bytes -= len(dropped)

    def remove_server(self, label: str) -> None:
        for key in [k for k in self._held if k[0] == label]:
            self.held_bytes -= len(self._held.pop(key))
