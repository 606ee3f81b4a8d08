"""Ready-made skills servers: build an ``MCPServer`` with the extension wired in, and run it.

:func:`create_server` is the one-liner behind ``skilldeck serve``; :func:`serve_stdio` and
:func:`serve_http` run it, optionally reloading when the folders change (``--watch``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup
from mcp.server.mcpserver import MCPServer

from skilldeck.errors import SkilldeckError
from skilldeck.server.catalog import CatalogDiff
from skilldeck.server.dynamic import DynamicSkill
from skilldeck.server.extension import SkillsExtension
from skilldeck.server.policy import Policy
from skilldeck.server.sessions import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT, evict_idle_when_full
from skilldeck.server.sources import DirectorySource

__all__ = ["create_server", "serve_http", "serve_stdio", "watch_and_reload"]

logger = logging.getLogger(__name__)


def create_server(
    *sources: DirectorySource | DynamicSkill | str | os.PathLike[str],
    name: str = "skilldeck",
    instructions: str | None = None,
    policy: Policy | None = None,
    token_verifier: Any = None,
    auth: Any = None,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
    **extension_options: Any,
) -> tuple[MCPServer[Any], SkillsExtension]:
    """An ``MCPServer`` serving skills from folders (paths) and dynamic skills.

    Extra keyword arguments go to :class:`SkillsExtension` (``page_size``, ``ttl_ms``, ...).
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
        instructions=instructions,
        extensions=[extension],
        middleware=[extension.middleware],
        subscriptions=extension.subscriptions,
        log_level=log_level,
        token_verifier=token_verifier,
        auth=auth,
    )
    return server, extension


def _watched_roots(extension: SkillsExtension) -> list[Path]:
    return [root for source in extension._directories for root in source.roots]


def _resolved(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


async def watch_and_reload(
    extension: SkillsExtension,
    on_reload: Callable[[CatalogDiff], None] | None = None,
    *,
    debounce_ms: int = 200,
    server: MCPServer[Any] | None = None,
    policy_path: str | os.PathLike[str] | None = None,
    on_policy_error: Callable[[Exception], None] | None = None,
) -> None:
    """Reload ``extension`` whenever a file under its folders (or its policy file) changes.

    A changed policy file is loaded and checked against ``server`` before it replaces the one in
    force; a policy that does not load or check is reported through ``on_policy_error`` and the
    previous one stays. Runs until cancelled.
    """
    from watchfiles import awatch

    from skilldeck.server.policy import load_policy

    roots: list[Path] = _watched_roots(extension)
    policy_file = _resolved(policy_path) if policy_path is not None else None
    if policy_file is not None:
        roots.append(policy_file.parent)
    if not roots:
        return
    async for changes in awatch(*roots, debounce=debounce_ms, recursive=True):
        changed = {_resolved(p) for _, p in changes}
        if policy_file is not None and policy_file in changed:
            try:
                policy = load_policy(policy_file)
                previous, extension.policy = extension.policy, policy
                try:
                    if server is not None:
                        await extension.check_policy(server)
                finally:
                    extension.policy = previous
                await extension.set_policy(policy)
            except SkilldeckError as exc:
                if on_policy_error is not None:
                    on_policy_error(exc)
        if any(p != policy_file for p in changed):
            diff = await extension.reload()
            if on_reload is not None:
                on_reload(diff)


@asynccontextmanager
async def _serving(
    server: MCPServer[Any],
    extension: SkillsExtension,
    watch: bool,
    on_reload: Callable[[CatalogDiff], None] | None,
    policy_path: str | os.PathLike[str] | None,
    on_policy_error: Callable[[Exception], None] | None,
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
) -> None:
    """Serve over stdio until the client closes the stream."""
    async with _serving(server, extension, watch, on_reload, policy_path, on_policy_error):
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
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
) -> None:
    """Serve streamable HTTP at ``http://host:port/path`` until cancelled.

    At most ``max_sessions`` legacy (2025-11-25) sessions are held; one with no request in flight
    for ``session_idle_timeout`` seconds ends, and when the table is full a new client takes the
    place of the least recently used idle session (see :mod:`skilldeck.server.sessions`).
    """
    import uvicorn

    app = server.streamable_http_app(
        streamable_http_path=path, host=host, max_sessions=max_sessions, session_idle_timeout=session_idle_timeout
    )
    evict_idle_when_full(server.session_manager)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on")
    uv = uvicorn.Server(config)

    async with _serving(server, extension, watch, on_reload, policy_path, on_policy_error) as tg:

        async def _announce() -> None:
            while not uv.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
                await anyio.sleep(0.02)
            if on_ready is not None:
                bound = uv.servers[0].sockets[0].getsockname() if uv.servers else (host, port)
                on_ready(f"http://{_host_for_url(host)}:{bound[1]}{path}")

        tg.start_soon(_announce)
        await uv.serve()


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
