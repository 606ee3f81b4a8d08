"""Running an ``MCPServer`` over streamable HTTP: the bounded, resumable, health-probed app and its process.

:func:`run_http` is what both ``skilldeck serve`` and the gateway run: the SDK's streamable HTTP
app behind the connection bounds (:mod:`~skilldeck.serving._connections`), bounded legacy sessions
(:mod:`~skilldeck.serving._sessions`), resumable streams (:mod:`~skilldeck.serving._resumable`),
health probes (:mod:`~skilldeck.serving._health`) and a graceful stop
(:mod:`~skilldeck.serving._shutdown`). The rest tunes the process that serves: the sockets it binds,
its event loop, its cyclic collector, the SDK's idle tracing span and how ``requestState`` is sealed.
"""

from __future__ import annotations

import errno
import gc
import importlib.util
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateCodec, RequestStateSecurity
from starlette.types import ASGIApp

from skilldeck.errors import ServeError
from skilldeck.serving._connections import DEFAULT_HTTP_LIMITS, HttpLimits, bounded_protocol
from skilldeck.serving._disconnects import quiet_disconnects
from skilldeck.serving._health import PROBE_PATHS, Readiness, always_ready, with_probes
from skilldeck.serving._request_ids import answer_invalid_ids
from skilldeck.serving._resumable import RETRY_MS, ResumableStreams, resume_per_session
from skilldeck.serving._sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    answer_unknown_sessions,
    evict_idle_when_full,
)
from skilldeck.serving._single_body import single_body_replies

if TYPE_CHECKING:
    from skilldeck.serving._console import Console
    from skilldeck.serving._shutdown import ShutdownReport

__all__ = [
    "SERVING_GC_THRESHOLDS",
    "bind",
    "collect_less_often",
    "collector_paused",
    "drop_idle_tracing",
    "event_loop_options",
    "freeze_startup_heap",
    "request_state_security",
    "run_http",
]


def request_state_security(
    keys: Sequence[str | bytes] | None, codec: RequestStateCodec | None
) -> RequestStateSecurity | None:
    """How ``requestState`` is sealed: by ``codec``, else under ``keys``; ``None`` (a key of this process) without either."""
    if codec is not None:
        return RequestStateSecurity(codec=codec)
    return None if keys is None else RequestStateSecurity(keys=keys)


