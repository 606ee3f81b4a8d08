"""Worker processes that read runs of a big pack's top folders, and the columns their skills come back as.

:meth:`~skilldeck.skill._pack.DirectorySource.load` splits a root of :data:`~skilldeck.skill._pack.PARALLEL_FROM`
top folders or more into runs; each run but the first is read by a :class:`Worker`: this Python started
as ``python -c WORKER_CODE``, running :func:`skilldeck.skill._pack._worker_main`. Not
:mod:`multiprocessing`: that would run the importing program's main script again in each worker.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from skilldeck.errors import SkillError, shorten
from skilldeck.skill._manifest import SkillEntry, SkillResource
from skilldeck.skill._static import StaticSkill

__all__ = [
    "MAX_PROCESSES",
    "WORKER_CODE",
    "Columns",
    "Packed",
    "Part",
    "Worker",
    "not_a_python",
    "this_package",
    "usable_cpus",
]

MAX_PROCESSES = 4
"""At most this many processes read one root (by default, the CPUs this process may use)."""


def usable_cpus() -> int:
    """The CPUs this process may run on, at most :data:`MAX_PROCESSES`; 1 when it cannot start a worker."""
    if not_a_python() is not None:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_PROCESSES, cpus))


def not_a_python() -> str | None:
    """Why this process cannot start a worker as ``sys.executable -c ...``, or ``None`` when it can.

    A frozen program's executable is the program itself, and an embedding server's (uWSGI, say) is
    that server: given ``-c``, either would start itself again, not read skills."""
    if not sys.executable:
        return "this Python does not know its own executable"
    if getattr(sys, "frozen", False):
        return "this is a frozen program, not a Python interpreter"
    if not os.path.basename(sys.executable).lower().startswith("python"):
        return f"its executable ({os.path.basename(sys.executable)}) is not a Python interpreter"
    return None


Columns = tuple[
    list[str],  # skill paths
    list[str],  # origins
    list[str],  # entry URIs
    list[Mapping[str, Any]],  # frontmatters
    list[Mapping[str, bytes]],  # files
    list[int],  # resources per skill
    list[str],  # resource URIs, every skill's in turn
    list[str],  # their digests
    list[int],  # their sizes
]
Packed = tuple[Columns, list[SkillError], list[SkillError], list[SkillError]]


@dataclass
class Part:
    """What reading one run of a root's folders found: skills in path order, and the problems by kind."""

    skills: list[StaticSkill] = field(default_factory=list)
    misnamed: list[SkillError] = field(default_factory=list)
    refused: list[SkillError] = field(default_factory=list)
    deep: list[SkillError] = field(default_factory=list)

    def packed(self) -> Packed:
        """The part for a worker to send: its skills as columns, one list per field.

        A pickled dataclass costs ten times a tuple to load, and a tuple per skill (or per file) is
        made and dropped between the objects that stay, leaving the heap holed: columns are a few
        long lists, gone whole once unpacked (100,000 skills: 22 MB more at start-up with tuples)."""
        paths, origins, uris, frontmatters, files, counts = [], [], [], [], [], []
        resource_uris, digests, sizes = [], [], []
        for skill in self.skills:
            entry = skill.entry
            if isinstance(entry.resources, str):  # never from a pack: its skills are read, not generated
                raise TypeError(f"{skill.skill_path}: a skill read from a folder has a manifest")
            paths.append(skill.skill_path)
            origins.append(skill.origin)
            uris.append(entry.uri)
            frontmatters.append(entry.frontmatter)
            files.append(skill.files)
            counts.append(len(entry.resources))
            for resource in entry.resources:
                resource_uris.append(resource.uri)
                digests.append(resource.digest)
                sizes.append(resource.size)
        columns = (paths, origins, uris, frontmatters, files, counts, resource_uris, digests, sizes)
        return columns, self.misnamed, self.refused, self.deep

    @classmethod
    def unpacked(cls, packed: Packed) -> Part:
        (paths, origins, uris, frontmatters, files, counts, resource_uris, digests, sizes), *problems = packed
        misnamed, refused, deep = problems
        skills = []
        at = 0
        for path, origin, uri, frontmatter, skill_files, count in zip(
            paths, origins, uris, frontmatters, files, counts, strict=True
        ):
            resources = tuple(
                map(SkillResource, resource_uris[at : at + count], digests[at : at + count], sizes[at : at + count])
            )
            at += count
            entry = SkillEntry(uri=uri, frontmatter=frontmatter, resources=resources)
            skills.append(StaticSkill(skill_path=path, entry=entry, files=skill_files, origin=origin))
        return cls(skills=skills, misnamed=misnamed, refused=refused, deep=deep)


def this_package() -> Path:
    """The folder of the skilldeck package this process imported: a worker must import the same one."""
    return Path(__file__).resolve().parents[1]


WORKER_CODE = "import sys; sys.path.append(sys.argv[1]); from skilldeck.skill._pack import _worker_main; _worker_main()"
"""What a worker process runs (``python -c CODE FOLDER``): the folder skilldeck is imported from goes at the end
of the worker's path, so that skilldeck is found when only the caller's own path held it, and nothing the
worker's Python would import otherwise is shadowed (``PYTHONPATH`` would go before the standard library)."""


class _WorkerFailed(Exception):
    """A worker of :meth:`~skilldeck.skill._pack.DirectorySource._load_root` sent no result; the message says why."""


@dataclass
class Worker:
    """One worker process reading a run of a root's top folders
    (see :meth:`~skilldeck.skill._pack.DirectorySource._load_root`).

    Its request and its result go through temporary files, not pipes: neither side ever waits
    for the other to read."""

    process: subprocess.Popen[bytes] | None
    output: IO[bytes]
    errors: IO[bytes]
    why: str = ""

    @classmethod
    def start(cls, root: Path, prefix: str, ignore: frozenset[str], folders: list[str]) -> Worker:
        """Start reading the top ``folders`` of ``root``."""
        # closed by close(), or handed to the worker and closed here right away
        request, output, errors = (tempfile.TemporaryFile() for _ in range(3))  # noqa: SIM115
        package = this_package()
        try:
            if (why := not_a_python()) is not None:
                raise OSError(why)
            pickle.dump(
                {"root": str(root), "prefix": prefix, "ignore": ignore, "folders": folders, "package": str(package)},
                request,
            )
            request.seek(0)
            process = subprocess.Popen(
                [sys.executable, "-c", WORKER_CODE, str(package.parent)],
                stdin=request,
                stdout=output,
                stderr=errors,
            )
        except (OSError, ValueError) as exc:  # no such program, no more processes or no disk space
            return cls(None, output, errors, why=f"could not start a worker to read skills ({exc})")
        finally:
            request.close()
        return cls(process, output, errors)

    def result(self) -> Packed:
        """The worker's part, once it has exited.

        Raises:
            _WorkerFailed: it did not start, exited with an error, or wrote what does not unpickle.
        """
        if self.process is None:
            raise _WorkerFailed(self.why)
        code = self.process.wait()
        if code != 0:
            self.errors.seek(0)
            tail = self.errors.read()[-400:].decode(errors="replace").strip()
            raise _WorkerFailed(f"a worker reading skills exited with {code}: {shorten(tail)}")
        self.output.seek(0)
        try:
            packed: Packed = pickle.load(self.output)  # our own worker, started by us: trusted
        except Exception as exc:  # any malformed result, whatever unpickling raises
            raise _WorkerFailed(f"a worker reading skills wrote an unreadable result ({exc})") from None
        return packed

    def close(self) -> None:
        """Stop the worker if it still runs (this load failed) and remove its files."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.output.close()
        self.errors.close()
