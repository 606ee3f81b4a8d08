"""Servers that send too much or send garbage: the host drops that server at once, with the reason, and goes on.

Real servers on loopback: streamable HTTP through uvicorn (a real ``MCPServer`` with one method's
answer replaced, see ``hostile_http``), stdio through small Python scripts. Memory is the growth of
this process' resident set while the host runs, sampled every 10 ms; the bounds are generous (the
limit is 4 MiB, the bound 64 MiB) and what they rule out is reading an endless body until a timeout.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from skilldeck.cli import main
from skilldeck.errors import MessageTooLarge, ReadFailed
from skilldeck.host import Host, HttpServer, InProcessServer, ServerSpec, StdioServer
from skilldeck.host._stdio_guard import LINE_TOO_LONG, MARKER, NOT_UTF8, relay
from skilldeck.host._transports import _CappedStream, _ResponseTooLarge
from skilldeck.server import create_server

from ..server.helpers import write_skill
from .hostile import HostileServer, Skill
from .hostile_http import (
    endless_json,
    endless_sse_event,
    endless_sse_lines,
    hostile_app,
    not_json,
    not_utf8,
    serving_in_thread,
)

MiB = 1024 * 1024
LIMIT = 4 * MiB
MEMORY_BOUND = 64 * MiB
pytestmark = pytest.mark.anyio


def _rss() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: the peak so far (kilobytes on Linux and BSD, bytes on macOS)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


@dataclass
class Growth:
    start: int
    peak: int = 0

    @property
    def mib(self) -> float:
        return (self.peak - self.start) / MiB


@asynccontextmanager
async def rss_growth() -> AsyncIterator[Growth]:
    """The most this process' resident set grew over the block."""
    growth = Growth(_rss())
    growth.peak = growth.start

    async def sample() -> None:
        while True:
            growth.peak = max(growth.peak, _rss())
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        tg.start_soon(sample)
        try:
            yield growth
        finally:
            growth.peak = max(growth.peak, _rss())
            tg.cancel_scope.cancel()


def _good() -> tuple[ServerSpec, Skill]:
    skill = Skill("good/kept")
    return ServerSpec("good", InProcessServer(HostileServer(skill).server), timeout=10), skill


def _script(tmp_path: Path, name: str, body: str) -> StdioServer:
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return StdioServer(sys.executable, (str(path),))


# -- item 5: a response, an SSE event, a stdio line are capped -----------------------------------


@pytest.mark.parametrize(
    "answer", [endless_json, endless_sse_event, endless_sse_lines], ids=["json-body", "sse-event", "sse-data-lines"]
)
async def test_an_endless_http_response_fails_only_that_request_with_memory_bounded(answer: Any) -> None:
    """The answer to one request passing the limit fails that request with the reason; the session, which
    every other request (and every other client of a gateway) shares, goes on."""
    hostile = HostileServer(Skill("bad/never"))
    good, kept = _good()
    with serving_in_thread(hostile_app(hostile.server, "skills/list", answer)) as url:
        specs = [ServerSpec("endless", HttpServer(url), timeout=10), good]
        start = time.monotonic()
        with anyio.fail_after(30):
            async with rss_growth() as growth, Host(specs, max_message_bytes=LIMIT) as host:
                failure = host.failures.get("endless")
                notes = host.report.servers["endless"].notes
                listed = [(r.label, r.entry.uri) for r in host.registry.skills]
                assert (await host.connections.connected["endless"].client.list_tools()).tools is not None  # still open
        elapsed = time.monotonic() - start
    assert failure is None, failure
    assert len(notes) == 1, notes
    assert notes[0].startswith("skills/list failed: response over 4 MiB, the host's limit per message"), notes
    assert "--max-response" in notes[0]
    assert listed == [("good", kept.uri)]
    assert growth.peak - growth.start < MEMORY_BOUND, f"grew {growth.mib:.0f} MiB"
    assert elapsed < 9, f"took {elapsed:.1f}s: the limit, not the 10 s timeout, must stop it"


async def test_a_listing_larger_than_the_sdks_default_sse_event_passes_under_the_default_limit(tmp_path: Path) -> None:
    # About 1.6 MiB in one SSE event (2025-11-25 sessions are answered with SSE): over the SDK's own
    # default of 1 MiB per event, well under the host's 32 MiB.
    for i in range(1400):
        write_skill(tmp_path, f"s{i:04d}", description="d" * 1000)
    server, _ = create_server(tmp_path, page_size=2000)
    with serving_in_thread(hostile_app(server, "none", not_json)) as url:
        async with Host([ServerSpec("big", HttpServer(url), timeout=30)], mode="legacy") as host:
            assert host.failures == {}
            report = host.report.servers["big"]
            assert report.notes == []
            assert report.skills == 1400


