"""A server registry's entries (``server.json``), read within bounds. Pure: no I/O.

The generic registry API (``GET /v0.1/servers``, the official MCP Registry's and any
sub-registry's) answers pages of ``{"servers": [{"server": {...}, "_meta": {...}}], "metadata":
{"nextCursor": ..., "count": ...}}``; a registry file (``--registry-file``) holds the same page, or
a plain list of ``server.json`` documents. Each entry is read on its own: one that is malformed,
over its bounds or names a package skilldeck would not run is **skipped with its reason**
(:class:`~skilldeck.errors.ServerEntryError`), never the whole catalog.

What is kept of an entry (:class:`CatalogEntry`) is what a card shows and what an ``add`` needs:
its name (reverse-DNS, ``io.github.owner/server``), title, description and version; its packages
(``registryType``, ``identifier``, the exact ``version``, the transport, the arguments and the
environment variables it takes) and its remotes (a streamable HTTP or SSE URL and the headers it
takes). The rules a package must meet to be kept are the ones that make running it safe:

* its identifier is a plain package name of its registry type (:data:`IDENTIFIERS`): no shell
  metacharacter, no space, no leading ``-`` (it would be read as an option), no path trick;
* its version is one exact version (:func:`version_problem`): not ``latest``, not a range
  (``^1.2``, ``~1``, ``>=1``, ``1.x``, ``1.*``), no space;
* a fixed argument value (the publisher's) has no ``{variable}`` left in it and no control
  character; an argument the person must give is an input, asked for (never guessed).

A package of a registry type skilldeck does not run (``nuget``, ``mcpb``, or one it does not know)
is kept with the reason it cannot be added, so a card is never offered for it
(:attr:`Package.runnable`). Names, descriptions and every other text are the registry's: the card
builder passes them through the origin-tag neutraliser before a model reads them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from skilldeck.errors import ServerEntryError, shorten

__all__ = [
    "DEFAULT_LIMITS",
    "IDENTIFIERS",
    "OFFICIAL_META",
    "RUNNABLE_TYPES",
    "CatalogEntry",
    "CatalogLimits",
    "Input",
    "Package",
    "Page",
    "Remote",
    "entries_of_file",
    "name_problem",
    "newest",
    "read_entry",
    "read_page",
    "version_problem",
]

OFFICIAL_META = "io.modelcontextprotocol.registry/official"
"""The ``_meta`` key under which a registry says an entry's status, ``isLatest`` and ``updatedAt``."""

RUNNABLE_TYPES = ("npm", "pypi", "oci")
"""The package registry types skilldeck can run (``npx``, ``uvx`` or a venv of its own, ``docker``/``podman``)."""

IDENTIFIERS: Mapping[str, re.Pattern[str]] = {
    # npm: an optionally scoped lower-case name (npm's own rules; 214 characters at most)
    "npm": re.compile(r"(?:@[a-z0-9][a-z0-9._~-]{0,100}/)?[a-z0-9][a-z0-9._~-]{0,150}"),
    # PyPI: a PEP 508 distribution name
    "pypi": re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,150}[A-Za-z0-9])?"),
    # an OCI image: an optional registry host, then lower-case path components (no tag: that is the version)
    "oci": re.compile(
        r"(?:[a-z0-9][a-z0-9.-]{0,100}(?::[0-9]{1,5})?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*){0,8}"
    ),
}
"""A plain package identifier, per registry type: what is run is exactly this name (never a shell word)."""

_NAME = re.compile(r"[a-zA-Z0-9.-]{1,150}/[a-zA-Z0-9._-]{1,150}")
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}")
_RANGE_PART = re.compile(r"(?:^|\.)(?:x|X|\*)(?:\.|$)")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}")
_FLAG = re.compile(r"-{1,2}[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_HINT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}")
_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TRANSPORTS = ("stdio", "streamable-http", "sse")
_STATUSES = ("active", "deprecated", "deleted")


