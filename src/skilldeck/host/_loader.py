"""Lazy, verified loading of one skill from one origin.

The order is the Skills extension's: nothing is fetched until a skill is loaded; loading reads
``SKILL.md`` only, checks its size, then its digest, then parses its frontmatter and compares it
field by field with the listed entry — before any other file of the skill is read. The loader
then *holds* that entry: a supporting file is read only if the held entry lists it, and is
verified the same way; an unlisted file is a verification failure. After any mismatch the
loader fetches the current entry with ``skills/get`` and reports the skill as changed, so the
caller re-approves instead of using stale or tampered bytes.

Every byte counts against a per-origin budget, checked against the listed size *before* a
fetch, so one server cannot make the host download without bound. ``"dynamic"`` skills are
refused unless the caller opts in; they are then loaded unverified and marked so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Literal
from urllib.parse import unquote

from skilldeck.errors import (
    BudgetExceeded,
    CrossOriginRead,
    DynamicSkillRefused,
    EntryError,
    PeerError,
    SkillChanged,
    UnknownFile,
    VerificationError,
)
from skilldeck.host._cache import ContentCache, VerifiedBytes
from skilldeck.host._port import SkillIndex
from skilldeck.host._verify import same_json, verify_bytes, verify_skill_md
from skilldeck.skill import (
    SkillEntry,
    SkillResource,
    entry_from_wire,
    parse_skill_md,
    resolve_reference,
    skill_root_uri,
)
from skilldeck.skill._api import MAX_SKILL_BYTES, neutralise_tags

__all__ = [
    "DEFAULT_BUDGET",
    "LoadedSkill",
    "SkillLoader",
]

DEFAULT_BUDGET = 64 * 1024 * 1024
"""Bytes one origin may make the host download in a session (64 MiB)."""


@dataclass
class LoadedSkill:
    """A skill the host is acting on: the held entry and the verified ``SKILL.md``."""

    label: str
    origin: Literal["mcp", "local"]
    entry: SkillEntry
    text: str
    verified: bool
    files: dict[str, bytes] = field(default_factory=dict)
    """Supporting files read so far (URI to verified bytes)."""

    @property
    def uri(self) -> str:
        return self.entry.uri

    @property
    def body(self) -> str:
        return parse_skill_md(self.text).body

    def listed_files(self) -> list[str]:
        """URIs the held entry lists (empty for dynamic skills)."""
        return [] if isinstance(self.entry.resources, str) else [r.uri for r in self.entry.resources]

    def tagged(self, text: str | None = None, uri: str | None = None) -> str:
        """Content wrapped with its origin, as it must enter the model's context.

        Attribute values are escaped and the content cannot open or close a tag of its own, so a
        server cannot forge another origin or a ``verified`` mark.
        """
        trust = "verified" if self.verified else "unverified"
        body = neutralise_tags(self.text if text is None else text)
        origin, label, where = (escape(v, quote=True) for v in (self.origin, self.label, uri or self.uri))
        head = f'<skill-content origin="{origin}" server="{label}" uri="{where}" {trust}="true">'
        return f"{head}\n{body}\n</skill-content>"


class SkillLoader:
    """Loads skills from one origin (a :class:`SkillIndex`) under one byte budget."""

    def __init__(
        self,
        index: SkillIndex,
        *,
        budget_bytes: int = DEFAULT_BUDGET,
        allow_dynamic: bool = False,
        cache: ContentCache | None = None,
        budget_window: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        held: VerifiedBytes | None = None,
    ) -> None:
        self.index = index
        self.label = index.label
        self.budget_bytes = budget_bytes
        self.budget_window = budget_window
        """Seconds after which the budget starts again (``None``: once per loader, as for one CLI run).

        A long-running host (the gateway) sets one, so a server gets ``budget_bytes`` per window
        rather than once in the life of the process."""
        self.allow_dynamic = allow_dynamic
        self.cache = cache if index.origin == "mcp" else None
        self.held = held if index.origin == "mcp" else None
        """Verified bytes held in memory (shared by the host's loaders): a listed file held is not fetched again."""
        self.used_bytes = 0
        self._clock = clock
        self._window_start = clock()

    def _roll(self) -> None:
        if self.budget_window is not None and self._clock() - self._window_start >= self.budget_window:
            self._window_start = self._clock()
            self.used_bytes = 0

    # -- fetching under the budget -------------------------------------------------------------------

    def _reserve(self, uri: str, size: int) -> None:
        self._roll()
        if self.used_bytes + size > self.budget_bytes:
            raise BudgetExceeded(
                f"reading {uri} ({size} bytes) would pass this server's budget of {self.budget_bytes} bytes "
                f"({self.used_bytes} already read)",
                label=self.label,
            )

    def _reserve_unknown(self, uri: str) -> None:
        """Before a read of unknown size (dynamic content): refuse once the budget is spent."""
        self._roll()
        if self.used_bytes >= self.budget_bytes:
            raise BudgetExceeded(
                f"reading {uri} would pass this server's budget of {self.budget_bytes} bytes "
                f"({self.used_bytes} already read)",
                label=self.label,
            )

    def _account(self, uri: str, data: bytes) -> None:
        """Count bytes received; content that took the server past its budget is not used."""
        self.used_bytes += len(data)
        if self.used_bytes > self.budget_bytes:
            raise BudgetExceeded(
                f"{uri} took this server past its budget of {self.budget_bytes} bytes; the content was discarded",
                label=self.label,
            )

    async def _fetch_listed(self, resource: SkillResource) -> bytes:
        if self.held is not None:
            held = self.held.get(self.label, resource.digest, resource.size)
            if held is not None:
                return held
        if self.cache is not None:
            cached = self.cache.get(self.label, resource.uri, resource.digest)
            if cached is not None:
                return cached
        self._reserve(resource.uri, resource.size)
        data = await self.index.read(resource.uri)
        self.used_bytes += len(data)
        verify_bytes(resource.uri, data, size=resource.size, digest=resource.digest, label=self.label)
        if self.held is not None:
            self.held.put(self.label, resource.digest, data)
        return data

    async def _changed(self, failure: VerificationError, entry: SkillEntry) -> SkillChanged | VerificationError:
        """After a mismatch: refresh the entry; a different one means the skill changed."""
        try:
            current = entry_from_wire(await self.index.get_entry(entry.uri))
        except (PeerError, EntryError):
            return failure  # no usable current entry: the failure stands as it is
        if current.uri != entry.uri:  # an answer about another skill is no refresh of this one
            return failure
        if not same_json(current.to_wire(), entry.to_wire()):
            return SkillChanged(failure, current)
        return failure

    # -- the acting window ---------------------------------------------------------------------------

    async def load(self, entry: SkillEntry) -> LoadedSkill:
        """Fetch and verify ``SKILL.md`` against ``entry``; return the skill with the entry held.

        Raises:
            DynamicSkillRefused: a ``"dynamic"`` skill and the loader was not told to allow them.
            BudgetExceeded: the file would pass the origin's budget (nothing fetched).
            VerificationError: size, digest or frontmatter mismatch (``SkillChanged`` when the
                server's current entry differs).
        """
        if isinstance(entry.resources, str):
            if not self.allow_dynamic:
                raise DynamicSkillRefused(
                    f'[{self.label}] {entry.uri} is generated per request (resources: "dynamic") and cannot be '
                    "verified; load it only if you trust this server (allow_dynamic=True, or --allow-dynamic)"
                )
            self._reserve_unknown(entry.uri)
            data = await self.index.read(entry.uri)
            self._account(entry.uri, data)
            if len(data) > MAX_SKILL_BYTES:
                raise BudgetExceeded(f"{entry.uri} is over the 16 MiB per-skill limit", label=self.label)
            text = verify_skill_md(entry.uri, data, entry.frontmatter, label=self.label)
            return LoadedSkill(self.label, self.index.origin, entry, text, verified=False)
        skill_md = next(r for r in entry.resources if r.uri == entry.uri)
        try:
            data = await self._fetch_listed(skill_md)
            text = verify_skill_md(entry.uri, data, entry.frontmatter, label=self.label)
        except VerificationError as failure:
            raise await self._changed(failure, entry) from None
        if self.cache is not None:
            self.cache.put(self.label, entry.uri, data)
        return LoadedSkill(self.label, self.index.origin, entry, text, verified=True)

    def resolve(self, loaded: LoadedSkill, reference: str) -> str:
        """The URI a reference inside the skill points at, or an error if it leaves the skill or origin.

        Raises:
            CrossOriginRead: the reference names another scheme root than this skill's.
            VerificationError: the reference climbs out of the skill root (``check="unlisted"``).
        """
        root = skill_root_uri(loaded.uri) or ""
        if "://" in reference:
            segments = unquote(reference[len(root) + 1 :]).replace("\\", "/").split("/")
            if not reference.startswith(root + "/") or any(s in (".", "..", "") for s in segments):
                raise CrossOriginRead(
                    f"{reference} is not a file of {loaded.uri} on {loaded.label}; reads stay within the skill's "
                    "own server and folder"
                )
            return reference
        resolved = resolve_reference(loaded.uri, reference)
        if resolved is None:
            raise VerificationError(
                f"reference {reference!r} leaves the skill folder", uri=loaded.uri, check="unlisted", label=self.label
            )
        return resolved

    def listed(self, loaded: LoadedSkill, reference: str) -> str:
        """The URI of a file the held entry lists, for a name a user gave (``--file``).

        A name the entry does not list is a typo to report with the skill's files, not a change to
        the skill (as an unlisted file a read comes across is): nothing is read or refreshed.

        Raises:
            UnknownFile: the entry does not list it (the message lists the files it does).
            CrossOriginRead, VerificationError: as :meth:`resolve`.
        """
        uri = self.resolve(loaded, reference)
        listed = loaded.listed_files()
        if isinstance(loaded.entry.resources, str) or uri in listed:
            return uri
        root = skill_root_uri(loaded.uri) or ""
        names = [unquote(u[len(root) + 1 :]) for u in listed if u != loaded.uri]
        files = f"its files are: {', '.join(names)}" if names else "it has no files besides SKILL.md"
        raise UnknownFile(
            f"{loaded.uri} on {loaded.label} lists no file {reference!r}; {files} (paths are relative to the skill folder)"
        )

    async def read(self, loaded: LoadedSkill, reference: str) -> bytes:
        """Read a supporting file of a loaded skill: only if the held entry lists it, and verified.

        Raises:
            CrossOriginRead: the skill belongs to another origin, or the reference leaves the skill.
            VerificationError: the file is not listed (``check="unlisted"``) or fails size/digest.
            BudgetExceeded: the file would pass the origin's budget.
        """
        if loaded.label != self.label:
            raise CrossOriginRead(
                f"{loaded.uri} was loaded from {loaded.label!r}; this loader reads from {self.label!r} only"
            )
        uri = self.resolve(loaded, reference)
        if isinstance(loaded.entry.resources, str):
            self._reserve_unknown(uri)
            data = await self.index.read(uri)
            self._account(uri, data)
            if sum(map(len, loaded.files.values())) + len(data) > MAX_SKILL_BYTES:
                raise BudgetExceeded(f"{loaded.uri} passed the 16 MiB per-skill limit", label=self.label)
            loaded.files[uri] = data
            return data
        listed = {r.uri: r for r in loaded.entry.resources}
        resource = listed.get(uri)
        if resource is None:
            failure = VerificationError(
                "is not listed in the held entry; an unlisted file is a change to the skill",
                uri=uri,
                check="unlisted",
                label=self.label,
            )
            raise await self._changed(failure, loaded.entry)
        try:
            data = await self._fetch_listed(resource)
        except VerificationError as failure:
            raise await self._changed(failure, loaded.entry) from None
        if self.cache is not None:
            self.cache.put(self.label, uri, data)
        loaded.files[uri] = data
        return data