async def run_http(
    server: MCPServer[Any],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
    sockets: list[socket.socket] | None = None,
    json_response: bool = False,
    json_when_silent: bool = False,
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
    on_stopped: Callable[[ShutdownReport], None] | None = None,
    readiness: Callable[[], Readiness] = always_ready,
    console: Console | None = None,
) -> None:
    """Run any ``MCPServer`` over streamable HTTP at ``http://host:port/path`` until cancelled or stopped.

    Legacy sessions are bounded as :func:`serve_http` describes, connections by ``limits`` (how
    many at once, how long a request may take to arrive: :mod:`skilldeck.serving._connections`);
    ``on_ready`` hears the URL once the socket accepts connections. ``sockets`` already bound (see
    :func:`bind`) are used as they are.

    SIGTERM (or Ctrl-C) stops it within ``limits.shutdown_timeout`` seconds: it stops accepting,
    ends open streams, lets requests in flight finish until then and cuts the rest
    (:mod:`skilldeck.serving._shutdown`); ``on_stopped`` hears what was ended and cut, and the call
    returns.

    ``json_response`` answers each request (both eras) with one JSON body instead of an SSE stream,
    which costs the server about half the CPU of a 2025-11-25 request, but leaves a handler no way to
    send anything during a request (progress, log messages, server-to-client requests). Only a
    server none of whose handlers does that may turn it on (``skilldeck serve`` does; the gateway,
    which relays such messages, does not). ``subscriptions/listen`` and a legacy session's GET
    stream stay SSE either way, so change notifications are unaffected. ``json_when_silent`` keeps
    SSE for a legacy request that sends something before its response, and answers the others with
    one JSON body (:mod:`skilldeck.serving._single_body`), as the SDK itself does on 2026-07-28 (the
    gateway's choice).

    A legacy session's SSE streams are resumable: each opens with an event id and a ``retry`` hint,
    and a client whose stream dropped reconnects with ``Last-Event-ID`` and is sent what it missed,
    from its own session's events only (kept within bounds: :mod:`skilldeck.serving._resumable`).

    ``GET /healthz`` and ``GET /readyz`` are answered beside ``path`` for balancers and orchestrators
    (:mod:`skilldeck.serving._health`); ``readiness`` says what ``/readyz`` answers. A ``console``
    answers ``/console`` (:mod:`skilldeck.serving._console`); its live streams end when the server stops.

    Raises:
        ServeError: the port is in use, or the address cannot be listened on.
    """
    import uvicorn

    from skilldeck.serving._shutdown import GracefulServer

    if path in PROBE_PATHS:
        raise ServeError(f"--path {path} is where health probes are answered; serve MCP at another path (e.g. /mcp)")
    if console is not None and console.answers(path):
        raise ServeError(f"--path {path} is where --console is answered; serve MCP at another path (e.g. /mcp)")
    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        max_sessions=max_sessions,
        session_idle_timeout=session_idle_timeout,
        json_response=json_response,
        retry_interval=RETRY_MS,
    )
    resume_per_session(server.session_manager, ResumableStreams())
    evict_idle_when_full(server.session_manager, limits.counts)
    mcp_app: ASGIApp = single_body_replies(app) if json_when_silent and not json_response else app
    served: ASGIApp = answer_invalid_ids(answer_unknown_sessions(mcp_app, server.session_manager))
    if console is not None:
        from skilldeck.serving._console import with_console

        served = with_console(served, console)
    config = uvicorn.Config(
        quiet_disconnects(with_probes(served, readiness)),
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        http=bounded_protocol(limits),
    )
    uv = GracefulServer(
        config,
        drain=partial(_end_streams, server, console),
        shutdown_timeout=limits.shutdown_timeout,
        on_stopped=on_stopped,
    )
    if sockets is None:
        sockets = bind(host, port)

    async def _announce() -> None:
        while not uv.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
            await anyio.sleep(0.02)
        if on_ready is not None:
            bound = uv.servers[0].sockets[0].getsockname() if uv.servers else (host, port)
            on_ready(f"http://{_host_for_url(host)}:{bound[1]}{path}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(_announce)
        await uv.serve(sockets=sockets)
        tg.cancel_scope.cancel()


def _end_streams(server: MCPServer[Any], console: Console | None) -> tuple[int, int]:
    """The server is stopping: end the console's live streams too (they are not MCP streams, so not counted)."""
    from skilldeck.serving._shutdown import end_streams

    if console is not None:
        console.close()
    return end_streams(server)


def drop_idle_tracing(server: MCPServer[Any]) -> bool:
    """Take the SDK's per-request OpenTelemetry span off ``server`` when no tracer provider is installed.

    The SDK wraps every request in a span by default (its ``OpenTelemetryMiddleware``, first in
    ``server.middleware``; dropping it is the SDK's documented opt-out). Until an OpenTelemetry SDK
    installs a tracer provider the span records nothing, yet entering and leaving it is a visible
    share of a short request's CPU (``bench/server_throughput.py``). Call this once before serving,
    after any tracing set-up (``opentelemetry-instrument`` installs its provider before the program
    starts): with a provider installed the span stays. True when it was dropped.
    """
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return False  # someone collects spans
    spans = [m for m in server.middleware if type(m).__name__ == "OpenTelemetryMiddleware"]
    for middleware in spans:
        server.middleware.remove(middleware)
    return bool(spans)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while the block builds what start-up keeps (the catalog above all).

    Loading 100,000 skills makes about a million objects that live as long as the server; the
    collector, run every 700 of them, walks the whole growing heap again and again to free none:
    2.6 s of a 9 s start (``bench/scale.py``). Reference counting frees everything else as usual;
    what the block leaves in cycles waits for :func:`freeze_startup_heap`'s collection. The
    collector is switched back on when the block ends (unless it was off before it)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def freeze_startup_heap() -> int:
    """Leave what start-up built (modules, the catalog, the server) out of the cyclic collector's passes.

    A server answering many clients makes short-lived objects fast enough to trigger full
    collections often, and each full collection walks every object alive, most of them made at
    start-up and kept to the end. ``gc.freeze()`` moves those to a permanent generation the
    collector skips: with 64 clients it took about a tenth off the CPU per request and 90 → 20-30
    ms off p99 (``bench/server_throughput.py``, 2025-11-25, two A/B runs). Reference counting still
    frees a frozen object when it is dropped (a reloaded catalog's old snapshot goes as before);
    only a reference cycle among frozen objects is never collected. Call once, when start-up is
    done. Returns how many objects are frozen.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


SERVING_GC_THRESHOLDS: Final = (50_000, 20, 100)
"""The cyclic collector's thresholds while serving (:func:`collect_less_often`); Python's own are (700, 10, 10)."""


def collect_less_often(thresholds: tuple[int, int, int] = SERVING_GC_THRESHOLDS) -> tuple[int, int, int]:
    """Run the cyclic collector's young passes after 50,000 new objects instead of Python's 700.

    A request allocates a few hundred objects that reference counting frees at once, so at 700 the
    young generation is walked every two or three requests for garbage that is almost never there.
    At 50,000 a pass comes every hundred-odd requests; what can wait for it is a few megabytes of
    cycles at most. In interleaved A/B runs (``bench/server_throughput.py --peers``) 2025-11-25
    requests at 8 and 64 clients gained 4-20% req/s with less CPU per request in every pair;
    1 client and the 2026-07-28 cells moved within run-to-run noise (-7% to +5%). The gateway
    showed no gain in throughput (``bench/gateway.py --baseline``), but its event loop's longest
    stalls were full passes: at 150 clients (``bench/soak.py``) one every ~9 s, 100-130 ms of CPU
    each over ~170,000 objects; with the heap frozen, 16-53 ms over 35,000-73,000; with these
    thresholds as well, none in a minute. At 1,000 clients on a saturated machine the frozen heap
    alone still took a full pass every 10-15 s (270-390 ms of CPU: the backlog of slow requests
    is in the old generation), while with these thresholds there was no full pass in ten minutes,
    only two young passes of ~0.5 s of CPU. So both ``serve`` and the gateway call it over HTTP.
    Call once, when start-up is done (after :func:`freeze_startup_heap`); returns the thresholds it
    replaced.
    """
    before = gc.get_threshold()
    gc.set_threshold(*thresholds)
    return before


def event_loop_options() -> dict[str, Any]:
    """``anyio.run`` backend options for a long-running server: uvloop when it is installed.

    uvloop (a default dependency where it builds: not on Windows) takes about a fifth off each
    proxied call's CPU in the gateway (``bench/gateway.py``); without it asyncio's own loop runs.
    """
    return {"use_uvloop": True} if importlib.util.find_spec("uvloop") is not None else {}


def bind(host: str, port: int) -> list[socket.socket]:
    """Bound sockets for every address of ``host`` (as asyncio's ``create_server`` would bind)."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; check the host name") from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], port, *address[2:]))
            port = sock.getsockname()[1]  # with port 0: the free port found first, for every address
    except OSError as exc:
        for sock in sockets:
            sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} on {host} is in use; stop what listens there, or pick another port "
                f"(--http {_host_for_url(host)}:PORT, or PORT 0 for a free one)"
            ) from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sockets


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
