"""Bounds on the HTTP connections an outsider can hold open: how many, and how long a request may take to arrive.

uvicorn reads each connection with a parser protocol; on its own it closes a connection only when
it is idle *between* requests (its keep-alive timeout). A connection that is opened and never
sends anything, or sends a request a byte at a time, is held for as long as the client likes, and
every one holds a file descriptor and a protocol object (and, once its head is in, a task waiting
for the body): enough of them and the server cannot accept anyone else.

:func:`bounded_protocol` makes uvicorn's httptools protocol keep two limits (:class:`HttpLimits`):

* **connections**: past ``max_connections`` open at once, a new connection is closed as soon as it
  is accepted (the client may retry; its file descriptor is given back at once), except that up to
  ``probe_connections`` more are let in for health probes alone: such a connection is answered
  ``GET /healthz`` and ``GET /readyz`` (:mod:`skilldeck.server.health`), anything else a ``503``
  saying why, and it is closed after one answer. So a balancer's checks see a server that is full,
  not one that is down;
* **request time**: a connection must deliver each whole request (request line, headers and body)
  within ``request_timeout`` seconds of opening or of the request's first byte, else it is closed.
  The response and a stream (a legacy session's GET, ``subscriptions/listen``) are not limited by
  it: the request is complete by then.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "DEFAULT_HTTP_LIMITS",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_PROBE_CONNECTIONS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_SHUTDOWN_TIMEOUT",
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

DEFAULT_SHUTDOWN_TIMEOUT: Final = 10.0
"""Seconds requests in flight get to finish once the server is asked to stop (SIGTERM)."""


@dataclass(frozen=True)
class HttpLimits:
    """How many HTTP connections may be open at once, how long a request may take to arrive, and how long
    requests in flight may hold up a stop (:mod:`skilldeck.server.shutdown`)."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    probe_connections: int = DEFAULT_PROBE_CONNECTIONS

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections}")
        if self.probe_connections < 0:
            raise ValueError(f"probe_connections must be 0 or more, got {self.probe_connections}")
        for name in ("request_timeout", "shutdown_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a number of seconds above 0, got {getattr(self, name)}")


DEFAULT_HTTP_LIMITS: Final = HttpLimits()


def bounded_protocol(limits: HttpLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol keeping ``limits`` (pass it as ``uvicorn.Config(http=...)``)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from skilldeck.server.health import probes_only

    probing: set[HttpToolsProtocol] = set()  # the connections let in past the limit, for probes alone

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        _request_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) - len(probing) > limits.max_connections:
                if len(probing) >= limits.probe_connections:
                    peer = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
                    logger.warning(
                        "%d HTTP connections are open (--max-connections): closed a new one from %s",
                        limits.max_connections,
                        peer,
                    )
                    transport.close()
                    return
                probing.add(self)
                self.app = probes_only(self.app, limits.max_connections)
            self._start_request_timer()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._start_request_timer()

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            if self in probing and self.cycle is not None:
                self.cycle.keep_alive = False  # one answer, then the place is free for the next probe

        def on_message_complete(self) -> None:
            self._stop_request_timer()
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            probing.discard(self)
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
                logger.info("closed an HTTP connection that sent no complete request in %gs", limits.request_timeout)
                self.transport.close()

    return BoundedHttpToolsProtocol
