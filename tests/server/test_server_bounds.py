"""What an outsider can make the server spend: work per resources/list page, renders per locale hint,
legacy sessions. Each test drives a real server (in-process or over HTTP on loopback)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from skilldeck.host._wire import SkillsWire
from skilldeck.server import DirectorySource, SkillsExtension, create_server, serve_http
from skilldeck.server._audience import catalog_for
from skilldeck.serving._connections import DEFAULT_PROBE_CONNECTIONS
from skilldeck.serving._policy import Caller, Policy, PolicyError, parse_policy

from .helpers import (
    CLI,
    cli_env,
    closed_within,
    events,
    legacy_headers,
    legacy_stream,
    open_session,
    read_head,
    running_http,
    send_get,
    stop,
    stream_get,
    write_skill,
)

ERAS = ["auto", "legacy"]


class CountingExtension(SkillsExtension):
    """The extension, counting the ``resources/list`` entries it builds for ``SKILL.md`` files."""

    built: ClassVar[list[str]] = []

    @staticmethod
    def _skill_md_resource(uri: str, frontmatter: Any) -> dict[str, Any]:
        CountingExtension.built.append(uri)
        return SkillsExtension._skill_md_resource(uri, frontmatter)


def counting_server(root: Path, **options: Any) -> tuple[MCPServer[Any], CountingExtension]:
    ext = CountingExtension(DirectorySource(root), **options)
    server: MCPServer[Any] = MCPServer(
        "bounds", extensions=[ext], middleware=[ext.middleware], subscriptions=ext.subscriptions
    )
    return server, ext


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("policy", [None, Policy()], ids=["no-policy", "policy"])
async def test_resources_list_pages_do_not_rebuild_the_whole_listing(
    tmp_path: Path, mode: str, policy: Policy | None
) -> None:
    for i in range(300):
        write_skill(tmp_path, f"s{i:03d}", files={"notes.md": "n"})
    server, ext = counting_server(tmp_path, directory_page_size=10, policy=policy)
    async with Client(server, mode=mode, cache=None) as client:
        first = await client.list_resources()
        assert len(first.resources) == 10
        cursor = first.next_cursor
        seen = [str(r.uri) for r in first.resources]
        for _ in range(5):
            CountingExtension.built.clear()
            page = await client.list_resources(cursor=cursor)
            # a page builds its own entries (5 SKILL.md among 10 files), not all 300 skills' again
            assert len(CountingExtension.built) <= 10
            seen += [str(r.uri) for r in page.resources]
            cursor = page.next_cursor
        assert seen == sorted(seen)
        assert len(set(seen)) == 60
        catalog = ext.catalog
        assert catalog.listing_keys() is catalog.listing_keys()  # sorted once per snapshot, then kept
        write_skill(tmp_path, "s004a", files={"new.md": "n"})
        await ext.reload()
        second = await client.list_resources(cursor=first.next_cursor)
        assert str(second.resources[0].uri) == "skill://s004a/SKILL.md"  # the new snapshot's listing


def locale_pack(root: Path, skills: int = 20) -> Path:
    for i in range(skills):
        write_skill(root, f"s{i:02d}", files={"notes.md": "Notes in {{ locale }}.\n" * 20})
    (root / "s00" / "SKILL.md").write_text("---\nname: s00\ndescription: Styled.\n---\nLocale: {{ locale }}.\n")
    return root


def locale_policy(*locales: str) -> Policy:
    """Every skill of :func:`locale_pack` named (so rendered); ``locales`` when given."""
    raw: dict[str, Any] = {"skills": {f"s{i:02d}": {} for i in range(20)}}
    if locales:
        raw["locales"] = list(locales)
    return parse_policy(raw)


TAGS = [f"{chr(97 + i // 26)}{chr(97 + i % 26)}-r{i:03d}" for i in range(200)]
"""200 well-formed BCP 47 tags (``aa-r000`` ...), none of them a policy's locale."""


