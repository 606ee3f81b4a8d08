"""Content-bound approvals, persisted across restarts.

An approval is keyed by ``(label, uri)`` and bound to the whole ``{uri: digest}`` set of the entry
the user saw. If a later entry for that skill lists a different set (a file rotated, added or
removed), the approval no longer applies and is revoked. Skills whose ``resources`` is
``"dynamic"`` cannot be content-bound: their approvals live for the session only and are never
written to disk. An approval may include the skill's ``allowed-tools`` grant; without an explicit
grant, ``allowed-tools`` from an MCP-served skill is ignored.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skilldeck.errors import SkilldeckError
from skilldeck.skill import SkillEntry

__all__ = ["ApprovalRequest", "ApprovalStore", "Approver"]


@dataclass(frozen=True)
class ApprovalRequest:
    """What the user is asked to approve: a skill from a named server, and any grant it requests."""

    label: str
    entry: SkillEntry
    allowed_tools: str | None
    changed: bool = False
    """True when an earlier approval was revoked because the skill's files changed."""


Approver = Callable[[ApprovalRequest], "bool | Awaitable[bool]"]


def _binding(entry: SkillEntry) -> dict[str, str] | None:
    if isinstance(entry.resources, str):
        return None
    return {r.uri: r.digest for r in entry.resources}


class ApprovalStore:
    """Approvals in a JSON file (``path``), or in memory only when ``path`` is ``None``."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._records: dict[str, dict[str, Any]] = {}
        self._session: set[tuple[str, str]] = set()
        self._session_tools: set[tuple[str, str]] = set()
        self._transient: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._records = dict(data["approvals"])
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
                raise SkilldeckError(
                    f"{self.path}: the approvals file is damaged ({exc}); fix it, or delete it to start over "
                    "(every skill will be asked for again)"
                ) from None

    @staticmethod
    def _key(label: str, uri: str) -> str:
        return json.dumps([label, uri])

    def status(self, label: str, entry: SkillEntry) -> str:
        """``"approved"``, ``"changed"`` (an approval existed for other content: now revoked), or ``"none"``."""
        if (label, entry.uri) in self._session:
            return "approved"
        record = self._record(label, entry.uri)
        if record is None:
            return "none"
        if record.get("resources") == _binding(entry):
            return "approved"
        self.revoke(label, entry.uri)
        return "changed"

    def is_approved(self, label: str, entry: SkillEntry) -> bool:
        return self.status(label, entry) == "approved"

    def allows_tools(self, label: str, entry: SkillEntry) -> bool:
        """Whether the user explicitly granted this skill's ``allowed-tools`` (for the current content)."""
        if not self.is_approved(label, entry):
            return False
        record = self._record(label, entry.uri)
        return bool(record and record.get("allowed_tools")) or (label, entry.uri) in self._session_tools

    def _record(self, label: str, uri: str) -> dict[str, Any] | None:
        key = self._key(label, uri)
        return self._transient.get(key) or self._records.get(key)

    def approve(self, label: str, entry: SkillEntry, *, allowed_tools: bool = False, persist: bool = True) -> None:
        """Record an approval bound to the entry's current ``{uri: digest}`` set.

        ``persist=False`` approves for this process only (``--yes``); the approval is still bound to
        the content and revoked if it changes.
        """
        binding = _binding(entry)
        if binding is None:  # dynamic: cannot be content-bound, never persisted
            self._session.add((label, entry.uri))
            if allowed_tools:
                self._session_tools.add((label, entry.uri))
            else:
                self._session_tools.discard((label, entry.uri))
            return
        record = {
            "label": label,
            "uri": entry.uri,
            "resources": binding,
            "allowed_tools": allowed_tools,
            "approved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        key = self._key(label, entry.uri)
        if not persist:
            self._transient[key] = record
            return
        self._transient.pop(key, None)
        self._records[key] = record
        self._save()

    def revoke(self, label: str, uri: str) -> None:
        self._session.discard((label, uri))
        self._session_tools.discard((label, uri))
        self._transient.pop(self._key(label, uri), None)
        if self._records.pop(self._key(label, uri), None) is not None:
            self._save()

    def remove_server(self, label: str) -> None:
        for key in [k for k, v in self._records.items() if v.get("label") == label]:
            del self._records[key]
        self._transient = {k: v for k, v in self._transient.items() if v.get("label") != label}
        self._session = {k for k in self._session if k[0] != label}
        self._session_tools = {k for k in self._session_tools if k[0] != label}
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".approvals-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "approvals": self._records}, fh, indent=2, sort_keys=True)
        os.replace(tmp, self.path)
