"""Ready-made skills servers: build an ``MCPServer`` with the extension wired in, and run it.

:func:`create_server` is the one-liner behind ``skilldeck serve``; :func:`serve_stdio` and
:func:`serve_http` run it, optionally reloading when the folders change (``--watch``).
"""

from __future__ import annotations

import errno
import gc
import importlib.util
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateCodec, RequestStateSecurity
from starlette.types import ASGIApp

from skilldeck import __version__
from skilldeck.errors import ServeError, SkilldeckError
from skilldeck.server._catalog import CatalogDiff
from skilldeck.server._connections import DEFAULT_HTTP_LIMITS, HttpLimits, bounded_protocol
from skilldeck.server._disconnects import quiet_disconnects
from skilldeck.server._dynamic import DynamicSkill
from skilldeck.server._extension import SkillsExtension
from skilldeck.server._health import PROBE_PATHS, Readiness, always_ready, with_probes
from skilldeck.server._request_ids import answer_invalid_ids
from skilldeck.server._resumable import RETRY_MS, ResumableStreams, resume_per_session
from skilldeck.server._sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    answer_unknown_sessions,
    evict_idle_when_full,
)
from skilldeck.server._single_body import single_body_replies
from skilldeck.serving._policy import Policy
from skilldeck.skill._pack import DirectorySource

if TYPE_CHECKING:
    from skilldeck.server._shutdown import ShutdownReport
    from skilldeck.serving._console import Console

__all__ = [
    "SERVING_GC_THRESHOLDS",
    "bind",
    "catalog_readiness",
    "collect_less_often",
    "collector_paused",
    "create_server",
    "drop_idle_tracing",
    "event_loop_options",
    "freeze_startup_heap",
    "request_state_security",
    "run_http",
    "serve_http",
    "serve_stdio",
    "watch_and_reload",
]

logger = logging.getLogger(__name__)


def create_server(
    *sources: DirectorySource | DynamicSkill | str | os.PathLike[str],
    name: str = "skilldeck",
    version: str | None = None,
    instructions: str | None = None,
    policy: Policy | None = None,
    token_verifier: Any = None,
    auth: Any = None,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
    request_state_keys: Sequence[str | bytes] | None = None,
    request_state_codec: RequestStateCodec | None = None,
    **extension_options: Any,
) -> tuple[MCPServer[Any], SkillsExtension]:
    """An ``MCPServer`` serving skills from folders (paths) and dynamic skills.

    Extra keyword arguments go to :class:`SkillsExtension` (``page_size``, ``ttl_ms``, ...).
    ``version`` is the ``serverInfo.version`` clients see; skilldeck's own version by default.
    ``request_state_keys`` (each at least 32 bytes; the first seals, all unseal) make a
    multi-round-trip request's sealed ``requestState`` valid on every replica given the same keys
    and ``name`` (the name is its audience); by default a key of this process alone seals it.
    ``request_state_codec`` seals and unseals it instead (a :class:`~skilldeck.server._state_keys.KeyRing`
    kept in step with other replicas through Redis).
    Returns the server and its extension (for ``reload()`` and ``problems``).
    """

    folders = [s for s in sources if isinstance(s, str | os.PathLike)]
    others = [s for s in sources if isinstance(s, DirectorySource | DynamicSkill)]
    resolved: list[DirectorySource | DynamicSkill] = list(others)
    if folders:
        resolved.insert(0, DirectorySource(*folders))
    extension = SkillsExtension(*resolved, policy=policy, **extension_options)
    server: MCPServer[Any] = MCPServer(
        name,
        version=__version__ if version is None else version,
        instructions=instructions,
        extensions=[extension],
        middleware=[extension.middleware],
        subscriptions=extension.subscriptions,
        log_level=log_level,
        token_verifier=token_verifier,
        auth=auth,
        request_state_security=request_state_security(request_state_keys, request_state_codec),
    )
    return server, extension