async def read_text(client: Client, uri: str, locale: str) -> str:
    """The text of ``uri`` read with a locale hint (a ``SKILL.md``: its body)."""
    meta: Any = {"dev.skilldeck/locale": locale}
    result = await client.read_resource(uri, meta=meta)
    text: str = result.contents[0].text  # type: ignore[union-attr]
    return text.split("---\n", 2)[2] if text.startswith("---\n") else text


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_locale_hints_outside_the_policys_locales_buy_no_render(tmp_path: Path, mode: str) -> None:
    pack = locale_pack(tmp_path)
    server, ext = create_server(pack, policy=locale_policy())  # no `locales`: English only
    async with Client(server, mode=mode, cache=None) as client:
        for tag in TAGS:
            assert await read_text(client, "skill://s00/SKILL.md", tag) == "Locale: en.\n"
        assert ext.cached_variants[0] == 1
    server, ext = create_server(pack, policy=locale_policy("en", "de-CH"))
    async with Client(server, mode=mode, cache=None) as client:
        assert await read_text(client, "skill://s00/SKILL.md", "de-ch") == "Locale: de-CH.\n"
        for i in range(50):
            assert await read_text(client, "skill://s00/SKILL.md", f"fr-r{i:03d}") == "Locale: en.\n"
        assert ext.cached_variants[0] == 2  # de-CH and the default, nothing more


@pytest.mark.anyio
async def test_variant_cache_stays_within_its_byte_budget(tmp_path: Path) -> None:
    locales = [f"zz-r{i:02d}" for i in range(40)]
    policy = locale_policy(*locales)
    pack = locale_pack(tmp_path)
    base = create_server(pack)[1].catalog
    size = catalog_for(base, policy, Caller(locale="zz-r00")).footprint(base)
    assert size > 20 * 20 * len("Notes in zz-r00.\n")  # the rendered notes count
    budget = 3 * size + size // 2
    server, ext = create_server(pack, policy=policy, variant_cache_bytes=budget)
    async with Client(server, mode="auto", cache=None) as client:
        for round_ in range(2):
            for locale in locales:
                assert await read_text(client, "skill://s07/notes.md", locale) == f"Notes in {locale}.\n" * 20
                count, held = ext.cached_variants
                assert held <= budget, (round_, locale)
                assert count <= 3
    tight, tight_ext = create_server(pack, policy=policy, variant_cache_bytes=size - 1)
    async with Client(tight, mode="auto", cache=None) as client:
        assert await read_text(client, "skill://s00/SKILL.md", "zz-r05") == "Locale: zz-r05.\n"  # served...
        assert tight_ext.cached_variants == (0, 0)  # ...but not kept: it alone is over the budget
    few, few_ext = create_server(pack, policy=policy, max_variants=2)
    async with Client(few, mode="auto", cache=None) as client:
        for locale in locales[:5]:
            await read_text(client, "skill://s00/SKILL.md", locale)
        assert few_ext.cached_variants[0] == 2


def test_policy_locales_are_checked_and_matched_without_case() -> None:
    policy = parse_policy({"locales": ["de-CH", "fr"]})
    assert policy.locale_for("DE-ch") == "de-CH"
    assert policy.locale_for("it") == "de-CH"  # the first is the default
    assert policy.locale_for(None) == "de-CH"
    assert policy.default_identity.locale == "de-CH"
    assert parse_policy({}).locales == ("en",)
    for bad, message in [
        ([], "expected a list"),
        (["en", "EN"], "listed twice"),
        (["en_US"], "not a language tag"),
        ([42], "expected a list"),
    ]:
        with pytest.raises(PolicyError, match=message):
            parse_policy({"locales": bad})


# -- legacy sessions over streamable HTTP ------------------------------------------------------------

LEGACY = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@asynccontextmanager
async def serving_http(server: MCPServer[Any], ext: SkillsExtension, **options: Any) -> AsyncIterator[str]:
    """``serve_http`` on a free loopback port for the duration of the block; yields the URL."""
    async with anyio.create_task_group() as tg:
        ready: list[str] = []
        tg.start_soon(lambda: serve_http(server, ext, port=0, on_ready=ready.append, **options))
        with anyio.fail_after(15):
            while not ready:
                await anyio.sleep(0.02)
        yield ready[0]
        tg.cancel_scope.cancel()


