"""Labelled connections to many MCP servers at once: the host's SDK adapter for transports.

:class:`Connections` opens every configured server in parallel, each in a task of its own that
keeps the SDK ``Client`` open until the host closes. A server that fails to start, crashes, or
does not finish the handshake within its timeout is reported with the reason; the others go on.
Negotiation is the SDK's ``mode="auto"``: 2026-07-28 when the server speaks it, else the
2025-11-25 handshake (``mode="legacy"`` forces the handshake).

Every session is opened with a message handler that hands each incoming server message (with the
server's label) to the listeners added with :meth:`Connections.add_message_listener`; that is how
legacy ``notifications/*/list_changed`` reach :mod:`skilldeck.host.watch`.
"""

from __future__ import annotations

import inspect
import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any, Literal

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from skilldeck.host.config import HttpServer, InProcessServer, ServerSpec, StdioServer
from skilldeck.host.wire import SkillsWire, declared_skills_settings

__all__ = ["Connected", "Connections", "Failure", "MessageListener"]

MessageListener = Callable[[str, Any], Awaitable[None] | None]
"""Called with ``(label, message)`` for every message a server sends outside a response."""

logger = logging.getLogger(__name__)


@dataclass
class Connected:
    """An open, negotiated session with one server."""

    spec: ServerSpec
    client: Client
    wire: SkillsWire
    skills: dict[str, Any] | None
    """The server's Skills extension settings, ``None`` when it did not declare the extension."""

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def protocol_version(self) -> str:
        return self.client.protocol_version

    @property
    def directory_read(self) -> bool:
        return bool(self.skills and self.skills.get("directoryRead") is True)


@dataclass(frozen=True)
class Failure:
    """A server that could not be used, and why."""

    label: str
    reason: str


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        if inner:
            return _describe(inner[0])
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text


@asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP with extra headers, on an HTTP client with the SDK's timeouts, closed with the session."""
    import httpx2

    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults for MCP transports (a response may stream)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, follow_redirects=False) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _client_for(
    spec: ServerSpec,
    read_timeout: float | None,
    errlog: IO[str] | None = None,
    *,
    mode: Literal["auto", "legacy"] = "auto",
    message_handler: Any = None,
) -> Client:
    transport = spec.transport
    target: Any
    if isinstance(transport, StdioServer):
        # Only the configured variables, merged by the SDK over its safe default set (PATH, HOME, ...):
        # the host's own environment (and its secrets) is never handed to a server wholesale.
        env = dict(transport.env) if transport.env else None
        params = StdioServerParameters(command=transport.command, args=list(transport.args), env=env, cwd=transport.cwd)
        target = stdio_client(params, errlog=errlog) if errlog is not None else params
    elif isinstance(transport, HttpServer):
        target = _http_with_headers(transport.url, dict(transport.headers)) if transport.headers else transport.url
    elif isinstance(transport, InProcessServer):
        target = transport.server
    else:  # pragma: no cover - ServerSpec's type forbids it
        raise TypeError(f"unknown transport {transport!r}")
    return Client(target, mode=mode, read_timeout_seconds=read_timeout, cache=None, message_handler=message_handler)


