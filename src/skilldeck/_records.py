"""A log of records kept in memory and appended as JSON lines to a file: the audit trail and the decision log."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["JsonLinesLog"]

logger = logging.getLogger(__name__)


class JsonLinesLog:
    """Records kept in memory (``records``, the latest ``keep`` of them) and appended to ``path`` when given."""

    def __init__(self, path: str | Path | None = None, *, keep: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.keep = keep
        self.records: list[dict[str, Any]] = []
        self._listeners: list[Callable[[dict[str, Any]], None]] = []

    def subscribe(self, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call ``listener`` with every record from now on (metrics, a live page); returns the unsubscribe.

        A listener runs on the recording thread and must not block; one that raises is dropped (and
        the record is still kept and written), so an observer can never break a decision.
        """
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _append(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Stamp ``fields`` with the time (UTC), keep them, and write them as one line; returns the record."""
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields}
        self.records.append(entry)
        if self.keep is not None:
            del self.records[: -self.keep]
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
        for listener in list(self._listeners):
            try:
                listener(entry)
            except Exception:  # an observer's fault must not become the caller's
                self._listeners.remove(listener)
                logger.warning(
                    "a listener of the %s failed and no longer receives records", type(self).__name__, exc_info=True
                )
        return entry
