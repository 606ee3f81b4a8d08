"""What the gateway's client and security tests share: recording upstreams, an in-process gateway, schema checks.

Upstreams are real ``MCPServer`` instances run in-process. :func:`recording_upstream` builds one on
:class:`~tests.host.hostile.HostileServer` (Skills answers from tables the test controls, and a
record of every request it received) with real tools, so a test can count the ``tools/call``
requests that reached it — the security tests assert that number stays 0.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import jsonschema
from mcp.client import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ServerNotification

from skilldeck.gateway import META_OUTPUT_SCHEMAS, META_TOOLS, GatewayMiddleware, GatewayService, create_gateway
from skilldeck.gateway._app import follow_upstreams
from skilldeck.gateway._names import Naming
from skilldeck.host import Host, HostWatcher, InProcessServer, ServerSpec
from skilldeck.select._rank import Encoder
from skilldeck.serving._policy import Policy

from ..host.hostile import HostileServer, Skill

OUTPUT_SCHEMAS = {t["name"]: META_OUTPUT_SCHEMAS.get(t["name"]) for t in META_TOOLS}


class ToolSkill(Skill):
    """A skill whose frontmatter names its tools in ``metadata["dev.skilldeck/tools"]`` (``label/tool`` or ``tool``)."""

    def __init__(self, path: str, tools: str, description: str = "A test skill.") -> None:
        self.tools = tools
        extra = f'metadata:\n  dev.skilldeck/tools: "{tools}"\n'
        super().__init__(path, description=description, extra=extra)

    def frontmatter(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "metadata": {"dev.skilldeck/tools": self.tools}}


def recording_upstream(name: str, *skills: Skill, tools: Iterable[Callable[..., Any]] = ()) -> HostileServer:
    """An in-process upstream serving ``skills`` and ``tools`` that records every request it receives."""
    upstream = HostileServer(*skills, name=name)
    for tool in tools:
        upstream.server.add_tool(tool)
    return upstream


def tool_calls(upstream: HostileServer) -> list[dict[str, Any]]:
    """The ``tools/call`` requests that reached ``upstream`` (their params)."""
    return [params for method, params in upstream.calls if method == "tools/call"]


def jobs_upstream() -> HostileServer:
    """``jobs``: the ``job-search`` skill (naming ``search_jobs``) and the tools ``search_jobs``, ``delete_job``."""

    def search_jobs(query: str, limit: int = 5) -> str:
        """Search job postings by title words."""
        return f"found {min(limit, 3)} jobs for {query}"

    def delete_job(job_id: str) -> str:
        """Delete a job posting for good."""
        return f"deleted {job_id}"

    skill = ToolSkill("job-search", "search_jobs", "Find job openings by title, city and seniority.")
    return recording_upstream("jobs", skill, tools=[search_jobs, delete_job])


def files_upstream() -> HostileServer:
    """``files``: no skills, the tools ``read_file`` and ``write_file``."""

    def read_file(path: str) -> str:
        """Read a text file from the shared store."""
        return f"contents of {path}"

    def write_file(path: str, content: str) -> str:
        """Write a text file to the shared store."""
        return f"wrote {len(content)} characters to {path}"

    return recording_upstream("files", tools=[read_file, write_file])


def east_upstream() -> HostileServer:
    """``east``: the ``east-search`` skill (naming ``search``), the tools ``search(query)`` and ``purge``."""

    def search(query: str) -> str:
        """Search the east archive."""
        return f"east found {query}"

    def purge() -> str:
        """Delete the east archive."""
        return "east purged"

    skill = ToolSkill("east-search", "search", "Search the east archive for old letters.")
    return recording_upstream("east", skill, tools=[search, purge])


def west_upstream() -> HostileServer:
    """``west``: as ``east``, its ``search`` taking a ``region`` too (a schema from the wrong server shows)."""

    def search(query: str, region: str) -> str:
        """Search the west archive in one region."""
        return f"west found {query} in {region}"

    def purge() -> str:
        """Delete the west archive."""
        return "west purged"

    skill = ToolSkill("west-search", "search", "Search the west archive by region.")
    return recording_upstream("west", skill, tools=[search, purge])


@dataclass
class Gateway:
    host: Host
    service: GatewayService
    server: MCPServer[Any]
    middleware: GatewayMiddleware
    watcher: HostWatcher | None = None


@asynccontextmanager
async def open_gateway(
    upstreams: dict[str, Any],
    *,
    policy: Policy | None = None,
    grants: Iterable[tuple[str, str]] = (),
    pinned: Iterable[tuple[str, str]] = (),
    max_clients: int = 4_096,
    watch: bool = False,
    server_requests: bool = False,
    encoder: Encoder | Literal["default"] | None = None,
    names: Naming = "label",
    explain_hidden: bool = False,
) -> AsyncIterator[Gateway]:
    """The gateway over in-process ``upstreams`` (label -> ``MCPServer`` or :class:`HostileServer`).

    It ranks lexically unless a test passes an ``encoder``: with one, which ranker answers a ``find``
    depends on how far the card vectors are (a test of that path waits for them)."""
    specs = [
        ServerSpec(label, InProcessServer(u.server if isinstance(u, HostileServer) else u), timeout=10)
        for label, u in upstreams.items()
    ]
    async with Host(specs, server_requests=server_requests) as host:
        service = GatewayService(
            host,
            policy=policy,
            grants=grants,
            pinned=pinned,
            max_clients=max_clients,
            encoder=encoder,
            explain_hidden=explain_hidden,
        )
        server, middleware = create_gateway(service, names=names)
        gateway = Gateway(host, service, server, middleware)
        if not watch:
            yield gateway
            return
        async with host.watch(on_change=follow_upstreams(service, middleware)) as watcher:
            gateway.watcher = watcher
            yield gateway


def client(gateway: Gateway, era: str, **kwargs: Any) -> Client:
    """A Python SDK client on the gateway: ``era`` ``modern`` (2026-07-28) or ``legacy`` (2025-11-25)."""
    return Client(gateway.server, mode="auto" if era == "modern" else "legacy", cache=None, **kwargs)


def check_structured(tool: str, result: CallToolResult) -> dict[str, Any]:
    """``result.structuredContent``, after checking it validates against ``tool``'s result schema."""
    assert not result.is_error, result.content
    structured = result.structured_content
    assert isinstance(structured, dict), result
    schema = OUTPUT_SCHEMAS[tool]
    if schema is not None:
        jsonschema.validate(structured, schema)
    return structured


def refusal(result: CallToolResult, reason: str) -> str:
    """The text of a call refused for ``reason`` (a stable phrase of it); fails when the call was not
    refused, or was refused for another reason (another check refused first: the test missed its guard)."""
    assert result.is_error, f"expected a refusal ({reason!r}), got {result}"
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert reason in text, f"refused, but not for {reason!r}: {text}"
    return text


class Heard:
    """The ``notifications/resources/updated`` URIs a legacy client received, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, ServerNotification) and message.method == "notifications/resources/updated":
            self.uris.append(str(message.params.uri))
            self._changed.set()

    async def until(self, count: int) -> list[str]:
        with anyio.fail_after(20):
            while len(self.uris) < count:
                self._changed = anyio.Event()
                await self._changed.wait()
        return self.uris
