"""The ``Upstreams`` port: the only way the gateway's decisions reach the upstream servers.

:class:`~skilldeck.gateway._service.GatewayService` decides (what ``find`` ranks, what ``load``
admits, whether a call may be sent) on what this port lists, and sends nothing itself: a verified
load, a file read and a tool call each go through one of its methods, as a
:class:`~skilldeck.host._loader.SkillLoader` reaches a server only through
:class:`~skilldeck.host._port.SkillIndex`. :mod:`skilldeck.gateway._upstreams` is the adapter over a
connected :class:`~skilldeck.host.Host` and the SDK's clients.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.shared.dispatcher import ProgressFnT

from skilldeck.gateway._relay import CallRelay, LogSink
from skilldeck.host import LoadedSkill, SkillRecord, ToolRecord
from skilldeck.select import CatalogSnapshot

__all__ = ["Progress", "ToolCall", "Unavailable", "Upstreams", "down", "tool_id"]

Progress = ProgressFnT
"""Told each progress notification an upstream sends for a call: ``(progress, total, message)``."""


def tool_id(label: str, tool: str) -> str:
    """A tool's id across the gateway: ``LABEL/TOOL``."""
    return f"{label}/{tool}"


@dataclass(frozen=True)
class ToolCall:
    """A call the gateway admitted: who asked, the tool, and where what the upstream sends meanwhile goes."""

    client: str
    label: str
    tool: str
    arguments: dict[str, Any]
    progress: Progress | None = None
    """Told each progress notification the upstream sends for this call."""
    log: LogSink | None = None
    """Told the log messages the upstream sends for this call."""
    log_level: str | None = None
    """Asked of a 2026-07-28 upstream, which logs only when a request opts in."""
    relay: CallRelay | None = None
    """The way back to the calling client for the upstream's questions (sampling, elicitation, roots)."""


class Unavailable(Protocol):
    """Why an upstream is down, and when it is tried again."""

    @property
    def reason(self) -> str: ...

    def describe(self) -> str:
        """The reason, with when the upstream is tried again."""
        ...


def down(failures: Mapping[str, Unavailable], label: str) -> str | None:
    """Why ``label`` cannot be used now, and when it is tried again; ``None`` when it is up."""
    failure = failures.get(label)
    return None if failure is None else f"{label!r} is down ({failure.describe()})"


class Upstreams(Protocol):
    """The upstream servers as the gateway's decisions see them: what they list, and three requests."""

    @property
    def failures(self) -> Mapping[str, Unavailable]:
        """Upstreams that are down now, by label."""
        ...

    @property
    def configured(self) -> Sequence[str]:
        """The label of every upstream the gateway serves, up or down (configured or added), in order."""
        ...

    @property
    def connected(self) -> Collection[str]:
        """The labels of the upstreams connected now."""
        ...

    def snapshot(self) -> CatalogSnapshot:
        """Every upstream's skills and tools as listed now (what ``find`` ranks)."""
        ...

    @property
    def skills(self) -> Sequence[SkillRecord]:
        """Every skill listed now, in label then URI order."""
        ...

    def skill(self, label: str, uri: str) -> SkillRecord | None:
        """The skill ``label`` lists at ``uri``, if it still does."""
        ...

    def skill_id(self, record: SkillRecord) -> str:
        """The skill's id, unique among all listed (``LABEL/NAME``)."""
        ...

    def origin(self, label: str) -> str:
        """The identity of the upstream ``label`` names (what the usage ledger keys what it taught by:
        :attr:`~skilldeck.host.ServerSpec.identity`)."""
        ...

    def tools(self, label: str | None = None) -> Sequence[ToolRecord]:
        """The tools ``label`` lists now, as listed (every upstream's, in label order, when ``None``)."""
        ...

    def tool_names(self, label: str) -> frozenset[str]:
        """The names of the tools ``label`` lists now."""
        ...

    async def load(self, record: SkillRecord) -> LoadedSkill:
        """The skill's ``SKILL.md``, verified against its listed entry (or raises why not)."""
        ...

    def file_uri(self, loaded: LoadedSkill, path: str) -> str:
        """The URI of a file of ``loaded`` its entry lists at ``path`` (or raises: not listed)."""
        ...

    async def read(self, loaded: LoadedSkill, path: str) -> bytes:
        """A supporting file of ``loaded``, verified against the held entry."""
        ...

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        """Send a call the gateway admitted; the result (or a tool error saying why it failed upstream).

        Raises:
            GateRefused: the call could not be sent (the upstream is not connected, or a round of a
                held call does not continue one).
        """
        ...
