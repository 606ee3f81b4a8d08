"""The served catalog: an immutable snapshot of every skill a server publishes. Sans-I/O.

A :class:`Catalog` is built once from the skills its sources loaded (bytes already in memory) and
answers the extension's questions — list a page, get an entry, find a file, list a directory —
without touching the filesystem or the network. Reloading builds a new catalog and swaps it in
whole, so a listing, a manifest and the bytes served always come from the same snapshot.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import unquote

from skilldeck.errors import NotServedError, SkillError, shorten
from skilldeck.server._dynamic import DynamicSkill
from skilldeck.server._remote import RemoteSkill
from skilldeck.skill import SCHEME, SKILL_MD, SkillEntry, SkillResource
from skilldeck.skill._api import (
    DIRECTORY_MIME_TYPE,
    DirectoryChild,
    SkillFile,
    StaticIndex,
    StaticSkill,
    directory_uri,
    file_uri,
    first_per_path,
    mime_type_for,
)

__all__ = ["Catalog", "CatalogDiff", "page_keys"]


@dataclass(frozen=True)
class CatalogDiff:
    """What a reload changed, by skill URI."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


# Measured with tracemalloc on a 10,000-skill catalog (3 files each): what a variant's indexes cost.
_FILE_BYTES = 430
_ENTRY_BYTES = 130
_MANIFEST_BYTES = 440
"""Per manifest line of an entry that is not shared (with its rendered skill, files map and frontmatter)."""

_CURSOR_PREFIX = "sd1."
"""Every cursor skilldeck hands out: this format tag, then the page's last key in URL-safe base64."""
_MAX_CURSOR = 16_384


def _encode_cursor(after: str) -> str:
    return _CURSOR_PREFIX + base64.urlsafe_b64encode(after.encode("utf-8")).decode("ascii")


def _decode_cursor(cursor: str) -> str:
    """The key a cursor of ours points after; anything else (another server's, edited, stale format) is refused.

    Keys are ``skill://`` URIs this catalog built, so a cursor that decodes to anything else was
    not handed out here, even when it is valid base64.
    """
    refused = NotServedError(f"invalid cursor {shorten(cursor, 80)!r}: pass back a nextCursor exactly as received")
    if len(cursor) > _MAX_CURSOR or not cursor.startswith(_CURSOR_PREFIX):
        raise refused
    try:
        after = base64.b64decode(cursor[len(_CURSOR_PREFIX) :].encode("ascii"), altchars=b"-_", validate=True)
        key = after.decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raise refused from None
    if not key.startswith(f"{SCHEME}://"):
        raise refused
    return key


def page_keys(keys: list[str], cursor: str | None, limit: int) -> tuple[list[str], str | None]:
    """Keyset pagination over sorted ``keys``: stable when the list changes between pages."""
    start = 0
    if cursor is not None:
        after = _decode_cursor(cursor)
        # bisect: first key strictly greater than `after`
        lo, hi = 0, len(keys)
        while lo < hi:
            mid = (lo + hi) // 2
            if keys[mid] <= after:
                lo = mid + 1
            else:
                hi = mid
        start = lo
    page = keys[start : start + limit]
    next_cursor = _encode_cursor(page[-1]) if start + limit < len(keys) and page else None
    return page, next_cursor


def _origin(item: StaticSkill | DynamicSkill | RemoteSkill) -> str:
    """Where a skill came from: a static skill's file, a dynamic skill's path, a remote skill's origin."""
    if isinstance(item, DynamicSkill):
        return item.skill_path
    return item.origin or item.skill_path


