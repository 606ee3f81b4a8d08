"""What keeps the serving path short: replies built once per catalog, ``serve --http`` on uvloop answering JSON.

The middleware keeps each ``skills/list`` page and each static file's ``resources/read`` reply it
built for a catalog (the snapshot, or one audience's variant) and sends it again while that
catalog is served. These tests pin that the work is done once, that nothing stale is ever sent
(reload, policy, cache-hint settings), and the bounds of what is kept.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import skilldeck.server._middleware as middleware
from skilldeck.host._wire import SkillsWire
from skilldeck.server import create_server
from skilldeck.serving._policy import parse_policy
from skilldeck.skill._manifest import SkillEntry

from .helpers import CLI, gc_report, start_serve, stop, wait_for_startup, write_skill

ERAS = ["auto", "legacy"]  # auto negotiates 2026-07-28 with our server


@asynccontextmanager
async def connect(server: Any, mode: str) -> AsyncIterator[SkillsWire]:
    async with Client(server, mode=mode, cache=None) as client:
        yield SkillsWire(client)


class Calls:
    """Counts calls of a function while passing them through (the server stays real)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.count = fn, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        return self.fn(*args, **kwargs)


@pytest.fixture
def spies(monkeypatch: pytest.MonkeyPatch) -> tuple[Calls, Calls]:
    """(SkillEntry.to_wire: a listing built, middleware.file_contents: a file encoded)."""
    to_wire, contents = Calls(SkillEntry.to_wire), Calls(middleware.file_contents)
    monkeypatch.setattr(SkillEntry, "to_wire", lambda self: to_wire(self))
    monkeypatch.setattr(middleware, "file_contents", contents)
    return to_wire, contents


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_list_pages_and_file_reads_are_built_once_per_catalog(
    examples_dir: Path, mode: str, spies: tuple[Calls, Calls]
) -> None:
    to_wire, contents = spies
    server, _ext = create_server(examples_dir, page_size=3)
    async with connect(server, mode) as wire:
        first = await wire.list_skills(None)
        second_page = await wire.list_skills(first["nextCursor"])
        text = await wire.read_bytes("skill://job-search/SKILL.md")
        blob = await wire.read_bytes("skill://pdf-forms/assets/logo.png")
        built, encoded = to_wire.count, contents.count
        assert built >= 6
        assert encoded == 2
        for _ in range(3):
            assert await wire.list_skills(None) == first
            assert await wire.list_skills(first["nextCursor"]) == second_page
            assert await wire.read_bytes("skill://job-search/SKILL.md") == text
            assert await wire.read_bytes("skill://pdf-forms/assets/logo.png") == blob
        assert (to_wire.count, contents.count) == (built, encoded)
    assert text[0] == (examples_dir / "job-search" / "SKILL.md").read_bytes()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_kept_replies_never_outlive_a_reload_or_a_setting(tmp_path: Path, mode: str) -> None:
    write_skill(tmp_path, "one", description="The first description.")
    server, ext = create_server(tmp_path)
    async with connect(server, mode) as wire:
        before = await wire.list_skills(None)
        assert before["skills"][0]["frontmatter"]["description"] == "The first description."
        old_text, _ = await wire.read_bytes("skill://one/SKILL.md")
        write_skill(tmp_path, "one", description="The second description.")
        assert (await ext.reload()).changed == ("skill://one/SKILL.md",)
        after = await wire.list_skills(None)
        assert after["skills"][0]["frontmatter"]["description"] == "The second description."
        new_text, _ = await wire.read_bytes("skill://one/SKILL.md")
        assert new_text != old_text
        assert new_text == (tmp_path / "one" / "SKILL.md").read_bytes()
        if mode == "auto":  # cache hints are 2026-07-28 fields
            ext.ttl_ms, ext.cache_scope = 5, "private"
            listed = await wire.list_skills(None)
            assert (listed["ttlMs"], listed["cacheScope"]) == (5, "private")
            read = await wire.client.read_resource("skill://one/SKILL.md")
            assert (read.ttl_ms, read.cache_scope) == (5, "private")
        ext.page_size = 1
        write_skill(tmp_path, "two")
        await ext.reload()
        page = await wire.list_skills(None)
        assert [e["uri"] for e in page["skills"]] == ["skill://one/SKILL.md"]
        assert page["nextCursor"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_kept_replies_follow_the_policy_in_force(tmp_path: Path, mode: str) -> None:
    write_skill(tmp_path, "open")
    write_skill(tmp_path, "closed")
    server, ext = create_server(tmp_path)
    async with connect(server, mode) as wire:
        assert [e["uri"] for e in (await wire.list_skills(None))["skills"]] == [
            "skill://closed/SKILL.md",
            "skill://open/SKILL.md",
        ]
        await wire.read_bytes("skill://closed/SKILL.md")
        await ext.set_policy(parse_policy({"skills": {"closed": {"admit": {"roles": ["admin"]}}}}))
        assert [e["uri"] for e in (await wire.list_skills(None))["skills"]] == ["skill://open/SKILL.md"]
        with pytest.raises(Exception, match="closed"):
            await wire.read_bytes("skill://closed/SKILL.md")
        await ext.set_policy(None)
        assert len((await wire.list_skills(None))["skills"]) == 2


@pytest.mark.anyio
async def test_what_is_kept_is_bounded(
    examples_dir: Path, monkeypatch: pytest.MonkeyPatch, spies: tuple[Calls, Calls]
) -> None:
    _to_wire, contents = spies
    server, _ext = create_server(examples_dir)
    a, b = "skill://job-search/SKILL.md", "skill://pdf-forms/SKILL.md"
    async with connect(server, "auto") as wire:
        monkeypatch.setattr(middleware, "REPLIES_PER_CATALOG", 1)
        await wire.read_bytes(a)
        await wire.read_bytes(b)  # the table is full: not kept
        before = contents.count
        await wire.read_bytes(a)
        await wire.read_bytes(b)
        assert contents.count == before + 1
        monkeypatch.setattr(middleware, "REPLIES_PER_CATALOG", 100)
        monkeypatch.setattr(middleware, "REPLY_BYTES_PER_CATALOG", 0)
        before = contents.count
        await wire.read_bytes(b)
        await wire.read_bytes(b)  # no bytes left for it
        assert contents.count == before + 2
        monkeypatch.setattr(middleware, "REPLY_BYTES_PER_CATALOG", 1 << 30)
        monkeypatch.setattr(middleware, "KEPT_FILE_BYTES", 10)
        logo = "skill://pdf-forms/assets/logo.png"
        before = contents.count
        await wire.read_bytes(logo)
        await wire.read_bytes(logo)  # bigger than KEPT_FILE_BYTES: encoded for each read
        assert contents.count == before + 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/maps: Linux only")
def test_serve_http_runs_on_uvloop(tmp_path: Path) -> None:
    pytest.importorskip("uvloop", reason="uvloop is not installed (pip install uvloop; a dependency on CPython/Linux)")
    log = tmp_path / "serve.log"
    proc = start_serve([*CLI, "serve", "examples/skills", "--http", "127.0.0.1:0"], log)
    try:
        match = wait_for_startup(proc, log, 60)
        assert not isinstance(match, str), match
        maps = Path(f"/proc/{proc.pid}/maps").read_text()
        assert "/uvloop/" in maps, "skilldeck serve --http is not running its event loop on uvloop"
    finally:
        stop(proc)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse-responses"])
async def test_serve_http_answers_json_and_still_announces_changes(tmp_path: Path, mode: str, sse: bool) -> None:
    """``serve --http`` answers requests with one JSON body (``--sse-responses``: SSE streams), and a change
    still reaches a legacy session's GET stream and a 2026-07-28 ``subscriptions/listen`` stream."""
    write_skill(tmp_path / "pack", "first")
    log = tmp_path / "serve.log"
    extra = ["--sse-responses"] if sse else []
    proc = start_serve([*CLI, "serve", str(tmp_path / "pack"), "--http", "127.0.0.1:0", "--watch", *extra], log)
    try:
        match = wait_for_startup(proc, log, 60)
        assert not isinstance(match, str), match
        kinds: list[tuple[str, str]] = []

        async def seen(response: httpx2.Response) -> None:
            if response.status_code == 200:  # a notification's 202 has no body to frame
                kinds.append((response.request.method, response.headers.get("content-type", "")))

        changed = anyio.Event()

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/resources/list_changed":
                changed.set()

        async with (
            httpx2.AsyncClient(event_hooks={"response": [seen]}) as http,
            Client(
                streamable_http_client(match.group(2), http_client=http),
                mode=mode,
                cache=None,
                read_timeout_seconds=20,
                message_handler=on_message,
            ) as client,
        ):
            wire = SkillsWire(client)
            assert [e["frontmatter"]["name"] for e in (await wire.list_skills())["skills"]] == ["first"]
            posts = {kind.split(";")[0] for method, kind in kinds if method == "POST" and kind}
            # on 2026-07-28 the SDK answers JSON in either mode when the handler sends nothing before its reply
            streamed = sse and mode == "legacy"
            assert posts == ({"text/event-stream"} if streamed else {"application/json"}), kinds
            if mode == "legacy":
                write_skill(tmp_path / "pack", "second")
                with anyio.fail_after(20):
                    await changed.wait()
            else:
                async with client.listen(resources_list_changed=True) as sub:
                    write_skill(tmp_path / "pack", "second")
                    with anyio.fail_after(20):
                        await sub.__anext__()
            names = {e["frontmatter"]["name"] for e in (await wire.list_skills())["skills"]}
            assert names == {"first", "second"}
    finally:
        stop(proc)


@pytest.mark.anyio
async def test_the_sdks_idle_tracing_span_is_dropped_and_kept_when_spans_are_collected(
    examples_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry import trace

    from skilldeck.serving._runner import drop_idle_tracing

    def spans(server: Any) -> int:
        return sum(type(m).__name__ == "OpenTelemetryMiddleware" for m in server.middleware)

    server, _ = create_server(examples_dir)
    assert spans(server) == 1, "the SDK no longer ships its span middleware under this name: revisit drop_idle_tracing"
    with monkeypatch.context() as patched:  # a tracer provider installed (as opentelemetry-instrument does)
        patched.setattr(trace, "get_tracer_provider", lambda: trace.NoOpTracerProvider())
        assert drop_idle_tracing(server) is False
        assert spans(server) == 1
    others = [m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]
    assert drop_idle_tracing(server) is True
    assert (spans(server), server.middleware) == (0, others)  # nothing else removed, order kept
    assert drop_idle_tracing(server) is False
    async with connect(server, "auto") as wire:  # still serves
        assert len((await wire.list_skills())["skills"]) == 8


def test_freezing_the_startup_heap_keeps_it_from_full_collections_and_frees_what_is_dropped() -> None:
    import gc
    import weakref

    from skilldeck.serving._runner import freeze_startup_heap

    class Kept:
        pass

    kept = Kept()
    alive = weakref.ref(kept)
    try:
        frozen = freeze_startup_heap()
        assert frozen == gc.get_freeze_count() > 0
        assert kept not in gc.get_objects(generation=2)  # frozen objects leave the collected generations
        del kept  # reference counting still frees a dropped frozen object
        assert alive() is None
    finally:
        gc.unfreeze()  # this test process must not keep its heap frozen for the tests after it
    assert gc.get_freeze_count() == 0


def test_serve_http_freezes_its_startup_heap_and_collects_less_often(tmp_path: Path) -> None:
    from skilldeck.serving._runner import SERVING_GC_THRESHOLDS

    said = gc_report(["serve", "examples/skills", "--http", "127.0.0.1:0"], tmp_path)
    assert "frozen" in said, said  # the freeze count, reported once serving has started
    assert f"thresholds {SERVING_GC_THRESHOLDS}" in said, said