async def open_idle_session(http: httpx2.AsyncClient, url: str) -> str | int:
    """A legacy handshake by hand, leaving the session idle (no GET stream); its ID, or the refusing status."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "idle", "version": "0"}},
    }
    reply = await http.post(url, json=init, headers=HEADERS)
    if reply.status_code != 200:
        return reply.status_code
    session = reply.headers["mcp-session-id"]
    done = await http.post(
        url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY},
    )
    assert done.status_code == 202
    return session


async def ping(http: httpx2.AsyncClient, url: str, session: str | int) -> int:
    reply = await http.post(
        url,
        json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
        headers={**HEADERS, "mcp-session-id": str(session), "mcp-protocol-version": LEGACY},
    )
    return reply.status_code


@pytest.mark.anyio
async def test_a_full_session_table_evicts_the_least_recently_used_idle_session(examples_dir: Path) -> None:
    server, ext = create_server(examples_dir)
    async with serving_http(server, ext, max_sessions=4) as url, httpx2.AsyncClient(timeout=10) as http:
        idle = [await open_idle_session(http, url) for _ in range(4)]
        assert all(isinstance(s, str) for s in idle), idle
        assert await ping(http, url, idle[0]) == 200  # now idle[1] is the least recently used
        # The table is full of idle sessions: a real client still gets in, in place of idle[1].
        async with Client(url, mode="legacy", cache=None) as client:
            assert client.protocol_version == LEGACY
            assert len((await SkillsWire(client).list_skills())["skills"]) == 8
            assert await ping(http, url, idle[1]) == 404
            assert [await ping(http, url, s) for s in (idle[0], idle[2], idle[3])] == [200, 200, 200]
            # Pings made idle[2] the least recently used; the connected client (its GET stream open) is
            # never evicted, however many newcomers arrive.
            newcomers = [await open_idle_session(http, url) for _ in range(6)]
            assert all(isinstance(s, str) for s in newcomers), newcomers
            assert len((await SkillsWire(client).list_skills())["skills"]) == 8
            assert await ping(http, url, idle[2]) == 404
            assert await ping(http, url, newcomers[-1]) == 200


@pytest.mark.anyio
async def test_a_full_table_of_streaming_sessions_ends_the_oldest_for_a_new_client(examples_dir: Path) -> None:
    """Three legacy clients hold the table (--max-sessions 3), each with its GET stream and nothing else in
    flight: a fourth client gets in (it was answered 503 for as long as they stayed) in place of the oldest."""
    server, ext = create_server(examples_dir)
    async with serving_http(server, ext, max_sessions=3) as url, AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(url, mode="legacy", cache=None)) for _ in range(3)]
        for c in clients:  # each has its GET stream open and no request in flight
            assert len((await SkillsWire(c).list_skills())["skills"]) == 8
        async with Client(url, mode="legacy", cache=None) as newcomer:
            assert len((await SkillsWire(newcomer).list_skills())["skills"]) == 8
            with pytest.raises(MCPError) as ended:  # the oldest session is gone
                await SkillsWire(clients[0]).list_skills()
            assert "Session not found" in ended.value.error.message, ended.value.error
            for c in clients[1:]:
                assert len((await SkillsWire(c).list_skills())["skills"]) == 8


async def call_hold(http: httpx2.AsyncClient, url: str, session: str | int) -> int:
    """``tools/call hold`` in ``session``: the status once the server let it finish."""
    reply = await http.post(
        url,
        json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "hold", "arguments": {}}},
        headers={**HEADERS, "mcp-session-id": str(session), "mcp-protocol-version": LEGACY},
    )
    return reply.status_code


@pytest.mark.anyio
async def test_a_full_table_of_busy_sessions_ends_none_of_them(examples_dir: Path) -> None:
    """--max-sessions 2, both sessions serving a request (one of them a client with its GET stream open too):
    a newcomer is answered 503, and neither request is cut, however long they have been in flight. Only an
    idle session, or one whose only open request is its GET stream, is ever ended for a newcomer."""
    server, ext = create_server(examples_dir)
    entered: list[str] = []
    release = anyio.Event()

    @server.tool()
    async def hold() -> str:
        """Answers once the test lets it."""
        entered.append("hold")
        await release.wait()
        return "done"

    answered: list[object] = []
    async with (
        serving_http(server, ext, max_sessions=2) as url,
        httpx2.AsyncClient(timeout=30) as http,
        Client(url, mode="legacy", cache=None) as streaming,
    ):
        assert len((await SkillsWire(streaming).list_skills())["skills"]) == 8  # its GET stream is open
        raw = await open_idle_session(http, url)
        assert isinstance(raw, str), raw

        async def streaming_call() -> None:
            answered.append((await streaming.call_tool("hold", {})).content[0].text)  # type: ignore[union-attr]

        async def raw_call() -> None:
            answered.append(await call_hold(http, url, raw))

        async with anyio.create_task_group() as tg:
            tg.start_soon(streaming_call)
            tg.start_soon(raw_call)
            with anyio.fail_after(30):
                while len(entered) < 2:  # both requests are in flight
                    await anyio.sleep(0.01)
            assert await open_idle_session(http, url) == 503
            release.set()
        assert sorted(map(str, answered)) == ["200", "done"]
        assert await ping(http, url, raw) == 200
        assert len((await SkillsWire(streaming).list_skills())["skills"]) == 8


@pytest.mark.anyio
async def test_idle_legacy_sessions_expire(examples_dir: Path) -> None:
    server, ext = create_server(examples_dir)
    async with serving_http(server, ext, session_idle_timeout=1) as url, httpx2.AsyncClient(timeout=10) as http:
        session = await open_idle_session(http, url)
        assert await ping(http, url, session) == 200
        with anyio.fail_after(20):  # left alone (no ping: that would keep it alive), it ends
            while server.session_manager._server_instances:
                await anyio.sleep(0.1)
        assert await ping(http, url, session) == 404
        assert ext.legacy_session_count == 0


def test_serve_takes_session_bounds_from_the_command_line(examples_dir: Path) -> None:
    """``skilldeck serve --max-sessions 2``: a third idle session takes the place of the first."""
    from skilldeck.cli import _build_parser
    from skilldeck.serving._sessions import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT

    defaults = _build_parser().parse_args(["serve", "x"])
    assert (defaults.max_sessions, defaults.session_idle_timeout) == (
        DEFAULT_MAX_SESSIONS,
        DEFAULT_SESSION_IDLE_TIMEOUT,
    )
    for bad in (["--max-sessions", "0"], ["--session-idle-timeout", "0"], ["--session-idle-timeout", "nan"]):
        with pytest.raises(SystemExit):
            _build_parser().parse_args(["serve", "x", *bad])
    cmd = [*CLI, "serve", str(examples_dir), "--http", "127.0.0.1:0"]
    cmd += ["--max-sessions", "2", "--session-idle-timeout", "300"]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=cli_env()
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        url = re.search(r"at (http://\S+)", line)
        assert url, line

        async def check() -> None:
            async with httpx2.AsyncClient(timeout=10) as http:
                sessions = [await open_idle_session(http, url.group(1)) for _ in range(3)]
                assert all(isinstance(s, str) for s in sessions), sessions
                assert [await ping(http, url.group(1), s) for s in sessions] == [404, 200, 200]

        anyio.run(check)
    finally:
        stop(proc)


_DROPPED = re.compile(r"\((\d+) more like this were dropped")


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_what_refused_requests_make_the_server_log_is_bounded(tmp_path: Path, examples_dir: Path, command: str) -> None:
    """A flood of requests the server refuses (a wrong Host header: the SDK answers 421; bytes that are not HTTP:
    uvicorn hangs up) prints at most a burst of lines of each kind, then one a second; a line let through after
    some were dropped says how many.

    Counted in the server's own log, not by the test's clock: every refused request is either a line or counted
    in a later line's "N more were dropped" (none lost, none printed twice), the first ``burst`` are printed
    whole, and the lines let through never outrun the refill (one a second) over the span of the server's own
    time stamps (``--log-format json``). How many of the flood are dropped depends on how fast it came, which a
    loaded machine decides, so that is not asserted; the bound on what is printed is.
    """
    from skilldeck.cli._output import LogRateLimit

    limiter = LogRateLimit()
    burst, flood = limiter.burst, 10 * limiter.burst
    with running_http(command, tmp_path, examples_dir, "--log-format", "json") as (host, port, log, _):
        url = f"http://{host}:{port}/mcp"
        post = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'

        def not_http() -> None:
            with socket.create_connection((host, port), timeout=10) as raw:
                raw.sendall(b"NOT HTTP AT ALL\r\n\r\n")
                while raw.recv(4096):  # uvicorn answers 400 and hangs up
                    pass

        with httpx2.Client(timeout=10) as http:
            for _ in range(flood):
                assert http.post(url, content=body, headers={**post, "Host": "evil.example"}).status_code == 421
                not_http()
            # each answer came after its line was logged: from here on, more than a second passes on the
            # server's clock before the next, so a token is back and the next line is let through
            time.sleep(1.5)
            assert http.post(url, content=body, headers={**post, "Host": "evil.example"}).status_code == 421
            not_http()
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    for kind in ("Invalid Host header", "Invalid HTTP request"):
        logged = [r for r in records if kind in r["message"]]
        dropped = [int(m.group(1)) if (m := _DROPPED.search(r["message"])) else 0 for r in logged]
        assert len(logged) + sum(dropped) == flood + 1, (kind, len(logged), sum(dropped))
        assert dropped[:burst] == [0] * burst, (kind, dropped[: burst + 1])  # the burst is printed whole
        when = [datetime.fromisoformat(r["time"]).timestamp() for r in logged]
        for n, at in enumerate(when, 1):  # the n-th line let through: at most burst + one a second since the first
            # + 1: a record's time stamp is taken just before the filter reads its clock, at millisecond precision
            assert n <= burst + (at - when[0]) / limiter.every + 1, (kind, n, round(at - when[0], 3))


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_a_client_cannot_make_the_server_log_a_long_line(tmp_path: Path, examples_dir: Path, command: str) -> None:
    """A 20,000-character Host header (refused, and logged with the value quoted) is logged cut, its newline
    escaped: rich wrapped such a line in time quadratic in its length, stalling every client of serve for
    seconds, and a newline in it could forge a second line."""
    from skilldeck.cli._output import LogLineCut

    limit = LogLineCut().limit
    with running_http(command, tmp_path, examples_dir) as (host, port, log, _):
        url = f"http://{host}:{port}/mcp"
        post = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        with httpx2.Client(timeout=30) as http:
            refused = http.post(url, content=body, headers={**post, "Host": "evil" + "h" * 20_000})
            assert refused.status_code == 421
        deadline = time.monotonic() + 30
        while "Invalid Host header" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-2_000:]
            time.sleep(0.1)
    lines = log.read_text().splitlines()
    quoted = [line for line in lines if "Invalid Host header" in line]
    assert len(quoted) == 1, quoted
    assert "characters)" in quoted[0], quoted[0][-200:]
    assert max(len(line) for line in lines) < limit + 100, [len(line) for line in lines]


@pytest.fixture(params=["serve", "gateway"])
def bounded_serve(
    request: pytest.FixtureRequest, tmp_path: Path, examples_dir: Path
) -> Iterator[tuple[str, int, Path]]:
    """``running_http`` with at most 3 connections and 1 s for a request to arrive: (host, port, its log)."""
    with running_http(request.param, tmp_path, examples_dir, "--max-connections", "3", "--request-timeout", "1") as ran:
        yield ran.host, ran.port, ran.log


PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def _post(host: str, port: int) -> bytes:
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(PING)}\r\n\r\n"
    ).encode()
    return head + PING


def _answered(conn: socket.socket) -> bytes:
    """One whole HTTP response read from ``conn`` (its head and ``Content-Length`` bytes of body)."""
    conn.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        chunk = conn.recv(4096)
        assert chunk, data
        body += chunk
    return head


def test_a_connection_that_sends_no_whole_request_in_time_is_closed(
    bounded_serve: tuple[str, int, Path],
) -> None:
    """Silent after connecting, a head trickling in a byte at a time, or a whole head and then a body trickling in:
    closed after --request-timeout every time."""
    host, port = bounded_serve[:2]
    with socket.create_connection((host, port)) as silent:
        waited = closed_within(silent, 10)
        assert waited is not None, "a silent connection was held open"
        assert 0.5 < waited < 5, waited
    head, _, body = _post(host, port).partition(b"\r\n\r\n")
    # the request line and part of a header, 0.2 s a byte; then a whole head and its body, 0.2 s a byte
    for sent_at_once, trickled, what in ((b"", (head + b"\r\n\r\n")[:60], "head"), (head + b"\r\n\r\n", body, "body")):
        with socket.create_connection((host, port)) as slow:
            start = time.monotonic()
            slow.sendall(sent_at_once)
            try:
                for byte in trickled:
                    slow.sendall(bytes([byte]))
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass
            assert closed_within(slow, 10) is not None, f"a trickling request {what} was held open"
            assert time.monotonic() - start < 8
    with socket.create_connection((host, port)) as prompt:  # a whole head in time: answered, and kept open
        prompt.sendall(_post(host, port))
        assert _answered(prompt).startswith(b"HTTP/1.1 ")
        time.sleep(1.5)  # past the request timeout, between requests (keep-alive is uvicorn's to end)
        prompt.sendall(_post(host, port))
        assert _answered(prompt).startswith(b"HTTP/1.1 ")


def test_the_request_timer_starts_again_for_each_request_of_a_kept_alive_connection(
    bounded_serve: tuple[str, int, Path],
) -> None:
    """A whole request answered, then the next one's head trickling in on the same connection: closed after
    --request-timeout, as on a fresh connection (the timer stopped when the first request was whole; if the
    second's first byte did not start it again, the trickle the timeout exists for held the connection)."""
    host, port = bounded_serve[:2]
    head = _post(host, port).partition(b"\r\n\r\n")[0]
    with socket.create_connection((host, port)) as kept:
        kept.sendall(_post(host, port))
        assert _answered(kept).startswith(b"HTTP/1.1 ")  # answered (400: no session), and kept open
        sent = 0
        try:
            for byte in head[:60]:  # 0.2 s a byte: 12 s for the 60, against a 1 s timeout
                kept.sendall(bytes([byte]))
                sent += 1
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_within(kept, 10) is not None, "the second request's trickling head was held open"
        assert sent < 60, f"all {sent} bytes were taken in, 0.2 s apart"


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_a_full_table_closes_the_connection_longest_without_a_request_not_the_new_one(
    tmp_path: Path, examples_dir: Path, command: str
) -> None:
    """Three silent connections fill ``--max-connections 3``: a fourth client is answered, and the oldest
    silent one is closed for it (the newest used to be closed, so re-opened silent sockets kept everyone out)."""
    with running_http(command, tmp_path, examples_dir, "--max-connections", "3") as (host, port, log, _):
        silent = []
        for _ in range(3):
            silent.append(socket.create_connection((host, port)))
            time.sleep(0.2)  # each one opened after the one before
        try:
            with socket.create_connection((host, port)) as client:
                client.sendall(_post(host, port))
                assert _answered(client).startswith(b"HTTP/1.1 ")
            assert closed_within(silent[0], 5) is not None, "the oldest silent connection was kept"
            assert closed_within(silent[1], 0.5) is None, "a newer silent connection was closed as well"
            assert "closed the one" in log.read_text()
        finally:
            for conn in silent:
                conn.close()


def test_connections_busy_with_a_request_are_never_closed_for_a_new_one(tmp_path: Path, examples_dir: Path) -> None:
    """Three streams being answered (a whole request each) and the probes' places all held: the next
    connection is closed at once, and no stream is."""
    extra = ("--max-connections", "3", "--stream-share", "1")
    with running_http("serve", tmp_path, examples_dir, *extra) as (host, port, log, _):
        streams = [legacy_stream(host, port) for _ in range(3)]
        held = [socket.create_connection((host, port)) for _ in range(DEFAULT_PROBE_CONNECTIONS)]
        try:
            time.sleep(0.2)  # the server has accepted them all
            with socket.create_connection((host, port)) as extra_conn:
                waited = closed_within(extra_conn, 5)
                assert waited is not None, "a connection past the limit and the probes' places was kept"
                assert waited < 0.5, waited
            assert "3 HTTP connections are open" in log.read_text()
            for stream in streams:
                assert closed_within(stream, 0.2) is None, "a stream being answered was closed to make room"
        finally:
            for conn in [*streams, *held]:
                conn.close()
        time.sleep(0.3)  # closed: the places are free again
        with socket.create_connection((host, port)) as again:
            again.sendall(_post(host, port))
            assert _answered(again).startswith(b"HTTP/1.1 ")


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_streams_hold_at_most_their_share_of_the_table(tmp_path: Path, examples_dir: Path, command: str) -> None:
    """``--max-connections 4`` with the default share: two streams, and the third is answered 503 at once,
    while a request is still answered (200 listen streams held every slot of a table of 200 before)."""
    with running_http(command, tmp_path, examples_dir, "--max-connections", "4") as (host, port, _, _):
        streams = [legacy_stream(host, port) for _ in range(2)]
        try:
            with pytest.raises(AssertionError, match="503"):
                legacy_stream(host, port)
            with httpx2.Client(timeout=30) as http:
                refused = http.get(
                    f"http://{host}:{port}/mcp",
                    headers={
                        "Accept": "text/event-stream",
                        "Mcp-Session-Id": "x",
                        "MCP-Protocol-Version": "2025-11-25",
                    },
                )
                assert refused.status_code == 503, refused.text
                assert "2 streams are open" in refused.json()["error"]["message"], refused.text
            with socket.create_connection((host, port)) as client:
                client.sendall(_post(host, port))
                assert _answered(client).startswith(b"HTTP/1.1 ")
        finally:
            for conn in streams:
                conn.close()


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_one_session_holds_one_stream_place_however_it_opens_streams(
    tmp_path: Path, examples_dir: Path, command: str
) -> None:
    """``--max-connections 8``: four places for streams. One session makes five requests (one more than the
    places) and replays each one's stream by its event id: each replay sends the answer and ends (each was
    held open, so one session held every place and every other client's stream was refused). Its GET stream
    holds one place and a second is refused; three more sessions' streams fill the four places, and the
    next is refused."""
    with running_http(command, tmp_path, examples_dir, "--max-connections", "8") as ran:
        asked = [100 + n for n in range(5)]
        with httpx2.Client(timeout=10) as http:
            mine = open_session(http, ran.url)
            for request_id in asked:
                ping = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
                assert http.post(ran.url, json=ping, headers=legacy_headers(mine)).status_code == 200
            replayed: list[int] = []
            for number in range(1, 10):  # "<stream>-<index>", streams numbered from 1: an outsider's guess
                resume = legacy_headers(mine, Accept="text/event-stream", **{"Last-Event-ID": f"{number}-0"})
                try:
                    again = http.get(ran.url, headers=resume)
                except httpx2.ReadTimeout:
                    pytest.fail(f"the replay of stream {number} was held open after its answer")
                assert again.status_code == 200, again.text
                lines = [*again.text.splitlines(), ""]
                replayed += [json.loads(e["data"])["id"] for e in events(iter(lines)) if e.get("data")]
        if command == "gateway":  # its events are a priming event, then the answer: what was left is the answer
            assert set(asked) <= set(replayed), replayed
        else:  # serve answers in one JSON body: the one event kept is the answer itself, and nothing is left
            assert replayed == [], replayed
        held = []
        try:
            conn, head = stream_get(ran.host, ran.port, mine)
            held.append(conn)
            assert head.startswith(b"HTTP/1.1 200"), head
            conn, head = stream_get(ran.host, ran.port, mine)
            conn.close()
            assert head.startswith(b"HTTP/1.1 409"), head  # one GET stream a session
            held += [legacy_stream(ran.host, ran.port) for _ in range(3)]  # N: the four places
            with pytest.raises(AssertionError, match="503"):
                held.append(legacy_stream(ran.host, ran.port))  # N+1
        finally:
            for conn in held:
                conn.close()


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_a_sessions_gets_sent_together_open_one_stream(tmp_path: Path, examples_dir: Path, command: str) -> None:
    """Eight GETs of one session, all sent before any is answered: one stream opens and seven are refused
    ``409`` (the SDK checked for the session's stream before registering it, so several opened, each
    holding a place, the first ones never written to again)."""
    with running_http(command, tmp_path, examples_dir) as ran:
        with httpx2.Client(timeout=10) as http:
            mine = open_session(http, ran.url)
        sent = [send_get(ran.host, ran.port, mine) for _ in range(8)]
        try:
            statuses = sorted(read_head(conn).split(b" ", 2)[1].decode() for conn in sent)
        finally:
            for conn in sent:
                conn.close()
    assert statuses == ["200"] + ["409"] * 7, statuses
