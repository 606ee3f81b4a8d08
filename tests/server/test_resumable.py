"""The event store behind resumable SSE streams: bounded three ways, the oldest out first, and per session.

Each bound is checked at N and N+1 by counting what is kept and what a ``Last-Event-ID`` still
resumes. The store is driven directly (it is the SDK's ``EventStore`` interface); the transport's
use of it over HTTP is in ``tests/gateway/test_gateway_http_protocol.py``.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import anyio
import pytest
from mcp.server.streamable_http import GET_STREAM_KEY, EventMessage
from mcp_types import JSONRPCNotification, JSONRPCResponse

from skilldeck.serving._resumable import EVENT_COST, STREAM_COST, ResumableStreams, resume_per_session

from ..sdk.sdk_support import Reply, asgi_request, echo_server, open_legacy_session, serving, settled, sse_events

pytestmark = pytest.mark.anyio


def note(n: int) -> JSONRPCNotification:
    """A message of the same size whatever ``n`` (0-9)."""
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": f"{n}"})


TEXT = len(note(0).model_dump_json(by_alias=True, exclude_unset=True).encode())
SIZE = TEXT + EVENT_COST
"""What one such message counts against the bound on bytes."""


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
    live = GET_STREAM_KEY  # the stream a replay hands back to go on live, so a gap and no gap differ
    ids = [await session.store_event(live, None)]  # a priming event
    ids += [await session.store_event(live, note(n)) for n in (1, 2)]
    assert streams.events == 3  # N
    assert await replayed(session, ids[0]) == (live, ["1", "2"])
    ids.append(await session.store_event(live, note(3)))
    assert streams.events == 3  # N+1 stored: the oldest went
    assert await replayed(session, ids[0]) == (live, ["1", "2", "3"])  # a client that saw it misses nothing
    ids.append(await session.store_event(live, note(4)))
    assert await replayed(session, ids[0]) == (None, [])  # event 1 is gone: a hole, so nothing
    assert await replayed(session, ids[1]) == (live, ["2", "3", "4"])
    assert await replayed(session, ids[-1]) == (live, [])  # up to date: the live rest follows


async def test_a_replay_of_a_requests_stream_sends_what_is_left_and_ends() -> None:
    """Only the GET stream goes on live after a replay (the SDK holds one per session); a request's stream,
    answered or not, ends once its kept events are sent, else each replay of it held a connection."""
    streams = ResumableStreams()
    session = streams.for_session()
    running = await session.store_event("7", None)
    await session.store_event("7", note(1))
    assert await replayed(session, running) == (None, ["1"])  # still running: the client comes back for the rest
    answer = JSONRPCResponse(jsonrpc="2.0", id=7, result={})
    await session.store_event("7", answer)
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    assert await session.replay_events_after(running, send) is None
    assert [e.message for e in sent] == [note(1), answer]
    listening = await session.store_event(GET_STREAM_KEY, note(2))
    assert await replayed(session, listening) == (GET_STREAM_KEY, [])


async def test_the_oldest_stream_goes_when_one_more_opens() -> None:
    streams = ResumableStreams(max_streams=2)
    session = streams.for_session()
    first = await session.store_event("1", note(1))
    second = await session.store_event("2", note(2))
    await session.store_event("1", note(3))  # a stream written again is still the oldest opened
    assert streams.streams == 2  # N
    assert await replayed(session, first) == (None, ["3"])
    third = await session.store_event("3", note(4))
    assert streams.streams == 2  # N+1 opened: the oldest went, with its events
    assert streams.events == 2
    assert await replayed(session, first) == (None, [])
    assert await replayed(session, second) == (None, [])
    assert await replayed(session, third) == (None, [])


async def test_bytes_are_bounded_over_every_stream_the_oldest_event_first() -> None:
    """Counted: each message's text and EVENT_COST an event (a priming event too), STREAM_COST a stream."""
    bound = 2 * STREAM_COST + EVENT_COST + 2 * SIZE
    streams = ResumableStreams(max_bytes=bound)
    a, b = streams.for_session(), streams.for_session()
    primed = await a.store_event("1", None)
    await a.store_event("1", note(1))
    await b.store_event("1", note(2))
    assert streams.bytes == bound  # N
    assert await replayed(a, primed) == (None, ["1"])
    await b.store_event("1", note(3))
    # N+1: the oldest events went, whoever's they were (a's priming event, then its message, then its stream)
    assert streams.bytes == bound - STREAM_COST - EVENT_COST
    assert (streams.streams, streams.events) == (1, 2)
    assert await replayed(a, primed) == (None, [])
    big = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"data": "x" * bound})
    lost = await a.store_event("3", None)
    await a.store_event("3", big)  # more than the whole bound: kept nowhere, nor its stream, and nothing goes for it
    assert streams.bytes == bound - STREAM_COST - EVENT_COST
    assert (streams.streams, streams.events) == (1, 2)
    assert await replayed(a, lost) == (None, [])


