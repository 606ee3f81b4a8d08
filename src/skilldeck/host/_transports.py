"""The transports the host opens to a server, each under its limits: an HTTP client whose every
response body (or SSE event) is capped at ``max_message_bytes`` (:class:`_CappedStream`), the legacy
HTTP+SSE client likewise, and stdio behind :mod:`skilldeck.host._stdio_guard`; and the SDK ``Client``
for one server entry (:func:`_client_for`), used by :mod:`skilldeck.host._connect`."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import IO, Any, Literal, TextIO, cast

import anyio
import anyio.lowlevel
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from skilldeck.errors import MessageTooLarge
from skilldeck.host import _stdio_guard as stdio_guard
from skilldeck.host._broken_request import (
    MID_REQUEST_ERRORS,
    AnswerBroke,
    RequestScopedClient,
    broke_reason,
    tell_broken,
)
from skilldeck.host._config import HttpServer, InProcessServer, ServerSpec, StdioServer
from skilldeck.host._faults import (
    _over_limit,
)

DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""Bytes one HTTP response body, SSE event or stdio line from a server may take (32 MiB)."""

_IDLE_CONNECTION_SECONDS = 1.0
"""How long an idle connection to an HTTP server is kept for the next request (httpx2's default: 5 s).

A server closes an idle connection after its own keep-alive time: 5 s for uvicorn, hypercorn and
Node, 2 s for gunicorn. The client counts from when it finished reading the last answer, later than
the server, and a server whose event loop is busy closes late, with a request that arrived meanwhile
unread, which resets the connection (``ReadError``). Kept well under the shortest of those, a
connection is let go before the server would close it.
"""

logger = logging.getLogger("skilldeck.host._connect")


class _EndWatch:
    """A transport's read stream that says when it ends (the server exited or the connection dropped)."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # read back by the SDK's dispatcher
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _EndWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def _watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """``transport`` (a stdio or HTTP one), its read stream telling ``on_end`` when it ends."""
    async with transport as (read, write):
        yield _EndWatch(read, on_end), write


_EVENT_END = re.compile(rb"\n\n|\r\r|\n\r")
"""Where an SSE event ends: two line ends in a row ("\r\n\r\n" holds "\n\r")."""


class _ResponseTooLarge(httpx2.StreamError, httpx2.SSEError):
    """The answer to one request passed the limit. The SDK's transport turns either kind of read error
    into an error for that request (a JSON body: "Failed to parse JSON response: ...", an event stream:
    "SSE stream failed: ..."), and the session goes on."""


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that may not pass ``limit`` bytes: in all, or per SSE event for an event stream.

    The bytes are counted before the HTTP client decodes or buffers anything, so an endless body
    costs at most one chunk past the limit. Past it, ``on_over`` is told and the read fails.
    """

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        limit: int,
        per_event: bool,
        on_over: Callable[[str], None] | None,
        on_broke: Callable[[str], None] | None = None,
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._per_event = per_event
        self._on_over = on_over
        """Told when the limit is passed; ``None`` for the answer to one request, which alone fails."""
        self._on_broke = on_broke
        """With it, a connection that breaks mid-body is told to it, and fails the request this answers
        alone (:class:`AnswerBroke`)."""

    @property
    def elapsed(self) -> Any:  # read back by httpx2's Response.elapsed
        return getattr(self._inner, "elapsed", None)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._on_broke is None:
            async for chunk in self._counted():
                yield chunk
            return
        try:
            async for chunk in self._counted():
                yield chunk
        except MID_REQUEST_ERRORS as exc:
            reason = broke_reason(exc)
            self._on_broke(reason)
            raise AnswerBroke(reason) from exc

    async def _counted(self) -> AsyncIterator[bytes]:
        counted = 0
        """Bytes of the answer, or (per event) of the event not ended yet."""
        last = b""
        async for chunk in self._inner:
            longest = 0
            if self._per_event:
                # Each event's bytes, up to its blank line: any two line ends in a row ("\n\n", "\r\r",
                # "\n\r\n", ...), one possibly split across chunks. Every event ending in this chunk is
                # measured whole, then the count restarts after the last blank line.
                window = last + chunk
                end = None
                for blank in _EVENT_END.finditer(window):
                    size = counted + blank.start() - len(last) if end is None else blank.start() - end
                    longest, end = max(longest, size), blank.end()
                counted = counted + len(chunk) if end is None else len(window) - end
                last = chunk[-1:]
            else:
                counted += len(chunk)
            if max(counted, longest) > self._limit:
                reason = _over_limit(self._limit)
                if self._on_over is None:  # the SDK fails the request it answered, with this reason
                    raise _ResponseTooLarge(f"response over {self._limit} bytes")
                self._on_over(reason)
                raise MessageTooLarge(reason)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _http_loss(response: httpx2.Response) -> str | None:
    """Why an HTTP answer means the session is gone: a 404 on a request that named a session (the
    server restarted and no longer knows it), or a 5xx; ``None`` otherwise."""
    status = response.status_code
    if status == 404 and response.request.headers.get("mcp-session-id"):
        return "session lost (HTTP 404: the server no longer knows it)"
    if status >= 500:
        return f"the server answered HTTP {status}"
    return None


