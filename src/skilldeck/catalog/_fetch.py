"""Reading catalogs: a registry over HTTP (the generic registry API), a registry file, and the cache of both.

:class:`RegistryClient` reads ``GET /v0.1/servers?version=latest&limit=N`` page after page
(``cursor`` = the last page's ``metadata.nextCursor``), and on a later refresh only what changed
(``updated_since`` = the newest ``updatedAt`` it holds; an entry whose status turned ``deleted``
leaves the catalog). Every request is bounded (:class:`~skilldeck.catalog._entries.CatalogLimits`):
its time (connecting and reading, the whole body included), its body's bytes, the redirects it
follows (each to the registry's own origin only: scheme, host and port), and the refresh as a
whole (pages, bytes, entries, time). A registry that breaks a bound ends the refresh with a
:class:`~skilldeck.errors.RegistryError` and the last good catalog stays in force; one entry
that is malformed is skipped with its reason, and the others are read.

:class:`CatalogCache` keeps each source's last good catalog under ``$SKILLDECK_HOME/catalog/``
(one JSON file per source, named by a digest of its URL or path, format version
:data:`CACHE_FORMAT`), written to a temporary file and renamed over the old one, so a second
process (another gateway, ``skilldeck servers add``) never reads half of one. A file of another
format is read as no cache (it is replaced at the next good refresh).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

import anyio
import httpx2

from skilldeck.catalog._entries import (
    DEFAULT_LIMITS,
    CatalogEntry,
    CatalogLimits,
    entries_of_file,
    newest,
    read_entry,
    read_page,
)
from skilldeck.errors import RegistryError, ServerEntryError, shorten

__all__ = [
    "CACHE_FORMAT",
    "OFFICIAL_REGISTRY",
    "CatalogCache",
    "Fetched",
    "RegistryClient",
    "merged",
    "read_registry_file",
    "registry_url",
]

OFFICIAL_REGISTRY = "https://registry.modelcontextprotocol.io"
"""What ``--registry official`` names: the official MCP Registry."""
CACHE_FORMAT = 1
"""The version of a cached catalog's file; a file of another version is not read."""
_API = "/v0.1/servers"


def registry_url(value: str) -> str:
    """A ``--registry`` value as the registry's base URL (``official`` names the official registry).

    Raises:
        ValueError: not an http(s) URL without credentials, query or fragment.
    """
    if value == "official":
        return OFFICIAL_REGISTRY
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http(s) URL (or 'official' for {OFFICIAL_REGISTRY})")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError(f"{value!r}: give the registry's base URL, without credentials, query or fragment")
    base = value.rstrip("/")
    return base.removesuffix(_API).removesuffix("/v0.1")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


@dataclass
class Fetched:
    """What one refresh read: the entries, those skipped with their reasons, and how much it took."""

    entries: list[CatalogEntry] = field(default_factory=list)
    skipped: list[ServerEntryError] = field(default_factory=list)
    pages: int = 0
    bytes: int = 0
    seconds: float = 0.0
    truncated: bool = False
    """The catalog reached :attr:`CatalogLimits.max_entries`; the registry's other entries were not read."""
    incremental: bool = False
    """Only what changed since ``updated_since`` was read."""


