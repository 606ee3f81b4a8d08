"""The console over HTTP: what each viewer is shown, what is refused and at which bound, and the live stream's bounds.

Against the real gateway (``--console``, with and without tokens) for what a viewer sees and the
bounds of what an outsider sends (the bearer header, the query string, the search box's text); and
against a :class:`~skilldeck.serving._console.Console` served by uvicorn on loopback in this process
for the bounds of the live stream (viewers at once, a viewer's queue), counted, never timed.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from skilldeck._records import JsonLinesLog
from skilldeck.gateway._service import DecisionLog
from skilldeck.serving._console import (
    MAX_QUERY_CHARS,
    MAX_QUERY_STRING_BYTES,
    MAX_TOKEN_CHARS,
    CatalogView,
    Console,
)
from skilldeck.serving._policy import Caller, Policy

from ..server.helpers import CLI, REPO, cli_env, start_serve, stop, wait_for_startup
from .conftest import HOSTILE_DESCRIPTION, Gateway, signing_key

pytestmark = pytest.mark.anyio


def get(url: str, token: str | None = None, **params: str) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    with httpx2.Client(timeout=60) as http:
        return http.get(url, headers=headers, params=params)


# -- what the page shows --------------------------------------------------------------------------


def test_without_a_verifier_the_page_is_the_default_identitys_and_says_so(open_gateway: Gateway) -> None:
    assert f"console at {open_gateway.console}" in open_gateway.log.read_text().splitlines()  # said at start
    page = get(open_gateway.console)
    assert page.status_code == 200, page.text
    assert page.text.index('id="live"') < page.text.index('id="view"')  # the live decisions open the page
    assert "no token verifier is configured" in page.text.lower()
    for label in ("deck", "jobs", "hostile", "flaky"):
        assert f'data-label="{label}"' in page.text
    assert 'data-id="deck/pdf-forms"' in page.text  # the catalog: skills with their digests and files
    assert "sha256:" in page.text
    assert 'data-id="jobs/search_jobs"' in page.text  # and tools, their schemas folded
    headers = page.headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"


def test_a_hostile_description_reaches_the_page_as_text(open_gateway: Gateway) -> None:
    page = get(open_gateway.console).text
    assert HOSTILE_DESCRIPTION not in page
    assert "<script>window.__pwned" not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;img src=x onerror=" in page
    cards = get(open_gateway.console + "/find", q="probe the wire").text
    assert "&lt;script&gt;" in cards
    assert "<script>" not in cards


def test_on_loopback_only_a_loopback_host_is_answered(open_gateway: Gateway) -> None:
    """A name made to point at 127.0.0.1 (DNS rebinding) cannot read the page through a visitor's browser."""
    with httpx2.Client(timeout=60) as http:
        assert http.get(open_gateway.console, headers={"Host": "attacker.example:80"}).status_code == 421
        foreign = {"Origin": "http://attacker.example"}
        assert http.get(open_gateway.console + "/view", headers=foreign).status_code == 403
        port = open_gateway.console.split(":")[2].split("/")[0]
        assert http.get(open_gateway.console, headers={"Host": f"localhost:{port}"}).status_code == 200


async def test_an_upstream_that_goes_down_and_back_is_shown_with_its_failure_and_last_change(
    open_gateway: Gateway,
) -> None:
    async with mcp_client(open_gateway.url) as client:
        gone = await client.call_tool("call", {"tool": "flaky/exit_now", "arguments": {}})
    assert gone.is_error
    for _ in range(600):  # the gateway restarts it (within 1 s at first); the page says what happened
        page = get(open_gateway.console).text
        row = page[page.index('data-label="flaky"') :].split("</tr>")[0]
        if "reconnected" in row:
            break
        await anyio.sleep(0.1)
    cells = [c.split("</td>")[0].strip() for c in row.split("<td>")[1:]]
    assert cells[0] == "flaky"
    assert cells[1] == "up"
    assert cells[5] == "1"  # went down once
    assert "reconnected" in cells[4], cells