HUGE_LINE = """\
import json, sys
for line in sys.stdin:
    if '"id"' in line:
        sys.stdout.write('{"jsonrpc": "2.0", "id": %s, "result": {"x": "' % json.dumps(json.loads(line)["id"]))
        for _ in range(128):
            sys.stdout.write("a" * (1 << 20))
        sys.stdout.write('"}}\\n')
        sys.stdout.flush()
"""


async def test_a_huge_stdio_line_drops_only_that_server_with_memory_bounded(tmp_path: Path) -> None:
    good, kept = _good()
    specs = [ServerSpec("huge", _script(tmp_path, "huge", HUGE_LINE), timeout=20), good]
    start = time.monotonic()
    with anyio.fail_after(40):
        async with rss_growth() as growth, Host(specs, max_message_bytes=LIMIT) as host:
            failure = host.failures.get("huge")
            listed = [(r.label, r.entry.uri) for r in host.registry.skills]
    elapsed = time.monotonic() - start
    assert failure is not None
    assert failure.reason.startswith("response over 4 MiB, the host's limit per message"), failure.reason
    assert listed == [("good", kept.uri)]
    assert growth.peak - growth.start < MEMORY_BOUND, f"grew {growth.mib:.0f} MiB for a 128 MiB line"
    assert elapsed < 15, f"took {elapsed:.1f}s"


def _relay(tmp_path: Path, data: bytes, max_line: int) -> bytes:
    source, sink = tmp_path / "in", tmp_path / "out"
    source.write_bytes(data)
    with source.open("rb") as src, sink.open("wb") as out:
        relay(src.fileno(), out.fileno(), max_line)
    return sink.read_bytes()


def test_the_stdio_guard_passes_lines_up_to_the_limit_and_replaces_the_rest(tmp_path: Path) -> None:
    long_ok = b"x" * 200_000  # spans several reads
    data = b'{"a": 1}\n' + long_ok + b"\n" + b"y" * 200_001 + b"\n" + b'{"b": 2}\n' + b"\xff\xfe\n" + b"tail"
    out = _relay(tmp_path, data, 200_000)
    assert out.split(b"\n") == [
        b'{"a": 1}',
        long_ok,
        f"{MARKER} {LINE_TOO_LONG} 200000".encode(),
        b'{"b": 2}',
        f"{MARKER} {NOT_UTF8} byte 0".encode(),
        b"tail",
    ]
    # An over-long last line without a newline is replaced as well, and never passed on in part.
    assert _relay(tmp_path, b"ok\n" + b"z" * 300, 100) == f"ok\n{MARKER} {LINE_TOO_LONG} 100\n".encode()


def test_cli_max_response_sets_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = _script(tmp_path, "huge", HUGE_LINE)
    code = main(["skills", "--max-response", "2", "--timeout", "20", "--", server.command, *server.args])
    assert code == 3
    err = capsys.readouterr().err
    assert "response over 2 MiB, the host's limit per message" in err, err
    assert "Traceback" not in err


def test_cli_max_response_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["skills", "--max-response", "0", "http://127.0.0.1:9/mcp"])
    assert "positive number of MiB" in capsys.readouterr().err


# -- item 11: invalid JSON fails the server at once; one timeout bounds every request --------------

REPLY_ON_REQUEST = """\
import sys
for line in sys.stdin:
    if '"id"' in line:
        sys.stdout.buffer.write({reply!r})
        sys.stdout.flush()
"""


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (b"this is not json {\n", "sent invalid JSON (expected ident at line 1 column 2)"),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"x": "\xff\xfe"}}\n', "sent invalid JSON (not UTF-8"),
        (b'{"hello": "world"}\n', "sent invalid JSON-RPC"),
    ],
    ids=["not-json", "not-utf8", "not-json-rpc"],
)
async def test_a_stdio_server_sending_garbage_is_dropped_at_once(tmp_path: Path, reply: bytes, reason: str) -> None:
    good, kept = _good()
    bad = _script(tmp_path, "garbage", REPLY_ON_REQUEST.format(reply=reply))
    start = time.monotonic()
    with anyio.fail_after(20):  # the server's timeout is 30 s: this must not wait it out
        async with Host([ServerSpec("garbage", bad, timeout=30), good]) as host:
            failure = host.failures.get("garbage")
            listed = [(r.label, r.entry.uri) for r in host.registry.skills]
    assert failure is not None
    assert failure.reason.startswith(reason), failure.reason
    assert "timed out" not in failure.reason
    assert listed == [("good", kept.uri)]
    assert time.monotonic() - start < 15