@dataclass(frozen=True)
class CatalogLimits:
    """Every bound on what a registry may make the gateway read (see ``docs/registry.md``)."""

    max_entries: int = 10_000
    """Entries one catalog holds (the rest of a registry is not read, and that is said once)."""
    max_entry_bytes: int = 64 * 1024
    """One entry's JSON; a larger entry is skipped."""
    max_page_bytes: int = 4 * 1024 * 1024
    """One page's body; a larger page ends the refresh (the last good catalog stays)."""
    max_total_bytes: int = 64 * 1024 * 1024
    """Every page of one refresh together."""
    max_pages: int = 200
    """Pages one refresh reads at most."""
    page_size: int = 100
    """The ``limit`` asked of the registry per page."""
    request_timeout: float = 15.0
    """Seconds one request may take, connecting and reading included."""
    refresh_timeout: float = 120.0
    """Seconds one refresh may take in all."""
    max_redirects: int = 3
    """Redirects one request may follow (each to the registry's own origin only)."""
    max_packages: int = 16
    """Packages and remotes one entry may list (each)."""
    max_inputs: int = 32
    """Arguments, environment variables or headers one package or remote may take (each)."""
    max_text: int = 500
    """Characters of a description (or any prose) kept; the rest is cut."""
    max_skipped: int = 1_000
    """Skipped entries remembered with their reasons (the count goes on)."""


DEFAULT_LIMITS = CatalogLimits()
"""The bounds in force unless a caller gives others."""


@dataclass(frozen=True)
class Input:
    """What a package or a remote takes: an environment variable, a header or a command-line argument.

    ``fixed`` is the publisher's value (nothing is asked); otherwise the person is asked for it
    when it is ``required`` or has no ``default`` (an optional one may be left empty).
    """

    kind: Literal["env", "header", "argument"]
    name: str
    """The variable's or header's name; for an argument, its flag (``--port``) or its value hint."""
    description: str = ""
    required: bool = False
    secret: bool = False
    default: str | None = None
    choices: tuple[str, ...] = ()
    fixed: str | None = None
    positional: bool = False
    """An argument given as a bare value (``--flag value`` when ``False``)."""

    @property
    def asked(self) -> bool:
        """Whether the person is asked for it (it has no fixed value)."""
        return self.fixed is None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        if self.required:
            out["required"] = True
        if self.secret:
            out["secret"] = True
        return out


@dataclass(frozen=True)
class Package:
    """One way of running a server: a package of a registry, at one exact version."""

    registry_type: str
    identifier: str
    version: str
    transport: str = "stdio"
    runtime_hint: str | None = None
    runtime_arguments: tuple[Input, ...] = ()
    package_arguments: tuple[Input, ...] = ()
    environment: tuple[Input, ...] = ()
    not_runnable: str | None = None
    """Why skilldeck cannot run it (a registry type it does not run, a transport it does not serve); ``None``: it can."""

    @property
    def runnable(self) -> bool:
        return self.not_runnable is None

    @property
    def inputs(self) -> tuple[Input, ...]:
        return (*self.runtime_arguments, *self.package_arguments, *self.environment)


@dataclass(frozen=True)
class Remote:
    """A server already running somewhere: its URL and the headers it takes."""

    transport: Literal["streamable-http", "sse"]
    url: str
    headers: tuple[Input, ...] = ()

    @property
    def host(self) -> str:
        return (urlsplit(self.url).hostname or "").lower()

    @property
    def inputs(self) -> tuple[Input, ...]:
        return self.headers


@dataclass(frozen=True)
class CatalogEntry:
    """One server of a catalog, as read (see the module docs)."""

    name: str
    description: str
    version: str
    title: str = ""
    packages: tuple[Package, ...] = ()
    remotes: tuple[Remote, ...] = ()
    status: str = "active"
    updated_at: str = ""
    """The registry's ``updatedAt`` (RFC 3339), ``""`` when it said none."""
    repository: str = ""
    website: str = ""
    source: str = ""
    """The registry (URL or file) it was read from."""
    notes: tuple[str, ...] = ()
    """What of it was left out, and why (a package with an unsafe identifier, a remote with a template)."""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The entry as the registry gave it (kept for the cache)."""

    @property
    def id(self) -> str:
        """The card id: ``NAME@VERSION`` (what ``add`` takes)."""
        return f"{self.name}@{self.version}"

    @property
    def namespace(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def short_name(self) -> str:
        return self.name.split("/", 1)[1]

    @property
    def runnable(self) -> bool:
        """Whether some package or remote of it is of a kind skilldeck can run."""
        return bool(self.remotes) or any(p.runnable for p in self.packages)


@dataclass
class Page:
    """One page of a registry: the entries read, those skipped (each with its reason), the next cursor."""

    entries: list[CatalogEntry] = field(default_factory=list)
    skipped: list[ServerEntryError] = field(default_factory=list)
    next_cursor: str | None = None


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a server name (reverse-DNS ``namespace/server``); ``None`` when it is."""
    if not isinstance(name, str) or not name:
        return "it has no name"
    if not _NAME.fullmatch(name):
        return f"its name {shorten(name, 80)!r} is not NAMESPACE/SERVER (letters, digits, '.', '-' and '_', one '/')"
    namespace, server = name.split("/", 1)
    if any(part in ("", ".", "..") or part.startswith(".") for part in (namespace, server)):
        return f"its name {shorten(name, 80)!r} has a part that is empty or starts with '.'"
    return None


