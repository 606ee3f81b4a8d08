"""Labelled connections to many MCP servers at once: the host's SDK adapter for transports.

:class:`Connections` opens every configured server in parallel, each in a task of its own that
keeps the SDK ``Client`` open until the host closes. A server that fails to start, crashes, or
does not finish the handshake within its timeout is reported with the reason; the others go on.
Negotiation is the SDK's ``mode="auto"``: 2026-07-28 when the server speaks it, else the
2025-11-25 handshake (``mode="legacy"`` forces the handshake).

Every session is opened with a message handler that hands each incoming server message (with the
server's label) to the listeners added with :meth:`Connections.add_message_listener`; that is how
legacy ``notifications/*/list_changed`` reach :mod:`skilldeck.host.watch`.

With ``server_requests=True`` (the gateway) every session also declares the ``sampling``,
``elicitation`` and ``roots`` client capabilities, and hands each such request a server sends (with
its label) to :attr:`Connections.server_request_handler`; while no handler is set, each is refused
with an error response.

What a server sends is bounded and checked before it can cost the host: one HTTP response body,
one SSE event and one stdio line may each take at most ``max_message_bytes`` (32 MiB by default;
stdio servers run behind :mod:`skilldeck.host.stdio_guard`, since the SDK's stdio reader has no
limit). A server that passes the limit, or sends something that is not JSON-RPC (invalid JSON, bytes
that are not UTF-8), is failed at once with that reason (:meth:`Connections.fail`): its requests
end now instead of waiting out a timeout, and the other servers go on.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal, TextIO, cast
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.lowlevel
import httpx2
from anyio.abc import TaskGroup
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestParams,
    ErrorData,
    InputRequest,
    InputResponse,
    ListRootsRequest,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from skilldeck._awaitable import maybe_await
from skilldeck.errors import MessageTooLarge
from skilldeck.host import stdio_guard
from skilldeck.host.config import HttpServer, InProcessServer, ServerSpec, StdioServer
from skilldeck.host.wire import SkillsWire, declared_skills_settings

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "Connected",
    "Connections",
    "Failure",
    "MessageListener",
    "MessageTooLarge",
    "ServerRequestHandler",
]

DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""Bytes one HTTP response body, SSE event or stdio line from a server may take (32 MiB)."""

PROBE_METHOD = "server/discover"
"""The request a 2026-07-28 client opens with; a 2025-11-25 server refuses it and gets the handshake instead."""

MessageListener = Callable[[str, Any], Awaitable[None] | None]
"""Called with ``(label, message)`` for every message a server sends outside a response."""

ServerRequestHandler = Callable[[str, InputRequest], Awaitable[InputResponse | ErrorData]]
"""Answers ``(label, request)``: a ``sampling/createMessage``, ``elicitation/create`` or ``roots/list`` a server sent."""

logger = logging.getLogger(__name__)


class Unwinding:
    """An async context manager whose ``__aenter__`` builds ``self._stack``: entry and exit unwind it alike."""

    _stack: AsyncExitStack

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._stack.__aexit__(exc_type, exc, tb)


@asynccontextmanager
async def task_group() -> AsyncIterator[TaskGroup]:
    """An anyio task group out of which the body's own exception comes as itself, not wrapped in a group."""
    body: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            try:
                yield tg
            except BaseException as exc:
                body = exc
                raise
    except BaseExceptionGroup as group:
        if body is not None and all(e is body for e in group.exceptions):
            raise body from None
        raise


@dataclass
class Connected:
    """An open, negotiated session with one server."""

    spec: ServerSpec
    client: Client
    wire: SkillsWire
    skills: dict[str, Any] | None
    """The server's Skills extension settings, ``None`` when it did not declare the extension."""
    on_fault: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    """Gives up on this server with a reason (set by :class:`Connections`)."""
    failure: str | None = None
    """Why the host gave up on this server, once it has; its requests then fail with this reason."""

    @property
    def label(self) -> str:
        return self.spec.label

    def explain(self, exc: BaseException) -> str:
        """Words for a request to this server that failed.

        A response the SDK could not parse is the server's fault: the server is given up on with
        "sent invalid JSON", once, and every request that fails after that reports the same reason.
        """
        if self.failure is None and (fault := _transport_fault(exc)) is not None:
            self.failure = fault
            if self.on_fault is not None:
                self.on_fault(fault)
        if self.failure is not None:
            return self.failure
        return request_error(exc)

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


def request_error(exc: BaseException) -> str:
    """Words for a failed request: the server's error message, else the exception's type and text."""
    return exc.error.message if isinstance(exc, MCPError) else f"{type(exc).__name__}: {exc}"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        if inner:
            return _describe(inner[0])
    if (fault := _transport_fault(exc)) is not None:
        return fault
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text


