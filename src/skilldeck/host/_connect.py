"""Labelled connections to many MCP servers at once: the host's SDK adapter for transports.

:class:`Connections` opens every configured server in parallel, each in a task of its own that
keeps the SDK ``Client`` open until the host closes. A server that fails to start, crashes, or
does not finish the handshake within its timeout is reported with the reason; the others go on.
Negotiation is the SDK's ``mode="auto"``: 2026-07-28 when the server speaks it, else the
2025-11-25 handshake (``mode="legacy"`` forces the handshake). An entry of ``"type": "sse"`` is
spoken through the SDK's legacy HTTP+SSE client (``mcp.client.sse``), under the same caps.

Every session is opened with a message handler that hands each incoming server message (with the
server's label) to the listeners added with :meth:`Connections.add_message_listener`; that is how
legacy ``notifications/*/list_changed`` reach :mod:`skilldeck.host._watch`.

With ``server_requests=True`` (the gateway) every session also declares the ``sampling``,
``elicitation`` and ``roots`` client capabilities, and hands each such request a server sends (with
its label) to :attr:`Connections.server_request_handler`; while no handler is set, each is refused
with an error response. A 2026-07-28 request sent on behalf of a client declares that client's
capabilities instead (:mod:`skilldeck.host._on_behalf`).

With ``restart`` (a :class:`~skilldeck.host._backoff.Backoff`; the gateway sets it) each server is
supervised: a stdio server whose process exits (the guard reports its exit code) is started again,
an HTTP server unreachable at start, whose connection drops, that answers a 5xx, or that no longer
knows the session (a 404 naming it) is connected again, each after a wait of the schedule (one
request whose connection breaks fails alone: :mod:`skilldeck.host._broken_request`). While a
server is down its :class:`Failure` says when it is retried; each loss is told once to
``on_transition``, and each loss and return to the state listeners (:meth:`Connections.add_state_listener`).

What a server sends is bounded and checked before it can cost the host: one HTTP response body,
one SSE event and one stdio line may each take at most ``max_message_bytes`` (32 MiB by default;
stdio servers run behind :mod:`skilldeck.host._stdio_guard`, since the SDK's stdio reader has no
limit). A server that passes the limit, or sends something that is not JSON-RPC (invalid JSON, bytes
that are not UTF-8), is failed at once with that reason (:meth:`Connections.fail`): its requests
end now instead of waiting out a timeout, and the other servers go on.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import IO, Any, Literal

import anyio
import anyio.lowlevel
import httpx2
from anyio.abc import TaskGroup
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp_types import (
    INVALID_REQUEST,
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

from skilldeck._awaitable import maybe_await
from skilldeck.errors import MessageTooLarge
from skilldeck.host._backoff import Backoff, RetrySchedule
from skilldeck.host._config import HttpServer, ServerSpec, StdioServer
from skilldeck.host._credentials import CredentialStore, default_store
from skilldeck.host._faults import (
    _describe,
    _guard_exit,
    _not_found_hint,
    _stream_fault,
    _transport_fault,
    request_error,
    seconds,
)
from skilldeck.host._on_behalf import declare_on_behalf
from skilldeck.host._transports import (
    DEFAULT_MAX_MESSAGE_BYTES,
    _client_for,
)
from skilldeck.host._wire import SkillsWire, declared_skills_settings

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "Connected",
    "Connections",
    "Failure",
    "MessageListener",
    "MessageTooLarge",
    "ServerRequestHandler",
    "StateListener",
    "Transition",
    "connect_once",
]


PROBE_METHOD = "server/discover"
"""The request a 2026-07-28 client opens with; a 2025-11-25 server refuses it and gets the handshake instead."""

MessageListener = Callable[[str, Any], Awaitable[None] | None]
"""Called with ``(label, message)`` for every message a server sends outside a response."""

StateListener = Callable[[str, bool], None]
"""Called with ``(label, up)`` each time a supervised server's session opens (``True``) or is lost (``False``)."""

