"""A log of records kept in memory and appended as JSON lines to a file: the audit trail and the decision log."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

__all__ = ["JsonLinesLog"]


class JsonLinesLog:
    """Records kept in memory (``records``, the latest ``keep`` of them) and appended to ``path`` when given."""

    def __init__(self, path: str | Path | None = None, *, keep: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.keep = keep
        self.records: list[dict[str, Any]] = []

    def _append(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Stamp ``fields`` with the time (UTC), keep them, and write them as one line; returns the record."""
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields}
        self.records.append(entry)
        if self.keep is not None:
            del self.records[: -self.keep]
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return entry