def test_the_page_is_read_only(open_gateway: Gateway) -> None:
    with httpx2.Client(timeout=60) as http:
        assert http.post(open_gateway.console + "/find", data={"q": "x"}).status_code == 405
        assert http.get(open_gateway.console + "/static/../../pyproject.toml").status_code == 404
        assert http.get(open_gateway.console + "/static/page.html").status_code == 404


def test_with_a_verifier_the_page_asks_for_a_token_and_shows_nothing_before(jwt_gateway: Gateway) -> None:
    page = get(jwt_gateway.console)
    assert page.status_code == 200
    assert 'id="token-form"' in page.text
    assert "deck/" not in page.text
    assert "jobs/" not in page.text
    assert get(jwt_gateway.console + "/view").status_code == 401
    assert get(jwt_gateway.console + "/events").status_code == 401
    assert get(jwt_gateway.console + "/find", q="pdf").status_code == 401
    refused = get(jwt_gateway.console + "/view", "not-a-jwt")
    assert refused.status_code == 401
    assert "not accepted" in refused.text


def test_the_bearer_token_is_bounded(jwt_gateway: Gateway) -> None:
    at_bound = get(jwt_gateway.console + "/view", "x" * MAX_TOKEN_CHARS)
    assert at_bound.status_code == 401
    assert "not accepted" in at_bound.text  # verified (and refused), not cut short
    over = get(jwt_gateway.console + "/view", "x" * (MAX_TOKEN_CHARS + 1))
    assert over.status_code == 401
    assert f"longer than {MAX_TOKEN_CHARS:,} characters" in over.text


def test_each_token_sees_its_view_under_the_policy(jwt_gateway: Gateway) -> None:
    admin = get(jwt_gateway.console + "/view", jwt_gateway.token("ada", "acme", ["admin"]))
    user = get(jwt_gateway.console + "/view", jwt_gateway.token("bob", "globex", ["user"]))
    assert admin.status_code == user.status_code == 200
    assert 'data-id="deck/pdf-forms"' in admin.text
    assert 'data-id="deck/pdf-forms"' not in user.text  # admitted to administrators only
    assert 'data-id="jobs/get_job"' in user.text  # routed by jobs/job-search, admitted to all
    assert 'data-id="hostile/probe"' in user.text  # public
    cards = get(jwt_gateway.console + "/find", jwt_gateway.token("bob", "globex", ["user"]), q="fill a pdf form")
    assert "deck/pdf-forms" not in cards.text


def test_the_search_is_bounded(open_gateway: Gateway) -> None:
    url = open_gateway.console + "/find"
    assert get(url, q="x" * MAX_QUERY_CHARS).status_code == 200
    too_long = get(url, q="x" * (MAX_QUERY_CHARS + 1))
    assert too_long.status_code == 400
    assert f"at most {MAX_QUERY_CHARS:,} characters" in too_long.text
    assert get(url, q="   ").status_code == 400
    padding = "a" * (MAX_QUERY_STRING_BYTES - len("q=find&z="))
    assert get(url, q="find", z=padding).status_code == 200
    huge = get(url, q="find", z=padding + "a")
    assert huge.status_code == 414
    assert f"longer than {MAX_QUERY_STRING_BYTES:,} bytes" in huge.text


def test_the_search_ranks_cards_with_scores_and_the_reason(open_gateway: Gateway) -> None:
    cards = get(open_gateway.console + "/find", q="search job postings by city")
    assert cards.status_code == 200
    assert 'class="card" data-id="jobs/search_jobs"' in cards.text
    assert 'class="score"' in cards.text
    assert "confidence" in cards.text


# -- the live decisions, per audience ---------------------------------------------------------------


class Stream:
    """A ``/console/events`` stream read event by event."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self.lines = lines

    async def next_event(self) -> tuple[str, dict[str, Any]]:
        name, data = "message", ""
        async for line in self.lines:
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
            elif line == "" and data:
                return name, json.loads(data)
        raise AssertionError("the stream ended")

    async def next_decision(self, containing: str) -> str:
        """The next decision's HTML that contains ``containing`` (earlier ones are skipped and returned nowhere)."""
        while True:
            name, data = await self.next_event()
            assert name == "decision", (name, data)
            if containing in data["html"]:
                return str(data["html"])


