"""Running the gateway: connect the upstream servers, follow their changes, serve stdio or HTTP.

:func:`run_gateway` is what ``skilldeck gateway`` runs: the :class:`~skilldeck.host.Host` is
entered (every upstream connected in parallel, each failure reported while the others go on), a
:class:`~skilldeck.host.HostWatcher` re-lists an upstream that reports a change — the service
re-indexes, active tools an upstream dropped leave every client's active set, and legacy sessions
whose injected tools changed are told with ``notifications/tools/list_changed``, the re-published
skills are refreshed (clients told of what changed, both eras). An upstream lost and back (``restart``
on the host) is re-listed the same way, and every client is told its tools changed. And the
gateway is served until the client goes away (stdio) or the process is stopped (HTTP).

With a :class:`~skilldeck.gateway._reload.GatewayConfig`, an upstream whose policy ids were pending
is checked before anything else hears of its listing, and ``SIGHUP`` (and, with ``watch_config``,
a change to the config or policy file) re-reads both files into the running gateway.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import ResourcesListChanged, ToolsListChanged

from skilldeck.gateway._discovery import Discovery
from skilldeck.gateway._port import Upstreams
from skilldeck.gateway._reload import GatewayConfig
from skilldeck.gateway._server import GatewayMiddleware
from skilldeck.gateway._service import GatewayService
from skilldeck.host import Host, HostWatcher, ServerSpec
from skilldeck.host._api import CatalogChange
from skilldeck.serving._api import DEFAULT_HTTP_LIMITS, Caller, HttpLimits, Readiness, run_http, span

if TYPE_CHECKING:
    from skilldeck.serving._api import Console, ShutdownReport

__all__ = ["announce_policy", "follow_upstreams", "gateway_readiness", "run_gateway", "upstreams_up"]


def follow_upstreams(
    service: GatewayService,
    middleware: GatewayMiddleware,
    on_change: Callable[[CatalogChange], None] | None = None,
    admit: Callable[[str], Awaitable[bool]] | None = None,
) -> Callable[[CatalogChange], Any]:
    """The watcher callback: re-index, prune active tools, and tell downstream clients.

    ``admit`` is asked first whether the upstream may be served; one it refuses has been removed,
    and is followed as an upstream whose tools are all gone.
    """

    async def changed(change: CatalogChange) -> None:
        attributes = {"skilldeck.upstream": change.label, "skilldeck.reasons": sorted(change.reasons)}
        with span("relist", attributes):
            await follow(change)

    async def follow(change: CatalogChange) -> None:
        if admit is not None and change.label and not await admit(change.label):
            removed = tuple(sorted(set(change.tools_added) | {str(t.get("name")) for t in change.tools or ()}))
            change = replace(change, reasons=change.reasons | {"removed"}, tools_removed=removed, tools=())
        names = None if change.tools is None else [str(t.get("name")) for t in change.tools]
        pruned = service.reindex(change.label, names)
        pinned = any(label == change.label for label, _ in service.pinned)
        tools_differ = bool(change.tools_added or change.tools_removed or change.tools_changed)
        # an upstream back after an outage, or one a person added: every client re-lists
        back = bool({"reconnected", "added"} & change.reasons)
        if back or pruned or (tools_differ and any(a.tools for a in service.activations.values())):
            await middleware.tools_changed()
        bus = middleware.subscriptions
        if back or (pinned and tools_differ):
            await bus.publish(ToolsListChanged())
        told = False  # resources/list_changed already said to both eras
        if middleware.skills is not None:
            told = bool(await middleware.skills.refresh())  # serves the new listing; tells both eras if it differs
        elif change.skills_added or change.skills_removed or change.skills_changed:
            await bus.publish(ResourcesListChanged())
        if middleware.forwarded is not None:  # the upstream's own prompts and resources, each change said once
            await middleware.forwarded.relay_change(change.reasons - {"resources"} if told else change.reasons)
        if on_change is not None:
            on_change(change)

    return changed


def upstreams_up(upstreams: Upstreams) -> tuple[int, int]:
    """How many of the upstreams are up now, and how many the gateway is configured with: (up, of).

    The one place readiness asks who is up, so it follows however the host tracks it.
    """
    connected, configured = upstreams.connected, upstreams.configured
    return sum(1 for label in configured if label in connected), len(configured)


def gateway_readiness(service: GatewayService, minimum: int) -> Callable[[], Readiness]:
    """``/readyz`` of the gateway: ready when at least ``minimum`` upstreams are up and its index is built.

    The index (what ``find`` ranks) is built by the first probe after a change if no client built it
    first, so a ready gateway answers its next ``find`` without building it.
    """

    def readiness() -> Readiness:
        up, of = upstreams_up(service.upstreams)
        cards = len(service.index_for(Caller()).cards.cards)
        detail = {"upstreams": {"up": up, "of": of, "minimum": minimum}, "index": {"cards": cards}}
        return Readiness(up >= minimum, detail)

    return readiness


async def run_gateway(
    service: GatewayService,
    server: MCPServer[Any],
    middleware: GatewayMiddleware,
    *,
    host: Host,
    http: tuple[str, int] | None = None,
    path: str = "/mcp",
    on_ready: Callable[[str], None] | None = None,
    on_change: Callable[[CatalogChange], None] | None = None,
    max_sessions: int = 1_000,
    session_idle_timeout: float = 600.0,
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
    config: GatewayConfig | None = None,
    watch_config: bool = False,
    on_stopped: Callable[[ShutdownReport], None] | None = None,
    ready_upstreams: int = 1,
    console: Console | None = None,
) -> None:
    """Serve the gateway (``host``, the one its upstreams run on, already entered) until stdin closes, the task is cancelled or, over HTTP,
    the process is stopped (SIGTERM: see :func:`~skilldeck.serving._runner.run_http`; ``on_stopped`` hears how).

    Over HTTP, ``GET /readyz`` answers ready while at least ``ready_upstreams`` upstreams are up
    (:func:`gateway_readiness`), and a ``console`` answers ``/console`` (:mod:`skilldeck.serving._console`)."""
    admit = config.admit if config is not None else None
    changed = follow_upstreams(service, middleware, on_change, admit)
    async with host.watch(on_change=changed) as watcher, anyio.create_task_group() as tg:
        if middleware.discovery is not None:
            _start_added_servers(middleware.discovery, host, watcher, changed, config)
            tg.start_soon(middleware.discovery.run)
        if config is not None:

            async def reload() -> None:
                await config.reload(watcher, changed, lambda: announce_policy(middleware))

            _reload_on_signals(tg, reload, [config.config_path, config.policy_path] if watch_config else [])
        await _serve(
            server,
            http,
            path,
            on_ready,
            max_sessions,
            session_idle_timeout,
            limits,
            on_stopped=on_stopped,
            readiness=gateway_readiness(service, ready_upstreams),
            console=console,
        )
        tg.cancel_scope.cancel()


def _start_added_servers(
    discovery: Discovery,
    host: Host,
    watcher: HostWatcher,
    changed: Callable[[CatalogChange], Any],
    config: GatewayConfig | None,
) -> None:
    """Give ``discovery`` the running gateway's way of starting a server a person added (and of stopping it).

    The server is connected like a configured upstream (supervised, verified), followed by the watcher,
    listed into the gateway (``changed``, with the reason ``added``: every client of both eras is told),
    and known to the config, so a reload keeps it.
    """

    async def start(spec: ServerSpec) -> str | None:
        if not await host.add_server(spec):
            failure = host.failures.get(spec.label)
            reason = failure.reason if failure is not None else "it did not connect"
            host.remove_server(spec.label)
            host.failures.pop(spec.label, None)
            return reason
        if config is not None:
            config.specs[spec.label] = spec
        await watcher.follow(spec.label)
        await changed(await host.relist(spec.label, ("added",)))
        return None

    async def stop(label: str) -> None:
        tools = tuple(sorted(t.name for t in host.tools(label)))
        host.remove_server(label)
        if config is not None:
            config.specs.pop(label, None)
        await changed(
            CatalogChange(label, frozenset({"removed", "prompts", "resources"}), tools_removed=tools, tools=())
        )

    discovery.starter, discovery.stopper = start, stop


async def announce_policy(middleware: GatewayMiddleware) -> None:
    """A new policy is in force: tell every client that what it may list may have changed (both eras)."""
    await middleware.tools_changed()
    await middleware.subscriptions.publish(ToolsListChanged())
    told = middleware.skills is not None and bool(await middleware.skills.refresh())
    if middleware.forwarded is not None:  # resources/list_changed once, whoever says it
        await middleware.forwarded.relay_change({"prompts"} if told else {"prompts", "resources"})


def _reload_on_signals(tg: TaskGroup, reload: Callable[[], Awaitable[None]], paths: list[str | None]) -> None:
    """Run ``reload`` on each ``SIGHUP``, and on each change to one of ``paths`` (``--watch-config``)."""

    async def on_sighup() -> None:
        with anyio.open_signal_receiver(signal.SIGHUP) as signals:
            async for _ in signals:
                await reload()

    async def on_files() -> None:
        from watchfiles import awatch

        files = {_real(p) for p in paths if p is not None}
        stop = anyio.Event()
        try:
            # the folders are watched, not the files: an editor that saves by renaming replaces the file
            async for events in awatch(*{f.parent for f in files}, debounce=200, stop_event=stop, rust_timeout=500):
                if any(_real(p) in files for _, p in events):
                    await reload()
        finally:
            stop.set()  # the watch thread cannot be cancelled, only stopped

    if sys.platform != "win32":
        tg.start_soon(on_sighup)
    if any(paths):
        tg.start_soon(on_files)


def _real(path: str) -> Path:
    return Path(os.path.realpath(path))


async def _serve(
    server: MCPServer[Any],
    http: tuple[str, int] | None,
    path: str,
    on_ready: Callable[[str], None] | None,
    max_sessions: int,
    session_idle_timeout: float,
    limits: HttpLimits,
    *,
    on_stopped: Callable[[ShutdownReport], None] | None,
    readiness: Callable[[], Readiness],
    console: Console | None = None,
) -> None:
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
        json_when_silent=True,  # SSE only for a call that relays something before its answer
        limits=limits,
        on_stopped=on_stopped,
        readiness=readiness,
        console=console,
    )
