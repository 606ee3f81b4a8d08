"""Stopping an HTTP server on SIGTERM (or Ctrl-C) within a bound, whatever its clients hold open.

uvicorn, on SIGTERM, stops accepting and then waits for every connection to close. A
``subscriptions/listen`` stream or a legacy session's GET stream never closes on its own, so one
client holding one kept the process up until that client left (41 s and 100 s were seen; behind a
balancer with an hour's timeout, up to an hour). :class:`GracefulServer` (a ``uvicorn.Server``)
stops in these steps instead:

1. stop accepting connections (the listening sockets close, so a balancer's next check fails);
2. end every open stream the way the protocol lets a server end one: each listen stream gets its
   ``SubscriptionsListenResult`` as the last event (the SDK's graceful close), each legacy GET
   stream ends its response; idle kept-alive connections close;
3. let requests in flight finish, for up to ``shutdown_timeout`` seconds;
4. cancel what is still running then, close its connection, and report it (:class:`ShutdownReport`).

The signal is not raised again afterwards (uvicorn would, killing the process before a gateway
closed its upstreams): the server returns, and the program ends normally.

A stop-gap for the SDK: ``docs/sdk-workarounds.md#shutdown`` says what it corrects and what change
to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it relies on.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final

import anyio
import anyio.lowlevel
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import GET_STREAM_KEY
from mcp.server.subscriptions import ListenHandler

from skilldeck.serving._connections import DEFAULT_SHUTDOWN_TIMEOUT

__all__ = ["GracefulServer", "ShutdownReport", "end_streams"]

_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class ShutdownReport:
    """How a stop went: what asked for it, the streams ended, the requests cut, how long it took."""

    cause: str
    listen_streams: int
    get_streams: int
    cut: int
    seconds: float
    timeout: float

    def line(self) -> str:
        """One line for the log, saying what was cut."""
        ended = f"{_count(self.listen_streams, 'listen stream')} and {_count(self.get_streams, 'legacy GET stream')}"
        cut = (
            f"cut {_count(self.cut, 'request')} still running after {self.timeout:g}s (--shutdown-timeout)"
            if self.cut
            else "no request cut"
        )
        return f"stopped on {self.cause} in {self.seconds:.1f}s: ended {ended}; {cut}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def end_streams(server: MCPServer[Any]) -> tuple[int, int]:
    """End every open ``subscriptions/listen`` stream and legacy GET stream of ``server``: (listen, GET) ended.

    A listen stream ends gracefully (the SDK's ``ListenHandler.close``: its result is the last
    event, so the client knows the end was deliberate); a GET stream's response ends (the SDK's
    ``close_standalone_sse_stream``). The SDK exposes neither the listen handler nor the session
    table publicly, so both are reached through the low-level server and the session manager.
    """
    listen = 0
    entry = server._lowlevel_server.get_request_handler("subscriptions/listen")
    if entry is not None and isinstance(entry.handler, ListenHandler):
        listen = len(entry.handler._streams)
        entry.handler.close()
    get = 0
    try:
        manager = server.session_manager
    except RuntimeError:  # streamable_http_app() was never called: no sessions
        return listen, 0
    for transport in list(manager._server_instances.values()):
        if GET_STREAM_KEY in transport._request_streams:
            get += 1
            transport.close_standalone_sse_stream()
    return listen, get


class GracefulServer(uvicorn.Server):
    """A ``uvicorn.Server`` that stops within ``shutdown_timeout`` seconds (see the module docs).

    ``drain`` ends the open streams and says how many it ended (listen, GET); ``on_stopped`` hears
    the report once the server has stopped.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        drain: Callable[[], tuple[int, int]],
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        on_stopped: Callable[[ShutdownReport], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.drain = drain
        self.shutdown_timeout = shutdown_timeout
        self.on_stopped = on_stopped
        self.cause = "request"

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """SIGTERM and SIGINT start the stop (a second SIGINT skips the wait); the signal is not raised again.

        The handler is a plain function, not uvicorn's bound ``handle_exit``: sse-starlette finds the
        server through that method and would cancel every SSE response mid-stream on its own.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop(signum: int, frame: FrameType | None) -> None:
            if self.should_exit and signum == signal.SIGINT:
                self.force_exit = True
            self.cause = signal.Signals(signum).name
            self.should_exit = True

        before = {sig: signal.signal(sig, stop) for sig in _STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        started = time.monotonic()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        listen, get = self.drain()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()  # idle ones close now; busy ones once their response is complete
        with anyio.move_on_after(self.shutdown_timeout):
            while (state.connections or state.tasks) and not self.force_exit:  # noqa: ASYNC110 - uvicorn keeps sets
                await anyio.sleep(0.05)
        cut = len(state.tasks)
        for task in list(state.tasks):
            task.cancel("the server is stopping and --shutdown-timeout has passed")
        for connection in list(state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()
        await anyio.lowlevel.checkpoint()  # the cancelled requests unwind before the application's shutdown
        report = ShutdownReport(self.cause, listen, get, cut, time.monotonic() - started, self.shutdown_timeout)
        if self.on_stopped is not None:
            self.on_stopped(report)
        if not self.force_exit:
            await self.lifespan.shutdown()