def _capped_http_client(
    headers: dict[str, str] | None,
    limit: int,
    on_over: Callable[[str], None],
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    on_lost: Callable[[str], None] | None = None,
    label: str | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client with the SDK's timeouts (or ``timeout``) whose every response is read under ``limit``.

    With ``on_lost``, an answer that means the session is gone (:func:`_http_loss`) is told to it.
    With ``label`` (a streamable HTTP server's), a request whose connection breaks fails alone
    (:mod:`skilldeck.host._broken_request`).
    """

    async def cap(response: httpx2.Response) -> None:
        if on_lost is not None and (lost := _http_loss(response)) is not None:
            on_lost(lost)
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        stream = response.stream
        if isinstance(stream, httpx2.AsyncByteStream):
            # the answer to a POST is one request's: only it fails; the standalone stream is the session's
            scoped = response.request.method == "POST"
            per_event = kind == "text/event-stream"  # the SDK fails one request whose event stream breaks itself
            on_broke = (
                partial(tell_broken, label, response.request)
                if scoped and label is not None and not per_event
                else None
            )
            response.stream = _CappedStream(stream, limit, per_event, None if scoped else on_over, on_broke)

    timeout = timeout or httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults for MCP transports (may stream)
    options: dict[str, Any] = {
        "headers": headers,
        "timeout": timeout,
        "auth": auth,
        "follow_redirects": False,
        "event_hooks": {"response": [cap]},
        # httpx2's pool sizes, idle connections let go sooner (see _IDLE_CONNECTION_SECONDS)
        "limits": httpx2.Limits(
            max_connections=100, max_keepalive_connections=20, keepalive_expiry=_IDLE_CONNECTION_SECONDS
        ),
    }
    return httpx2.AsyncClient(**options) if label is None else RequestScopedClient(label, **options)


@asynccontextmanager
async def _http(
    url: str,
    headers: dict[str, str],
    limit: int,
    on_over: Callable[[str], None],
    on_lost: Callable[[str], None] | None = None,
    auth: httpx2.Auth | None = None,
    label: str | None = None,
) -> AsyncIterator[Any]:
    """Streamable HTTP on a capped HTTP client, closed with the session; a request whose connection breaks
    fails alone (``label`` names the server in the log line that says so)."""
    async with (
        _capped_http_client(headers, limit, on_over, auth=auth, on_lost=on_lost, label=label) as http,
        # The SDK's own per-event limit stays on as a second line; the count above reaches it first.
        streamable_http_client(url, http_client=http, max_sse_event_size=limit) as streams,
    ):
        yield streams


@asynccontextmanager
async def _sse(
    url: str,
    headers: dict[str, str],
    limit: int,
    on_over: Callable[[str], None],
    on_lost: Callable[[str], None] | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[Any]:
    """The legacy HTTP+SSE transport (the SDK's client), its event stream and POSTs under the same cap."""

    def factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return _capped_http_client(headers, limit, on_over, timeout, auth, on_lost)

    async with sse_client(url, headers=headers, httpx_client_factory=factory, auth=auth) as streams:
        yield streams


def _guarded(transport: StdioServer, limit: int) -> StdioServerParameters:
    """Start a stdio server behind :mod:`skilldeck.host._stdio_guard`, which bounds and checks its lines."""
    # Only the configured variables, merged by the SDK over its safe default set (PATH, HOME, ...):
    # the host's own environment (and its secrets) is never handed to a server wholesale.
    env = dict(transport.env) if transport.env else None
    guard = str(Path(stdio_guard.__file__).resolve())
    # Our pid, so the guard can tell when we are gone even if it was started after we died.
    args = ["-I", guard, str(limit), str(os.getpid()), "--", transport.command, *transport.args]
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
    on_end: Callable[[], None] | None = None,
    on_lost: Callable[[str], None] | None = None,
    auth: httpx2.Auth | None = None,
) -> Client:
    """An SDK ``Client`` for ``spec`` under the host's caps; an HTTP server's requests go through ``auth`` (OAuth)."""
    transport = spec.transport
    target: Any
    if isinstance(transport, StdioServer):
        params = _guarded(transport, max_message_bytes)
        # The SDK annotates ``errlog`` as TextIO but only hands it to the subprocess as its stderr
        # (any file with a fileno); our temporary files are IO[str].
        target = stdio_client(params, errlog=cast(TextIO, errlog)) if errlog is not None else params
        if on_end is not None and errlog is not None:
            target = _watched(target, on_end)
    elif isinstance(transport, HttpServer):
        if transport.sse:
            target = _sse(transport.url, dict(transport.headers), max_message_bytes, on_fault, on_lost, auth)
        else:
            target = _http(
                transport.url, dict(transport.headers), max_message_bytes, on_fault, on_lost, auth, spec.label
            )
        if on_end is not None:
            target = _watched(target, on_end)
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
