"""Reading a registry over HTTP within bounds, a registry file, and the cache that outlives an outage."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from skilldeck.catalog import CatalogCache, RegistryClient, read_entry, read_registry_file, registry_url
from skilldeck.catalog._entries import CatalogLimits
from skilldeck.catalog._fetch import OFFICIAL_REGISTRY, merged
from skilldeck.errors import RegistryError

from ..host.hostile_http import serving_in_thread
from .conftest import entry, snapshot

pytestmark = pytest.mark.anyio

FAST = CatalogLimits(request_timeout=2.0, refresh_timeout=10.0)


@pytest.fixture
def registry(registry_app: ModuleType) -> Iterator[tuple[Any, str]]:
    """The loopback registry over the seed snapshot; yields it and its base URL (the mode is the first segment)."""
    app = registry_app.Registry(snapshot())
    with serving_in_thread(app, path="") as base:
        yield app, base


async def refused(client: RegistryClient) -> str:
    with pytest.raises(RegistryError) as caught:
        await client.servers()
    return str(caught.value)


async def test_every_page_is_read_with_version_latest_and_the_cursor_it_gave(registry: tuple[Any, str]) -> None:
    app, base = registry
    fetched = await RegistryClient(f"{base}/ok", limits=FAST).servers()
    assert (len(fetched.entries), len(fetched.skipped), fetched.pages) == (322, 153, 5)
    assert fetched.bytes > 0
    assert not fetched.truncated
    assert not fetched.incremental
    assert app.requests[0] == "/ok/v0.1/servers?limit=100&version=latest"
    assert app.requests[1] == "/ok/v0.1/servers?limit=100&version=latest&cursor=100"


async def test_a_refresh_reads_only_what_changed_since_the_newest_entry_held(registry: tuple[Any, str]) -> None:
    app, base = registry
    client = RegistryClient(f"{base}/ok", limits=FAST)
    held = (await client.servers()).entries
    app.entries.append(entry("io.github.example/newer", updated="2027-01-01T00:00:00Z"))
    app.entries.append(
        entry(
            "io.github.modelcontextprotocol/server-time", updated="2027-01-02T00:00:00Z", status="deleted", packages=[]
        )
    )
    since = max(e.updated_at for e in held)
    changed = await client.servers(updated_since=since, held=len(held))
    assert f"updated_since={since.replace(':', '%3A')}" in app.requests[-1]
    assert changed.incremental
    assert [e.name for e in changed.entries] == [
        "io.github.example/newer",
        "io.github.modelcontextprotocol/server-time",
    ]
    now = merged(held, changed.entries)
    names = {e.name for e in now}
    assert "io.github.example/newer" in names
    assert "io.github.modelcontextprotocol/server-time" not in names
    assert len(now) == len(held)


async def test_a_redirect_to_the_registrys_own_origin_is_followed(registry: tuple[Any, str]) -> None:
    _, base = registry
    assert len((await RegistryClient(f"{base}/redirect-home", limits=FAST).servers()).entries) == 322


async def test_a_redirect_to_another_origin_is_not_followed(registry: tuple[Any, str]) -> None:
    _, base = registry
    said = await refused(RegistryClient(f"{base}/redirect-away", limits=FAST))
    assert "redirects to another origin (http://127.0.0.2:9/redirect-away/v0.1/servers" in said
    assert "not followed" in said


async def test_redirects_stop_at_their_bound(registry: tuple[Any, str]) -> None:
    _, base = registry
    said = await refused(RegistryClient(f"{base}/redirect-loop", limits=CatalogLimits(max_redirects=2)))
    assert "more than 2 redirects" in said


async def test_a_page_over_its_byte_bound_ends_the_refresh(registry: tuple[Any, str], registry_app: ModuleType) -> None:
    _, base = registry
    said = await refused(RegistryClient(f"{base}/huge", limits=FAST))
    assert f"the page is over {FAST.max_page_bytes:,} bytes" in said


async def test_pages_over_the_refresh_byte_bound_end_it(registry: tuple[Any, str]) -> None:
    _, base = registry
    said = await refused(RegistryClient(f"{base}/ok", limits=CatalogLimits(max_total_bytes=200_000)))
    assert "the refresh is over" in said


async def test_a_registry_that_trickles_is_cut_at_the_request_time_bound(registry: tuple[Any, str]) -> None:
    _, base = registry
    started = time.monotonic()
    said = await refused(RegistryClient(f"{base}/drip", limits=CatalogLimits(request_timeout=1.0)))
    assert "did not answer within 1s" in said
    assert time.monotonic() - started < 30


async def test_a_registry_that_never_answers_is_cut_at_the_request_time_bound(registry: tuple[Any, str]) -> None:
    _, base = registry
    assert "did not answer within 1s" in await refused(
        RegistryClient(f"{base}/stall", limits=CatalogLimits(request_timeout=1.0))
    )


async def test_pages_stop_at_their_bound(registry: tuple[Any, str]) -> None:
    app, base = registry
    said = await refused(RegistryClient(f"{base}/endless", limits=CatalogLimits(max_pages=5)))
    assert "more than 5 pages" in said
    assert len(app.requests) == 5


async def test_a_cursor_given_twice_ends_the_refresh(registry: tuple[Any, str]) -> None:
    _, base = registry
    assert "a cursor it gave before" in await refused(RegistryClient(f"{base}/cursor-loop", limits=FAST))


@pytest.mark.parametrize(("mode", "said"), [("not-json", "did not answer JSON"), ("error", "answered HTTP 500")])
async def test_a_registry_that_does_not_speak_the_api_is_refused(
    registry: tuple[Any, str], mode: str, said: str
) -> None:
    _, base = registry
    assert said in await refused(RegistryClient(f"{base}/{mode}", limits=FAST))


async def test_entries_stop_at_the_catalogs_bound(registry: tuple[Any, str]) -> None:
    _, base = registry
    at = await RegistryClient(f"{base}/ok", limits=CatalogLimits(max_entries=322)).servers()
    assert len(at.entries) == 322
    assert not at.truncated
    under = await RegistryClient(f"{base}/ok", limits=CatalogLimits(max_entries=321)).servers()
    assert len(under.entries) == 321
    assert under.truncated


async def test_one_version_of_one_server_is_read(registry: tuple[Any, str]) -> None:
    _, base = registry
    client = RegistryClient(f"{base}/ok", limits=FAST)
    found = await client.version("io.github.modelcontextprotocol/server-memory", "2026.8.31")
    assert found.packages[0].identifier == "@modelcontextprotocol/server-memory"
    with pytest.raises(RegistryError, match="HTTP 404"):
        await client.version("io.github.modelcontextprotocol/server-memory", "1.0.0")


def test_a_registry_url_is_its_base_and_official_names_the_official_one() -> None:
    assert registry_url("official") == OFFICIAL_REGISTRY
    assert registry_url("https://registry.example.com/v0.1/servers/") == "https://registry.example.com"
    for bad in ("registry.example.com", "https://u:p@registry.example.com", "https://r.example.com/?x=1"):
        with pytest.raises(ValueError, match="URL"):
            registry_url(bad)


def test_a_registry_file_is_read_within_the_same_bounds(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"servers": [entry("io.github.a/one"), entry("bad name")]}))
    read = read_registry_file(path)
    assert [e.name for e in read.entries] == ["io.github.a/one"]
    assert [s.name for s in read.skipped] == ["bad name"]
    with pytest.raises(RegistryError, match="more than 10"):
        read_registry_file(path, limits=CatalogLimits(max_total_bytes=10))
    with pytest.raises(RegistryError, match="no such registry file"):
        read_registry_file(tmp_path / "missing.json")
    path.write_text("{not json")
    with pytest.raises(RegistryError, match="is not a registry file"):
        read_registry_file(path)


def test_the_cache_keeps_the_last_good_catalog_per_source(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path / "catalog")
    entries = [read_entry(entry("io.github.a/one")), read_entry(entry("io.github.a/two"))]
    cache.write("https://r1.example.com", entries)
    cache.write("https://r2.example.com", entries[:1])
    read = cache.read("https://r1.example.com")
    assert read is not None
    assert [e.name for e in read[0]] == ["io.github.a/one", "io.github.a/two"]
    assert read[1] < 60
    assert cache.sources() == sorted(
        ["https://r1.example.com", "https://r2.example.com"], key=lambda s: cache.path(s).name
    )
    assert cache.read("https://r3.example.com") is None
    assert not [p for p in (tmp_path / "catalog").iterdir() if p.name.startswith(".catalog-")]  # no temporary left


def test_a_cache_of_another_format_or_source_is_not_read(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path)
    cache.write("https://r1.example.com", [read_entry(entry())])
    path = cache.path("https://r1.example.com")
    document = json.loads(path.read_text())
    path.write_text(json.dumps({**document, "format": 99}))
    assert cache.read("https://r1.example.com") is None
    path.write_text(json.dumps({**document, "source": "https://elsewhere.example.com"}))
    assert cache.read("https://r1.example.com") is None
    path.write_text("{half a fi")
    assert cache.read("https://r1.example.com") is None
    assert cache.sources() == []