class RegistryClient:
    """The generic registry API of one registry (see the module docs).

    Args:
        base: the registry's base URL (:func:`registry_url`).
        limits: the bounds of every request and refresh.
        transport: an httpx2 transport to use instead of the network (tests).
    """

    def __init__(
        self, base: str, *, limits: CatalogLimits = DEFAULT_LIMITS, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        self.base = base.rstrip("/")
        self.limits = limits
        self._transport = transport

    async def _get(self, client: httpx2.AsyncClient, url: str, budget: int) -> tuple[Any, int]:
        """One GET of JSON within the bounds, and its body's size; redirects followed to this registry's origin only."""
        limits = self.limits
        origin = _origin(self.base)
        try:
            with anyio.fail_after(limits.request_timeout):
                for _ in range(limits.max_redirects + 1):
                    async with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
                        if response.is_redirect:
                            target = urljoin(url, response.headers.get("location", ""))
                            if _origin(target) != origin:
                                raise RegistryError(
                                    f"{shorten(url, 120)} redirects to another origin ({shorten(target, 120)}); "
                                    "not followed",
                                    label=self.base,
                                )
                            url = target
                            continue
                        if response.status_code != 200:
                            raise RegistryError(
                                f"{shorten(url, 120)} answered HTTP {response.status_code}", label=self.base
                            )
                        body = bytearray()
                        cap = min(limits.max_page_bytes, budget)
                        async for chunk in response.aiter_bytes():
                            body += chunk
                            if len(body) > cap:
                                what = "page" if cap == limits.max_page_bytes else "refresh"
                                raise RegistryError(
                                    f"{shorten(url, 120)}: the {what} is over {cap:,} bytes; the refresh stops",
                                    label=self.base,
                                )
                        try:
                            return json.loads(bytes(body)), len(body)
                        except ValueError:
                            raise RegistryError(f"{shorten(url, 120)} did not answer JSON", label=self.base) from None
                raise RegistryError(f"{shorten(url, 120)}: more than {limits.max_redirects} redirects", label=self.base)
        except TimeoutError:
            raise RegistryError(
                f"{shorten(url, 120)} did not answer within {limits.request_timeout:g}s", label=self.base
            ) from None
        except httpx2.HTTPError as exc:
            raise RegistryError(
                f"{shorten(url, 120)} cannot be read: {exc or type(exc).__name__}", label=self.base
            ) from None

    def _client(self) -> httpx2.AsyncClient:
        timeout = httpx2.Timeout(self.limits.request_timeout)
        return httpx2.AsyncClient(timeout=timeout, follow_redirects=False, transport=self._transport)

    async def servers(self, *, updated_since: str | None = None, held: int = 0) -> Fetched:
        """Every latest entry (or those changed since ``updated_since``), page after page, within the bounds.

        ``held`` is how many entries the catalog already holds (they count towards ``max_entries``).

        Raises:
            RegistryError: a request or the refresh broke a bound, or the registry does not speak the API.
        """
        limits = self.limits
        fetched = Fetched(incremental=updated_since is not None)
        started = time.perf_counter()
        cursor: str | None = None
        seen: set[str] = set()
        try:
            with anyio.fail_after(limits.refresh_timeout):
                async with self._client() as client:
                    while True:
                        if fetched.pages >= limits.max_pages:
                            raise RegistryError(
                                f"more than {limits.max_pages} pages; the refresh stops", label=self.base
                            )
                        query: dict[str, str] = {"limit": str(limits.page_size), "version": "latest"}
                        if updated_since:
                            query["updated_since"] = updated_since
                        if cursor is not None:
                            query["cursor"] = cursor
                        url = f"{self.base}{_API}?{urlencode(query)}"
                        data, size = await self._get(client, url, limits.max_total_bytes - fetched.bytes)
                        fetched.pages += 1
                        fetched.bytes += size
                        try:
                            page = read_page(data, limits=limits, source=self.base)
                        except ValueError as exc:
                            raise RegistryError(f"page {fetched.pages}: {exc}", label=self.base) from None
                        room = limits.max_entries - held - len(fetched.entries)
                        fetched.entries += page.entries[: max(0, room)]
                        fetched.skipped += page.skipped
                        if len(page.entries) > room:
                            fetched.truncated = True
                            break
                        cursor = page.next_cursor
                        if cursor is None:
                            break
                        if cursor in seen:
                            raise RegistryError(
                                "the registry gave a cursor it gave before; the refresh stops", label=self.base
                            )
                        seen.add(cursor)
        except TimeoutError:
            raise RegistryError(
                f"the refresh took longer than {limits.refresh_timeout:g}s ({fetched.pages} pages read); it stops",
                label=self.base,
            ) from None
        fetched.seconds = time.perf_counter() - started
        return fetched

    async def version(self, name: str, version: str) -> CatalogEntry:
        """One version of one server (``GET /v0.1/servers/{name}/versions/{version}``).

        Raises:
            RegistryError: the registry did not answer it within the bounds (HTTP 404 included).
            ServerEntryError: its answer is not an entry skilldeck would offer.
        """
        url = f"{self.base}{_API}/{quote(name, safe='')}/versions/{quote(version, safe='')}"
        async with self._client() as client:
            data, _ = await self._get(client, url, self.limits.max_page_bytes)
        return read_entry(data, limits=self.limits, source=self.base)


def read_registry_file(path: str | os.PathLike[str], *, limits: CatalogLimits = DEFAULT_LIMITS) -> Fetched:
    """A registry file: a page of the API, or a list of ``server.json`` documents (within the same bounds).

    Raises:
        RegistryError: the file is missing, too large, not JSON or not a registry page.
    """
    source = os.fspath(path)
    started = time.perf_counter()
    try:
        size = os.path.getsize(source)
        if size > limits.max_total_bytes:
            raise RegistryError(f"{source} is {size:,} bytes, more than {limits.max_total_bytes:,}")
        data = json.loads(Path(source).read_bytes())
        page = entries_of_file(data, limits=limits, source=source)
    except FileNotFoundError:
        raise RegistryError(f"{source}: no such registry file") from None
    except (OSError, ValueError) as exc:
        raise RegistryError(f"{source} is not a registry file ({exc})") from None
    fetched = Fetched(page.entries[: limits.max_entries], page.skipped, 1, size, time.perf_counter() - started)
    fetched.truncated = len(page.entries) > limits.max_entries
    return fetched


def merged(held: Iterable[CatalogEntry], fresh: Iterable[CatalogEntry]) -> list[CatalogEntry]:
    """``held`` updated with ``fresh``: a name in both takes the fresh entry, a ``deleted`` one leaves."""
    by_name = {entry.name: entry for entry in held}
    for entry in fresh:
        if entry.status == "deleted":
            by_name.pop(entry.name, None)
        else:
            by_name[entry.name] = entry
    return sorted(by_name.values(), key=lambda e: e.name)


class CatalogCache:
    """Each source's last good catalog under ``folder`` (``$SKILLDECK_HOME/catalog``; see the module docs)."""

    def __init__(self, folder: str | os.PathLike[str], *, limits: CatalogLimits = DEFAULT_LIMITS) -> None:
        self.folder = Path(folder)
        self.limits = limits

    def path(self, source: str) -> Path:
        return self.folder / (hashlib.sha256(source.encode()).hexdigest()[:24] + ".json")

    def read(self, source: str) -> tuple[list[CatalogEntry], float] | None:
        """The cached catalog of ``source`` and its age in seconds; ``None`` without a usable one."""
        path = self.path(source)
        try:
            if path.stat().st_size > self.limits.max_total_bytes:
                return None
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(data, Mapping) or data.get("format") != CACHE_FORMAT or data.get("source") != source:
            return None
        fetched = data.get("fetchedAt")
        try:
            page = read_page({"servers": data.get("servers")}, limits=self.limits, source=source)
        except ValueError:
            return None
        age = time.time() - fetched if isinstance(fetched, int | float) else float("inf")
        return page.entries[: self.limits.max_entries], max(0.0, age)

    def sources(self) -> list[str]:
        """Every source a usable catalog is cached for (what ``skilldeck servers add`` reads by default)."""
        found = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                with path.open("rb") as file:
                    head = file.read(4096)
            except OSError:
                continue
            source = _cached_source(head)
            if source is not None and self.path(source) == path:
                found.append(source)
        return found

    def write(self, source: str, entries: Iterable[CatalogEntry]) -> None:
        """Keep ``entries`` as ``source``'s last good catalog (replacing the file whole)."""
        entries = list(entries)
        document = {  # the source first: sources() reads it from the file's start
            "source": source,
            "format": CACHE_FORMAT,
            "fetchedAt": time.time(),
            "updatedSince": newest(entries),
            "servers": [dict(entry.raw) for entry in entries],
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".catalog-", suffix=".json", dir=self.folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(document, out, ensure_ascii=False)
            os.replace(temporary, self.path(source))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _cached_source(head: bytes) -> str | None:
    """The ``source`` a cached catalog's first bytes name (it is written first), else ``None``."""
    prefix = b'{"source": '
    if not head.startswith(prefix):
        return None
    try:
        source, _ = json.JSONDecoder().raw_decode(head[len(prefix) :].decode("utf-8", errors="ignore"))
    except ValueError:
        return None
    return source if isinstance(source, str) else None