def request_state_security(
    keys: Sequence[str | bytes] | None, codec: RequestStateCodec | None
) -> RequestStateSecurity | None:
    """How ``requestState`` is sealed: by ``codec``, else under ``keys``; ``None`` (a key of this process) without either."""
    if codec is not None:
        return RequestStateSecurity(codec=codec)
    return None if keys is None else RequestStateSecurity(keys=keys)


def _watched_roots(extension: SkillsExtension) -> list[Path]:
    return extension.service.roots


def _resolved(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


class _Pinned:
    """The folders the roots name now, each held open so its inode number cannot be reused.

    ``rm -rf root && mkdir root`` often gets the freed inode number back; holding a descriptor on
    the old folder keeps it allocated, so the new one is always told apart.
    """

    def __init__(self, roots: list[Path]) -> None:
        self.fds: dict[Path, int | None] = {}
        for root in roots:
            try:
                self.fds[root] = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                self.fds[root] = None

    def present(self, root: Path) -> bool:
        return self.fds[root] is not None

    def moved(self) -> bool:
        """Whether any root now names another folder than the one pinned (or appeared, or went)."""
        for root, fd in self.fds.items():
            try:
                now: os.stat_result | None = os.stat(root)
            except OSError:
                now = None
            if fd is None or now is None:
                if (fd is None) != (now is None):
                    return True
            elif not os.path.samestat(os.fstat(fd), now):
                return True
        return False

    def close(self) -> None:
        for fd in self.fds.values():
            if fd is not None:
                os.close(fd)


async def watch_and_reload(
    extension: SkillsExtension,
    on_reload: Callable[[CatalogDiff], None] | None = None,
    *,
    debounce_ms: int = 200,
    server: MCPServer[Any] | None = None,
    policy_path: str | os.PathLike[str] | None = None,
    on_policy_error: Callable[[Exception], None] | None = None,
    on_policy_applied: Callable[[Policy], None] | None = None,
    check_ms: int = 1000,
) -> None:
    """Reload ``extension`` whenever a file under its folders (or its policy file) changes.

    A root that is replaced (removed and created again, a new folder renamed onto its name, a
    symlinked root flipped to another release) is followed: the parent folder of each root is
    watched too, and at least every ``check_ms`` the folder each root names is compared with the
    one being watched; when it differs the watch is re-armed on the new folder and the extension
    reloaded. A missing root serves nothing until it is back.

    A changed policy file is loaded and checked against ``server`` before it replaces the one in
    force (then ``on_policy_applied`` hears of it); a policy that does not load or check is
    reported through ``on_policy_error`` and the previous one stays. Runs until cancelled.
    """
    roots: list[Path] = _watched_roots(extension)
    policy_file = _resolved(policy_path) if policy_path is not None else None
    if not roots and policy_file is None:
        return
    rearmed = False
    while True:
        pinned = _Pinned(roots)
        replaced = anyio.Event()  # also stops both watchers' threads within a step (awatch's stop_event)
        try:
            async with anyio.create_task_group() as tg:
                trees = [root for root in roots if pinned.present(root)]
                if policy_file is not None:
                    trees.append(policy_file.parent)
                if trees:
                    await tg.start(
                        partial(
                            _watch_trees,
                            extension,
                            trees,
                            on_reload,
                            debounce_ms=debounce_ms,
                            server=server,
                            policy_file=policy_file,
                            on_policy_error=on_policy_error,
                            on_policy_applied=on_policy_applied,
                            stop=replaced,
                            check_ms=check_ms,
                        )
                    )
                if roots:
                    tg.start_soon(
                        partial(_watch_replacement, roots, pinned, replaced, debounce_ms=debounce_ms, check_ms=check_ms)
                    )
                if rearmed:  # after arming, so nothing written since the replacement is missed
                    diff = await extension.reload()
                    if on_reload is not None:
                        on_reload(diff)
                await replaced.wait()
                tg.cancel_scope.cancel()
        finally:
            pinned.close()
        rearmed = True


async def _watch_trees(
    extension: SkillsExtension,
    trees: list[Path],
    on_reload: Callable[[CatalogDiff], None] | None,
    *,
    debounce_ms: int,
    server: MCPServer[Any] | None,
    policy_file: Path | None,
    on_policy_error: Callable[[Exception], None] | None,
    on_policy_applied: Callable[[Policy], None] | None,
    stop: anyio.Event,
    check_ms: int,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Reload on every change below ``trees``; apply the policy file when it is the one that changed."""
    from watchfiles import awatch

    from skilldeck.serving._policy import load_policy

    # awatch arms its watcher before its first await, and nothing awaits between started() and
    # there: when the caller's ``tg.start`` returns, changes are already being recorded.
    task_status.started()
    # The watch thread cannot be cancelled, only stopped: ``stop`` ends it within a step, and the
    # timeout bounds how long a cancellation (server shutdown) waits for it.
    async for changes in awatch(*trees, debounce=debounce_ms, recursive=True, stop_event=stop, rust_timeout=check_ms):
        changed = {_resolved(p) for _, p in changes}
        if policy_file is not None and policy_file in changed:
            try:
                policy = load_policy(policy_file)
                if server is not None:
                    await extension.check_policy(server, policy)  # checked, not yet in force
                await extension.set_policy(policy)
                if on_policy_applied is not None:
                    on_policy_applied(policy)
            except SkilldeckError as exc:
                if on_policy_error is not None:
                    on_policy_error(exc)
        if any(p != policy_file for p in changed):
            diff = await extension.reload()
            if on_reload is not None:
                on_reload(diff)


async def _watch_replacement(
    roots: list[Path], pinned: _Pinned, replaced: anyio.Event, *, debounce_ms: int, check_ms: int
) -> None:
    """Set ``replaced`` once a root names another folder than the one pinned (or appears, or goes)."""
    from watchfiles import awatch

    parents = sorted({p for root in roots for p in (root.absolute().parent, _resolved(root).parent) if p.is_dir()})
    try:
        # Not recursive: only the roots' own entries in their parents matter here. The timeout
        # doubles as the periodic check for what no event reports (a parent replaced in turn).
        if parents:
            async for _ in awatch(
                *parents,
                debounce=debounce_ms,
                recursive=False,
                stop_event=replaced,
                rust_timeout=check_ms,
                yield_on_timeout=True,
            ):
                if pinned.moved():
                    break
    except OSError:  # a parent vanished while being armed: keep checking by polling
        logger.debug("cannot watch the parents of %s; polling", roots, exc_info=True)
    while not replaced.is_set():
        if pinned.moved():
            replaced.set()
        else:
            await anyio.sleep(check_ms / 1000)


@asynccontextmanager
async def _serving(
    server: MCPServer[Any],
    extension: SkillsExtension,
    watch: bool,
    on_reload: Callable[[CatalogDiff], None] | None,
    policy_path: str | os.PathLike[str] | None,
    on_policy_error: Callable[[Exception], None] | None,
    on_policy_applied: Callable[[Policy], None] | None = None,
) -> AsyncIterator[TaskGroup]:
    """Check the policy, then run the block beside the watcher (when asked); the watcher stops with the block."""
    await extension.check_policy(server)
    async with anyio.create_task_group() as tg:
        if watch:
            tg.start_soon(
                partial(
                    watch_and_reload,
                    extension,
                    on_reload,
                    server=server,
                    policy_path=policy_path,
                    on_policy_error=on_policy_error,
                    on_policy_applied=on_policy_applied,
                )
            )
        yield tg
        tg.cancel_scope.cancel()


async def serve_stdio(
    server: MCPServer[Any],
    extension: SkillsExtension,
    *,
    watch: bool = False,
    on_reload: Callable[[CatalogDiff], None] | None = None,
    policy_path: str | os.PathLike[str] | None = None,
    on_policy_error: Callable[[Exception], None] | None = None,
    on_policy_applied: Callable[[Policy], None] | None = None,
) -> None:
    """Serve over stdio until the client closes the stream."""
    async with _serving(server, extension, watch, on_reload, policy_path, on_policy_error, on_policy_applied):
        await server.run_stdio_async()


async def serve_http(
    server: MCPServer[Any],
    extension: SkillsExtension,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    watch: bool = False,
    on_reload: Callable[[CatalogDiff], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
    policy_path: str | os.PathLike[str] | None = None,
    on_policy_error: Callable[[Exception], None] | None = None,
    on_policy_applied: Callable[[Policy], None] | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
    json_response: bool = False,
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
    on_stopped: Callable[[ShutdownReport], None] | None = None,
    console: Console | None = None,
) -> None:
    """Serve streamable HTTP at ``http://host:port/path`` until cancelled or stopped (SIGTERM).

    At most ``max_sessions`` legacy (2025-11-25) sessions are held; one with no request in flight
    for ``session_idle_timeout`` seconds ends, and when the table is full a new client takes the
    place of the least recently used idle session (see :mod:`skilldeck.server._sessions`). The
    connections are bounded by ``limits`` (see :mod:`skilldeck.server._connections`).

    Raises:
        ServeError: the port is in use, or the address cannot be listened on.
    """
    sockets = bind(host, port)  # before anything starts, so that a taken port is one clear error
    async with _serving(server, extension, watch, on_reload, policy_path, on_policy_error, on_policy_applied):
        await run_http(
            server,
            sockets=sockets,
            host=host,
            port=port,
            path=path,
            on_ready=on_ready,
            log_level=log_level,
            max_sessions=max_sessions,
            session_idle_timeout=session_idle_timeout,
            json_response=json_response,
            limits=limits,
            on_stopped=on_stopped,
            readiness=partial(catalog_readiness, extension),
            console=console,
        )


def catalog_readiness(extension: SkillsExtension) -> Readiness:
    """``serve`` is ready once its catalog is loaded (it is, before it listens): ``/readyz`` says how many skills."""
    return Readiness(True, {"skills": len(extension.catalog)})


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
    many at once, how long a request may take to arrive: :mod:`skilldeck.server._connections`);
    ``on_ready`` hears the URL once the socket accepts connections. ``sockets`` already bound (see
    :func:`bind`) are used as they are.

    SIGTERM (or Ctrl-C) stops it within ``limits.shutdown_timeout`` seconds: it stops accepting,
    ends open streams, lets requests in flight finish until then and cuts the rest
    (:mod:`skilldeck.server._shutdown`); ``on_stopped`` hears what was ended and cut, and the call
    returns.

    ``json_response`` answers each request (both eras) with one JSON body instead of an SSE stream,
    which costs the server about half the CPU of a 2025-11-25 request, but leaves a handler no way to
    send anything during a request (progress, log messages, server-to-client requests). Only a
    server none of whose handlers does that may turn it on (``skilldeck serve`` does; the gateway,
    which relays such messages, does not). ``subscriptions/listen`` and a legacy session's GET
    stream stay SSE either way, so change notifications are unaffected. ``json_when_silent`` keeps
    SSE for a legacy request that sends something before its response, and answers the others with
    one JSON body (:mod:`skilldeck.server._single_body`), as the SDK itself does on 2026-07-28 (the
    gateway's choice).

    A legacy session's SSE streams are resumable: each opens with an event id and a ``retry`` hint,
    and a client whose stream dropped reconnects with ``Last-Event-ID`` and is sent what it missed,
    from its own session's events only (kept within bounds: :mod:`skilldeck.server._resumable`).

    ``GET /healthz`` and ``GET /readyz`` are answered beside ``path`` for balancers and orchestrators
    (:mod:`skilldeck.server._health`); ``readiness`` says what ``/readyz`` answers. A ``console``
    answers ``/console`` (:mod:`skilldeck.serving._console`); its live streams end when the server stops.

    Raises:
        ServeError: the port is in use, or the address cannot be listened on.
    """
    import uvicorn

    from skilldeck.server._shutdown import GracefulServer

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
    from skilldeck.server._shutdown import end_streams

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