@pytest.mark.parametrize("text", [0, 2_000])
@pytest.mark.parametrize("per_stream", [1, 40, 200])
async def test_what_the_store_counts_is_the_memory_it_holds(text: int, per_stream: int) -> None:
    """Streams of 1, 40 and 200 progress events (200: past the per-stream bound, so places of dropped events
    wait in the queue of every event), small and large: the memory the store holds (traced) is within the
    bound it counts, and not far under it (the documented figure is what it holds)."""
    streams = ResumableStreams(max_events_per_stream=128, max_bytes=2**20)
    sessions = [streams.for_session() for _ in range(8)]
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for n in range(700):
            session = sessions[n % len(sessions)]
            await session.store_event(str(n), None)
            for e in range(per_stream - 1):
                params = {"progressToken": n, "progress": e, "message": "x" * text}
                await session.store_event(str(n), JSONRPCNotification(jsonrpc="2.0", method="p", params=params))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert streams.bytes <= streams.max_bytes
    assert 0.85 * streams.bytes <= held <= streams.bytes, (held, streams.bytes)


async def test_a_session_replays_only_its_own_events() -> None:
    streams = ResumableStreams()
    a, b = streams.for_session(), streams.for_session()
    mine = await a.store_event("1", None)
    await a.store_event("1", note(1))
    theirs = await b.store_event("1", None)  # the same request id in another session: another stream
    await b.store_event("1", note(2))
    assert mine != theirs
    assert await replayed(a, mine) == (None, ["1"])
    assert await replayed(b, theirs) == (None, ["2"])
    assert await replayed(b, mine) == (None, [])  # a's event id names nothing of b's
    assert await replayed(a, theirs) == (None, [])
    for forged in ("", "x", "1-", "-1", "1-99", "99-0", "1-0-0"):
        assert await replayed(a, forged) == (None, []), forged


def test_a_bound_under_one_is_refused_with_its_name() -> None:
    for name in ("max_events_per_stream", "max_streams", "max_bytes"):
        with pytest.raises(ValueError, match=f"{name} must be at least 1, got 0"):
            ResumableStreams(**{name: 0})


@pytest.mark.parametrize("plain", [0, 1])
async def test_replays_of_the_get_stream_sent_together_never_hold_two_live_streams(plain: int) -> None:
    """Four replays of a session's GET stream (and a plain GET) at once, in process: each sends what was
    missed and ends (the plain GET is refused 409), and the next replay, alone, goes on live. The SDK checks
    for the session's GET stream before a replay registers it, and a replay yields in between, so all four
    went on live, all but the last never written to again and held until the session ended."""
    streams = ResumableStreams()
    server = echo_server()
    async with serving(server, retry_interval=2_000) as app:
        resume_per_session(server.session_manager, streams)
        headers = await open_legacy_session(app)
        transport = server.session_manager._server_instances[headers["mcp-session-id"]]
        missed = await transport._event_store.store_event(GET_STREAM_KEY, note(1))
        await transport._event_store.store_event(GET_STREAM_KEY, note(2))
        stream_headers = {**headers, "accept": "text/event-stream"}
        ended: list[Reply] = []

        async def get(extra: dict[str, str]) -> None:
            ended.append(await asgi_request(app, "GET", {**stream_headers, **extra}, until=lambda _: False))

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(get, {"last-event-id": missed})
            for _ in range(plain):
                tg.start_soon(get, {})
            assert await settled(lambda: len(ended) == 4 + plain, passes=100_000), ended
            assert GET_STREAM_KEY not in transport._request_streams
            tg.start_soon(get, {"last-event-id": missed})
            assert await settled(lambda: GET_STREAM_KEY in transport._request_streams, passes=100_000)
            assert len(ended) == 4 + plain  # the fifth is live
            tg.cancel_scope.cancel()
    assert sorted(reply.status for reply in ended) == [200] * 4 + [409] * plain, ended
    assert all(
        sse_events(reply)[0].get("data") == '{"jsonrpc":"2.0","method":"notifications/message","params":'
        '{"level":"info","data":"2"}}'
        for reply in ended
        if reply.status == 200
    ), ended


async def test_a_stream_past_its_bound_leaves_a_bounded_queue_and_replays_its_last_events() -> None:
    """10,000 events on one stream (128 kept): the places of dropped events in the queue of every event are
    taken out as they grow past twice the events kept (plus 1,024), else one relaying stream grew it forever."""
    streams = ResumableStreams(max_events_per_stream=128)
    session = streams.for_session()
    ids = [await session.store_event(GET_STREAM_KEY, note(n % 10)) for n in range(10_000)]
    assert streams.events == 128
    assert len(streams._order) <= 2 * 128 + 1_024
    assert await replayed(session, ids[-4]) == (GET_STREAM_KEY, ["7", "8", "9"])
    assert await replayed(session, ids[-130]) == (None, [])  # a gap: its next event went
    other = streams.for_session()
    await other.store_event("1", note(1))  # the byte bound still finds the oldest kept event after compaction
    assert streams.bytes == 2 * STREAM_COST + 129 * SIZE
