"""A host-owned, on-demand cache of verified skill files.

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
from pathlib import Path
from urllib.parse import quote, unquote

from skilldeck.skill.manifest import digest_of

__all__ = ["ContentCache"]

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
