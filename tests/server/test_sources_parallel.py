"""A large root is read by several processes: the same skills, files and problems, in the same order.

``DirectorySource`` splits a root of at least ``parallel_from`` top folders into runs; this process
reads the first, a worker process (this Python running :func:`skilldeck.skill._pack._worker_main`, started by
:class:`skilldeck.skill._workers.Worker`) each other,
and the parts are merged. These tests lower ``parallel_from`` so a small pack of every kind of skill
and refusal takes that path, and compare it with one process; they count the workers started, and
make a worker fail to show that its run is read here instead, with a warning that says why.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from skilldeck.errors import SourceError
from skilldeck.skill import _pack, _workers
from skilldeck.skill._pack import DirectorySource, LoadResult

from .helpers import write_skill


def _pack_of_everything(root: Path) -> None:
    """Top folders holding good skills, nested ones, refusals of every kind and files misnamed, in order."""
    outside = root.parent / f"{root.name}-outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    for i in range(12):
        write_skill(root, f"a{i:02}", files={"references/guide.md": f"guide {i}"})
    write_skill(root, "b-team/one", files={"assets/deep/x.txt": "x"})
    write_skill(root, "b-team/one/nested", files={"notes.md": "n"})  # a skill inside another's folder
    write_skill(root, "b-team/two")
    bad = root / "c-mismatch"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: other\ndescription: d\n---\n")
    (root / "d-misnamed").mkdir()
    (root / "d-misnamed" / "skill.md").write_text("---\nname: d-misnamed\ndescription: d\n---\n")
    leaky = write_skill(root, "e-leaky", files={"ok.md": "fine"})
    os.symlink(outside / "secret.txt", leaky / "secret.txt")
    os.symlink(outside, leaky / "outdir")
    odd = write_skill(root, "f-odd")
    os.mkfifo(odd / "pipe")
    os.symlink(odd / "missing.md", odd / "dangling.md")
    linked = write_skill(root, "g-linked", files={"real.md": "real"})
    os.symlink(linked / "real.md", linked / "alias.md")
    deep = root / "h-deep"
    for level in range(_pack.MAX_DEPTH + 1):
        deep = deep / f"l{level}"
    deep.mkdir(parents=True)
    for i in range(12):
        write_skill(root, f"z{i:02}/inner", files={"a.md": "a"})
    (root / "z05" / "Skill.md").write_text("misnamed in a later run")  # each kind of problem in several runs
    (root / "skill.md").write_text("misnamed at the root itself")  # the root's own files: reported once
    (root / "notes.txt").write_text("a file at the root")
    os.symlink(outside, root / "m-linked-folder")  # a symlinked top folder
    write_skill(root, "z06/other", frontmatter_extra="version: [broken\n")


def _shape(result: LoadResult) -> tuple[list[Any], list[tuple[str, str]]]:
    skills = [
        (s.skill_path, s.origin, s.entry.uri, dict(s.entry.frontmatter), s.entry.resources, dict(s.files))
        for s in result.skills
    ]
    return skills, [(type(p).__name__, p.rule, str(p)) for p in result.problems]  # type: ignore[misc]


def _count_workers(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    started: list[list[str]] = []
    real = _workers.Worker.start

    def counting(root: Path, prefix: str, ignore: frozenset[str], folders: list[str]) -> Any:
        started.append(folders)
        return real(root, prefix, ignore, folders)

    monkeypatch.setattr(_workers.Worker, "start", staticmethod(counting))
    return started


@pytest.mark.parametrize("processes", [2, 3])
def test_several_processes_load_what_one_does_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, processes: int
) -> None:
    root = tmp_path / "skills"
    _pack_of_everything(root)
    one = DirectorySource(root, prefix="org", processes=1).load()
    started = _count_workers(monkeypatch)
    with caplog.at_level(logging.WARNING, logger=_pack.__name__):
        several = DirectorySource(root, prefix="org", processes=processes, parallel_from=1).load()
    assert len(started) == processes - 1
    assert not caplog.records  # no worker fell back
    assert _shape(several) == _shape(one)
    # the pack exercises what it should: every refusal, the nested skill, the prefix
    rules = {p.rule for p in one.problems}
    assert {"name-directory", "skill-md-name", "symlink-escape", "symlink-folder", "special-file"} <= rules
    assert {"unreadable", "limit-depth"} <= rules
    assert "org/b-team/one/nested" in [s.skill_path for s in one.skills]
    assert all(b"TOP SECRET" not in data for s in several.skills for data in s.files.values())
    assert sum(p.rule == "skill-md-name" for p in several.problems) == 3  # d-misnamed, z05 and the root's
    # workers read later runs: the last top folder is one of theirs
    assert started[-1][-1] == "z11"


def test_the_runs_cover_every_top_folder_once_and_this_process_reads_the_longest() -> None:
    source = DirectorySource(".", processes=3, parallel_from=1)
    names = [f"n{i:03}" for i in range(101)]
    runs = source._chunks(names)
    assert [name for run in runs for name in run] == names
    assert len(runs) == 3
    assert len(runs[0]) > len(runs[1]) >= len(runs[2]) - 1


def test_parallel_from_is_the_number_of_top_folders_that_starts_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(4):
        write_skill(tmp_path, f"s{i}")
    started = _count_workers(monkeypatch)
    assert len(DirectorySource(tmp_path, processes=2, parallel_from=5).load().skills) == 4
    assert started == []  # 4 top folders, 5 needed
    assert len(DirectorySource(tmp_path, processes=2, parallel_from=4).load().skills) == 4
    assert len(started) == 1  # 4 of 4
    assert len(DirectorySource(tmp_path, processes=1, parallel_from=1).load().skills) == 4
    assert len(started) == 1  # one process asked for: none started


def test_a_root_that_is_itself_a_skill_is_read_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_skill(tmp_path, "solo")
    for i in range(3):
        write_skill(root, f"inner/s{i}")
    started = _count_workers(monkeypatch)
    result = DirectorySource(root, processes=2, parallel_from=1).load()
    assert started == []
    assert [s.skill_path for s in result.skills] == ["solo", "inner/s0", "inner/s1", "inner/s2"]


def test_a_worker_that_cannot_run_leaves_its_run_to_this_process_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "skills"
    _pack_of_everything(root)
    one = DirectorySource(root, processes=1).load()
    monkeypatch.setenv("PYTHONHOME", str(tmp_path / "no-python-here"))  # the worker's Python cannot start
    with caplog.at_level(logging.WARNING, logger=_pack.__name__):
        several = DirectorySource(root, processes=2, parallel_from=1).load()
    assert _shape(several) == _shape(one)
    (record,) = caplog.records
    assert "a worker reading skills exited with 1" in record.getMessage()
    assert "read here instead" in record.getMessage()


@pytest.mark.parametrize(
    ("breakage", "said"),
    [
        ("no-python", "could not start a worker to read skills"),
        ("garbage", "wrote an unreadable result"),
    ],
)
def test_a_worker_that_cannot_start_or_sends_garbage_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, breakage: str, said: str
) -> None:
    for i in range(6):
        write_skill(tmp_path, f"s{i}")
    if breakage == "no-python":
        monkeypatch.setattr(_workers.sys, "executable", str(tmp_path / "python-not-here"))
    else:
        monkeypatch.setattr(_workers, "WORKER_CODE", "import sys; sys.stdout.write('not a pickle')")
    with caplog.at_level(logging.WARNING, logger=_pack.__name__):
        result = DirectorySource(tmp_path, processes=2, parallel_from=1).load()
    assert [s.skill_path for s in result.skills] == [f"s{i}" for i in range(6)]
    (record,) = caplog.records
    assert said in record.getMessage()


@pytest.mark.parametrize(("field", "value"), [("processes", 0), ("parallel_from", 0)])
def test_counts_below_one_are_refused(tmp_path: Path, field: str, value: int) -> None:
    with pytest.raises(SourceError, match=f"{field} is 0; give 1 or more") as raised:
        DirectorySource(tmp_path, **{field: value})  # type: ignore[arg-type]
    assert raised.value.rule == "processes"


def test_one_of_each_is_accepted(tmp_path: Path) -> None:
    source = DirectorySource(tmp_path, processes=1, parallel_from=1)
    assert (source.processes, source.parallel_from) == (1, 1)
    assert 1 <= DirectorySource(tmp_path).processes <= _workers.MAX_PROCESSES


def test_a_reload_off_the_event_loop_reads_with_workers_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A watching server reloads on a worker thread (``anyio.to_thread``): the processes start from there alike."""
    import anyio

    root = tmp_path / "skills"
    _pack_of_everything(root)
    one = DirectorySource(root, processes=1).load()
    started = _count_workers(monkeypatch)
    source = DirectorySource(root, processes=2, parallel_from=1)

    async def reload() -> LoadResult:
        return await anyio.to_thread.run_sync(source.load)

    several = anyio.run(reload)
    assert len(started) == 1
    assert _shape(several) == _shape(one)


