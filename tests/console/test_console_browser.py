"""The console in a real browser: Debian's chromium driven by Playwright, against the real gateway.

Open the page and see the upstreams; search and see the ranked cards; see a decision appear live
after a real MCP client's call through the gateway; with tokens, a skill the policy hides from a
restricted token is absent from its view (and present in an administrator's). Every page runs with
JavaScript's console and page errors collected, and a test fails on any. Screenshots are written
under pytest's temporary directory (``.../console-shots*/``; ``--basetemp DIR`` to keep them in a
place of your choosing), one per test.

The system's browser only (``/usr/bin/chromium``, or ``SKILLDECK_CHROMIUM``): nothing here downloads
one. Without it the tests are skipped, saying what to install.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .conftest import HOSTILE_DESCRIPTION, Gateway

CHROMIUM = os.environ.get("SKILLDECK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 60_000
"""How long one step may wait for the page (generous: the machine may be loaded)."""

pytestmark = [
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="chromium is not installed (Debian: apt-get install -y chromium)"
    ),
]
playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
)


class Page:
    """A browser page with what its JavaScript said collected: console errors and uncaught page errors."""

    def __init__(self, page: Any, shots: Path) -> None:
        self.page = page
        self.shots = shots
        self.errors: list[str] = []
        page.on("console", lambda message: self.errors.append(f"console.{message.type}: {message.text}")
                if message.type in ("error", "warning") else None)  # fmt: skip
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        page.set_default_timeout(TIMEOUT_MS)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context()
    opened = Page(context.new_page(), tmp_path_factory.mktemp("console-shots"))
    try:
        yield opened
    finally:
        opened.shot(request.node.name)  # the page as the test left it, kept as an artefact
        context.close()
    assert opened.errors == [], opened.errors  # JavaScript's console stayed free of errors


@asynccontextmanager
async def _client(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60, cache=None) as client,
    ):
        yield client


def find_load_call(url: str, token: str | None = None) -> None:
    """A real MCP client through the gateway: find, load the jobs skill, call one of its tools."""

    async def session() -> None:
        async with _client(url, token) as client:
            await client.call_tool("find", {"query": "job postings"})
            loaded = await client.call_tool("load", {"ids": ["jobs/job-search"]})
            assert not loaded.is_error, loaded
            called = await client.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}})
            assert not called.is_error, called

    with ThreadPoolExecutor(1) as thread:  # off Playwright's thread, whose event loop is running
        thread.submit(anyio.run, session).result()


def test_the_page_shows_the_upstreams_and_the_catalog(open_gateway: Gateway, page: Page) -> None:
    page.page.goto(open_gateway.console)
    rows = page.page.locator("tr.upstream")
    rows.first.wait_for()
    assert sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.label)")) == ["deck", "flaky", "hostile", "jobs"]
    assert page.page.locator("tr.upstream.up").count() >= 3  # flaky may be down, if its test ran before
    assert page.page.locator("#banner").is_visible()
    assert page.page.locator('details.skill[data-id="deck/pdf-forms"]').count() == 1
    schema = page.page.locator('details.tool[data-id="jobs/search_jobs"] pre')
    assert not schema.is_visible()  # folded
    page.page.locator('details.tool[data-id="jobs/search_jobs"] summary').click()
    assert '"query"' in schema.inner_text()
    # the hostile description is shown as text, and none of it ran
    hostile = page.page.locator('details.tool[data-id="hostile/probe"] summary')
    assert HOSTILE_DESCRIPTION in hostile.inner_text()
    assert page.page.evaluate("window.__pwned === undefined")


def test_the_search_box_shows_the_ranked_cards(open_gateway: Gateway, page: Page) -> None:
    page.page.goto(open_gateway.console)
    page.page.fill("#query", "search job postings by city and seniority")
    page.page.press("#query", "Enter")
    cards = page.page.locator("#results li.card")
    cards.first.wait_for()
    assert cards.first.get_attribute("data-id") == "jobs/search_jobs"
    scores = [float(s) for s in page.page.locator("#results .score").all_inner_texts()]
    assert scores[0] == max(scores)
    assert "confidence" in page.page.locator("#results .reason").inner_text()
    page.page.fill("#query", "<script>window.__pwned = 3</script>")
    page.page.press("#query", "Enter")
    page.page.locator("#results .reason").wait_for()
    assert page.page.evaluate("window.__pwned === undefined")


def test_a_clients_call_appears_live(open_gateway: Gateway, page: Page) -> None:
    page.page.goto(open_gateway.console)
    page.page.locator("#live-state", has_text="live").wait_for()
    find_load_call(open_gateway.url)
    call = page.page.locator("#decisions li.decision.call", has_text="jobs/search_jobs: ok")
    call.wait_for()
    assert page.page.locator("#decisions li.decision.load", has_text="jobs/job-search").count() >= 1


def test_a_restricted_token_does_not_see_a_hidden_skill(jwt_gateway: Gateway, page: Page) -> None:
    page.page.goto(jwt_gateway.console)
    assert page.page.locator("#view").inner_text().strip() == ""  # nothing before a token
    page.page.fill("#token", jwt_gateway.token("bob", "globex", ["user"]))
    page.page.click("#token-form button")
    page.page.locator("section#skills").wait_for()
    assert page.page.locator('details.skill[data-id="deck/pdf-forms"]').count() == 0
    assert page.page.locator('details.skill[data-id="jobs/job-search"]').count() == 1
    page.page.fill("#query", "fill in a pdf form")
    page.page.press("#query", "Enter")
    page.page.locator("#results .reason").wait_for()
    assert "deck/pdf-forms" not in page.page.locator("#results").inner_text()
    # an administrator's token, in the same page, sees it
    page.page.fill("#token", jwt_gateway.token("ada", "acme", ["admin"]))
    page.page.click("#token-form button")
    page.page.locator('details.skill[data-id="deck/pdf-forms"]').wait_for()


def test_a_token_sees_its_tenants_decisions_live_and_not_anothers(jwt_gateway: Gateway, page: Page) -> None:
    page.page.goto(jwt_gateway.console)
    page.page.fill("#token", jwt_gateway.token("uma", "umbrella", ["user"]))
    page.page.click("#token-form button")
    page.page.locator("#live-state", has_text="live").wait_for()
    find_load_call(jwt_gateway.url, jwt_gateway.token("eve", "initech", ["user"]))  # another tenant's
    find_load_call(jwt_gateway.url, jwt_gateway.token("ulf", "umbrella", ["user"]))  # the viewer's tenant's
    page.page.locator("#decisions li.decision.call", has_text="jobs/search_jobs: ok").wait_for()
    # ulf's find, load, call, and the policy's decision on it; none of eve's, made before
    assert page.page.locator("#decisions li.decision.call").count() == 1
    assert page.page.locator("#decisions li.decision.load").count() == 1
    assert page.page.locator("#decisions li.decision.policy").count() == 1
    assert "initech" not in page.page.locator("#decisions").inner_html()


def test_a_wrong_token_is_told_and_the_console_stays_clean(jwt_gateway: Gateway, page: Page) -> None:
    page.page.goto(jwt_gateway.console)
    page.page.fill("#token", "not-a-token")
    page.page.click("#token-form button")
    error = page.page.locator("#token-error")
    error.wait_for()
    assert "not accepted" in error.inner_text()
    page.errors[:] = [e for e in page.errors if "401" not in e]  # the browser logs the refused fetch itself
