"""What ``skilldeck serve --console`` shows: the catalog each viewer may list, and the policy's decisions on calls.

A :class:`~skilldeck.serving._console.ConsoleSource` over a :class:`~skilldeck.server.SkillsExtension`:
the skills of the viewer's view (under a policy, what it admits for that caller), each with its
``SKILL.md`` digest, total size and files; the live decisions are the audit trail's (tool calls the
policy allowed or refused). ``serve`` has no upstreams and no ``find``, so the page has neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from skilldeck._records import JsonLinesLog
from skilldeck.server._extension import SkillsExtension
from skilldeck.serving._api import Caller, CatalogView, Policy, SkillRow

__all__ = ["ServeConsole"]


@dataclass(frozen=True)
class ServeConsole:
    """A skills server as its console shows it (see the module docs)."""

    extension: SkillsExtension
    title: str = "skilldeck serve"
    searches: ClassVar[bool] = False

    @property
    def logs(self) -> Sequence[JsonLinesLog]:
        return (self.extension.service.audit,)

    @property
    def policy(self) -> Policy | None:
        return self.extension.service.policy  # the one in force (a reload replaces it)

    def view(self, caller: Caller) -> CatalogView:
        return CatalogView(skills=[SkillRow.of(e.uri, e) for e in self.extension.service.view(caller).entries])

    def find(self, caller: Caller, query: str) -> Mapping[str, Any]:
        raise NotImplementedError("serve has no find")  # never asked: searches is False
