"""Resumable SSE streams for legacy (2025-11-25) sessions: a bounded event store kept per session.

With an event store the SDK's streamable HTTP transport opens each SSE stream with a *priming*
event (an id, no data, and a ``retry`` hint of :data:`RETRY_MS`), gives every message on it an
event id, and keeps the messages; a client whose stream dropped (a proxy's idle timeout, a
network change, a server that closes a stream to have the client poll) reconnects with ``GET`` and
``Last-Event-ID`` and is sent what it missed, then the rest of the stream. Without one, a dropped
stream loses the response to the request it carried.

:class:`ResumableStreams` keeps the events of every session, bounded three ways, the oldest out
first: :data:`MAX_EVENTS_PER_STREAM` events per stream, :data:`MAX_STREAMS` streams, and
:data:`MAX_BYTES` bytes of memory in all. Messages are kept as their JSON text (a parsed message
weighs about six times its text) and read again only for a replay; what the store counts against
:data:`MAX_BYTES` is that text plus what it spends to keep each event (:data:`EVENT_COST`) and each
stream (:data:`STREAM_COST`), measured with ``tracemalloc`` (``bench/event_store_memory.py``), so the
bound is what the store holds. A stream whose events the bounds dropped cannot be
resumed past the gap: the client is sent nothing (rather than a stream with a hole in it) and has to
repeat its request.

The SDK's ``EventStore`` interface names no session: a transport holds one store, and the
session manager hands every transport the same. So each session gets a store of its own
(:meth:`ResumableStreams.for_session`, a :class:`SessionEvents`) over the shared bounds, and a
``Last-Event-ID`` is looked up among its own session's streams only: another session's event id
(guessed or stolen) replays nothing. :func:`resume_per_session` gives each new session its store as
the manager admits it.

A replay goes on live only for the session's GET stream, and only while no other GET of the session
is being served: a replay of a request's stream sends what the client missed and ends (the SDK would
hold it open as a live stream, answered or not, so one session could hold every stream place), and
the client comes back after the ``retry`` hint for what came since. A session's GET requests are
counted as they arrive (:func:`one_get_stream_per_session`), so two arriving together cannot both
open a live stream, which the SDK's own check, made before the stream is registered, lets through. 2026-07-28 requests are not sessions and are not resumable (the protocol
dropped resumption); they are untouched.

A stop-gap for the SDK: ``docs/sdk-workarounds.md#resumable`` says what it corrects and what change
to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it relies on.
"""

from __future__ import annotations