def version_problem(version: object, what: str = "version") -> str | None:
    """Why ``version`` is not one exact version (``latest``, a range, a space...); ``None`` when it is."""
    if not isinstance(version, str) or not version:
        return f"its {what} is missing"
    shown = shorten(version, 40)
    if version.lower() == "latest":
        return f"its {what} is 'latest', not an exact version"
    if not _VERSION.fullmatch(version) or _RANGE_PART.search(version):
        return f"its {what} {shown!r} is not one exact version (no ranges such as ^1.2, ~1, >=1 or 1.x)"
    return None


def _text(value: object, limit: int) -> str:
    return shorten(value.strip(), limit) if isinstance(value, str) else ""


def _flag(value: object) -> bool:
    return value is True


def _input(raw: object, kind: Literal["env", "header", "argument"], limits: CatalogLimits) -> Input:
    """One input (``KeyValueInput`` or ``Argument``); a :class:`ValueError` says why it cannot be used."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"an {kind} entry is not an object")
    positional = kind == "argument" and raw.get("type") == "positional"
    if kind == "argument" and raw.get("type") not in ("positional", "named"):
        raise ValueError("an argument's type is neither 'positional' nor 'named'")
    name = raw.get("valueHint") if positional else raw.get("name")
    pattern = {"env": _ENV_NAME, "header": _HEADER_NAME, "argument": _HINT if positional else _FLAG}[kind]
    if positional and isinstance(raw.get("value"), str) and not (isinstance(name, str) and _HINT.fullmatch(name)):
        name = "value"  # a fixed positional argument is never asked for: its hint is only a label
    if not isinstance(name, str) or not pattern.fullmatch(name):
        shown = shorten(str(name), 40)
        raise ValueError(f"the {kind} name {shown!r} is not a plain {'flag' if kind == 'argument' else kind} name")
    if raw.get("variables"):
        raise ValueError(f"the {kind} {name!r} takes {{variables}}, which skilldeck does not fill in")
    fixed = raw.get("value")
    if fixed is not None and (
        not isinstance(fixed, str) or _CONTROL.search(fixed) or _VARIABLE.search(fixed) or len(fixed) > 1024
    ):
        raise ValueError(f"the {kind} {name!r} has a value that is not plain text without {{variables}}")
    default = raw.get("default")
    choices = raw.get("choices")
    return Input(
        kind=kind,
        name=name,
        description=_text(raw.get("description"), limits.max_text),
        required=_flag(raw.get("isRequired")),
        secret=_flag(raw.get("isSecret")),
        default=default if isinstance(default, str) and not _CONTROL.search(default) else None,
        choices=tuple(c for c in choices if isinstance(c, str))[:64] if isinstance(choices, list) else (),
        fixed=fixed,
        positional=positional,
    )


def _inputs(raw: object, kind: Literal["env", "header", "argument"], limits: CatalogLimits) -> tuple[Input, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f"its {kind} list is not a list")
    if len(raw) > limits.max_inputs:
        raise ValueError(f"it takes {len(raw)} {kind} inputs, more than {limits.max_inputs}")
    inputs = tuple(_input(item, kind, limits) for item in raw)
    names = [i.name for i in inputs if i.asked]
    if len(names) != len(set(names)):
        raise ValueError(f"it names one {kind} input twice")
    return inputs


def _package(raw: object, limits: CatalogLimits) -> Package:
    """One package; a :class:`ValueError` says why it is dropped.

    A package of a registry type skilldeck does not run is kept as not runnable, its identifier and
    version unchecked (they are never run) but cut for display; one of a type it runs must pass
    every rule of the module docs."""
    if not isinstance(raw, Mapping):
        raise ValueError("a package is not an object")
    kind = raw.get("registryType")
    if not isinstance(kind, str) or not kind:
        raise ValueError("a package has no registryType")
    kind = shorten(kind.lower(), 30)
    identifier = raw.get("identifier")
    if not isinstance(identifier, str) or not identifier:
        raise ValueError(f"a {kind} package has no identifier")
    version = raw.get("version")
    if kind not in RUNNABLE_TYPES:
        return Package(
            registry_type=kind,
            identifier=shorten(identifier, 200),
            version=shorten(version, 64) if isinstance(version, str) else "",
            not_runnable=f"skilldeck does not run {kind} packages (it runs {', '.join(RUNNABLE_TYPES)})",
        )
    if not IDENTIFIERS[kind].fullmatch(identifier):
        raise ValueError(f"the {kind} package {shorten(identifier, 60)!r} is not a plain {kind} package name")
    problem = version_problem(version, f"{kind} package version")
    if problem is not None:
        raise ValueError(problem)
    transport = raw.get("transport")
    transport_type = transport.get("type") if isinstance(transport, Mapping) else "stdio"
    if transport_type not in _TRANSPORTS:
        raise ValueError(f"the {kind} package's transport {shorten(str(transport_type), 30)!r} is not one MCP defines")
    runtime_arguments = _inputs(raw.get("runtimeArguments"), "argument", limits)
    package_arguments = _inputs(raw.get("packageArguments"), "argument", limits)
    not_runnable = None
    if transport_type != "stdio":
        not_runnable = (
            f"the {kind} package serves {transport_type} from a process of its own; skilldeck runs stdio packages"
        )
    elif any(i.secret and i.asked for i in (*runtime_arguments, *package_arguments)):
        not_runnable = (
            f"the {kind} package takes a secret on its command line, where other users of the machine could read it"
        )
    hint = raw.get("runtimeHint")
    return Package(
        registry_type=kind,
        identifier=identifier,
        version=str(version),
        transport=str(transport_type),
        runtime_hint=hint if isinstance(hint, str) else None,
        runtime_arguments=runtime_arguments,
        package_arguments=package_arguments,
        environment=_inputs(raw.get("environmentVariables"), "env", limits),
        not_runnable=not_runnable,
    )


def _remote(raw: object, limits: CatalogLimits) -> Remote:
    if not isinstance(raw, Mapping):
        raise ValueError("a remote is not an object")
    kind = raw.get("type")
    if kind not in ("streamable-http", "sse"):
        raise ValueError(f"a remote's type {shorten(str(kind), 30)!r} is neither 'streamable-http' nor 'sse'")
    url = raw.get("url")
    if not isinstance(url, str) or len(url) > 2048 or _CONTROL.search(url) or " " in url:
        raise ValueError("a remote has no usable url")
    if _VARIABLE.search(url) or "{" in url:
        raise ValueError(
            f"the remote {shorten(url, 60)!r} is a template with {{variables}}, which skilldeck does not fill in"
        )
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.username or parts.password:
        raise ValueError(f"the remote {shorten(url, 60)!r} is not an http(s) URL without credentials")
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"the remote {shorten(url, 60)!r} is plain http on a host that is not this machine")
    return Remote(kind, url, _inputs(raw.get("headers"), "header", limits))


def _official(meta: object) -> Mapping[str, Any]:
    found = meta.get(OFFICIAL_META) if isinstance(meta, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def read_entry(raw: object, *, limits: CatalogLimits = DEFAULT_LIMITS, source: str = "") -> CatalogEntry:
    """One entry of a page (``{"server": {...}, "_meta": {...}}``) or a bare ``server.json``.

    Raises:
        ServerEntryError: the entry cannot be offered (malformed, over its bounds, or nothing of it can be
            run safely); the message says why, and names the entry when it has a name.
    """
    outer: Any = raw
    wrapped = isinstance(outer, Mapping) and isinstance(outer.get("server"), Mapping)
    server: Any = outer["server"] if wrapped else outer
    meta = outer.get("_meta") if wrapped else server.get("_meta") if isinstance(server, Mapping) else None
    name = server.get("name") if isinstance(server, Mapping) else None
    shown = name if isinstance(name, str) else None

    def refuse(reason: str) -> ServerEntryError:
        return ServerEntryError(reason, name=shown, label=source or None)

    if not isinstance(server, Mapping):
        raise refuse("it is not a server.json object")
    size = len(json.dumps(raw, ensure_ascii=False, default=str))
    if size > limits.max_entry_bytes:
        raise refuse(f"it is {size:,} bytes of JSON, more than {limits.max_entry_bytes:,}")
    problem = name_problem(name)
    if problem is not None:
        raise refuse(problem)
    description = server.get("description")
    if not isinstance(description, str) or not description.strip():
        raise refuse("it has no description")
    problem = version_problem(server.get("version"))
    if problem is not None:
        raise refuse(problem)
    official = _official(meta)
    status = official.get("status", server.get("status", "active"))
    if status not in _STATUSES:
        raise refuse(f"its status {shorten(str(status), 30)!r} is not one of {', '.join(_STATUSES)}")
    notes: list[str] = []
    packages = _each(server.get("packages"), "packages", _package, limits, notes)
    remotes = _each(server.get("remotes"), "remotes", _remote, limits, notes)
    if status != "deleted" and not packages and not remotes:
        why = "; ".join(notes) if notes else "it names no package or remote to run"
        raise refuse(why)
    repository = server.get("repository")
    updated = official.get("updatedAt")
    return CatalogEntry(
        name=str(name),
        description=_text(description, limits.max_text),
        version=str(server["version"]),
        title=_text(server.get("title"), 100),
        packages=tuple(packages),
        remotes=tuple(remotes),
        status=str(status),
        updated_at=updated if isinstance(updated, str) and len(updated) <= 40 else "",
        repository=_text(repository.get("url"), 300) if isinstance(repository, Mapping) else "",
        website=_text(server.get("websiteUrl"), 300),
        source=source,
        notes=tuple(notes),
        raw=outer if wrapped else {"server": outer},
    )


def _each(raw: object, what: str, read: Any, limits: CatalogLimits, notes: list[str]) -> list[Any]:
    """Every item of ``raw`` that ``read`` accepts; the others are noted with their reason."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        notes.append(f"its {what} is not a list")
        return []
    if len(raw) > limits.max_packages:
        notes.append(f"it lists {len(raw)} {what}, more than {limits.max_packages}; none is read")
        return []
    kept = []
    for item in raw:
        try:
            kept.append(read(item, limits))
        except ValueError as exc:
            notes.append(str(exc))
    return kept