@pytest.mark.parametrize(
    ("executable", "frozen", "said"),
    [
        ("/usr/bin/uwsgi", False, "its executable (uwsgi) is not a Python interpreter"),
        ("/opt/app/app", True, "this is a frozen program, not a Python interpreter"),
        ("", False, "this Python does not know its own executable"),
    ],
)
def test_a_program_that_is_not_python_never_runs_itself_as_a_worker(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    executable: str,
    frozen: bool,
    said: str,
) -> None:
    """Given ``-c``, an embedding server or a frozen program would start itself again: no worker is started."""
    for i in range(4):
        write_skill(tmp_path, f"s{i}")
    monkeypatch.setattr(_workers.sys, "executable", executable)
    if frozen:
        monkeypatch.setattr(_workers.sys, "frozen", True, raising=False)
    popens = []
    real_popen = _workers.subprocess.Popen
    monkeypatch.setattr(_workers.subprocess, "Popen", lambda *a, **k: popens.append(a) or real_popen(*a, **k))
    assert DirectorySource(tmp_path).processes == 1  # by default: this process reads everything, quietly
    with caplog.at_level(logging.WARNING, logger=_pack.__name__):
        result = DirectorySource(tmp_path, processes=2, parallel_from=1).load()  # asked for: said why not
    assert [s.skill_path for s in result.skills] == [f"s{i}" for i in range(4)]
    assert popens == []
    (record,) = caplog.records
    assert said in record.getMessage()


def test_a_python_by_any_of_its_names_may_start_workers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("python", "python3", "python3.11", "Python.exe"):
        monkeypatch.setattr(_workers.sys, "executable", f"/somewhere/bin/{name}")
        assert _workers.not_a_python() is None
        assert DirectorySource(tmp_path).processes == min(_workers.MAX_PROCESSES, len(os.sched_getaffinity(0)))


def test_a_worker_that_imports_another_copy_of_skilldeck_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Its columns would be another version's: it refuses, and this process reads its run."""
    for i in range(6):
        write_skill(tmp_path / "skills", f"s{i}")
    monkeypatch.setattr(_workers, "__file__", str(tmp_path / "elsewhere" / "skilldeck" / "skill" / "_workers.py"))
    with caplog.at_level(logging.WARNING, logger=_pack.__name__):
        result = DirectorySource(tmp_path / "skills", processes=2, parallel_from=1).load()
    assert [s.skill_path for s in result.skills] == [f"s{i}" for i in range(6)]
    (record,) = caplog.records
    assert "a worker reading skills exited with 1" in record.getMessage()
    assert "this worker imported another copy of skilldeck" in record.getMessage()