@asynccontextmanager
async def events(url: str, token: str | None = None) -> AsyncIterator[Stream]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        http.stream("GET", url + "/events", headers=headers) as response,
    ):
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Stream(response.aiter_lines())


@asynccontextmanager
async def mcp_client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60, cache=None) as client,
    ):
        yield client


async def test_a_decision_is_streamed_to_viewers_of_its_audience_only(jwt_gateway: Gateway) -> None:
    acme = jwt_gateway.token("ada", "acme", ["admin"])
    globex = jwt_gateway.token("bob", "globex", ["user"])
    with anyio.fail_after(120):
        async with events(jwt_gateway.console, acme) as acme_view, events(jwt_gateway.console, globex) as globex_view:
            async with mcp_client(jwt_gateway.url, acme) as client:
                await client.call_tool("find", {"query": "acme-secret-question about job postings"})
            async with mcp_client(jwt_gateway.url, globex) as client:
                await client.call_tool("find", {"query": "globex question about job postings"})
            seen = await acme_view.next_decision("question about job postings")
            assert "acme-secret-question" in seen
            # globex's next decision is its own: acme's, made before it, was never sent to this viewer
            seen = await globex_view.next_decision("question about job postings")
            assert "globex question" in seen
            assert "acme-secret" not in seen


# -- the live stream's bounds, in this process ------------------------------------------------------


class Listing:
    """A console source with nothing to show but its decision log (what the stream's bounds are about)."""

    title = "test"
    searches = False
    policy: Policy | None = None

    def __init__(self) -> None:
        self.log = DecisionLog()

    @property
    def logs(self) -> Sequence[JsonLinesLog]:
        return (self.log,)

    def view(self, caller: Caller) -> CatalogView:
        return CatalogView()

    def find(self, caller: Caller, query: str) -> Mapping[str, Any]:
        raise AssertionError("never asked: searches is False")