def _not_found_hint(spec: ServerSpec, exc: BaseException) -> str | None:
    """For an HTTP server that answered 404 at its URL: say so, and where MCP endpoints usually are."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    transport = spec.transport
    if not (isinstance(transport, HttpServer) and isinstance(exc, MCPError)):
        return None
    if exc.error.code != METHOD_NOT_FOUND or exc.error.message != "Not Found":  # the SDK's words for an HTTP 404
        return None
    url = transport.url
    split = urlsplit(url)
    if split.path.rstrip("/").endswith("/mcp"):
        return f"no MCP endpoint at {url} (HTTP 404 Not Found); check the server's endpoint path"
    suggestion = urlunsplit(split._replace(path=split.path.rstrip("/") + "/mcp", query="", fragment=""))
    return (
        f"no MCP endpoint at {url} (HTTP 404 Not Found); streamable HTTP servers usually answer at "
        f"a path such as /mcp: try {suggestion}"
    )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB" if size >= 1024 * 1024 else f"{size} bytes"


def _over_limit(size: int) -> str:
    """The reason given for a server whose message passed the host's limit."""
    return (
        f"response over {_mib(size)}, the host's limit per message "
        "(raise it with --max-response or max_message_bytes if you trust this server)"
    )


def _short_parse_error(text: str) -> str:
    """``expected ident at line 1 column 2`` out of a pydantic report, without the echoed input."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Invalid JSON:"):
            return line.removeprefix("Invalid JSON:").split(" [type=", 1)[0].strip()
    return ""


def _stream_fault(exc: Exception) -> str:
    """The reason for a message the transport handed to the session as an exception instead of a message.

    That is a stdio line that is not JSON-RPC (or the guard's marker line in place of one), or an
    SSE event on the standalone stream that does not parse.
    """
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False)
        first: dict[str, Any] = dict(errors[0]) if errors else {}
        raw = first.get("input")
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        if isinstance(raw, str) and raw.startswith(stdio_guard.MARKER + " "):
            problem, _, detail = raw[len(stdio_guard.MARKER) + 1 :].strip().partition(" ")
            if problem == stdio_guard.LINE_TOO_LONG and detail.isdigit():
                return _over_limit(int(detail))
            if problem == stdio_guard.NOT_UTF8:
                return f"sent invalid JSON (not UTF-8, at {detail} of a line)"
            return detail or "the server could not be started"
        if first.get("type") == "json_invalid":
            detail = str(first.get("msg", "")).removeprefix("Invalid JSON:").strip()
            return f"sent invalid JSON ({detail})" if detail else "sent invalid JSON"
        return "sent invalid JSON-RPC (a message that is not a JSON-RPC request, notification or response)"
    return f"sent an unreadable message ({_describe(exc)})"


def _transport_fault(exc: BaseException) -> str | None:
    """``sent invalid JSON`` for the ``-32700`` error the SDK's HTTP transport answers a request with
    when the response does not parse; ``None`` for any other error."""
    if isinstance(exc, MCPError) and exc.error.code == PARSE_ERROR and exc.error.message.startswith("Failed to parse"):
        detail = _short_parse_error(exc.error.message)
        return f"sent invalid JSON ({detail})" if detail else "sent invalid JSON"
    return None


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that may not pass ``limit`` bytes: in all, or per SSE event for an event stream.

    The bytes are counted before the HTTP client decodes or buffers anything, so an endless body
    costs at most one chunk past the limit. Past it, ``on_over`` is told and the read fails.
    """

    def __init__(
        self, inner: httpx2.AsyncByteStream, limit: int, per_event: bool, on_over: Callable[[str], None]
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._per_event = per_event
        self._on_over = on_over

    @property
    def elapsed(self) -> Any:  # read back by httpx2's Response.elapsed
        return getattr(self._inner, "elapsed", None)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        counted = 0
        last = b""
        async for chunk in self._inner:
            if self._per_event:
                # Bytes since the last blank line: any two line ends in a row ("\n\n", "\r\r", "\n\r\n", ...).
                window = last + chunk
                cut = max(window.rfind(b"\n\n"), window.rfind(b"\r\r"), window.rfind(b"\n\r"))
                counted = counted + len(chunk) if cut == -1 else len(window) - cut - 2
                last = chunk[-1:]
            else:
                counted += len(chunk)
            if counted > self._limit:
                reason = _over_limit(self._limit)
                self._on_over(reason)
                raise MessageTooLarge(reason)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _capped_http_client(headers: dict[str, str], limit: int, on_over: Callable[[str], None]) -> httpx2.AsyncClient:
    """An HTTP client with the SDK's timeouts whose every response is read under ``limit``."""

    async def cap(response: httpx2.Response) -> None:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        stream = response.stream
        if isinstance(stream, httpx2.AsyncByteStream):
            response.stream = _CappedStream(stream, limit, kind == "text/event-stream", on_over)

    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults for MCP transports (a response may stream)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, follow_redirects=False, event_hooks={"response": [cap]})


@asynccontextmanager
async def _http(url: str, headers: dict[str, str], limit: int, on_over: Callable[[str], None]) -> AsyncIterator[Any]:
    """Streamable HTTP on a capped HTTP client, closed with the session."""
    async with (
        _capped_http_client(headers, limit, on_over) as http,
        # The SDK's own per-event limit stays on as a second line; the count above reaches it first.
        streamable_http_client(url, http_client=http, max_sse_event_size=limit) as streams,
    ):
        yield streams


def _guarded(transport: StdioServer, limit: int) -> StdioServerParameters:
    """Start a stdio server behind :mod:`skilldeck.host.stdio_guard`, which bounds and checks its lines."""
    # Only the configured variables, merged by the SDK over its safe default set (PATH, HOME, ...):
    # the host's own environment (and its secrets) is never handed to a server wholesale.
    env = dict(transport.env) if transport.env else None
    guard = str(Path(stdio_guard.__file__).resolve())
    args = ["-I", guard, str(limit), "--", transport.command, *transport.args]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=transport.cwd)


