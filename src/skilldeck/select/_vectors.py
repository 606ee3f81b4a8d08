"""Card vectors cached by content, so a restart or a re-list re-encodes only what changed.

One file per encoder model (its ``fingerprint``) under a cache folder the caller names (the
host's cache folder, or an explicit one); with no folder the rows are kept in memory only, for
the life of the cache object (a gateway re-listing one upstream keeps the others' vectors). A row is
keyed by the sha256 of the exact text the encoder read, which is made of everything the vector
depends on (a tool's server, name, description; a skill's name and description), so a changed
card gets a new key and an unchanged one is never encoded twice. The file is written whole to a
temporary name and renamed, so a reader never sees half of it; a file that cannot be read, or
does not have the expected shape, is ignored (and replaced at the next write).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

__all__ = ["MAX_ENTRIES", "VectorCache"]

MAX_ENTRIES = 50_000
"""Rows kept per encoder at most (about 75 MB for 384 dimensions); the ones asked for last come first."""

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class _Encoder(Protocol):
    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class VectorCache:
    """Vectors of texts, by content, in ``root`` (created on first write), or in memory.

    Args:
        root: the cache folder; ``None``: rows are kept in this object only.
        max_entries: rows kept per encoder at most; older rows not asked for by the last call go first.
    """

    def __init__(self, root: str | os.PathLike[str] | None, *, max_entries: int = MAX_ENTRIES) -> None:
        self.root = Path(root) if root is not None else None
        self.max_entries = max_entries
        self.encoded = 0
        """How many texts the last :meth:`encode` call had to encode (the rest came from the file)."""
        self._memory: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        """Without a folder: per file name, the rows a file would hold (keys, vectors)."""
        self._lock = threading.Lock()  # rankers indexing in the background may share a cache

    def path_for(self, fingerprint: str) -> Path:
        return (self.root or Path()) / f"{_SAFE.sub('_', fingerprint)[:100]}.npz"

    def _read(self, path: Path) -> tuple[np.ndarray, np.ndarray] | None:
        if self.root is None:
            with self._lock:
                return self._memory.get(path.name)
        try:
            with np.load(path, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
        except (OSError, ValueError, KeyError, EOFError):
            return None
        if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != 32 or vectors.ndim != 2:
            return None
        if len(keys) != len(vectors):
            return None
        return keys, np.asarray(vectors, dtype=np.float32)

    def missing(self, encoder: _Encoder, texts: Sequence[str]) -> list[str]:
        """The texts (each once, in order) whose vectors the file does not hold: what :meth:`encode` would encode."""
        texts = list(dict.fromkeys(texts))
        fingerprint = str(getattr(encoder, "fingerprint", "") or "")
        stored = self._read(self.path_for(fingerprint)) if fingerprint else None
        if stored is None:
            return texts
        known = {row.tobytes() for row in stored[0]}
        return [t for t in texts if _key(t) not in known]

    def encode(self, encoder: _Encoder, texts: Sequence[str]) -> np.ndarray:
        """The vectors of ``texts`` (rows in order): from the file when known, else encoded and stored.

        An encoder without a ``fingerprint`` (which names its model) is not cached: its vectors
        could not be told apart from another model's."""
        texts = list(texts)
        fingerprint = str(getattr(encoder, "fingerprint", "") or "")
        if not fingerprint:
            self.encoded = len(texts)
            return np.asarray(encoder.encode(texts), dtype=np.float32)
        path = self.path_for(fingerprint)
        stored = self._read(path)
        known: dict[bytes, int] = {}
        old_keys: list[bytes] = []
        old_vectors: np.ndarray | None = None
        if stored is not None:
            # each key is 32 raw bytes (a numpy "S32" string would drop a digest's trailing zero bytes)
            old_keys = [row.tobytes() for row in stored[0]]
            old_vectors = stored[1]
            known = {k: i for i, k in enumerate(old_keys)}
        keys = [_key(t) for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in known))
        self.encoded = len(missing)
        fresh = np.asarray(encoder.encode(missing), dtype=np.float32) if missing else None
        dim = fresh.shape[1] if fresh is not None else (old_vectors.shape[1] if old_vectors is not None else 0)
        if old_vectors is not None and fresh is not None and old_vectors.shape[1] != dim:
            old_keys, old_vectors, known = [], None, {}  # another shape: start again
        new_rows = {_key(t): i for i, t in enumerate(missing)}
        out = np.empty((len(texts), dim), dtype=np.float32)
        for row, k in enumerate(keys):
            if k in new_rows and fresh is not None:
                out[row] = fresh[new_rows[k]]
            elif old_vectors is not None:
                out[row] = old_vectors[known[k]]
        if missing:
            self._write(path, keys, out, old_keys, old_vectors)
        return out

    def _write(
        self, path: Path, keys: list[bytes], vectors: np.ndarray, old_keys: list[bytes], old_vectors: np.ndarray | None
    ) -> None:
        asked: dict[bytes, int] = {}
        for i, k in enumerate(keys):
            asked.setdefault(k, i)
        rows_keys = list(asked)[: self.max_entries]
        rows = [vectors[asked[k]] for k in rows_keys]
        if old_vectors is not None:
            room = self.max_entries - len(rows_keys)
            for i, k in enumerate(old_keys):
                if room <= 0:
                    break
                if k not in asked:
                    rows_keys.append(k)
                    rows.append(old_vectors[i])
                    room -= 1
        keys_array = np.frombuffer(b"".join(rows_keys), dtype=np.uint8).reshape(-1, 32)
        matrix = np.stack(rows) if rows else np.zeros((0, vectors.shape[1]), dtype=np.float32)
        if self.root is None:
            with self._lock:
                self._memory[path.name] = (keys_array, matrix)
            return
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=keys_array, vectors=matrix)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