class Catalog(StaticIndex):
    """Everything one server publishes, frozen at one moment.

    Static skills are indexed by the URI of every file and every folder (prefix folders such as
    ``skill://acme/billing`` included); dynamic skills by their root, rendered per request; remote
    skills (:class:`~skilldeck.server._remote.RemoteSkill`) by their manifest, like static ones, with
    their bytes fetched on a read (a dynamic remote skill by its root, like a dynamic one).
    """

    def __init__(
        self,
        static: Iterable[StaticSkill] = (),
        dynamic: Iterable[DynamicSkill] = (),
        problems: Iterable[SkillError] = (),
        remote: Iterable[RemoteSkill] = (),
    ) -> None:
        super().__init__()
        self._problems = list(problems)
        self._static: dict[str, StaticSkill] = {}
        self._dynamic: dict[str, DynamicSkill] = {}
        self._remote: dict[str, RemoteSkill] = {}
        """Remote skills by the URI of their ``SKILL.md``."""
        self._remote_files: dict[str, tuple[RemoteSkill, SkillResource]] = {}
        self._remote_dynamic: dict[str, RemoteSkill] = {}
        dynamic_roots: list[str] = []
        items: list[StaticSkill | DynamicSkill | RemoteSkill] = [*static, *dynamic, *remote]
        for item in first_per_path(items, self._problems, origin=_origin):
            if isinstance(item, RemoteSkill):
                if not self._index_remote(item):
                    continue
                if isinstance(item.entry.resources, str):
                    dynamic_roots.append(item.skill_path)
                continue
            if isinstance(item, DynamicSkill):
                self._entries[item.entry.uri] = item.entry
                self._dynamic[directory_uri(item.skill_path)] = item
                dynamic_roots.append(item.skill_path)
                continue
            self._index(item)
            self._static[item.entry.uri] = item
        self._order = sorted(self._entries)
        # The namespace's folders (top segments, prefixes, skill roots, subfolders) are not kept: a folder
        # is the run of this sorted list its URI starts, every file's URI (the strings the manifests
        # hold) and each generated skill's SKILL.md. Two sets of every folder's path and URI held 38 MB
        # of 100,000 two-file skills, and listing one folder read every file's path.
        self._tree = sorted({*self._files, *self._remote_files, *(file_uri(root) for root in dynamic_roots)})
        self._listing: list[str] | None = None

    def _index_remote(self, item: RemoteSkill) -> bool:
        """Index a remote skill by its manifest; refuse (into problems) one whose URIs are not under its path."""
        root = item.root
        if item.entry.uri != f"{root}/{SKILL_MD}":
            self._problems.append(
                SkillError(f"entry {shorten(item.entry.uri)!r} is not served at {root}", path=_origin(item))
            )
            return False
        if isinstance(item.entry.resources, str):
            self._entries[item.entry.uri] = item.entry
            self._remote[item.entry.uri] = item
            self._remote_dynamic[root] = item
            return True
        for resource in item.entry.resources:
            rel = unquote(resource.uri[len(root) + 1 :]) if resource.uri.startswith(root + "/") else ""
            if not rel or file_uri(item.skill_path, rel) != resource.uri:
                self._problems.append(
                    SkillError(f"resource {shorten(resource.uri)!r} is not a file under {root}", path=_origin(item))
                )
                return False
        self._entries[item.entry.uri] = item.entry
        self._remote[item.entry.uri] = item
        for resource in item.entry.resources:  # every one checked above, before any is indexed
            self._remote_files.setdefault(resource.uri, (item, resource))
        return True

    # -- what is served ---------------------------------------------------------------------

    @property
    def entries(self) -> list[SkillEntry]:
        """Every entry, in URI order."""
        return [self._entries[uri] for uri in self._order]

    @property
    def problems(self) -> list[SkillError]:
        """Skills and files that were refused at load, each with its path and reason."""
        return list(self._problems)

    @property
    def files(self) -> list[SkillFile]:
        """Every static file, in URI order."""
        return [self._files[uri] for uri in sorted(self._files)]

    def __len__(self) -> int:
        return len(self._entries)

    def listing_keys(self, files: bool = True) -> list[str]:
        """The URIs ``resources/list`` pages over, in order: every static file and every entry's ``SKILL.md``.

        With ``files=False``, the entries' ``SKILL.md`` only. Sorted once per catalog (a snapshot, or
        one audience's variant) and kept, so a page costs a bisection, not a sort of every file.
        """
        if not files:
            return self._order
        if self._listing is None:
            self._listing = sorted(self._files.keys() | self._remote_files.keys() | self._entries.keys())
        return self._listing

    def footprint(self, shared_with: Catalog | None = None) -> int:
        """About how many bytes of memory this catalog holds beyond what it shares with ``shared_with``.

        Its indexes (per file, about ``_FILE_BYTES`` plus the URI three times over; per entry
        ``_ENTRY_BYTES``), plus the bytes of every file and the manifest of every entry that are not
        the very objects ``shared_with`` serves (rendered ones). An estimate for cache budgets.
        """
        total = len(self._entries) * _ENTRY_BYTES
        for uri, found in self._files.items():
            total += _FILE_BYTES + 3 * len(uri)
            other = shared_with._files.get(uri) if shared_with is not None else None
            if other is None or other.data is not found.data:
                total += len(found.data)
        total += sum(_FILE_BYTES + 3 * len(uri) for uri in self._remote_files)
        for uri, entry in self._entries.items():
            if shared_with is None or shared_with._entries.get(uri) is not entry:
                total += _MANIFEST_BYTES * (1 if isinstance(entry.resources, str) else len(entry.resources) + 1)
        return total

    def entry(self, uri: str) -> SkillEntry | None:
        """The entry whose ``SKILL.md`` is at ``uri``, if any (:meth:`get` without the error)."""
        return self._entries.get(uri)

    @property
    def dynamic_skills(self) -> list[DynamicSkill]:
        return list(self._dynamic.values())

    def static_skill(self, uri: str) -> StaticSkill | None:
        return self._static.get(uri)

    @property
    def remote_skills(self) -> list[RemoteSkill]:
        """Every remote skill, in URI order."""
        return [self._remote[uri] for uri in sorted(self._remote)]

    def remote_file(self, uri: str) -> tuple[RemoteSkill, SkillResource | None] | None:
        """The remote skill serving ``uri`` and its manifest line (``None`` inside a dynamic one), if any."""
        found = self._remote_files.get(uri)
        if found is not None:
            return found
        for root, skill in self._remote_dynamic.items():
            if uri.startswith(root + "/"):
                return skill, None
        return None

    # -- the extension's questions -----------------------------------------------------------

    def list_page(self, cursor: str | None, limit: int) -> tuple[list[SkillEntry], str | None]:
        """One page of entries after ``cursor``; entries are never split across pages.

        Raises:
            NotServedError: ``cursor`` is not one this server handed out.
        """
        uris, next_cursor = page_keys(self._order, cursor, limit)
        return [self._entries[uri] for uri in uris], next_cursor

    def dynamic_skill_for(self, uri: str) -> tuple[DynamicSkill, str] | None:
        """The dynamic skill owning ``uri`` and the file's path inside it, or ``None``."""
        for root, dyn in self._dynamic.items():
            if uri.startswith(root + "/"):
                return dyn, uri[len(root) + 1 :]
        return None

    def dynamic_root(self, uri: str) -> tuple[DynamicSkill, str] | None:
        """For a directory URI at or inside a dynamic skill: the skill and the folder path inside it."""
        for root, dyn in self._dynamic.items():
            if uri == root:
                return dyn, ""
            if uri.startswith(root + "/"):
                return dyn, uri[len(root) + 1 :]
        return None

    def _under(self, uri: str) -> tuple[int, int]:
        """The run of :attr:`_tree` inside the folder ``uri``: ``(start, end)``, empty when it is not one.

        Every URI of the tree is canonical (each segment encoded as :func:`directory_uri` does), so a
        folder URI spelled another way, or one that is a file, starts no run."""
        top = f"{SCHEME}://"
        if len(uri) <= len(top) or not uri.startswith(top) or uri.endswith("/"):
            return 0, 0
        start = bisect.bisect_left(self._tree, uri + "/")
        end = bisect.bisect_left(self._tree, uri + "0", start)  # "0" follows "/": past every URI under it
        return start, end

    def is_directory(self, uri: str) -> bool:
        start, end = self._under(uri)
        return end > start

    def directory_children(self, uri: str) -> list[DirectoryChild]:
        """Direct children of the static directory resource at ``uri`` (prefix folders included).

        Raises:
            NotServedError: ``uri`` is not a directory this server serves.
        """
        start, end = self._under(uri)
        if end <= start:
            raise NotServedError(self._not_a_directory(uri), uri=uri)
        for root in self._remote_dynamic:
            if uri == root or uri.startswith(root + "/"):
                raise NotServedError(
                    f"{shorten(uri)} is in a generated skill held by another server; its folders are not listed "
                    f"here: read {root}/{SKILL_MD}",
                    uri=uri,
                )
        found: dict[str, DirectoryChild] = {}
        base = len(uri) + 1
        for inside in self._tree[start:end]:
            segment, sep, _ = inside[base:].partition("/")
            name = unquote(segment)
            if sep:  # a folder (a generated skill's root among them)
                if name not in found:
                    found[name] = DirectoryChild(
                        uri=inside[: base + len(segment)], name=name, mime_type=DIRECTORY_MIME_TYPE
                    )
                continue
            size = self._file_size(inside)
            if size is not None:  # not a generated skill's SKILL.md, which is read, not listed
                found[name] = DirectoryChild(uri=inside, name=name, mime_type=mime_type_for(name), size=size)
        return [found[name] for name in sorted(found)]

    def _file_size(self, uri: str) -> int | None:
        """The size of the served file at ``uri`` (``None``: no file of its own is served there)."""
        static = self._files.get(uri)
        if static is not None:
            return len(static.data)
        remote = self._remote_files.get(uri)
        return remote[1].size if remote is not None else None

    def _not_a_directory(self, uri: str) -> str:
        if uri in self._files or uri in self._remote_files or self.dynamic_skill_for(uri) is not None:
            return f"{shorten(uri)} is not a directory resource"
        return f"No directory is served at {shorten(uri)}"

    @staticmethod
    def page_children(
        children: list[DirectoryChild], cursor: str | None, limit: int
    ) -> tuple[list[DirectoryChild], str | None]:
        """One page of directory children, keyed by URI like :meth:`list_page`."""
        by_uri = {child.uri: child for child in children}
        keys, next_cursor = page_keys(sorted(by_uri), cursor, limit)
        return [by_uri[k] for k in keys], next_cursor

    @cached_property
    def version(self) -> str:
        """A digest of every entry (URI, frontmatter, manifest): equal on two servers exactly when they list the same.

        ``skills/list`` carries it in ``_meta["dev.skilldeck/catalogVersion"]``, so a host talking to
        replicas behind a load balancer can tell, during a rollout, that two answers come from
        different versions of the catalog. Computed once per snapshot.
        """
        digest = hashlib.sha256()
        for uri in self._order:
            digest.update(json.dumps(self._entries[uri].to_wire(), sort_keys=True, separators=(",", ":")).encode())
            digest.update(b"\n")
        return "sha256:" + digest.hexdigest()

    def diff(self, newer: Catalog) -> CatalogDiff:
        """What changed from this catalog to ``newer``."""
        old, new = self._entries, newer._entries
        return CatalogDiff(
            added=tuple(sorted(set(new) - set(old))),
            removed=tuple(sorted(set(old) - set(new))),
            changed=tuple(sorted(u for u in set(old) & set(new) if old[u].to_wire() != new[u].to_wire())),
        )