def _client_for(
    spec: ServerSpec,
    read_timeout: float | None,
    errlog: IO[str] | None = None,
    *,
    mode: Literal["auto", "legacy"] = "auto",
    message_handler: Any = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_fault: Callable[[str], None] = lambda reason: None,
    callbacks: dict[str, Any] | None = None,
) -> Client:
    transport = spec.transport
    target: Any
    if isinstance(transport, StdioServer):
        params = _guarded(transport, max_message_bytes)
        # The SDK annotates ``errlog`` as TextIO but only hands it to the subprocess as its stderr
        # (any file with a fileno); our temporary files are IO[str].
        target = stdio_client(params, errlog=cast(TextIO, errlog)) if errlog is not None else params
    elif isinstance(transport, HttpServer):
        target = _http(transport.url, dict(transport.headers), max_message_bytes, on_fault)
    elif isinstance(transport, InProcessServer):
        target = transport.server
    else:  # pragma: no cover - ServerSpec's type forbids it
        raise TypeError(f"unknown transport {transport!r}")
    return Client(
        target,
        mode=mode,
        read_timeout_seconds=read_timeout,
        cache=None,
        message_handler=message_handler,
        **(callbacks or {}),
    )


class Connections(Unwinding):
    """Open labelled sessions with many servers; use as ``async with Connections(specs) as conns``.

    Args:
        specs: the servers, each with its host-assigned label (labels must be unique).
        read_timeout: seconds to wait for any single response once connected; ``None`` (the
            default) gives every request the server's own ``timeout``, as connecting has.
        mode: ``"auto"`` (2026-07-28 where the server speaks it) or ``"legacy"`` (the 2025-11-25 handshake).
        max_message_bytes: the most one HTTP response body, SSE event or stdio line of a server may
            take; a server that sends more is dropped with that reason.
        server_requests: declare the sampling, elicitation and roots capabilities to every server and
            hand the requests they send to :attr:`server_request_handler` (see the module docs).
    """

    def __init__(
        self,
        specs: Iterable[ServerSpec],
        *,
        read_timeout: float | None = None,
        server_stderr: IO[str] | None = None,
        mode: Literal["auto", "legacy"] = "auto",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        server_requests: bool = False,
    ) -> None:
        if isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int) or max_message_bytes <= 0:
            from skilldeck.errors import ConfigError

            raise ConfigError(f"max_message_bytes must be a positive number of bytes, not {max_message_bytes!r}")
        self.specs = list(specs)
        labels = [s.label for s in self.specs]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            from skilldeck.errors import ConfigError

            raise ConfigError(f"server labels must be unique; repeated: {', '.join(duplicates)}")
        self.read_timeout = read_timeout
        self.max_message_bytes = max_message_bytes
        self.mode: Literal["auto", "legacy"] = mode
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._listeners: list[MessageListener] = []
        self.connected: dict[str, Connected] = {}
        self.failures: dict[str, Failure] = {}
        self._close = anyio.Event()
        self._closers: dict[str, anyio.Event] = {}
        self.server_stderr = server_stderr
        self._stderr_files: dict[str, IO[str]] = {}
        self._tg: TaskGroup | None = None
        self._stack = AsyncExitStack()
        self.server_requests = server_requests
        self.server_request_handler: ServerRequestHandler | None = None
        """Answers the server requests each session hands on (with ``server_requests``); refused while unset."""

    async def __aenter__(self) -> Connections:
        async with AsyncExitStack() as stack:
            stack.callback(self._close_logs)
            self._tg = await stack.enter_async_context(task_group())
            stack.callback(self._close.set)  # the sessions close before their task group is awaited
            await self._open_all()
            self._stack = stack.pop_all()
        return self

    def _close_logs(self) -> None:
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

    def rejected_probe(self, label: str) -> bool:
        """Whether a connected stdio server spoke 2025-11-25 after refusing the 2026-07-28 probe.

        A server built on an SDK that does not know ``server/discover`` answers the probe with an
        error and often writes a long validation trace to stderr, though it then works over the
        2025-11-25 handshake. That trace names the probe's method, which is how it is told apart.
        """
        connected = self.connected.get(label)
        if connected is None or self.mode != "auto" or connected.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return False
        return PROBE_METHOD in self.stderr(label)

    def add_message_listener(self, listener: MessageListener) -> None:
        """Hear every message any server sends outside a response (notifications, mostly), with its label."""
        self._listeners.append(listener)

    def remove_message_listener(self, listener: MessageListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _message_handler(self, label: str) -> Callable[[Any], Awaitable[None]]:
        async def handle(message: Any) -> None:
            if isinstance(message, Exception):
                # A message the transport could not read (not JSON-RPC, over the limit, not UTF-8):
                # the request it answered can never be matched, so waiting would only run out the clock.
                self.fail(label, _stream_fault(message))
                return
            for listener in list(self._listeners):
                try:
                    await maybe_await(listener(label, message))
                except Exception:  # a listener's fault must not break the session's receive loop
                    logger.exception("a message listener failed on a message from %r", label)
            await anyio.lowlevel.checkpoint()

        return handle

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``func(*args)`` in the background for as long as the connections are open."""
        if self._tg is None:
            raise RuntimeError("the connections are not open")
        self._tg.start_soon(func, *args)

    def _request_callbacks(self, label: str) -> dict[str, Any]:
        """The ``Client`` callbacks that hand ``label``'s sampling, elicitation and roots requests on."""
        if not self.server_requests:
            return {}

        async def answer(request: InputRequest) -> Any:
            handler = self.server_request_handler
            if handler is None:
                return ErrorData(code=INVALID_REQUEST, message=f"{request.method} is not supported by this host")
            return await handler(label, request)

        async def sampling(ctx: ClientRequestContext, params: CreateMessageRequestParams) -> Any:
            return await answer(CreateMessageRequest(params=params))

        async def elicitation(ctx: ClientRequestContext, params: ElicitRequestParams) -> Any:
            return await answer(ElicitRequest(params=params))

        async def list_roots(ctx: ClientRequestContext) -> Any:
            return await answer(ListRootsRequest())

        return {"sampling_callback": sampling, "elicitation_callback": elicitation, "list_roots_callback": list_roots}

    def close(self, label: str) -> None:
        """Close one server's session now (the others stay open)."""
        self.connected.pop(label, None)
        self._closers.setdefault(label, anyio.Event()).set()

    def fail(self, label: str, reason: str) -> None:
        """Give up on one server now, with the reason: its session closes, and requests waiting on it end.

        The first reason stands; the other servers are not affected.
        """
        self.failures.setdefault(label, Failure(label, reason))
        connected = self.connected.pop(label, None)
        if connected is not None and connected.failure is None:
            connected.failure = self.failures[label].reason
        scope = self._scopes.get(label)
        if scope is not None:
            scope.cancel()

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
        scope = self._scopes[spec.label] = anyio.CancelScope()
        watch = anyio.CancelScope()
        errlog = self._errlog(spec)
        timeout = self.read_timeout if self.read_timeout is not None else spec.timeout

        def on_fault(reason: str) -> None:
            self.fail(spec.label, reason)

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
                        timeout,
                        errlog,
                        mode=self.mode,
                        message_handler=self._message_handler(spec.label),
                        max_message_bytes=self.max_message_bytes,
                        on_fault=on_fault,
                        callbacks=self._request_callbacks(spec.label),
                    )
                    async with client:
                        settings = declared_skills_settings(client)
                        self.connected[spec.label] = Connected(
                            spec, client, SkillsWire(client), settings, on_fault=on_fault
                        )
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
                        reason = _not_found_hint(spec, exc) or _describe(exc) + self._stderr_tail(spec.label)
                        self.failures.setdefault(spec.label, Failure(spec.label, reason))
                    else:
                        logger.warning("server %r failed: %s", spec.label, _describe(exc))
                        lost = self.connected.pop(spec.label)
                        self.failures[spec.label] = Failure(spec.label, f"connection lost: {_describe(exc)}")
                        lost.failure = lost.failure or self.failures[spec.label].reason
            done.set()
            watch.cancel()
