"""Bounds on the HTTP connections an outsider can hold open: how many, and how long a request may take to arrive.

uvicorn reads each connection with a parser protocol; on its own it closes a connection only when
it is idle *between* requests (its keep-alive timeout). A connection that is opened and never
sends anything, or sends a request a byte at a time, is held for as long as the client likes, and
every one holds a file descriptor and a protocol object (and, once its head is in, a task waiting
for the body): enough of them and the server cannot accept anyone else.

:func:`bounded_protocol` makes uvicorn's httptools protocol keep two limits (:class:`HttpLimits`):

* **connections**: past ``max_connections`` open at once, the connection that has gone longest
  without a whole request in flight (opened and silent, trickling a request, or idle between
  requests) is closed to make room for the new one; a connection whose request is whole and being
  answered is never the one closed. Only when every connection is busy is the new one closed as soon
  as it is accepted, except that up to ``probe_connections`` more are let in for health probes
  alone: such a connection is answered ``GET /healthz`` and ``GET /readyz``
  (:mod:`skilldeck.serving._health`), anything else a ``503`` saying why, and it is closed after one
  answer. So an attacker re-opening silent sockets cannot hold the table against ordinary clients,
  and a balancer's checks see a server that is full, not one that is down;
* **streams**: a request that opens a stream (a legacy session's ``GET``, ``subscriptions/listen``)
  holds its connection for as long as the stream lasts, so streams may hold at most
  ``stream_share`` of ``max_connections`` (half by default): past that a new stream is answered
  ``503`` at once and requests always have room;
* **request time**: a connection must deliver each whole request (request line, headers and body)
  within ``request_timeout`` seconds of opening or of the request's first byte, else it is closed.
  The response and a stream (a legacy session's GET, ``subscriptions/listen``) are not limited by
  it: the request is complete by then.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from skilldeck.serving._counts import HttpCounts

if TYPE_CHECKING:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "DEFAULT_HTTP_LIMITS",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_PROBE_CONNECTIONS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "DEFAULT_STREAM_SHARE",
    "HttpLimits",
    "bounded_protocol",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_CONNECTIONS: Final = 2_048
"""HTTP connections open at once (legacy sessions' GET streams and listen streams included)."""

DEFAULT_REQUEST_TIMEOUT: Final = 10.0
"""Seconds a connection has to send a whole request, from opening or from the request's first byte."""

DEFAULT_PROBE_CONNECTIONS: Final = 8
"""Connections let in past ``max_connections`` for health probes only."""

DEFAULT_STREAM_SHARE: Final = 0.5
"""The share of ``max_connections`` streams (legacy GET streams, listen streams) may hold at once."""

DEFAULT_SHUTDOWN_TIMEOUT: Final = 10.0
"""Seconds requests in flight get to finish once the server is asked to stop (SIGTERM)."""


@dataclass(frozen=True)
class HttpLimits:
    """How many HTTP connections may be open at once, how long a request may take to arrive, and how long
    requests in flight may hold up a stop (:mod:`skilldeck.serving._shutdown`)."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    probe_connections: int = DEFAULT_PROBE_CONNECTIONS
    stream_share: float = DEFAULT_STREAM_SHARE
    counts: HttpCounts | None = field(default=None, compare=False)
    """Where what the bounds hold and how often each acted is kept, for metrics (``--metrics``)."""

    @property
    def max_streams(self) -> int:
        """Streams held at once, at most (at least one)."""
        return max(1, int(self.max_connections * self.stream_share))

    def __post_init__(self) -> None:
        if not 0 < self.stream_share <= 1:
            raise ValueError(f"stream_share must be above 0 and at most 1, got {self.stream_share}")
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections}")
        if self.probe_connections < 0:
            raise ValueError(f"probe_connections must be 0 or more, got {self.probe_connections}")
        for name in ("request_timeout", "shutdown_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a number of seconds above 0, got {getattr(self, name)}")


DEFAULT_HTTP_LIMITS: Final = HttpLimits()


def too_many_streams(max_streams: int) -> Any:
    """An ASGI app answering ``503``: streams already hold their share of the connections."""
    from starlette.responses import JSONResponse

    message = (
        f"{max_streams} streams are open, the most this server holds at once; "
        "try again shortly (requests are still answered)"
    )
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}},
        status_code=503,
        headers={"Retry-After": "5"},
    )


def bounded_protocol(limits: HttpLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol keeping ``limits`` (pass it as ``uvicorn.Config(http=...)``)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from skilldeck.serving._health import probes_only

    counts = limits.counts if limits.counts is not None else HttpCounts()
    probing: set[HttpToolsProtocol] = counts.probing  # the connections let in past the limit, for probes alone
    streaming: set[HttpToolsProtocol] = counts.streaming  # the connections whose request is a stream being answered

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        _request_timer: asyncio.TimerHandle | None = None
        _busy = False
        """A whole request of this connection is being answered (it is never the one closed to make room)."""
        _waiting_since = 0.0
        """Since when this connection has had no whole request in flight."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            counts.connections = self.connections
            self._waiting_since = self.loop.time()
            if len(self.connections) - len(probing) > limits.max_connections and not self._make_room():
                if len(probing) >= limits.probe_connections:
                    peer = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
                    logger.warning(
                        "%d HTTP connections are open (--max-connections): closed a new one from %s",
                        limits.max_connections,
                        peer,
                    )
                    counts.refused["connections"] += 1
                    transport.close()
                    return
                probing.add(self)
                self.app = probes_only(self.app, limits.max_connections)
            self._start_request_timer()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._start_request_timer()

        def _make_room(self) -> bool:
            """Close the connection that has gone longest without a whole request in flight; ``False`` if
            every other connection is busy."""
            idle = [
                c
                for c in self.connections
                if c is not self and isinstance(c, BoundedHttpToolsProtocol) and not c._busy and c not in probing
            ]
            if not idle:
                return False
            oldest = min(idle, key=lambda c: c._waiting_since)
            oldest._stop_request_timer()
            counts.refused["idle_closed"] += 1
            logger.warning(
                "%d HTTP connections are open (--max-connections): closed the one %.0fs without a request",
                limits.max_connections,
                self.loop.time() - oldest._waiting_since,
            )
            oldest.transport.close()
            self.connections.discard(oldest)  # its place is the new one's now, not when its close completes
            return True

        def _opens_stream(self) -> bool:
            """Whether the request whose head just arrived asks for a stream (a legacy GET, a listen)."""
            if self.parser.get_method() == b"GET":
                return not self.url.split(b"?", 1)[0].endswith((b"/healthz", b"/readyz"))
            return any(k.lower() == b"mcp-method" and v == b"subscriptions/listen" for k, v in self.headers)

        def on_headers_complete(self) -> None:
            if self in probing or not self._opens_stream():
                super().on_headers_complete()
            elif len(streaming) >= limits.max_streams:
                counts.refused["streams"] += 1
                app, self.app = self.app, too_many_streams(limits.max_streams)
                try:
                    super().on_headers_complete()
                finally:
                    self.app = app
            else:
                streaming.add(self)
                super().on_headers_complete()
            if self in probing and self.cycle is not None:
                self.cycle.keep_alive = False  # one answer, then the place is free for the next probe

        def on_message_complete(self) -> None:
            self._stop_request_timer()
            self._busy = True
            super().on_message_complete()

        def on_response_complete(self) -> None:
            self._busy = False
            self._waiting_since = self.loop.time()
            streaming.discard(self)
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            probing.discard(self)
            streaming.discard(self)
            self._stop_request_timer()
            super().connection_lost(exc)

        def _start_request_timer(self) -> None:
            self._stop_request_timer()
            self._request_timer = self.loop.call_later(limits.request_timeout, self._request_too_slow)

        def _stop_request_timer(self) -> None:
            if self._request_timer is not None:
                self._request_timer.cancel()
                self._request_timer = None

        def _request_too_slow(self) -> None:
            self._request_timer = None
            if not self.transport.is_closing():
                counts.refused["request_time"] += 1
                logger.info("closed an HTTP connection that sent no complete request in %gs", limits.request_timeout)
                self.transport.close()

    return BoundedHttpToolsProtocol
