"""Running the gateway: connect the upstream servers, follow their changes, serve stdio or HTTP.

:func:`run_gateway` is what ``skilldeck gateway`` runs: the :class:`~skilldeck.host.Host` is
entered (every upstream connected in parallel, each failure reported while the others go on), a
:class:`~skilldeck.host.HostWatcher` re-lists an upstream that reports a change — the service
re-indexes, active tools an upstream dropped leave every client's active set, and legacy sessions
whose injected tools changed are told with ``notifications/tools/list_changed``, the re-published
skills are refreshed (clients told of what changed, both eras). An upstream lost and back (``restart``
on the host) is re-listed the same way, and every client is told its tools changed. And the
gateway is served until the client goes away (stdio) or the process is stopped (HTTP).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import ResourcesListChanged, ToolsListChanged

from skilldeck.gateway.server import GatewayMiddleware
from skilldeck.gateway.service import GatewayService
from skilldeck.host.watch import CatalogChange
from skilldeck.server.app import run_http
from skilldeck.server.connections import DEFAULT_HTTP_LIMITS, HttpLimits

__all__ = ["follow_upstreams", "run_gateway"]


def follow_upstreams(
    service: GatewayService,
    middleware: GatewayMiddleware,
    on_change: Callable[[CatalogChange], None] | None = None,
) -> Callable[[CatalogChange], Any]:
    """The watcher callback: re-index, prune active tools, and tell downstream clients."""

    async def changed(change: CatalogChange) -> None:
        names = None if change.tools is None else [str(t.get("name")) for t in change.tools]
        pruned = service.reindex(change.label, names)
        pinned = any(label == change.label for label, _ in service.pinned)
        tools_differ = bool(change.tools_added or change.tools_removed or change.tools_changed)
        back = "reconnected" in change.reasons  # an upstream back after an outage: every client re-lists
        if back or pruned or (tools_differ and any(a.tools for a in service.activations.values())):
            await middleware.tools_changed()
        bus = middleware.subscriptions
        if back or (pinned and tools_differ):
            await bus.publish(ToolsListChanged())
        if middleware.skills is not None:
            await middleware.skills.refresh()  # serves the new listing; tells both eras if it differs
        elif change.skills_added or change.skills_removed or change.skills_changed:
            await bus.publish(ResourcesListChanged())
        if middleware.forwarded is not None:
            await middleware.forwarded.relay_change(change.reasons)  # the upstream's own prompts and resources
        if on_change is not None:
            on_change(change)

    return changed


async def run_gateway(
    service: GatewayService,
    server: MCPServer[Any],
    middleware: GatewayMiddleware,
    *,
    http: tuple[str, int] | None = None,
    path: str = "/mcp",
    on_ready: Callable[[str], None] | None = None,
    on_change: Callable[[CatalogChange], None] | None = None,
    max_sessions: int = 1_000,
    session_idle_timeout: float = 600.0,
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
) -> None:
    """Serve the gateway (its host already entered) until stdin closes or the task is cancelled."""
    async with service.host.watch(on_change=follow_upstreams(service, middleware, on_change)):
        if http is None:
            if on_ready is not None:
                on_ready("stdio")
            await server.run_stdio_async()
            return
        host, port = http
        await run_http(
            server,
            host=host,
            port=port,
            path=path,
            on_ready=on_ready,
            max_sessions=max_sessions,
            session_idle_timeout=session_idle_timeout,
            limits=limits,
        )