Transition = Callable[[str, str], None]
"""Told ``(label, what happened)`` once per transition of a supervised server, e.g. ``exited (code 1); restarting in 2 s``."""

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
    failure: str | None = None
    """Why the host gave up on this server, once it has; its requests then fail with this reason."""
    calls: int = 0
    """Calls sent on this session that have not been answered yet (see :meth:`call`)."""
    _answered: anyio.Event | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return self.spec.label

    @contextmanager
    def call(self) -> Iterator[None]:
        """Count one call in flight on this session while the body runs: a session closed for a reload
        lets such calls finish first (:meth:`Connections.close`'s ``drain``)."""
        self.calls += 1
        try:
            yield
        finally:
            self.calls -= 1
            if not self.calls and self._answered is not None:
                self._answered.set()

    async def drain(self, seconds: float) -> bool:
        """Wait, at most ``seconds``, until no call is in flight; whether none is."""
        if self.calls:
            self._answered = anyio.Event()
            with anyio.move_on_after(seconds):
                await self._answered.wait()
        return not self.calls

    def explain(self, exc: BaseException) -> str:
        """Words for a request to this server that failed.

        A response the SDK could not parse, or one over the host's limit per message, is the server's
        fault for that request alone: the request fails saying so ("sent invalid JSON", "response over
        32 MiB"), and the session, which every other request to this server shares, goes on.
        """
        if self.failure is not None:
            return self.failure
        if (fault := _transport_fault(exc)) is not None:
            return fault
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
    retry_at: float | None = None
    """When it is tried again (``time.monotonic()``), for a supervised server; ``None``: it is not."""

    def retry(self, now: float | None = None) -> str:
        """``retried in 2 s``, ``being retried now``, or ``""`` for a server that is not tried again."""
        if self.retry_at is None:
            return ""
        left = self.retry_at - (time.monotonic() if now is None else now)
        return f"retried in {seconds(left)}" if left >= 0.05 else "being retried now"

    def describe(self) -> str:
        """The reason, and when the server is tried again if it is."""
        retry = self.retry()
        return f"{self.reason}; {retry}" if retry else self.reason


