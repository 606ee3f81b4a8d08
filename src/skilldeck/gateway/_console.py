"""What the gateway's console page shows (``skilldeck gateway --console``): a :class:`~skilldeck.serving._console.ConsoleSource`.

Per viewer (a :class:`~skilldeck.serving._policy.Caller`), everything comes from the same index
``find`` ranks for that caller: under a policy, the skills it admits and the tools routed to the
caller, and only the upstreams of which the caller may see something. The search box runs the
gateway's own ``find`` for the viewer (recorded in the decision log like any other, under a client
key of kind ``console``). Upstream changes are heard through :meth:`GatewayConsole.changed`, which
the watcher's ``on_change`` calls: when each upstream last changed, and how often it went down.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from skilldeck._records import JsonLinesLog
from skilldeck.gateway._port import tool_id
from skilldeck.gateway._service import GatewayService
from skilldeck.host._api import CatalogChange
from skilldeck.serving._api import Caller, CatalogView, Policy, SkillRow, ToolRow, UpstreamRow, client_key

__all__ = ["GatewayConsole"]


class GatewayConsole:
    """The gateway as its console shows it (see the module docs)."""

    searches = True

    def __init__(self, service: GatewayService, title: str = "skilldeck gateway") -> None:
        self.service = service
        self.title = title
        self.logs: Sequence[JsonLinesLog] = (service.log, service.audit)
        self._changes: dict[str, str] = {}
        self._failures: dict[str, int] = {}

    @property
    def policy(self) -> Policy | None:
        return self.service.policy  # the one in force (a reload replaces it)

    def changed(self, change: CatalogChange) -> None:
        """An upstream changed (re-listed, down, back, removed): note when and why."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._changes[change.label] = f"{stamp} ({', '.join(sorted(change.reasons)) or 'requested'})"
        if "down" in change.reasons:
            self._failures[change.label] = self._failures.get(change.label, 0) + 1

    def view(self, caller: Caller) -> CatalogView:
        service = self.service
        index = service.index_for(caller)
        upstreams = service.upstreams
        skills: list[SkillRow] = []
        per_label: dict[str, int] = {}
        for card in index.cards.cards:
            if card.kind != "skill":
                continue
            record = upstreams.skill(card.server, card.uri or "")
            if record is None:
                continue
            per_label[card.server] = per_label.get(card.server, 0) + 1
            skills.append(SkillRow.of(service.indexes.card_id(card), record.entry))
        tools = [
            ToolRow(tool_id(label, name), str(tool.get("description") or ""), _schema(tool))
            for label, listed in sorted(index.cards.tools.items())
            for name, tool in sorted(listed.items())
        ]
        rows = []
        failures = upstreams.failures
        for label in upstreams.configured:
            listed = len(index.cards.tools.get(label, {}))
            if service.policy is not None and not listed and not per_label.get(label):
                continue  # nothing of it is this caller's to see
            failure = failures.get(label)
            rows.append(
                UpstreamRow(
                    label,
                    failure is None and label in upstreams.connected,
                    listed,
                    per_label.get(label, 0),
                    self._changes.get(label),
                    self._failures.get(label, 0),
                    failure.describe() if failure is not None else None,
                )
            )
        return CatalogView(rows, sorted(skills, key=lambda s: s.id), tools)

    def find(self, caller: Caller, query: str) -> Mapping[str, Any]:
        client = client_key("console", caller.subject, client_id=caller.client_id)
        return self.service.find(caller, client, query)


def _schema(tool: Mapping[str, Any]) -> str:
    return json.dumps(tool.get("inputSchema") or {"type": "object"}, indent=2, ensure_ascii=False, default=str)
