"""The ``SkillIndex`` port: the only way the host core reaches an origin's entries and bytes.

The loader depends on this protocol, not on the MCP SDK; :mod:`skilldeck.host._index` provides
the adapters (a connected server, local skill folders).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["SkillIndex"]


@runtime_checkable
class SkillIndex(Protocol):
    """A source of skill entries and bytes, bound to one origin."""

    label: str

    @property
    def origin(self) -> Literal["mcp", "local"]:
        """Where the skills come from; read-only, so each adapter may narrow it to its one origin."""
        ...

    async def entries(self) -> tuple[list[Any], str | None]:
        """Every raw entry, and a note when a cap stopped the listing."""
        ...

    async def get_entry(self, uri: str) -> Any:
        """The current raw entry of one skill (``skills/get``)."""
        ...

    async def read(self, uri: str) -> bytes:
        """The raw bytes at ``uri``."""
        ...
