"""Hostile Skills servers for host tests: real ``MCPServer`` instances that list and serve whatever a test tampers.

A :class:`HostileServer` declares ``io.modelcontextprotocol/skills`` through the SDK's ``Extension``
API, answers ``skills/list`` / ``skills/get`` from plain dicts the test controls, answers
``resources/read`` from a ``{uri: bytes}`` table through a middleware, and records every request it
receives (method and params), so a test can assert what the host did *not* ask for.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, PaginatedRequestParams, RequestParams
from mcp_types.methods import serialize_server_result

from skilldeck.host import Host, InProcessServer, ServerSpec

EXTENSION_ID = "io.modelcontextprotocol/skills"


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def skill_md(name: str, description: str = "A test skill.", extra: str = "", body: str = "") -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body or f'# {name}'}\n".encode()


@dataclass
class Skill:
    """A skill as a server would publish it: its path and files (relative path to bytes)."""

    path: str
    files: dict[str, bytes] = field(default_factory=dict)
    description: str = "A test skill."
    extra: str = ""

    def __post_init__(self) -> None:
        self.files.setdefault("SKILL.md", skill_md(self.name, self.description, self.extra))

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def uri(self) -> str:
        return f"skill://{self.path}/SKILL.md"

    def file_uri(self, rel: str) -> str:
        return f"skill://{self.path}/{rel}"

    def frontmatter(self) -> dict[str, Any]:
        fm: dict[str, Any] = {"name": self.name, "description": self.description}
        for line in self.extra.splitlines():
            key, _, value = line.partition(":")
            fm[key.strip()] = value.strip()
        return fm

    def entry(self) -> dict[str, Any]:
        ordered = sorted(self.files, key=lambda p: (p != "SKILL.md", p))
        return {
            "uri": self.uri,
            "frontmatter": self.frontmatter(),
            "resources": [
                {"uri": self.file_uri(p), "digest": sha256(self.files[p]), "size": len(self.files[p])} for p in ordered
            ],
        }

    def served(self) -> dict[str, bytes]:
        return {self.file_uri(p): data for p, data in self.files.items()}


class _ListParams(PaginatedRequestParams):
    pass


class _GetParams(RequestParams):
    uri: str


class _DirParams(PaginatedRequestParams):
    uri: str


class HostileServer(Extension):
    """An ``MCPServer`` whose Skills answers are whatever the test puts in its tables.

    Attributes:
        entries: the ``skills/list`` entries (raw dicts, served in one page unless ``pager`` is set).
        files: ``resources/read`` answers, URI to raw bytes.
        got: ``skills/get`` answers by URI; falls back to the entry of that URI in ``entries``.
        pager: ``cursor -> skills/list result``, to page however the test likes.
        directory: ``resources/directory/read`` answers by URI (lists of child dicts).
        calls: every request received, as ``(method, params)``.
    """

    identifier = EXTENSION_ID

    def __init__(
        self,
        *skills: Skill,
        entries: Sequence[Any] | None = None,
        name: str = "hostile",
    ) -> None:
        self.entries: list[Any] = [s.entry() for s in skills] if entries is None else list(entries)
        self.files: dict[str, bytes] = {}
        for s in skills:
            self.files.update(s.served())
        self.got: dict[str, Any] = {}
        self.pager: Callable[[str | None], dict[str, Any]] | None = None
        self.directory: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.server: MCPServer[Any] = MCPServer(name, extensions=[self], middleware=[self._middleware])

    # -- what the host sent -------------------------------------------------------------------------

    def methods_called(self) -> list[str]:
        return [m for m, _ in self.calls]

    def reads(self) -> list[str]:
        """URIs of every ``resources/read`` received, in order."""
        return [p.get("uri", "") for m, p in self.calls if m == "resources/read"]

    def gets(self) -> list[str]:
        """URIs of every ``skills/get`` received, in order."""
        return [p.get("uri", "") for m, p in self.calls if m == "skills/get"]

    # -- Extension API ------------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True}

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", _ListParams, self._list),
            MethodBinding("skills/get", _GetParams, self._get),
            MethodBinding("resources/directory/read", _DirParams, self._dir),
        )

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: _ListParams) -> HandlerResult:
        if self.pager is not None:
            return {"resultType": "complete", **self.pager(params.cursor)}
        return {"resultType": "complete", "skills": list(self.entries)}

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: _GetParams) -> HandlerResult:
        if params.uri in self.got:
            return {"resultType": "complete", "skill": self.got[params.uri]}
        for entry in self.entries:
            if isinstance(entry, dict) and entry.get("uri") == params.uri:
                return {"resultType": "complete", "skill": entry}
        raise MCPError(code=INVALID_PARAMS, message=f"unknown skill {params.uri}")

    async def _dir(self, ctx: ServerRequestContext[Any, Any], params: _DirParams) -> HandlerResult:
        return {"resultType": "complete", "resources": self.directory.get(params.uri, [])}

    async def _middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = dict(ctx.params) if ctx.params else {}
        if not ctx.method.startswith("notifications/") and ctx.method not in ("initialize", "server/discover"):
            self.calls.append((ctx.method, params))
        if ctx.method == "resources/read":
            uri = params.get("uri")
            if uri not in self.files:
                raise MCPError(code=INVALID_PARAMS, message=f"no resource {uri}")
            data = self.files[uri]
            contents = {"uri": uri, "mimeType": "application/octet-stream", "blob": base64.b64encode(data).decode()}
            result = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "contents": [contents]}
            return serialize_server_result("resources/read", ctx.protocol_version, result)
        return await call_next(ctx)


@asynccontextmanager
async def open_host(*servers: tuple[str, HostileServer], **kwargs: Any) -> AsyncIterator[Host]:
    """A :class:`Host` connected in-process to each ``(label, server)``."""
    specs = [ServerSpec(label, InProcessServer(s.server), timeout=10) for label, s in servers]
    async with Host(specs, **kwargs) as host:
        yield host


def write_local_skill(root: Path, skill_path: str, *, description: str = "A local skill.", extra: str = "") -> Path:
    """A skill folder on disk (for ``Host(local=[root])``); returns the folder."""
    folder = root / skill_path
    folder.mkdir(parents=True, exist_ok=True)
    name = skill_path.rsplit("/", 1)[-1]
    (folder / "SKILL.md").write_bytes(skill_md(name, description, extra))
    return folder