@pytest.mark.parametrize(
    ("answer", "reason"),
    [(not_json, "sent invalid JSON (key must be a string at line 1 column 2)"), (not_utf8, "sent invalid JSON (")],
    ids=["not-json", "not-utf8"],
)
async def test_an_http_server_answering_one_request_with_garbage_fails_that_request_with_the_reason(
    answer: Any, reason: str
) -> None:
    """One answer that does not parse fails its request, saying so at once; the session goes on (it was
    dropped for every client, and never reconnected)."""
    hostile = HostileServer(Skill("bad/never"))
    good, kept = _good()
    with serving_in_thread(hostile_app(hostile.server, "skills/list", answer)) as url:
        with anyio.fail_after(20):
            async with Host([ServerSpec("garbage", HttpServer(url), timeout=30), good]) as host:
                failure = host.failures.get("garbage")
                report = host.report.servers["garbage"]
                listed = [(r.label, r.entry.uri) for r in host.registry.skills]
                tools = await host.connections.connected["garbage"].client.list_tools()  # the session goes on
    assert failure is None, report
    assert report.notes == [f"skills/list failed: {reason}"] or report.notes[0].startswith(
        f"skills/list failed: {reason}"
    ), report.notes
    assert tools.tools is not None
    assert listed == [("good", kept.uri)]


def test_cli_reports_invalid_json_at_once_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _script(tmp_path, "garbage", REPLY_ON_REQUEST.format(reply=b"this is not json {\n"))
    start = time.monotonic()
    code = main(["skills", "--timeout", "30", "--", bad.command, *bad.args])
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 3
    assert "sent invalid JSON (expected ident at line 1 column 2)" in err, err
    assert "Traceback" not in err, err
    assert "ValidationError" not in err, err
    assert elapsed < 20, f"took {elapsed:.1f}s: the 30 s timeout must not be waited out"


def _stalling_reads(skill: Skill) -> HostileServer:
    server = HostileServer(skill)
    answer = server._middleware

    async def stall(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "resources/read":
            await anyio.sleep_forever()
        return await answer(ctx, call_next)

    server.server = type(server.server)("stalling", extensions=[server], middleware=[stall])
    return server


async def test_the_servers_timeout_bounds_a_read_as_it_bounds_connecting_and_listing() -> None:
    skill = Skill("slow/reads")
    server = _stalling_reads(skill)
    async with Host([ServerSpec("slow", InProcessServer(server.server), timeout=1)]) as host:
        record = host.registry.resolve("slow/reads")
        start = time.monotonic()
        with anyio.fail_after(20), pytest.raises(ReadFailed, match="Timed out after 1s"):
            await host.load(record)
        assert time.monotonic() - start < 10


def test_cli_load_timeout_bounds_resources_read(capsys: pytest.CaptureFixture[str]) -> None:
    skill = Skill("slow/reads")
    with serving_in_thread(hostile_app(_stalling_reads(skill).server, "none", not_json)) as url:
        start = time.monotonic()
        code = main(["load", url, skill.uri, "--timeout", "2"])
        elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert code != 0
    assert f"resources/read {skill.uri} failed" in err, err
    assert "timed out" in err.lower(), err
    assert elapsed < 20, f"took {elapsed:.1f}s: --timeout 2 must bound the read"


@pytest.mark.anyio
async def test_a_server_that_stops_answering_while_listing_is_cut_off_at_its_timeout() -> None:
    import time

    import anyio

    from skilldeck.host import Host, InProcessServer, ServerSpec

    slow = HostileServer(Skill("slow"))

    async def stall(ctx: object, params: object) -> dict[str, object]:
        await anyio.sleep(60)
        return {}

    slow._list = stall  # type: ignore[method-assign, assignment]
    slow.server = type(slow.server)("slow", extensions=[slow], middleware=[slow._middleware])
    fine = HostileServer(Skill("fine"))
    started = time.monotonic()
    specs = [
        ServerSpec("slow", InProcessServer(slow.server), timeout=1),
        ServerSpec("fine", InProcessServer(fine.server)),
    ]
    async with Host(specs) as host:
        assert time.monotonic() - started < 10
        assert host.report.servers["slow"].error is not None
        assert "did not finish within 1s" in (host.report.servers["slow"].error or "")
        assert [r.name for r in host.registry.skills] == ["fine"]


# -- a redirect is not followed ------------------------------------------------------------------------


def _redirect_to(location: str) -> Any:
    async def answer(request_id: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 307, "headers": [(b"location", location.encode())]})
        await send({"type": "http.response.body", "body": b""})

    return answer