async def connect_once(spec: ServerSpec, auth: httpx2.Auth | None = None) -> None:
    """Open a session with ``spec``'s server (through ``auth``, for an HTTP server) and close it again."""
    async with _client_for(spec, spec.timeout, auth=auth):
        pass


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
        restart: supervise the servers on this schedule: a stdio server that exits is started again,
            an HTTP server unreachable at start or whose connection drops is connected again, each
            after a wait of the schedule (:class:`~skilldeck.host._backoff.Backoff`); ``None`` (the
            default): a server lost stays lost. A session the server broke once open (a line that
            is not JSON-RPC, an event over the limit outside any request) is lost and retried like
            any other; a server that breaks the handshake itself (:meth:`fail`) is never retried. The
            answer to one request that passes the limit or does not parse fails that request only.
        on_transition: told ``(label, text)`` once per transition of a supervised server (lost,
            retried); by default each is logged as a warning.
        credentials: where the OAuth tokens of HTTP servers are read and refreshed tokens written
            (:mod:`skilldeck.host._credentials`); by default the user's store (:func:`default_store`).
            A server that needs a login is unavailable, its reason naming the command to run.
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
        restart: Backoff | None = None,
        on_transition: Transition | None = None,
        credentials: CredentialStore | None = None,
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
        self._drains: dict[anyio.Event, float] = {}
        """Per closer, how long a session closed under it lets its calls in flight finish."""
        self.server_stderr = server_stderr
        self._stderr_files: dict[str, IO[str]] = {}
        self._stderr_started: dict[str, int] = {}
        """Per stdio label, how many bytes its stderr held when its handshake finished: what it said on starting."""
        self._tg: TaskGroup | None = None
        self._stack = AsyncExitStack()
        self.server_requests = server_requests
        self._faults: dict[str, Callable[[str], None]] = {}
        """Per server, what a fault it makes ends (its session now; the supervised one is connected again)."""
        self.server_request_handler: ServerRequestHandler | None = None
        """Answers the server requests each session hands on (with ``server_requests``); refused while unset."""
        self.restart = restart
        self.on_transition: Transition = on_transition if on_transition is not None else _log_transition
        self._state_listeners: list[StateListener] = []
        self._given_up: set[str] = set()
        self._exit_codes: dict[str, int] = {}
        self._credentials = credentials

    def _auth(self, spec: ServerSpec) -> httpx2.Auth | None:
        """The OAuth of an HTTP entry that has it, from the stored tokens of its server (read on each attempt)."""
        if not (isinstance(spec.transport, HttpServer) and spec.transport.oauth is not None):
            return None  # stdio, in-process, "oauth": false: no store is opened
        from skilldeck.host._oauth import auth_for  # the SDK's OAuth client, for the entries that need it

        if self._credentials is None:
            self._credentials = default_store()
        return auth_for(spec, self._credentials)

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
        log = self._stderr_files.get(spec.label)
        self._stderr_started.pop(spec.label, None)
        if log is not None and not log.closed:  # a restart: the file starts again, so it never grows past one run
            log.seek(0)
            log.truncate()
            return log
        log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed in __aexit__
        self._stderr_files[spec.label] = log
        return log

    def _stderr_tail(self, label: str, lines: int = 5, *, since_start: bool = False) -> str:
        """The last ``lines`` lines of the server's stderr, for a reason; ``since_start``: only what it wrote after
        its handshake, so a server that crashes later is not described by its start banner ("running on stdio")."""
        text = self._stderr_after(label, self._stderr_started.get(label, 0)) if since_start else self.stderr(label)
        tail = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
        return ("; its stderr ended with: " + " | ".join(tail)) if tail else ""

    def _stderr_mark(self, label: str) -> None:
        """Note how much the server wrote to stderr up to now (its handshake just finished)."""
        log = self._stderr_files.get(label)
        if log is not None and not log.closed:
            with suppress(OSError):
                self._stderr_started[label] = os.fstat(log.fileno()).st_size

    def _stderr_after(self, label: str, offset: int) -> str:
        """What the server wrote to stderr past ``offset`` bytes (redacted)."""
        log = self._stderr_files.get(label)
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            if not hasattr(os, "pread"):  # pragma: no cover - Windows: the whole stderr, as before
                return self.stderr(label)
            size = os.fstat(log.fileno()).st_size
            data = os.pread(log.fileno(), max(0, size - offset), offset)
        except (OSError, ValueError):
            return ""
        return self._redact(label, data.decode("utf-8", "replace"))

    def stderr(self, label: str) -> str:
        """What a stdio server wrote to stderr so far (when it went to a file of its own)."""
        log = self._stderr_files.get(label)
        if log is None:
            return ""
        try:
            log.flush()
            log.seek(0)
            return self._redact(label, log.read())
        except (OSError, ValueError):
            return ""

    def _redact(self, label: str, text: str) -> str:
        """``text`` with every value the server's entry took from the environment written as its ``${VAR}``."""
        spec = next((s for s in self.specs if s.label == label), None)
        return spec.redact(text) if spec is not None else text

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

    def add_state_listener(self, listener: StateListener) -> None:
        """Hear ``(label, up)`` each time a server's session opens or is lost (see ``restart``)."""
        self._state_listeners.append(listener)

    def remove_state_listener(self, listener: StateListener) -> None:
        if listener in self._state_listeners:
            self._state_listeners.remove(listener)

    def _tell_state(self, label: str, up: bool) -> None:
        for listener in list(self._state_listeners):
            try:
                listener(label, up)
            except Exception:  # one listener's fault must not stop the supervisor
                logger.exception("a state listener failed on %r", label)

    def add_message_listener(self, listener: MessageListener) -> None:
        """Hear every message any server sends outside a response (notifications, mostly), with its label."""
        self._listeners.append(listener)

    def remove_message_listener(self, listener: MessageListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _message_handler(self, label: str) -> Callable[[Any], Awaitable[None]]:
        async def handle(message: Any) -> None:
            if isinstance(message, Exception) and (code := _guard_exit(message)) is not None:
                self._exit_codes[label] = code  # the end of the stream follows
                return
            if isinstance(message, Exception):
                # A message the transport could not read (not JSON-RPC, over the limit, not UTF-8):
                # the request it answered can never be matched, so waiting would only run out the clock.
                self._faults.get(label, partial(self.fail, label))(_stream_fault(message))
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

    async def add(self, spec: ServerSpec) -> Connected | None:
        """Connect one more server (a label not open now) while the others stay as they are.

        Returns its session, or ``None`` when it failed (the reason in :attr:`failures`).
        """
        if self._tg is None:
            raise RuntimeError("the connections are not open")
        if spec.label in self.connected:
            raise ValueError(f"server {spec.label!r} is already connected; close it first")
        self.specs = [s for s in self.specs if s.label != spec.label] + [spec]
        self.failures.pop(spec.label, None)
        self._given_up.discard(spec.label)  # given up on as it was: as it is now, it is tried
        self._closers[spec.label] = anyio.Event()  # a close of an earlier session under this label has fired
        old_log = self._stderr_files.pop(spec.label, None)
        if old_log is not None:
            old_log.close()
        done = anyio.Event()
        self._tg.start_soon(self._hold, spec, done)
        await done.wait()
        return self.connected.get(spec.label)

    def close(self, label: str, *, drain: float = 0.0) -> None:
        """Close one server's session (the others stay open): no new request is sent on it from now on.

        ``drain``: seconds the calls in flight on it (:meth:`Connected.call`) have to finish before it is
        torn down; a call still running then fails saying it may have run.
        """
        self.connected.pop(label, None)
        closer = self._closers.setdefault(label, anyio.Event())
        if drain > 0:
            self._drains[closer] = drain
        closer.set()

    def fail(self, label: str, reason: str) -> None:
        """Give up on one server now, with the reason: its session closes, and requests waiting on it end.

        The first reason stands; the other servers are not affected; the server is not retried.
        """
        self._given_up.add(label)
        self.failures.setdefault(label, Failure(label, self._redact(label, reason)))
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

    def _ended(self, label: str, closer: anyio.Event) -> bool:
        """Whether the host closed this server's session held under ``closer`` (or all of them), or gave up on it.

        Each :meth:`_hold` keeps the closer it started with: a server removed and added again (a reload)
        gets a new one, so the old hold ends for good and never retries beside the new one. Nor does
        its session take the label back if it opens (or fails) after the close: by then the label
        may be another session's, or kept out of service with a failure of the host's user, so a
        session closed while it opened is closed again at once, unseen (not in :attr:`connected`,
        no failure wiped or set, no listener told it is up).
        """
        return self._close.is_set() or closer.is_set() or label in self._given_up

    async def _drain(self, connected: Connected, seconds: float) -> None:
        """Let the calls in flight on a session closed for a reload finish, for at most ``seconds``."""
        if await connected.drain(seconds):
            return
        connected.failure = (
            f"the server was reconnected (its entry changed) while this call ran, and the call did not finish "
            f"within {seconds:g}s (--shutdown-timeout); it may have run: check before calling it again"
        )
        logger.warning("[%s] %d call(s) cut after %gs of reconnection", connected.label, connected.calls, seconds)

    async def _until_closed(self, closer: anyio.Event) -> None:
        """Return once the host closes the session held under ``closer``, or all of them."""
        async with anyio.create_task_group() as wait_any:

            async def until(event: anyio.Event) -> None:
                await event.wait()
                wait_any.cancel_scope.cancel()

            wait_any.start_soon(until, self._close)
            wait_any.start_soon(until, closer)

    async def _hold(self, spec: ServerSpec, done: anyio.Event) -> None:
        """Keep one server connected until the host closes: connect, and with ``restart`` connect again
        after each loss, on the backoff schedule; report each failure and each transition."""
        label = spec.label
        closer = self._closers.setdefault(label, anyio.Event())
        schedule = RetrySchedule(self.restart) if self.restart is not None else None
        while True:
            was_up, reason = await self._attempt(spec, done, schedule, closer)
            done.set()
            if reason is None or schedule is None or self._ended(label, closer):
                return
            delay = schedule.next_delay()
            self.failures[label] = Failure(label, reason, retry_at=time.monotonic() + delay)
            if was_up:
                again = "restarting" if isinstance(spec.transport, StdioServer) else "reconnecting"
                self.on_transition(label, f"{reason.split('; its stderr', 1)[0]}; {again} in {seconds(delay)}")
                self._tell_state(label, False)
            else:  # unavailable at start is reported by the host's user; a retry that fails is no transition
                logger.debug("[%s] unavailable (%s); retrying in %.1f s", label, reason, delay)
            with anyio.move_on_after(delay):
                await self._until_closed(closer)
            if self._ended(label, closer):
                return

    async def _attempt(
        self, spec: ServerSpec, done: anyio.Event, schedule: RetrySchedule | None, closer: anyio.Event
    ) -> tuple[bool, str | None]:
        """Connect once and hold the session: ``(whether it opened, why it ended)``; no reason when the host closed it."""
        label = spec.label
        scope = self._scopes[label] = anyio.CancelScope()
        watch = anyio.CancelScope()
        errlog = self._errlog(spec)
        timeout = self.read_timeout if self.read_timeout is not None else spec.timeout
        self._exit_codes.pop(label, None)
        lost: list[str] = []
        gone = anyio.Event()
        opened = anyio.Event()
        outcome: tuple[bool, str | None] = (False, None)

        def on_fault(reason: str) -> None:
            if schedule is None or not opened.is_set():
                self.fail(label, reason)
                return
            # supervised: a session the server broke (a line that is not JSON-RPC, a message over the
            # limit outside any request) is lost like any other, and connected again on the schedule
            live = self.connected.get(label)
            if live is not None:
                live.failure = live.failure or reason
            if not lost:
                lost.append(reason)
            gone.set()

        self._faults[label] = on_fault

        def on_lost(reason: str) -> None:
            if not opened.is_set():  # before the session opened, its opening fails by itself
                return
            if not lost:
                lost.append(reason)
            gone.set()

        def on_end() -> None:  # a stdio server's exit code, in the line before the end, is added later
            on_lost("exited" if isinstance(spec.transport, StdioServer) else "connection lost")

        async def watchdog() -> None:
            nonlocal outcome
            with watch:
                await anyio.sleep(spec.timeout)
                if not done.is_set() or label not in self.connected:
                    reason = f"no answer within {spec.timeout:g}s (timed out)"
                    self.failures[label] = Failure(label, reason)
                    outcome = (False, reason)
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
                        message_handler=self._message_handler(label),
                        max_message_bytes=self.max_message_bytes,
                        on_fault=on_fault,
                        callbacks=self._request_callbacks(label),
                        on_end=on_end if schedule is not None else None,
                        on_lost=on_lost if schedule is not None else None,
                        auth=self._auth(spec),
                    )
                    async with client:
                        if self._ended(label, closer):  # closed while it opened: not the label's session
                            watch.cancel()
                            return outcome
                        if self.server_requests:  # a proxied call declares its caller's capabilities
                            declare_on_behalf(client.session)
                        settings = declared_skills_settings(client)
                        connected = Connected(spec, client, SkillsWire(client), settings)
                        self.connected[label] = connected
                        self.failures.pop(label, None)
                        self._stderr_mark(label)
                        opened.set()
                        watch.cancel()
                        if schedule is not None:
                            schedule.connected()
                            self._tell_state(label, True)
                        done.set()
                        async with anyio.create_task_group() as wait_any:

                            async def until_lost() -> None:
                                await gone.wait()
                                wait_any.cancel_scope.cancel()

                            async def until_closed() -> None:
                                await self._until_closed(closer)
                                wait_any.cancel_scope.cancel()

                            wait_any.start_soon(until_lost)
                            wait_any.start_soon(until_closed)
                        drain = self._drains.pop(closer, 0.0)
                        if drain and closer.is_set() and not gone.is_set() and not self._close.is_set():
                            await self._drain(connected, drain)
                        if gone.is_set() and not self._ended(label, closer):
                            code = self._exit_codes.get(label)
                            said = f"exited (code {code})" if lost[0] == "exited" and code is not None else lost[0]
                            reason = spec.redact(said + self._stderr_tail(label, since_start=True))
                            outcome = (True, reason)
                            if self.connected.get(label) is connected:
                                del self.connected[label]
                            # before the session is torn down; a supervised one is retried once it is
                            self.failures[label] = Failure(label, reason, retry_at=_soon(schedule))
                            connected.failure = connected.failure or reason
                except Exception as exc:
                    if outcome[0] or self._ended(label, closer):  # lost already, or closed: nothing more to tell
                        logger.debug("[%s] closing a session: %s", label, spec.redact(_describe(exc)))
                    elif not opened.is_set():
                        early = self._exit_codes.get(label)
                        said = f"exited (code {early}) before the handshake finished" if early is not None else ""
                        reason = spec.redact(
                            _not_found_hint(spec, exc) or (said or _describe(exc)) + self._stderr_tail(label)
                        )
                        self.failures.setdefault(label, Failure(label, reason))
                        outcome = (False, reason)
                    else:
                        if schedule is None:  # supervised, the loss is told as a transition
                            logger.warning("server %r failed: %s", label, spec.redact(_describe(exc)))
                        gone_now = self.connected.pop(label, None)
                        reason = spec.redact(f"connection lost: {_describe(exc)}")
                        self.failures[label] = Failure(label, reason, retry_at=_soon(schedule))
                        if gone_now is not None:
                            gone_now.failure = gone_now.failure or reason
                        outcome = (True, reason)
            done.set()
            watch.cancel()
        return outcome


def _soon(schedule: RetrySchedule | None) -> float | None:
    """When a server just lost is tried again, until its backoff delay is drawn: now if supervised.

    A caller refused in the moment between the loss and the delay's draw (the session is still being
    torn down) is told it is "being retried now", not that it is down for good.
    """
    return time.monotonic() if schedule is not None else None


def _log_transition(label: str, text: str) -> None:
    logger.warning("[%s] %s", label, text)
