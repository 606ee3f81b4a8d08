"""The gateway's composition root: a host, a service, its policy check and its MCP server, wired from typed options.

:func:`build_gateway` is what ``skilldeck gateway`` (and any program embedding the gateway) builds a
running gateway with. From a :class:`GatewayOptions` it enters the :class:`~skilldeck.host.Host` (every
upstream connected in parallel, each lost one brought back with a backoff), puts the
:class:`~skilldeck.gateway._service.GatewayService` over it (policy, grants, pins, decision log,
encoder, learning, shared activations), checks the policy against the upstreams
(:class:`~skilldeck.gateway._reload.GatewayConfig`, which then re-reads the files on demand), counts
into the metrics, and builds the MCP server with its middleware, catalogs and console. What it yields,
a :class:`Gateway`, serves until stopped (:meth:`Gateway.serve`, over stdio or HTTP).

The options are data (a command line's flags, typed); what is made elsewhere — the usage ledger, the
activations replicas share, the metrics, the token verifier — is handed in ready, and every line for
the operator goes to ``report`` (``level``, ``text``), so the wiring prints nothing itself.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateCodec

from skilldeck.catalog import AddedServers
from skilldeck.gateway._activation import ActivationStore
from skilldeck.gateway._app import run_gateway
from skilldeck.gateway._audiences import flag_warnings
from skilldeck.gateway._discovery import Discovery, Source
from skilldeck.gateway._names import Naming
from skilldeck.gateway._reload import GatewayConfig, Report
from skilldeck.gateway._server import GatewayMiddleware, create_gateway
from skilldeck.gateway._service import AnonymousLearning, DecisionLog, GatewayService
from skilldeck.host import Host, ServerSpec
from skilldeck.host._api import CatalogChange
from skilldeck.learning import Learner
from skilldeck.select import Encoder
from skilldeck.serving._api import DEFAULT_HTTP_LIMITS, HttpLimits, Policy

if TYPE_CHECKING:
    from skilldeck.gateway._console import GatewayConsole
    from skilldeck.gateway._metrics import GatewayMetrics
    from skilldeck.serving._api import Console, ShutdownReport

__all__ = ["Gateway", "GatewayOptions", "build_gateway"]

DECISION_LOG_KEEP = 10_000
"""Decisions the log keeps in memory for the console and the metrics (the ``--log`` file keeps every one)."""


@dataclass(frozen=True)
class GatewayOptions:
    """What a gateway is built from: its upstreams, its policy, and how it serves (``skilldeck gateway``'s flags).

    Once running, the specs and the policy in force are its :class:`~skilldeck.gateway._reload.GatewayConfig`'s,
    made from these (``config_path`` and ``policy_path`` are what a reload re-reads).

    Args:
        specs: the upstreams to connect (the config file's, and the servers a person added).
        config_path: the ``mcpServers`` file ``specs`` were read from.
        policy: per-caller admission and tool routing (``None``: every caller sees everything).
        policy_path: the file ``policy`` was read from.
        name: the server name reported to clients.
        names: how upstream tools, prompts and resources are named (see :mod:`skilldeck.gateway._names`).
        grants: ``(skill label, tool label)`` pairs: a skill of the first may activate tools of the second.
        pinned: ``(label, tool)`` pairs every client may call without loading them.
        log_path: where every find/load/call is appended as a JSON line (``None``: kept in memory only).
        timeout: each upstream's connect and request timeout, for entries without their own.
        allow_dynamic: let clients load generated (unverifiable) skills, and re-publish them.
        budget_window: seconds over which each upstream may make the gateway download 64 MiB of skills.
        encoder: what ``find`` fuses into its ranking (see :class:`~skilldeck.gateway._service.GatewayService`).
        cache_dir: where card vectors are kept between runs (``None``: in memory).
        anonymous: what a use by a caller without a token teaches.
        explain_hidden: refusals of what the policy hides say so (for the stdio caller, who wrote it).
        catalogs: the registries and registry files ``find`` and ``add`` offer servers from (none: no network).
        catalog_refresh: seconds between two reads of the catalogs.
        home: ``$SKILLDECK_HOME`` (the catalogs' cache, the runtimes' venvs); ``None``: the default one.
        added: the servers a person added from a catalog, re-read with the config.
        drain: seconds the calls in flight on an upstream removed or reconnected have to finish.
        http: ``(host, port)`` to serve Streamable HTTP on; ``None``: stdio.
        path: the MCP endpoint's path over HTTP.
        max_sessions: HTTP sessions held at once.
        session_idle_timeout: seconds an idle HTTP session is kept.
        limits: the HTTP bounds.
        watch_config: re-read the config and policy files whenever they change.
        ready_upstreams: ``GET /readyz`` answers ready while at least this many upstreams are up.
        console: serve the console page (``/console``, over HTTP).
    """

    specs: tuple[ServerSpec, ...]
    config_path: str
    policy: Policy | None = None
    policy_path: str | None = None
    name: str = "skilldeck-gateway"
    names: Naming = "label"
    grants: tuple[tuple[str, str], ...] = ()
    pinned: tuple[tuple[str, str], ...] = ()
    log_path: str | None = None
    timeout: float = 30.0
    allow_dynamic: bool = False
    budget_window: float = 600.0
    encoder: Encoder | Literal["default"] | None = "default"
    cache_dir: str | os.PathLike[str] | None = None
    anonymous: AnonymousLearning = "trusted"
    explain_hidden: bool = False
    catalogs: tuple[Source, ...] = ()
    catalog_refresh: float = 3_600.0
    home: str | Path | None = None
    added: AddedServers | None = None
    drain: float = 0.0
    http: tuple[str, int] | None = None
    path: str = "/mcp"
    max_sessions: int = 1_000
    session_idle_timeout: float = 600.0
    limits: HttpLimits = DEFAULT_HTTP_LIMITS
    watch_config: bool = False
    ready_upstreams: int = 1
    console: bool = False


@dataclass
class Gateway:
    """A gateway built by :func:`build_gateway`: its upstreams connected, its policy checked, its server ready."""

    options: GatewayOptions
    host: Host
    service: GatewayService
    config: GatewayConfig
    server: MCPServer[Any]
    middleware: GatewayMiddleware
    metrics: GatewayMetrics | None = None
    page: GatewayConsole | None = None
    """What the console shows (with ``options.console``)."""
    console: Console | None = None
    """The console's ASGI app (with ``options.console``)."""
    discovery: Discovery | None = field(default=None)
    """The catalogs behind ``find`` and ``add`` (with ``options.catalogs``)."""

    async def serve(
        self,
        *,
        on_ready: Callable[[str], None] | None = None,
        on_change: Callable[[CatalogChange], None] | None = None,
        on_stopped: Callable[[ShutdownReport], None] | None = None,
    ) -> None:
        """Serve until stdin closes (stdio), the process is stopped (HTTP) or the task is cancelled.

        Tracing is set up from the environment first (``OTEL_*``), the metrics count the server's
        requests, and over HTTP the start-up heap is frozen out of the collector's passes.
        ``on_change`` hears each upstream change after the console and the metrics did.
        """
        from skilldeck.serving._api import (
            collect_less_often,
            configure_from_environment,
            drop_idle_tracing,
            freeze_startup_heap,
            honour_http_trace_context,
        )

        options, server = self.options, self.server
        configure_from_environment("skilldeck-gateway")  # OTEL_* asking for traces installs a provider first
        drop_idle_tracing(server)  # the SDK's per-request span records nothing without a tracer provider
        honour_http_trace_context(server)  # with a provider: a traceparent header continues the caller's trace
        if self.metrics is not None:
            self.metrics.instrument(server)
        if options.http is not None:  # a long-running server: its full collections were its longest stalls
            freeze_startup_heap()  # the host, the service and the modules stay out of the collector's passes
            collect_less_often()  # and the requests' short-lived objects stop setting off a full pass every few s
        await run_gateway(
            self.service,
            server,
            self.middleware,
            host=self.host,
            http=options.http,
            path=options.path,
            on_ready=on_ready,
            on_change=self._changed(on_change),
            max_sessions=options.max_sessions,
            session_idle_timeout=options.session_idle_timeout,
            limits=options.limits,
            config=self.config,
            watch_config=options.watch_config,
            on_stopped=on_stopped,
            ready_upstreams=options.ready_upstreams,
            console=self.console,
        )

    def _changed(self, then: Callable[[CatalogChange], None] | None) -> Callable[[CatalogChange], None]:
        """An upstream changed: the console notes it, the metrics count it, then ``then`` hears it."""

        def changed(change: CatalogChange) -> None:
            if self.page is not None:
                self.page.changed(change)
            if self.metrics is not None:
                self.metrics.changed(change)
            if then is not None:
                then(change)

        return changed


@asynccontextmanager
async def build_gateway(
    options: GatewayOptions,
    *,
    report: Report,
    learning: Learner | None = None,
    shared: ActivationStore | None = None,
    metrics: GatewayMetrics | None = None,
    token_verifier: Any = None,
    auth: Any = None,
    request_state_keys: Sequence[str | bytes] | None = None,
    request_state_codec: RequestStateCodec | None = None,
    on_transition: Callable[[str, str], None] | None = None,
    on_connected: Callable[[Host], None] | None = None,
) -> AsyncIterator[Gateway]:
    """While the block runs, a gateway built from ``options`` (see the module docs); its upstreams are
    disconnected when it ends.

    Args:
        options: what the gateway is built from.
        report: where each line for the operator goes (``level``, ``text``).
        learning: the usage ledger uses are recorded in and ranked with (``None``: nothing is learned).
        shared: where activations are shared with other replicas (``None``: this process's alone).
        metrics: the Prometheus metrics to count into (``None``: none).
        token_verifier: the SDK's token verifier (``None``: no tokens, the policy's default identity).
        auth: the SDK's auth settings that go with ``token_verifier``.
        request_state_keys: the keys a 2026-07-28 call's request state is sealed with (replicas share them).
        request_state_codec: a key ring kept in step with the other replicas' keys.
        on_transition: told each upstream's transition (``label``, ``text``: lost, given up, back...).
        on_connected: told the host once every upstream was tried, before anything is checked.

    Raises:
        PolicyError: the policy names what no upstream serves.
    """
    from skilldeck.host._api import Backoff

    async with Host(
        list(options.specs),
        allow_dynamic=options.allow_dynamic,
        budget_window=options.budget_window,
        server_requests=True,
        restart=Backoff(),
        on_transition=on_transition,
    ) as host:
        if on_connected is not None:
            on_connected(host)
        service = _service(options, host, learning, shared)
        if metrics is not None:
            metrics.observe(service)
        config = GatewayConfig(
            service,
            host,
            list(options.specs),
            config_path=options.config_path,
            policy_path=options.policy_path,
            timeout=options.timeout,
            report=report,
            added=options.added,
            drain=options.drain,
        )
        await config.check()  # a policy id that matches nothing stops the gateway here
        for warning in flag_warnings(options.pinned, options.grants, host, [s.label for s in options.specs]):
            report("warning", warning)
        server, middleware = create_gateway(
            service,
            host=host,
            name=options.name,
            token_verifier=token_verifier,
            auth=auth,
            request_state_keys=request_state_keys,
            request_state_codec=request_state_codec,
            names=options.names,
        )
        gateway = Gateway(options, host, service, config, server, middleware, metrics=metrics)
        if options.catalogs:  # none by default: no network by surprise
            gateway.discovery = await _discovery(options, service, report)
            middleware.discover(gateway.discovery)
        if options.console:
            _add_console(gateway, token_verifier)
        yield gateway


def _service(
    options: GatewayOptions, host: Host, learning: Learner | None, shared: ActivationStore | None
) -> GatewayService:
    """The gateway's decisions over ``host``, as ``options`` say."""
    return GatewayService(
        host,
        policy=options.policy,
        grants=options.grants,
        pinned=options.pinned,
        log=DecisionLog(options.log_path, keep=DECISION_LOG_KEEP),
        shared=shared,
        encoder=options.encoder,
        cache_dir=options.cache_dir,
        learning=learning,
        anonymous=options.anonymous,
        explain_hidden=options.explain_hidden,
    )


async def _discovery(options: GatewayOptions, service: GatewayService, report: Report) -> Discovery:
    """The catalogs of ``options``, read once (each one's trouble reported, never fatal)."""
    from skilldeck.catalog import find_runtimes
    from skilldeck.host._api import skilldeck_home

    home = options.home if options.home is not None else skilldeck_home()
    discovery = Discovery(
        options.catalogs,
        service=service,
        home=home,
        runtimes=find_runtimes(home),
        report=report,
        refresh_every=options.catalog_refresh,
    )
    await discovery.load()
    return discovery


def _add_console(gateway: Gateway, token_verifier: Any) -> None:
    """The console page over ``gateway`` (what it shows, and its ASGI app)."""
    from skilldeck.gateway._console import GatewayConsole
    from skilldeck.serving._api import Console as ConsolePage

    options = gateway.options
    gateway.page = GatewayConsole(gateway.service, title=options.name)
    gateway.console = ConsolePage(
        gateway.page, token_verifier, host=options.http[0] if options.http is not None else None
    )
