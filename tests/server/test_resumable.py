"""The event store behind resumable SSE streams: bounded three ways, the oldest out first, and per session.

Each bound is checked at N and N+1 by counting what is kept and what a ``Last-Event-ID`` still
resumes. The store is driven directly (it is the SDK's ``EventStore`` interface); the transport's
use of it over HTTP is in ``tests/gateway/test_gateway_http_protocol.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.streamable_http import EventMessage
from mcp_types import JSONRPCNotification

from skilldeck.server._resumable import ResumableStreams

pytestmark = pytest.mark.anyio


def note(n: int) -> JSONRPCNotification:
    """A message of the same size whatever ``n`` (0-9)."""
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": f"{n}"})


SIZE = len(note(0).model_dump_json(by_alias=True, exclude_unset=True).encode())


async def replayed(store: Any, last_event_id: str) -> tuple[Any, list[str]]:
    """What a session's store replays after ``last_event_id``: the stream id, and each message's data."""
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    stream = await store.replay_events_after(last_event_id, send)
    return stream, [getattr(e.message, "params", {}).get("data") for e in sent]


async def test_a_stream_keeps_its_last_n_events_and_resumes_only_without_a_gap() -> None:
    streams = ResumableStreams(max_events_per_stream=3)
    session = streams.for_session()
    ids = [await session.store_event("7", None)]  # the priming event
    ids += [await session.store_event("7", note(n)) for n in (1, 2)]
    assert streams.events == 3  # N
    assert await replayed(session, ids[0]) == ("7", ["1", "2"])
    ids.append(await session.store_event("7", note(3)))
    assert streams.events == 3  # N+1 stored: the oldest went
    assert await replayed(session, ids[0]) == ("7", ["1", "2", "3"])  # a client that saw it misses nothing
    ids.append(await session.store_event("7", note(4)))
    assert await replayed(session, ids[0]) == (None, [])  # event 1 is gone: a hole, so nothing
    assert await replayed(session, ids[1]) == ("7", ["2", "3", "4"])
    assert await replayed(session, ids[-1]) == ("7", [])  # up to date: the live rest follows


async def test_the_oldest_stream_goes_when_one_more_opens() -> None:
    streams = ResumableStreams(max_streams=2)
    session = streams.for_session()
    first = await session.store_event("1", note(1))
    second = await session.store_event("2", note(2))
    await session.store_event("1", note(3))  # a stream written again is still the oldest opened
    assert streams.streams == 2  # N
    assert await replayed(session, first) == ("1", ["3"])
    third = await session.store_event("3", note(4))
    assert streams.streams == 2  # N+1 opened: the oldest went, with its events
    assert streams.events == 2
    assert await replayed(session, first) == (None, [])
    assert await replayed(session, second) == ("2", [])
    assert await replayed(session, third) == ("3", [])


async def test_bytes_are_bounded_over_every_stream_the_oldest_event_first() -> None:
    streams = ResumableStreams(max_bytes=2 * SIZE)
    a, b = streams.for_session(), streams.for_session()
    primed = await a.store_event("1", None)  # a priming event weighs nothing
    await a.store_event("1", note(1))
    await b.store_event("1", note(2))
    assert streams.bytes == 2 * SIZE  # N
    assert await replayed(a, primed) == ("1", ["1"])
    await b.store_event("1", note(3))
    assert streams.bytes == 2 * SIZE  # N+1: the oldest message went, whoever's it was
    assert await replayed(a, primed) == (None, [])
    big = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"data": "x" * 3 * SIZE})
    await a.store_event("2", big)  # more than the whole bound: kept nowhere
    assert streams.bytes <= 2 * SIZE


async def test_a_session_replays_only_its_own_events() -> None:
    streams = ResumableStreams()
    a, b = streams.for_session(), streams.for_session()
    mine = await a.store_event("1", None)
    await a.store_event("1", note(1))
    theirs = await b.store_event("1", None)  # the same request id in another session: another stream
    await b.store_event("1", note(2))
    assert mine != theirs
    assert await replayed(a, mine) == ("1", ["1"])
    assert await replayed(b, theirs) == ("1", ["2"])
    assert await replayed(b, mine) == (None, [])  # a's event id names nothing of b's
    assert await replayed(a, theirs) == (None, [])
    for forged in ("", "x", "1-", "-1", "1-99", "99-0", "1-0-0"):
        assert await replayed(a, forged) == (None, []), forged


def test_a_bound_under_one_is_refused_with_its_name() -> None:
    for name in ("max_events_per_stream", "max_streams", "max_bytes"):
        with pytest.raises(ValueError, match=f"{name} must be at least 1, got 0"):
            ResumableStreams(**{name: 0})