async def test_a_redirect_to_another_origin_is_not_followed() -> None:
    """A server that answers ``skills/list`` with ``307`` to another origin: the host does not send the
    request (its session's headers, its token) there. That request fails, naming where it was sent and that it was not followed;
    the session goes on, and nothing the other origin could have listed is taken in."""
    elsewhere = HostileServer(Skill("planted/skill"))
    reached: list[str] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            reached.append(f"{scope['method']} {scope['path']}")
        await elsewhere.server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")(scope, receive, send)

    hostile = HostileServer(Skill("bad/never"))
    good, kept = _good()
    with (
        serving_in_thread(recording) as other,
        serving_in_thread(hostile_app(hostile.server, "skills/list", _redirect_to(other))) as url,
    ):
        with anyio.fail_after(20):
            async with Host([ServerSpec("redirecting", HttpServer(url), timeout=10), good]) as host:
                failure = host.failures.get("redirecting")
                notes = host.report.servers["redirecting"].notes
                listed = [(r.label, r.entry.uri) for r in host.registry.skills]
                assert (await host.connections.connected["redirecting"].client.list_tools()).tools is not None
    assert reached == []
    assert failure is None, failure
    assert listed == [("good", kept.uri)]
    assert len(notes) == 1, notes
    assert notes[0].startswith(f"skills/list failed: Redirect to {other} not followed"), notes


def test_the_stdio_guard_skips_the_rest_of_an_over_long_line_over_many_reads_and_passes_the_next_line(
    tmp_path: Path,
) -> None:
    """The guard reads 64 KiB at a time: the rest of a line over the limit spans several reads after the one
    that showed it too long, and none of it is passed on or counted as a line of its own."""
    data = b"z" * 300_000 + b"\n" + b'{"b": 2}\n' + b"w" * 101 + b"\n" + b"x" * 100 + b"\n"
    out = _relay(tmp_path, data, 100)
    marker = f"{MARKER} {LINE_TOO_LONG} 100".encode()
    assert out.split(b"\n") == [marker, b'{"b": 2}', marker, b"x" * 100, b""]


def test_the_stdio_guard_answers_an_over_long_response_for_the_id_at_its_start(tmp_path: Path) -> None:
    """The id is read from the first bytes of the line (as the SDKs write a response, id before result), so the
    request is answered with the reason and the session goes on; a line that shows no id gets the marker."""
    message = "response over 100 bytes, the host's limit per message: the answer was dropped"
    for request_id in (7, "call-7"):
        opening = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1].encode() + b', "result": {"x": "'
        out = _relay(tmp_path, opening + b"a" * 200_000 + b'"}}\n' + b'{"b": 2}\n', 100)
        answer, rest = out.split(b"\n", 1)
        assert json.loads(answer) == {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": message}}
        assert rest == b'{"b": 2}\n'
    notification = b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "' + b"a" * 200 + b'"}}\n'
    assert _relay(tmp_path, notification, 100) == f"{MARKER} {LINE_TOO_LONG} 100\n".encode()


class _Chunks(httpx2.AsyncByteStream):
    """A response body arriving as ``chunks``."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def _read(stream: httpx2.AsyncByteStream) -> bytes:
    return b"".join([chunk async for chunk in stream])


@pytest.mark.parametrize("split", [1, 3])
async def test_a_body_of_exactly_the_limit_passes_and_one_byte_more_fails_that_request(split: int) -> None:
    """The cap on one answer at N and N+1, the body arriving whole or in three chunks."""
    limit = 1_000

    def body(size: int) -> _Chunks:
        data = b"x" * size
        step = -(-size // split)
        return _Chunks(*(data[i : i + step] for i in range(0, size, step)))

    assert await _read(_CappedStream(body(limit), limit, per_event=False, on_over=None)) == b"x" * limit
    with pytest.raises(_ResponseTooLarge, match="response over 1000 bytes"):
        await _read(_CappedStream(body(limit + 1), limit, per_event=False, on_over=None))


async def test_an_event_stream_is_capped_per_event_at_n_and_n_plus_one() -> None:
    """Per SSE event, the stream arriving in 30-byte chunks (an event over the limit spans chunks, as any does
    past the transport's read size): events of exactly N bytes each pass however many come (the count starts
    again after each blank line); one event of N+1 bytes breaks the session, told to ``on_over``."""
    limit = 100
    event = b"data: " + b"x" * (limit - len(b"data: "))  # N bytes, then the blank line

    def chunked(data: bytes) -> _Chunks:
        return _Chunks(*(data[i : i + 30] for i in range(0, len(data), 30)))

    told: list[str] = []
    passed = await _read(_CappedStream(chunked((event + b"\n\n") * 5), limit, True, told.append))
    assert passed.count(b"\n\n") == 5
    assert told == []
    with pytest.raises(MessageTooLarge, match="the host's limit per message"):
        await _read(_CappedStream(chunked(event + b"\n\n" + event + b"x\n\n"), limit, True, told.append))
    assert len(told) == 1, told
    assert told[0].startswith("response over"), told