class Connections:
    """Open labelled sessions with many servers; use as ``async with Connections(specs) as conns``.

    Args:
        specs: the servers, each with its host-assigned label (labels must be unique).
        read_timeout: seconds to wait for any single response once connected.
        mode: ``"auto"`` (2026-07-28 where the server speaks it) or ``"legacy"`` (the 2025-11-25 handshake).
    """

    def __init__(
        self,
        specs: Iterable[ServerSpec],
        *,
        read_timeout: float | None = 60.0,
        server_stderr: IO[str] | None = None,
        mode: Literal["auto", "legacy"] = "auto",
    ) -> None:
        self.specs = list(specs)
        labels = [s.label for s in self.specs]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            from skilldeck.host.config import ConfigError

            raise ConfigError(f"server labels must be unique; repeated: {', '.join(duplicates)}")
        self.read_timeout = read_timeout
        self.mode: Literal["auto", "legacy"] = mode
        self._listeners: list[MessageListener] = []
        self.connected: dict[str, Connected] = {}
        self.failures: dict[str, Failure] = {}
        self._close = anyio.Event()
        self._closers: dict[str, anyio.Event] = {}
        self.server_stderr = server_stderr
        self._stderr_files: dict[str, IO[str]] = {}
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> Connections:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            await self._open_all()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close.set()
        assert self._tg is not None
        try:
            await self._tg.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            # The task group wraps the body's own exception; let the caller see it unwrapped.
            if exc is not None and all(e is exc for e in group.exceptions):
                return
            raise
        finally:
            for log in self._stderr_files.values():
                log.close()

    def _errlog(self, spec: ServerSpec) -> IO[str] | None:
        """A stdio server's stderr goes to a file of its own, not over the host's output."""
        if not isinstance(spec.transport, StdioServer):
            return None
        if self.server_stderr is not None:
            return self.server_stderr
        log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed in __aexit__
        self._stderr_files[spec.label] = log
        return log

    def _stderr_tail(self, label: str, lines: int = 5) -> str:
        text = self.stderr(label)
        tail = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
        return ("; its stderr ended with: " + " | ".join(tail)) if tail else ""

    def stderr(self, label: str) -> str:
        """What a stdio server wrote to stderr so far (when it went to a file of its own)."""
        log = self._stderr_files.get(label)
        if log is None:
            return ""
        try:
            log.flush()
            log.seek(0)
            return log.read()
        except (OSError, ValueError):
            return ""

    def add_message_listener(self, listener: MessageListener) -> None:
        """Hear every message any server sends outside a response (notifications, mostly), with its label."""
        self._listeners.append(listener)

    def remove_message_listener(self, listener: MessageListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _message_handler(self, label: str) -> Callable[[Any], Awaitable[None]]:
        async def handle(message: Any) -> None:
            for listener in list(self._listeners):
                try:
                    outcome = listener(label, message)
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:  # a listener's fault must not break the session's receive loop
                    logger.exception("a message listener failed on a message from %r", label)
            await anyio.lowlevel.checkpoint()

        return handle

    def close(self, label: str) -> None:
        """Close one server's session now (the others stay open)."""
        self.connected.pop(label, None)
        self._closers.setdefault(label, anyio.Event()).set()

    async def _open_all(self) -> None:
        assert self._tg is not None
        settled: list[anyio.Event] = []
        for spec in self.specs:
            done = anyio.Event()
            settled.append(done)
            self._tg.start_soon(self._hold, spec, done)
        for done in settled:
            await done.wait()

    async def _hold(self, spec: ServerSpec, done: anyio.Event) -> None:
        """Connect, publish the session, keep it open until the host closes; report any failure."""
        scope = anyio.CancelScope()
        watch = anyio.CancelScope()
        errlog = self._errlog(spec)

        async def watchdog() -> None:
            with watch:
                await anyio.sleep(spec.timeout)
                if not done.is_set():
                    self.failures[spec.label] = Failure(spec.label, f"no answer within {spec.timeout:g}s (timed out)")
                    done.set()  # report now; the process is torn down in the background
                    scope.cancel()

        async with anyio.create_task_group() as guard:
            guard.start_soon(watchdog)
            with scope:
                try:
                    client = _client_for(
                        spec,
                        self.read_timeout,
                        errlog,
                        mode=self.mode,
                        message_handler=self._message_handler(spec.label),
                    )
                    async with client:
                        settings = declared_skills_settings(client)
                        self.connected[spec.label] = Connected(spec, client, SkillsWire(client), settings)
                        done.set()
                        watch.cancel()
                        closer = self._closers.setdefault(spec.label, anyio.Event())
                        async with anyio.create_task_group() as wait_any:

                            async def until(event: anyio.Event) -> None:
                                await event.wait()
                                wait_any.cancel_scope.cancel()

                            wait_any.start_soon(until, self._close)
                            wait_any.start_soon(until, closer)
                except Exception as exc:
                    if spec.label not in self.connected:
                        reason = _describe(exc) + self._stderr_tail(spec.label)
                        self.failures.setdefault(spec.label, Failure(spec.label, reason))
                    else:
                        logger.warning("server %r failed: %s", spec.label, _describe(exc))
                        self.connected.pop(spec.label, None)
                        self.failures[spec.label] = Failure(spec.label, f"connection lost: {_describe(exc)}")
            done.set()
            watch.cancel()