@asynccontextmanager
async def served(console: Console) -> AsyncIterator[str]:
    """``console`` served by uvicorn on a free loopback port; yields the console's URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(console, log_level="warning", lifespan="off"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.serve(sockets=[sock]))
        while not server.started:
            await anyio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/console"
        server.should_exit = True


async def test_a_viewer_that_falls_behind_is_dropped_and_no_decision_waits_for_it() -> None:
    source = Listing()
    console = Console(source, viewer_queue=8)
    with anyio.fail_after(60):
        async with served(console) as url, events(url) as stream:
            assert len(console.viewers) == 1
            for n in range(20):  # recorded without a pause: the stream cannot take any before the ninth
                source.log.record("find", "client", query=f"q{n}")
            assert len(source.log.records) == 20  # every decision was made and kept
            name, _ = await stream.next_event()
            assert name == "dropped"
            with pytest.raises(AssertionError, match="ended"):
                await stream.next_event()
    assert console.dropped == 1
    assert console.viewers == []


async def test_a_viewer_within_its_queue_gets_every_decision_in_order() -> None:
    source = Listing()
    console = Console(source, viewer_queue=8)
    with anyio.fail_after(60):
        async with served(console) as url, events(url) as stream:
            for n in range(8):
                source.log.record("find", "client", query=f"q{n}")
            for n in range(8):
                assert f"&#39;q{n}&#39;" in await stream.next_decision("q")
    assert console.dropped == 0


async def test_the_viewers_at_once_are_bounded() -> None:
    console = Console(Listing(), max_viewers=2)
    with anyio.fail_after(60):
        async with served(console) as url, events(url), events(url):
            async with httpx2.AsyncClient(timeout=30) as http:
                third = await http.get(url + "/events")
            assert third.status_code == 503
            assert "2 live views are open" in third.text


async def test_a_viewer_who_opens_the_page_later_sees_the_recent_decisions() -> None:
    source = Listing()
    console = Console(source, recent=3)
    for n in range(5):
        source.log.record("load", "client", skills=[f"deck/s{n}"], tools=[])
    with anyio.fail_after(60):
        async with served(console) as url, events(url) as stream:
            assert "deck/s2" in await stream.next_decision("deck/")  # the last three, oldest first
            assert "deck/s3" in await stream.next_decision("deck/")
            assert "deck/s4" in await stream.next_decision("deck/")


# -- serve --console: the catalog part ---------------------------------------------------------------


def test_serve_console_shows_the_catalog_without_upstreams_or_search(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    proc = start_serve([*CLI, "serve", str(REPO / "examples" / "skills"), "--http", "127.0.0.1:0", "--console"], log)
    try:
        found = wait_for_startup(proc, log, 60)
        assert not isinstance(found, str), found
        console = found.group(2).removesuffix("/mcp") + "/console"
        assert f"console at {console}" in log.read_text().splitlines()
        page = get(console)
        assert page.status_code == 200, page.text
        assert "no token verifier is configured" in page.text.lower()
        skills = len(list((REPO / "examples" / "skills").rglob("SKILL.md")))
        assert page.text.count('<details class="skill"') == skills
        assert "skill://pdf-forms/SKILL.md" in page.text
        assert 'id="upstreams"' not in page.text
        assert 'id="find-form"' not in page.text
        assert get(console + "/find", q="pdf").status_code == 404
    finally:
        stop(proc)


def test_serve_console_shows_each_token_its_view_under_the_policy(tmp_path: Path) -> None:
    key, auth = signing_key(tmp_path)
    (tmp_path / "policy.json").write_text(json.dumps({"skills": {"pdf-forms": {"admit": {"roles": ["admin"]}}}}))
    serve = [*CLI, "serve", str(REPO / "examples" / "skills"), "--http", "127.0.0.1:0", "--console"]
    log = tmp_path / "serve.log"
    proc = start_serve([*serve, "--policy", str(tmp_path / "policy.json"), *auth], log)
    try:
        found = wait_for_startup(proc, log, 60)
        assert not isinstance(found, str), found
        gateway = Gateway(found.group(2), log, key)
        assert 'id="token-form"' in get(gateway.console).text
        assert get(gateway.console + "/view").status_code == 401
        admin = get(gateway.console + "/view", gateway.token("ada", "acme", ["admin"])).text
        user = get(gateway.console + "/view", gateway.token("bob", "acme", ["user"])).text
        assert "skill://pdf-forms/SKILL.md" in admin
        assert "skill://pdf-forms/SKILL.md" not in user
        assert "skill://job-search/SKILL.md" in user
    finally:
        stop(proc)


def test_the_mcp_path_cannot_be_the_consoles(tmp_path: Path) -> None:
    serve = [*CLI, "serve", str(REPO / "examples" / "skills"), "--http", "127.0.0.1:0", "--console"]
    done = subprocess.run(
        [*serve, "--path", "/console/mcp"], cwd=REPO, capture_output=True, text=True, env=cli_env(), timeout=120
    )
    assert done.returncode != 0
    assert "--path /console/mcp is where --console is answered" in done.stderr


def test_console_needs_the_http_listener() -> None:
    for command in (["serve", str(REPO / "examples" / "skills")], ["gateway", "--config", "mcp.json"]):
        done = subprocess.run(
            [*CLI, *command, "--console"], cwd=REPO, capture_output=True, text=True, env=cli_env(), timeout=120
        )
        assert done.returncode != 0
        assert "--console is served on the HTTP listener: add --http HOST:PORT" in done.stderr


async def test_a_stop_ends_the_live_streams_instead_of_cutting_them(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    serve = [*CLI, "serve", str(REPO / "examples" / "skills"), "--http", "127.0.0.1:0", "--console"]
    proc = start_serve(serve, log)
    try:
        found = wait_for_startup(proc, log, 60)
        assert not isinstance(found, str), found
        with anyio.fail_after(60):
            async with events(found.group(2).removesuffix("/mcp") + "/console") as stream:
                proc.send_signal(signal.SIGTERM)
                with pytest.raises(AssertionError, match="ended"):
                    await stream.next_event()  # ended by the server, not cut at --shutdown-timeout
        assert proc.wait(timeout=60) == 0
    finally:
        stop(proc)
    assert "no request cut" in log.read_text(), log.read_text()
