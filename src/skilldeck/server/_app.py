"""Ready-made skills servers: build an ``MCPServer`` with the extension wired in, and run it.

:func:`create_server` is the one-liner behind ``skilldeck serve``; :func:`serve_stdio` and
:func:`serve_http` run it, optionally reloading when the folders change (``--watch``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateCodec

from skilldeck import __version__
from skilldeck.errors import SkilldeckError
from skilldeck.server._catalog import CatalogDiff
from skilldeck.server._dynamic import DynamicSkill
from skilldeck.server._extension import SkillsExtension
from skilldeck.serving._api import (
    DEFAULT_HTTP_LIMITS,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    HttpLimits,
    Policy,
    Readiness,
    bind,
    request_state_security,
    run_http,
)
from skilldeck.skill._api import DirectorySource

if TYPE_CHECKING:
    from skilldeck.serving._api import Console, ShutdownReport

__all__ = [
    "catalog_readiness",
    "create_server",
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
    ``request_state_codec`` seals and unseals it instead (a :class:`~skilldeck.serving._state_keys.KeyRing`
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

    from skilldeck.serving._api import load_policy

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
    place of the least recently used idle session (see :mod:`skilldeck.serving._sessions`). The
    connections are bounded by ``limits`` (see :mod:`skilldeck.serving._connections`).

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