import itertools
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from mcp.server.streamable_http import (
    GET_STREAM_KEY,
    LAST_EVENT_ID_HEADER,
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamableHTTPServerTransport,
    StreamId,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter
from starlette.requests import Request
from starlette.types import Send

__all__ = [
    "EVENT_COST",
    "MAX_BYTES",
    "MAX_EVENTS_PER_STREAM",
    "MAX_STREAMS",
    "RETRY_MS",
    "STREAM_COST",
    "ResumableStreams",
    "SessionEvents",
    "one_get_stream_per_session",
    "resume_per_session",
]

logger = logging.getLogger(__name__)

RETRY_MS = 2_000
"""The ``retry`` hint of each priming event: how long a client waits before it reconnects a dropped stream."""
MAX_EVENTS_PER_STREAM = 128
"""Events one stream keeps (a request's progress, log messages and questions, then its response)."""
MAX_STREAMS = 4_096
"""Streams kept over every session (each request's, and each session's GET stream)."""
MAX_BYTES = 32 * 1024 * 1024
"""Bytes of memory the kept events take over every stream: their JSON text and :data:`EVENT_COST` each, and
:data:`STREAM_COST` for each stream."""
EVENT_COST = 64
"""Bytes one kept event takes besides its message's text (its ``bytes`` object, its places in two queues)."""
STREAM_COST = 1_152
"""Bytes one kept stream takes besides its events (its record, its queue, its two table entries)."""


@dataclass(eq=False, slots=True)
class _Stream:
    """One SSE stream's kept events, oldest first, each its message's JSON text (None: a priming event);
    indexes count from 0 without gaps, so the last kept is ``next_index - 1``."""

    number: int
    session: int
    stream_id: StreamId
    events: deque[bytes | None] = field(default_factory=deque)
    next_index: int = 0
    queued: int = 0
    """Its places in the store's queue of every event, the oldest of which may be events dropped already."""

    @property
    def first_index(self) -> int:
        return self.next_index - len(self.events)


class ResumableStreams:
    """The events of every session's SSE streams, under one set of bounds (see the module docs).

    Args:
        max_events_per_stream: events one stream keeps; its oldest goes first.
        max_streams: streams kept in all; the stream opened longest ago goes first.
        max_bytes: bytes of messages kept in all; the oldest event of any stream goes first.
    """

    def __init__(
        self,
        *,
        max_events_per_stream: int = MAX_EVENTS_PER_STREAM,
        max_streams: int = MAX_STREAMS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        for name, value in (
            ("max_events_per_stream", max_events_per_stream),
            ("max_streams", max_streams),
            ("max_bytes", max_bytes),
        ):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self.max_bytes = max_bytes
        self.bytes = 0
        """Bytes counted against ``max_bytes`` now (see :data:`MAX_BYTES`)."""
        self.events = 0
        """Events kept now (priming events included)."""
        self._streams: OrderedDict[int, _Stream] = OrderedDict()
        """Every kept stream by number, the oldest first."""
        self._by_session: dict[tuple[int, StreamId], int] = {}
        """A session's stream id to its stream's number."""
        self._order: deque[_Stream] = deque()
        """The stream of every kept event, the oldest event first; also of events dropped since by another
        bound (each stream's ``queued`` tells how many of its places are such), compacted as they grow."""
        self._stream_numbers = itertools.count(1)
        self._session_numbers = itertools.count(1)

    def for_session(self) -> SessionEvents:
        """A new session's own store: its events are kept here, and only its own are replayed to it."""
        return SessionEvents(self, next(self._session_numbers))

    @property
    def streams(self) -> int:
        """Streams kept now."""
        return len(self._streams)

    # -- what a session's store does ---------------------------------------------------------------

    def store(self, session: int, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        number = self._by_session.get((session, stream_id))
        stream = self._streams.get(number) if number is not None else None
        if stream is None:
            while len(self._streams) >= self.max_streams:
                self._drop_stream(next(iter(self._streams.values())))
            stream = _Stream(next(self._stream_numbers), session, stream_id)
            self._streams[stream.number] = stream
            self._by_session[(session, stream_id)] = stream.number
            self.bytes += STREAM_COST
        index = stream.next_index
        stream.next_index += 1
        data = None if message is None else message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        if STREAM_COST + _cost(data) > self.max_bytes:  # kept nowhere: its stream can no longer be resumed
            logger.info("not keeping event %d of stream %s: %d bytes of text", index, stream_id, len(data or b""))
            self._drop_stream(stream)
            return f"{stream.number}-{index}"
        stream.events.append(data)
        stream.queued += 1
        self._order.append(stream)
        self.events += 1
        self.bytes += _cost(data)
        if len(stream.events) > self.max_events_per_stream:
            self._drop_oldest_of(stream)
        while self.bytes > self.max_bytes and self._order:
            self._drop_oldest_event()
        if len(self._order) > 2 * self.events + 1_024:
            self._compact()
        return f"{stream.number}-{index}"

    async def replay(
        self, session: int, last_event_id: EventId, send: EventCallback, *, live: bool = True
    ) -> StreamId | None:
        """Send ``session``'s events after ``last_event_id``; name the stream to go on live, or None to end.

        Only the GET stream goes on live, and only when ``live`` (no other GET of the session is served).
        """
        stream, index = self._find(session, last_event_id)
        if stream is None:
            return None
        if index + 1 < stream.first_index:
            logger.info(
                "cannot resume stream %s after event %s: the events after it were dropped (kept: %d streams, %d bytes)",
                stream.stream_id,
                last_event_id,
                len(self._streams),
                self.bytes,
            )
            return None
        first = stream.first_index
        missed = [(first + n, data) for n, data in enumerate(stream.events) if first + n > index and data is not None]
        for i, data in missed:
            await send(EventMessage(jsonrpc_message_adapter.validate_json(data), f"{stream.number}-{i}"))
        return stream.stream_id if live and stream.stream_id == GET_STREAM_KEY else None

    def names_get_stream(self, session: int, event_id: EventId) -> bool:
        """Whether ``event_id`` is one of ``session``'s GET stream's events (kept now)."""
        stream, _ = self._find(session, event_id)
        return stream is not None and stream.stream_id == GET_STREAM_KEY

    def _find(self, session: int, event_id: EventId) -> tuple[_Stream | None, int]:
        number, _, index = event_id.partition("-")
        if not (number.isdigit() and index.isdigit()):
            return None, 0
        stream = self._streams.get(int(number))
        if stream is None or stream.session != session or int(index) >= stream.next_index:
            return None, 0  # not one of this session's events (or no longer kept)
        return stream, int(index)

    # -- bounds --------------------------------------------------------------------------------------

    def _drop_oldest_of(self, stream: _Stream) -> None:
        """Drop ``stream``'s oldest event (its place in the queue of every event stays, as dropped)."""
        self.bytes -= _cost(stream.events.popleft())
        self.events -= 1

    def _drop_oldest_event(self) -> None:
        """Drop the oldest event kept, whoever's it is, and its stream with it if it was the stream's last."""
        while True:
            stream = self._order.popleft()
            stream.queued -= 1
            if stream.queued + 1 > len(stream.events):
                continue  # a place of an event another bound dropped already
            self._drop_oldest_of(stream)
            if not stream.events:
                self._drop_stream(stream)
            return

    def _drop_stream(self, stream: _Stream) -> None:
        while stream.events:
            self._drop_oldest_of(stream)
        del self._streams[stream.number]
        del self._by_session[(stream.session, stream.stream_id)]
        self.bytes -= STREAM_COST

    def _compact(self) -> None:
        """Take the places of dropped events out of the queue of every event (each stream's oldest places)."""
        stale = {id(stream): stream.queued - len(stream.events) for stream in self._streams.values()}
        kept: deque[_Stream] = deque()
        for stream in self._order:
            if stale.get(id(stream), 1) > 0:
                if id(stream) in stale:
                    stale[id(stream)] -= 1
                continue
            kept.append(stream)
        for stream in self._streams.values():
            stream.queued = len(stream.events)
        self._order = kept


def _cost(data: bytes | None) -> int:
    """What one kept event counts against the bound on bytes: its message's text and :data:`EVENT_COST`."""
    return EVENT_COST + (0 if data is None else len(data))


class SessionEvents(EventStore):
    """One session's event store (the SDK's ``EventStore``), over the shared :class:`ResumableStreams`."""

    def __init__(self, streams: ResumableStreams, session: int) -> None:
        self.streams = streams
        self.session = session
        self.get_requests = 0
        """The session's GET requests being served now that could hold its live GET stream: plain GETs
        and replays of the GET stream (a replay of a request's stream ends once sent, so is not counted)."""

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        return self.streams.store(self.session, stream_id, message)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        return await self.streams.replay(self.session, last_event_id, send_callback, live=self.get_requests <= 1)


CONFLICT = "Conflict: Only one SSE stream is allowed per session"
"""The SDK's answer to a session's second GET stream, given here to one it would let through."""


def one_get_stream_per_session(transport: StreamableHTTPServerTransport, events: SessionEvents) -> None:
    """Serve at most one of ``transport``'s GET requests that can hold a live stream at a time.

    The SDK refuses a second GET stream only once the first is registered, which happens after the
    first's response has started, so GETs arriving together all open one. Here a GET that could hold the
    stream (a plain GET, or a replay of the GET stream's events) is counted as it arrives: a plain GET
    while another is served is refused ``409``, as the SDK refuses one later, and a replay of the GET
    stream while another is served sends what was missed and ends. A replay of a request's stream always
    ends once sent (:meth:`ResumableStreams.replay`), so it is served as it comes.
    """
    handle = transport._handle_get_request

    async def handle_one(request: Request, send: Send) -> None:
        last_event_id = request.headers.get(LAST_EVENT_ID_HEADER)
        if last_event_id is None:
            if events.get_requests:
                refused = transport._create_error_response(CONFLICT, HTTPStatus.CONFLICT)
                await refused(request.scope, request.receive, send)
                return
        elif not events.streams.names_get_stream(events.session, last_event_id):
            await handle(request, send)
            return
        events.get_requests += 1
        try:
            await handle(request, send)
        finally:
            events.get_requests -= 1

    transport._handle_get_request = handle_one  # type: ignore[method-assign]


def resume_per_session(manager: StreamableHTTPSessionManager, streams: ResumableStreams) -> None:
    """Give each session ``manager`` admits from now on a store of its own over ``streams``.

    Call it once, after ``streamable_http_app()`` built the manager (with ``retry_interval`` set) and
    before it serves. The manager hands each new transport its ``event_store`` attribute; the SDK has
    no hook per session, so its admission step (``_admit_session``, called under its session-creation
    lock, as :func:`~skilldeck.serving._sessions.evict_idle_when_full` also wraps it) sets that
    attribute to a fresh :class:`SessionEvents` just before, and has the transport it returns serve
    one GET stream at a time (:func:`one_get_stream_per_session`).
    """
    if manager.stateless:
        return
    admit = manager._admit_session

    def admit_with_own_store(requestor: Any) -> StreamableHTTPServerTransport | None:
        events = streams.for_session()
        manager.event_store = events
        transport = admit(requestor)
        if transport is not None:
            one_get_stream_per_session(transport, events)
        return transport

    manager._admit_session = admit_with_own_store  # type: ignore[method-assign]
