"""The audit trail of tool calls decided by a policy: who, which tool, allowed or refused, and why.

A call of a tool the policy does not route to the caller is recorded as refused with
:data:`NOT_GRANTED`, whichever check stopped it first (on a gateway, a tool the policy hides is
not even in the caller's listing, so the gate refuses it; the refusal is still the policy's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skilldeck._records import JsonLinesLog
from skilldeck.serving._policy import Caller

__all__ = ["GRANTED", "NOT_GRANTED", "AuditLog"]

GRANTED = "granted"
"""The reason recorded for a call the policy routes to the caller."""
NOT_GRANTED = "not granted by any admitted skill"
"""The reason recorded for a call of a tool the policy does not route to the caller."""


class AuditLog(JsonLinesLog):
    """Records kept in memory (``records``, the latest ``keep``) and appended as JSON lines to ``path`` when given."""

    def __init__(self, path: str | Path | None = None, *, keep: int = 10_000) -> None:
        super().__init__(path, keep=keep)

    def record(self, caller: Caller, tool: str, *, allowed: bool, reason: str) -> None:
        self._append(
            {
                "subject": caller.subject,
                "client_id": caller.client_id,
                "tenant": caller.tenant,
                "roles": sorted(caller.roles),
                "authenticated": caller.authenticated,
                "tool": tool,
                "decision": "allowed" if allowed else "refused",
                "reason": reason,
            }
        )

    def refused(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["decision"] == "refused"]
