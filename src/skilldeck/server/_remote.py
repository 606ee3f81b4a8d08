"""Remote skills: served here, held elsewhere — the entry is known, the bytes are fetched when read. Sans-I/O.

A :class:`RemoteSkill` is what a server re-publishes from another origin (the gateway serves
every upstream's skills this way): its entry is published as it came (same digests and sizes,
URIs moved under the skill path it is served at), and nothing is fetched until a client reads a
file. Then :meth:`RemoteSkill.read` asks its ``fetch`` for the bytes and checks them against the
entry before anything is passed on: a file the entry does not list, or bytes whose size or
digest differ, are an error, never content. A ``"dynamic"`` remote skill (published only when
its server opted in) has nothing to check against; its fetch answers for what it returns.

A :class:`RemoteSource` hands the server its current remote skills on each load
(:meth:`~skilldeck.server._service.SkillService.load`), so a reload re-reads them like folders.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from skilldeck.errors import NotServedError, VerificationError, shorten
from skilldeck.skill import SkillEntry, SkillResource, digest_of
from skilldeck.skill._api import directory_uri

__all__ = ["Fetch", "RemoteSkill", "RemoteSource"]

Fetch = Callable[[str], Awaitable[bytes]]
"""The bytes of the file served at a URI (of the remote skill), from wherever the skill is held."""


@dataclass(frozen=True)
class RemoteSkill:
    """A skill whose entry is known and whose bytes are fetched on a read (see the module docs).

    Args:
        skill_path: where it is served (``docs/acme/billing``); the entry's URIs are under it.
        entry: its entry as served: the origin's frontmatter, digests and sizes.
        fetch: the bytes of one of its files, by served URI.
        key: the id a policy admits it by (``LABEL/NAME`` on a gateway); its name when empty.
        origin: where it is held, for reports.
    """

    skill_path: str
    entry: SkillEntry
    fetch: Fetch
    key: str = ""
    origin: str = ""

    @property
    def policy_key(self) -> str:
        return self.key or self.entry.name

    @property
    def root(self) -> str:
        return directory_uri(self.skill_path)

    def resource(self, uri: str) -> SkillResource | None:
        """The manifest line of ``uri`` (``None`` for a dynamic skill or a file it does not list)."""
        if isinstance(self.entry.resources, str):
            return None
        return next((r for r in self.entry.resources if r.uri == uri), None)

    async def read(self, uri: str) -> bytes:
        """The bytes at ``uri``, fetched and checked against the entry (size, then digest).

        Raises:
            NotServedError: ``uri`` is not a file of this skill.
            VerificationError: the fetched bytes are not those the entry lists (nothing is returned).
            SkilldeckError: whatever ``fetch`` raised (the origin was unreachable, refused, over budget).
        """
        if isinstance(self.entry.resources, str):
            if not uri.startswith(self.root + "/"):
                raise NotServedError(f"{shorten(uri)} is not a file of {self.entry.uri}", uri=uri)
            return await self.fetch(uri)
        resource = self.resource(uri)
        if resource is None:
            raise NotServedError(f"{shorten(uri)} is not a file of {self.entry.uri}", uri=uri)
        data = await self.fetch(uri)
        if len(data) != resource.size or digest_of(data) != resource.digest:
            raise VerificationError(
                f"the origin ({self.origin or 'remote'}) sent {len(data)} bytes hashing to {digest_of(data)}; "
                f"the entry lists {resource.size} bytes, {resource.digest}. Nothing was served; "
                "list the skills again (the skill may have changed) and retry",
                uri=uri,
                check="digest",
            )
        return data


@runtime_checkable
class RemoteSource(Protocol):
    """Where a server's remote skills come from; asked again on every load."""

    def remote_skills(self) -> Iterable[RemoteSkill]:
        """The remote skills to serve now. Called on the event loop's thread or a worker: do no I/O."""
        ...
