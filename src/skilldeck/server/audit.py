"""The audit trail of tool calls decided by a policy: who, which tool, allowed or refused, and why."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from skilldeck.server.policy import Caller

__all__ = ["AuditLog"]


class AuditLog:
    """Records kept in memory (``records``) and appended as JSON lines to ``path`` when given."""

    def __init__(self, path: str | Path | None = None, *, keep: int = 10_000) -> None:
        self.path = Path(path) if path is not None else None
        self.keep = keep
        self.records: list[dict[str, Any]] = []

    def record(self, caller: Caller, tool: str, *, allowed: bool, reason: str) -> None:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "subject": caller.subject,
            "client_id": caller.client_id,
            "tenant": caller.tenant,
            "roles": sorted(caller.roles),
            "authenticated": caller.authenticated,
            "tool": tool,
            "decision": "allowed" if allowed else "refused",
            "reason": reason,
        }
        self.records.append(entry)
        del self.records[: -self.keep]
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    def refused(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["decision"] == "refused"]
