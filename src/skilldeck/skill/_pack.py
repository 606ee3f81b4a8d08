"""The skill pack: a folder of skills read into memory, for the server and the host alike.

This is the only filesystem I/O below ``skilldeck.server`` and ``skilldeck.host``: a server serves
what it reads (its :class:`~skilldeck.server._catalog.Catalog` is built from the skills loaded here), and
a host reads its local skills through :class:`Pack`. Neither side owns the format of a pack.

:class:`DirectorySource` walks one or more folders: every folder holding a ``SKILL.md`` is a skill,
its path below the root is its skill path (``acme/billing/refunds``), and every file under it is
read into memory at load, so the manifest published always matches the bytes served, whatever
happens on disk afterwards. What cannot be served safely is refused and reported, never served:

* a symlink whose target lies outside the root (or a symlinked folder, which is not followed);
* a special file (FIFO, socket, device) or a file that cannot be read;
* a skill whose ``SKILL.md`` is not valid, whose name differs from its folder, or that is over
  the per-skill limits (512 files, 16 MiB);
* folders nested more than :data:`MAX_DEPTH` levels below the root.

Nothing below a root is opened by path: each folder and file is opened relative to its parent's
descriptor with ``O_NOFOLLOW`` and read from the descriptor that was checked
(:mod:`skilldeck.skill._beneath`), so renames racing with a load (a folder swapped for a symlink to
``/etc``) can make a file fail to load but can never publish a byte from outside the root. A root of
:data:`PARALLEL_FROM` top folders or more is read by this process and worker processes side by side
(:mod:`skilldeck.skill._workers`), with the same checks and the same result.

A refused *file* leaves the rest of its skill served; a refused *skill* leaves the other skills
served. Each refusal is a :class:`~skilldeck.errors.SkillError` naming the path and the rule.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import itertools
import logging
import os
import pickle
import stat
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from skilldeck.errors import FrontmatterError, NotServedError, SkillError, SourceError, shorten
from skilldeck.skill._beneath import (
    O_FOLDER,
    Listing,
    Root,
    _Escape,
    _NotRegular,
    entry_name,
    open_beneath,
    read_at_most,
)
from skilldeck.skill._frontmatter import parse_skill_md, validate_frontmatter
from skilldeck.skill._manifest import (
    MAX_RESOURCES_PER_SKILL,
    MAX_SKILL_BYTES,
    SkillEntry,
    build_entry,
    check_limits,
)
from skilldeck.skill._static import DirectoryChild, LoadResult, SkillFile, StaticSkill, children_of
from skilldeck.skill._uri import SKILL_MD, file_uri, mime_type_for
from skilldeck.skill._workers import MAX_PROCESSES, Part, Worker, _WorkerFailed, this_package, usable_cpus

__all__ = [
    "DEFAULT_IGNORE",
    "MAX_DEPTH",
    "MAX_PROCESSES",
    "PARALLEL_FROM",
    "DirectoryChild",
    "DirectorySource",
    "LoadResult",
    "Pack",
    "SkillFile",
    "StaticIndex",
    "StaticSkill",
    "children_of",
    "first_per_path",
    "load_all",
]

_log = logging.getLogger(__name__)

MAX_DEPTH = 32
"""Folder levels below a root that are walked; deeper folders are reported and not read."""

PARALLEL_FROM = 2_000
"""Top folders a root needs before :class:`DirectorySource` reads it with several processes."""

DEFAULT_IGNORE = frozenset({".git", ".hg", ".svn", "__pycache__", ".DS_Store", ".pytest_cache", ".mypy_cache"})
"""Names never treated as skill files (version-control and cache folders)."""


class DirectorySource:
    """Skills from folders on disk.

    Args:
        roots: folders to scan. A root that itself holds a ``SKILL.md`` is one skill, served
            under the root's own name.
        prefix: an organizational prefix put before every skill path (``"acme"`` serves
            ``billing/refunds`` as ``acme/billing/refunds``).
        ignore: file and folder names to skip.
        processes: how many processes read a root of at least ``parallel_from`` top folders, this
            one included: the others each read a run of them and send back the skills and problems
            (the same as one process finds, in the same order). ``None``: the CPUs this process may
            run on, at most :data:`MAX_PROCESSES`; ``1`` reads everything here.
        parallel_from: top folders a root needs before it is read by several processes (starting
            one costs about a tenth of a second of CPU; 100,000 skills take seven seconds alone).

    Raises:
        SourceError: a root does not exist or is not a folder, or ``processes`` or ``parallel_from``
            is below 1.
    """

    def __init__(
        self,
        *roots: str | os.PathLike[str],
        prefix: str = "",
        ignore: Iterable[str] = DEFAULT_IGNORE,
        processes: int | None = None,
        parallel_from: int = PARALLEL_FROM,
    ) -> None:
        if not roots:
            raise SourceError("DirectorySource needs at least one folder", rule="no-roots")
        if processes is not None and processes < 1:
            raise SourceError(f"processes is {processes}; give 1 or more (1 reads in this process)", rule="processes")
        if parallel_from < 1:
            raise SourceError(f"parallel_from is {parallel_from}; give 1 or more", rule="processes")
        self.processes = usable_cpus() if processes is None else processes
        self.parallel_from = parallel_from
        self.roots: tuple[Path, ...] = tuple(Path(r) for r in roots)
        for root in self.roots:
            if not root.is_dir():
                raise SourceError("is not a folder (pass the folder that holds your skills)", path=str(root))
        self.prefix = prefix.strip("/")
        self.ignore = frozenset(ignore)

    def load(self) -> LoadResult:
        """Scan every root and snapshot every skill. Blocking I/O: run it off the event loop."""
        result = LoadResult()
        served: dict[str, str] = {}
        for root in self.roots:
            skills = self._load_root(root, result.problems)
            result.skills += first_per_path(skills, result.problems, origin=_origin, served=served)
        return result

    # -- one root ------------------------------------------------------------------------------
    #
    # Every open below the root is relative to a descriptor already held (openat style), with
    # O_NOFOLLOW at every component, so a folder swapped for a symlink at any moment makes that
    # open fail instead of leading outside the root. Symlinked *files* are resolved by
    # :func:`open_beneath`, one component at a time from the root descriptor, and refused as
    # soon as they would leave it. Bytes are read from the descriptor that was checked.

    def _load_root(self, root: Path, problems: list[SkillError]) -> list[StaticSkill]:
        with contextlib.ExitStack() as held:
            try:
                ctx = held.enter_context(Root.open(root))
            except OSError as exc:
                problems.append(
                    SourceError(
                        f"cannot be opened ({exc.strerror or exc}); no skills served from it",
                        path=str(root),
                        rule="unreadable",
                    )
                )
                return []
            found: list[SkillError] = []  # only depth is reported from here; the rest when a skill is read
            listing = self._list(ctx, ctx.fd, (), found)
            if listing is None:  # the root opened but cannot be listed: said, not served empty in silence
                problems.extend(found)
                return []
            folders, files, refused = listing
            chunks = self._chunks(folders) if SKILL_MD not in files else [folders]  # a root that is a skill: here
            # Each run of top folders but the first goes to a worker process of its own, started first; this
            # process reads the first run meanwhile. A worker is this Python running :func:`_worker_main`: it
            # opens the root by its configured path and reads the top folders of its run (as listed here),
            # with every check made here, and sends back its skills and problems as a pickle in a temporary
            # file. Not :mod:`multiprocessing`: that would run the importing program's main script again in
            # each worker. A run whose worker fails (cannot start, dies, sends nothing readable) is read here
            # instead, and said in a warning: the result is the same, only slower.
            workers = [Worker.start(ctx.path, self.prefix, self.ignore, chunk) for chunk in chunks[1:]]
            try:
                # the walk takes the root's listing, cut to the first run, instead of listing the root again
                ctx.listings[()] = (chunks[0], files, refused)
                parts = [self._read(ctx, self._walk(ctx, ctx.fd, (), found, skip_listed=True), found)]
                for chunk, worker in zip(chunks[1:], workers, strict=True):
                    try:
                        parts.append(Part.unpacked(worker.result()))
                    except (_WorkerFailed, ValueError, TypeError) as exc:  # the last two: columns of another shape
                        _log.warning("%s; read here instead (slower, the same skills)", exc)
                        parts.append(self._read_run(ctx, chunk))
            finally:
                for worker in workers:
                    worker.close()
            return self._merge(problems, parts)

    def _chunks(self, folders: list[str]) -> list[list[str]]:
        """The root's top folders in ``processes`` runs, or one run when there are fewer than
        ``parallel_from`` (starting a process costs more than it saves on a small pack).

        The first run, read here, is half as long again as each other: a worker also starts Python
        and sends its skills back, and this process unpacks them (about 1 s and 12 us per skill
        on 100,000 skills, against about 70 us per skill to read one)."""
        count = min(self.processes if len(folders) >= self.parallel_from else 1, len(folders))
        if count < 2:
            return [folders]
        share = len(folders) / (count + 0.5)
        cuts = [0, round(1.5 * share), *(round(1.5 * share + i * share) for i in range(1, count - 1)), len(folders)]
        return [folders[a:b] for a, b in itertools.pairwise(cuts)]

    def _read_run(self, ctx: Root, folders: list[str]) -> Part:
        """Read the skills below the root's top ``folders`` (a worker's run, or one read here instead)."""
        found: list[SkillError] = []
        return self._read(ctx, self._walk_children(ctx, ctx.fd, (), folders, found, skip_listed=True), found)

    def _read(
        self,
        ctx: Root,
        walk: Iterator[tuple[tuple[str, ...], int, list[str], dict[str, bool]]],
        found: list[SkillError],
    ) -> Part:
        """Read every skill ``walk`` finds. The walk is top-down with each folder's names sorted, so skills
        come in the order of their paths; each is read as soon as it is found, while its folders' listings
        are fresh (see :meth:`_walk`)."""
        part = Part()
        for parts, fd, _folders, files in walk:
            if SKILL_MD in files:
                rel = ctx.name if not parts else "/".join(parts)
                skill_path = f"{self.prefix}/{rel}" if self.prefix else rel
                try:
                    part.skills.append(self._load_skill(ctx, fd, parts, skill_path, part.refused))
                except SkillError as exc:
                    part.refused.append(exc)
                continue
            for name in files:
                if name.lower() == SKILL_MD.lower():  # skill.md, Skill.md: said, not silently skipped
                    part.misnamed.append(
                        SkillError(
                            f"not a skill: the file must be named {SKILL_MD} (in capitals); rename it",
                            path=ctx.shown_path(*parts, name),
                            rule="skill-md-name",
                        )
                    )
        part.deep = [p for p in found if p.rule == "limit-depth"]
        return part

    @staticmethod
    def _merge(problems: list[SkillError], parts: list[Part]) -> list[StaticSkill]:
        """The skills of ``parts`` in order; their problems into ``problems``: the misnamed files first, then
        what the skills refused, then folders too deep (each once, and not if said already)."""
        for part in parts:
            problems.extend(part.misnamed)
        for part in parts:
            problems.extend(part.refused)
        reported = {str(p) for p in problems}
        for part in parts:
            for p in part.deep:
                if str(p) not in reported:
                    reported.add(str(p))
                    problems.append(p)
        return [skill for part in parts for skill in part.skills]

    def _load_skill(
        self, ctx: Root, folder_fd: int, parts: tuple[str, ...], skill_path: str, problems: list[SkillError]
    ) -> StaticSkill:
        """Read the skill in the folder the root walk holds open as ``folder_fd`` (at ``parts``; opened with
        ``O_NOFOLLOW`` at every component, and listed). The root walk owns the descriptor and closes it."""
        skill_dir = ctx.shown_path(*parts)
        files: dict[str, bytes] = {}
        total = 0
        walk = self._walk_files(ctx, folder_fd, parts, problems)
        try:
            for rel, path, dir_fd, dir_parts, name, plain in walk:
                data = self._read_file(ctx, dir_fd, dir_parts, name, path, problems, plain=plain)
                if data is None:
                    if rel == SKILL_MD:
                        raise SkillError(
                            "SKILL.md cannot be served (see the problem above)", path=path, rule="skill-md"
                        )
                    continue
                files[rel] = data
                total += len(data)
                if total > MAX_SKILL_BYTES or len(files) > MAX_RESOURCES_PER_SKILL:
                    # Stop reading early; check_limits below words the error.
                    check_limits(skill_dir, {**{p: len(d) for p, d in files.items()}})
        finally:
            walk.close()
        if SKILL_MD not in files:
            raise SkillError("has no readable SKILL.md", path=skill_dir, rule="skill-md")
        skill_md = ctx.shown_path(*parts, SKILL_MD)
        try:
            text = files[SKILL_MD].decode("utf-8")
        except UnicodeDecodeError as exc:
            line = files[SKILL_MD].count(b"\n", 0, exc.start) + 1
            raise FrontmatterError(
                f"SKILL.md is not valid UTF-8 (line {line}); save it as UTF-8", path=skill_md, rule="encoding"
            ) from None
        parsed = parse_skill_md(text, path=skill_md)
        folder = parts[-1] if parts else ctx.name
        validate_frontmatter(parsed.frontmatter, directory_name=folder, path=skill_md)
        frontmatter = parsed.frontmatter
        if frontmatter.get("name") == folder:  # as validated: the folder's name, one string for both
            frontmatter = {**frontmatter, "name": folder}
        try:
            entry = build_entry(skill_path, frontmatter, files)
        except SkillError as exc:
            raise type(exc)(exc.reason, path=skill_dir, rule=exc.rule) from None
        return StaticSkill(skill_path=skill_path, entry=entry, files=files, origin=skill_dir)

    def _walk_files(
        self, ctx: Root, skill_fd: int, parts: tuple[str, ...], problems: list[SkillError]
    ) -> Generator[tuple[str, str, int, tuple[str, ...], str, bool], None, None]:
        """Every file of one skill: ``(path in the skill, path for messages, folder fd, folder parts, name,
        plain)``; ``plain``: the listing saw a regular file (not a symlink or a special file).

        The folder descriptor stays open until the consumer asks for the next file, so the file
        is read from the folder that was listed. A folder the root walk listed is not listed
        again (see :meth:`_walk`).
        """
        depth = len(parts)
        for here, dir_fd, _folders, files in self._walk(ctx, skill_fd, parts, problems):
            inside = "/".join(here[depth:])
            prefix = f"{inside}/" if inside else ""
            for name, plain in files.items():
                yield sys.intern(prefix + name), ctx.shown_path(*here, name), dir_fd, here, name, plain

    def _walk(
        self,
        ctx: Root,
        dir_fd: int,
        parts: tuple[str, ...],
        problems: list[SkillError],
        *,
        skip_listed: bool = False,
    ) -> Iterator[tuple[tuple[str, ...], int, list[str], dict[str, bool]]]:
        """Top-down walk from an open folder, never through a symlink: ``(parts, fd, folders, files)``.

        Files are everything that is not a folder (symlinks to files and dangling symlinks
        included: reading them decides), each with whether the listing saw a regular file.
        Symlinked folders are not followed; they and folders nested over :data:`MAX_DEPTH` levels
        are reported to ``problems``.

        Two walks pass through a skill's folders in one load: the root's, which finds skills (and
        skills nested in them), and the skill's own, which reads its files. The first to reach a
        folder lists it and keeps the listing in ``ctx.listings``; the second takes it out (a
        listing lives from one to the other, a skill's read long, so the pack's listings are never
        all in memory at once). A folder is thus listed once per load (a skill nested in another's
        folder again for itself). A listing holds names only: every file and folder is still
        opened relative to the descriptor of the folder that holds it, so a listing gone stale can
        make an open fail, never lead outside the root.

        ``skip_listed`` (the root walk): a folder a skill's walk has already listed and that holds
        neither a folder nor a ``SKILL.md`` is not opened again; its listing is yielded with ``fd``
        ``-1``, since there is nothing in it to open (a skill's ``references/``: one open and close
        fewer per such folder).
        """
        listing = ctx.listings.pop(parts, None)
        if listing is None:
            listing = self._list(ctx, dir_fd, parts, problems)
            if listing is None:
                return
            ctx.listings[parts] = listing
        folders, files, refused = listing
        problems.extend(refused)
        yield parts, dir_fd, folders, files
        yield from self._walk_children(ctx, dir_fd, parts, folders, problems, skip_listed=skip_listed)

    def _walk_children(
        self,
        ctx: Root,
        dir_fd: int,
        parts: tuple[str, ...],
        folders: Iterable[str],
        problems: list[SkillError],
        *,
        skip_listed: bool,
    ) -> Iterator[tuple[tuple[str, ...], int, list[str], dict[str, bool]]]:
        """:meth:`_walk` below each of ``folders``, sub-folders of the open folder ``dir_fd`` (at ``parts``)."""
        for name in folders:
            if len(parts) >= MAX_DEPTH:
                problems.append(
                    SkillError(
                        f"folder nested more than {MAX_DEPTH} levels below the root is not read",
                        path=ctx.shown_path(*parts, name),
                        rule="limit-depth",
                    )
                )
                continue
            if skip_listed:
                listed = ctx.listings.get(here := (*parts, name))
                if listed is not None and not listed[0] and SKILL_MD not in listed[1]:
                    del ctx.listings[here]
                    problems.extend(listed[2])
                    yield here, -1, listed[0], listed[1]
                    continue
            try:
                child = os.open(name, O_FOLDER, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    problems.append(
                        SkillError(
                            f"folder cannot be opened ({exc.strerror or exc}); a folder replaced by a symlink "
                            "is not followed",
                            path=ctx.shown_path(*parts, name),
                            rule="unreadable",
                        )
                    )
                continue
            try:
                yield from self._walk(ctx, child, (*parts, name), problems, skip_listed=skip_listed)
            finally:
                os.close(child)

    def _list(self, ctx: Root, dir_fd: int, parts: tuple[str, ...], problems: list[SkillError]) -> Listing | None:
        """One folder's ``(folders, files, refused)``, names sorted; ``None`` (said in ``problems``) when unlisted.

        Types come from the listing itself (``scandir``'s ``d_type``; a file system without them
        costs one ``lstat`` per name), so only symlinks are looked up. ``files`` maps each name to
        whether it is a regular file; a symlink or a special file is resolved, or refused, when read.
        Symlinked folders are in neither list: they are in ``refused`` (``symlink-folder``), which
        the walk reports each time it passes the folder.
        """
        try:
            with os.scandir(dir_fd) as found:
                entries = sorted((e for e in found if e.name not in self.ignore), key=entry_name)
        except OSError as exc:
            problems.append(
                SkillError(
                    f"folder cannot be listed ({exc.strerror or exc})", path=ctx.shown_path(*parts), rule="unreadable"
                )
            )
            return None
        folders: list[str] = []
        files: dict[str, bool] = {}
        refused: list[SkillError] = []
        for entry in entries:
            name = sys.intern(entry.name)
            try:
                if entry.is_file(follow_symlinks=False):  # the common case first: one call
                    files[name] = True
                elif entry.is_symlink():
                    try:  # only to tell a symlinked folder from a symlinked file; nothing is opened
                        target = os.stat(name, dir_fd=dir_fd)
                    except OSError:
                        files[name] = False  # dangling: reported when read
                        continue
                    if stat.S_ISDIR(target.st_mode):
                        refused.append(
                            SkillError(
                                "symlinked folder is not followed; copy its files into the skill instead",
                                path=ctx.shown_path(*parts, name),
                                rule="symlink-folder",
                            )
                        )
                    else:
                        files[name] = False
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(name)
                else:
                    files[name] = False  # a FIFO, socket or device: refused when read
            except OSError:
                continue  # vanished since the listing
        return folders, files, tuple(refused)

    @staticmethod
    def _read_file(
        ctx: Root,
        dir_fd: int,
        dir_parts: tuple[str, ...],
        name: str,
        path: str,
        problems: list[SkillError],
        *,
        plain: bool = False,
    ) -> bytes | None:
        """The bytes of one file, or ``None`` (with a problem recorded) when it must not be served.

        ``plain``: the folder's listing saw a regular file (see :func:`open_beneath`)."""
        try:
            fd = open_beneath(ctx, dir_fd, dir_parts, name, plain=plain)
        except _Escape:
            problems.append(
                SkillError(
                    f"symlink points outside the skills root ({ctx.path}); refused",
                    path=path,
                    rule="symlink-escape",
                )
            )
            return None
        except _NotRegular:
            problems.append(_special_file(path))
            return None
        except OSError as exc:
            problems.append(
                SkillError(f"cannot be read ({exc.strerror or exc}); refused", path=path, rule="unreadable")
            )
            return None
        try:
            st = os.fstat(fd)  # the file actually opened, whatever was renamed since
            if not stat.S_ISREG(st.st_mode):
                problems.append(_special_file(path))
                return None
            if st.st_size > MAX_SKILL_BYTES:
                problems.append(
                    SkillError(
                        f"file is {st.st_size} bytes, over the 16 MiB per-skill limit; refused",
                        path=path,
                        rule="limit-size",
                    )
                )
                return None
            return read_at_most(fd, MAX_SKILL_BYTES + 1, first=st.st_size + 1)
        except OSError as exc:
            problems.append(
                SkillError(f"cannot be read ({exc.strerror or exc}); refused", path=path, rule="unreadable")
            )
            return None
        finally:
            os.close(fd)