def read_page(data: object, *, limits: CatalogLimits = DEFAULT_LIMITS, source: str = "") -> Page:
    """One page of ``GET /v0.1/servers`` (or a registry file): its entries, those skipped, and the next cursor.

    Raises:
        ValueError: the document is not a page of the registry API (no ``servers`` list).
    """
    if isinstance(data, list):
        servers: Sequence[Any] = data
        metadata: Any = {}
    elif isinstance(data, Mapping) and isinstance(data.get("servers"), list):
        servers, metadata = data["servers"], data.get("metadata")
    else:
        raise ValueError('not a page of the registry API: expected {"servers": [...], "metadata": {...}}')
    page = Page()
    for raw in servers:
        try:
            page.entries.append(read_entry(raw, limits=limits, source=source))
        except ServerEntryError as exc:
            page.skipped.append(exc)
    cursor = metadata.get("nextCursor", metadata.get("next_cursor")) if isinstance(metadata, Mapping) else None
    page.next_cursor = cursor if isinstance(cursor, str) and cursor and len(cursor) <= 1024 else None
    return page


def entries_of_file(data: object, *, limits: CatalogLimits = DEFAULT_LIMITS, source: str = "") -> Page:
    """A registry file (``--registry-file``): a page of the API, or a list of ``server.json`` documents."""
    page = read_page(data, limits=limits, source=source)
    page.next_cursor = None
    return page


def newest(entries: Iterable[CatalogEntry]) -> str:
    """The latest ``updatedAt`` among ``entries`` (``""`` when none says one): where ``updated_since`` resumes."""
    return max((e.updated_at for e in entries if e.updated_at), default="")
