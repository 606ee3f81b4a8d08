"""The audit trail of tool calls decided by a policy: see :mod:`skilldeck.serving.audit` (kept import path)."""

from __future__ import annotations

from skilldeck.serving.audit import AuditLog

__all__ = ["AuditLog"]