def _special_file(path: str) -> SkillError:
    return SkillError("is not a regular file (FIFO, socket or device); refused", path=path, rule="special-file")


def _worker_main() -> None:
    """A worker's body: the request from standard input, the packed part to standard output.

    The cyclic collector is off: the worker makes objects that all live until it exits, and a
    collection every 700 of them would walk them all again and again to free none."""
    gc.disable()
    request = pickle.load(sys.stdin.buffer)
    package = this_package()
    if package != Path(request["package"]):  # its result's shape is this copy's
        sys.exit(f"this worker imported another copy of skilldeck ({package}, not {request['package']})")
    root = Path(request["root"])
    source = DirectorySource(root, prefix=request["prefix"], ignore=request["ignore"], processes=1)
    with Root.open(root) as ctx:
        packed = source._read_run(ctx, request["folders"]).packed()
    pickle.dump(packed, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.flush()


def load_all(sources: Sequence[DirectorySource]) -> LoadResult:
    """Load several directory sources into one result, refusing skill paths served twice."""
    merged = LoadResult()
    served: dict[str, str] = {}
    for source in sources:
        result = source.load()
        merged.problems.extend(result.problems)
        merged.skills += first_per_path(result.skills, merged.problems, origin=_origin, served=served)
    return merged


class _AtAPath(Protocol):
    @property
    def skill_path(self) -> str: ...


S = TypeVar("S", bound=_AtAPath)


def first_per_path(
    skills: Iterable[S],
    problems: list[SkillError],
    *,
    origin: Callable[[S], str],
    served: dict[str, str] | None = None,
) -> list[S]:
    """The first of ``skills`` at each skill path; each later one is refused into ``problems``.

    ``served`` (skill path to the ``origin`` of the skill kept there) carries what earlier calls kept.
    """
    served = {} if served is None else served
    kept: list[S] = []
    for skill in skills:
        if skill.skill_path in served:
            problems.append(
                SkillError(
                    f"skill path {skill.skill_path!r} is already served from {served[skill.skill_path]}",
                    path=origin(skill),
                    rule="duplicate-path",
                )
            )
            continue
        served[skill.skill_path] = origin(skill)
        kept.append(skill)
    return kept


def _origin(skill: StaticSkill) -> str:
    return skill.origin


class StaticIndex:
    """Skills' entries and static files by URI: the index :class:`Pack` and the server's catalog share.

    A file two skills both hold (a skill nested in another's folder) is the first skill's.
    """

    def __init__(self) -> None:
        self._entries: dict[str, SkillEntry] = {}
        self._files: dict[str, SkillFile] = {}

    def _index(self, skill: StaticSkill) -> None:
        """Add ``skill``'s entry and every file of it not already indexed.

        A file's URI is the very string its manifest entry holds, not an equal copy (one per file
        fewer in memory: 200,000 on a pack of 100,000 two-file skills)."""
        entry = skill.entry
        self._entries[entry.uri] = entry
        listed = {} if isinstance(entry.resources, str) else {r.uri: r.uri for r in entry.resources}
        for rel, data in skill.files.items():
            uri = file_uri(skill.skill_path, rel)
            uri = listed.get(uri, uri)
            self._files.setdefault(uri, SkillFile(uri=uri, path=rel, mime_type=mime_type_for(rel), data=data))

    def get(self, uri: str) -> SkillEntry:
        """The entry of the skill whose ``SKILL.md`` is at ``uri``.

        Raises:
            NotServedError: no skill is served at ``uri``.
        """
        entry = self._entries.get(uri)
        if entry is None:
            raise NotServedError(f"No skill is served at {shorten(uri)}", uri=uri)
        return entry

    def static_file(self, uri: str) -> SkillFile | None:
        """The static file at ``uri``, if any."""
        return self._files.get(uri)


class Pack(StaticIndex):
    """A loaded pack indexed by URI, as a host reads its local skills: no paging, no dynamic skills."""

    def __init__(self, loaded: LoadResult) -> None:
        super().__init__()
        self.problems: list[SkillError] = list(loaded.problems)
        for skill in loaded.skills:
            self._index(skill)

    @property
    def entries(self) -> list[SkillEntry]:
        """Every entry, in URI order."""
        return [self._entries[uri] for uri in sorted(self._entries)]
