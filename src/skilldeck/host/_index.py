"""The ``SkillIndex`` port: where a host's skills come from, behind one small interface.

Two adapters: :class:`WireIndex` (a connected MCP server, origin ``"mcp"``) and
:class:`LocalIndex` (skill folders installed on the host, origin ``"local"``, under the reserved
label ``local``). The loader and the registry see only the port, so local and MCP-served skills
go through the same verification and are never confused: the origin travels with every record.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import anyio.to_thread
from mcp.shared.exceptions import MCPError

from skilldeck.errors import NotServedError, ReadFailed
from skilldeck.host._connect import Connected
from skilldeck.host._discover import ListingLimits, page_skills
from skilldeck.host._port import SkillIndex
from skilldeck.host._registry import LOCAL_LABEL
from skilldeck.skill._api import DirectorySource, Pack

__all__ = ["LocalIndex", "ReadFailed", "SkillIndex", "WireIndex"]


class WireIndex:
    """A connected MCP server as a :class:`SkillIndex`."""

    origin: Literal["mcp"] = "mcp"

    def __init__(self, connected: Connected, limits: ListingLimits | None = None) -> None:
        self.connected = connected
        self.label = connected.label
        self.limits = limits or ListingLimits()

    async def entries(self) -> tuple[list[Any], str | None]:
        if self.connected.skills is None:
            return [], None
        return await page_skills(self.connected.wire, self.limits)

    async def get_entry(self, uri: str) -> Any:
        try:
            return (await self.connected.wire.get_skill(uri)).get("skill")
        except MCPError as exc:
            raise ReadFailed(f"skills/get {uri} failed: {self.connected.explain(exc)}", label=self.label) from None
        except (ValueError, TypeError):
            raise ReadFailed(f"skills/get {uri}: the server's answer is malformed", label=self.label) from None

    async def read(self, uri: str) -> bytes:
        try:
            data, _ = await self.connected.wire.read_bytes(uri)
        except MCPError as exc:
            raise ReadFailed(f"resources/read {uri} failed: {self.connected.explain(exc)}", label=self.label) from None
        except (ValueError, TypeError):  # pydantic ValidationError is a ValueError; its text echoes the payload
            raise ReadFailed(f"resources/read {uri}: the server's answer is malformed", label=self.label) from None
        return data


class LocalIndex:
    """Skill folders on the host as a :class:`SkillIndex` (label ``local``, origin ``local``)."""

    origin: Literal["local"] = "local"

    def __init__(self, *roots: str | os.PathLike[str], label: str = LOCAL_LABEL) -> None:
        self.source = DirectorySource(*roots)
        self.label = label
        self._pack: Pack | None = None

    async def _load(self) -> Pack:
        if self._pack is None:
            self._pack = Pack(await anyio.to_thread.run_sync(self.source.load))
        return self._pack

    async def entries(self) -> tuple[list[Any], str | None]:
        pack = await self._load()
        return [e.to_wire() for e in pack.entries], None

    async def get_entry(self, uri: str) -> Any:
        try:
            return (await self._load()).get(uri).to_wire()
        except NotServedError as exc:
            raise ReadFailed(str(exc), label=self.label) from None

    async def read(self, uri: str) -> bytes:
        found = (await self._load()).static_file(uri)
        if found is None:
            raise ReadFailed(f"no local file {uri}", label=self.label)
        return found.data
