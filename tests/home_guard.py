"""The test run keeps its state in homes of its own, and fails when the user's state changed under it.

Registered by ``tests/conftest.py`` before any fixture runs, so every fixture, whatever its scope, and
every process a test starts (it inherits the environment) sees a temporary ``$SKILLDECK_HOME``:

* each pytest process (the controller and every xdist worker) points ``SKILLDECK_HOME`` at a folder
  of its own, made at configure time and removed at the end; the caller's own ``SKILLDECK_HOME`` is
  never used, whatever it is set to;
* and ``HOME`` too, at a home of its own that links to every entry of the real home but the state
  skilldeck keeps (``.local/state``, ``.cache/skilldeck``): a process a test starts through the MCP SDK
  gets only a few variables (``HOME``, ``PATH``...), not ``SKILLDECK_HOME``, so a stdio gateway a client
  starts would otherwise keep its ledger and vectors in the user's ``~/.local/state/skilldeck``, while
  npm's cache, the test cache and the rest are still found where they are;
* at the start of the run the controller lists the user's state: the caller's ``$SKILLDECK_HOME``
  when set, ``$XDG_STATE_HOME/skilldeck`` (``~/.local/state/skilldeck``) and
  ``$XDG_CACHE_HOME/skilldeck`` (``~/.cache/skilldeck``): every file's size and modification time,
  and every folder. At the end it lists them again; anything created, changed or removed fails the
  run (exit status 1), naming what changed.

The test cache (``~/.cache/skilldeck-tests``: the third-party servers' venvs) is the suite's own and
is not watched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_GUARDED = pytest.StashKey[dict[Path, dict[str, tuple[int, int] | None]]]()
_OWN_HOME = pytest.StashKey[Path]()
_CALLERS_HOME = "SKILLDECK_TEST_CALLERS_HOME"
"""Where the caller's own ``SKILLDECK_HOME`` is kept for the workers (they inherit the replaced one)."""
_REAL_HOME = "SKILLDECK_TEST_REAL_HOME"
"""The user's own home (``HOME`` is replaced for the run: see the module docs)."""
MAX_FILES = 100_000
"""Files listed per guarded folder at most (a larger home is listed that far, the rest by count)."""


def watched(env: os._Environ[str] | dict[str, str]) -> list[Path]:
    """The folders of the user's state a test run must not touch."""
    home = Path(env.get(_REAL_HOME) or Path.home())
    state = Path(env.get("XDG_STATE_HOME") or home / ".local" / "state") / "skilldeck"
    cache = Path(env.get("XDG_CACHE_HOME") or home / ".cache") / "skilldeck"
    folders = [state, cache]
    if callers := env.get(_CALLERS_HOME) or env.get("SKILLDECK_HOME"):
        folders.append(Path(callers))
    return list(dict.fromkeys(folders))


def listing(folder: Path) -> dict[str, tuple[int, int] | None]:
    """Every entry below ``folder``: a file's (size, mtime in ns), ``None`` for a folder; ``{}`` if absent."""
    found: dict[str, tuple[int, int] | None] = {}
    if not folder.exists():
        return found
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            found[os.path.relpath(os.path.join(root, name), folder)] = None
        for name in files:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            found[os.path.relpath(path, folder)] = (st.st_size, st.st_mtime_ns)
        if len(found) > MAX_FILES:
            found["..."] = (len(found), 0)
            break
    return found


def differences(before: dict[str, tuple[int, int] | None], after: dict[str, tuple[int, int] | None]) -> list[str]:
    """What changed between two listings, one line each (at most 20)."""
    lines = [f"created {p}" for p in sorted(after.keys() - before.keys())]
    lines += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    lines += [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return lines[:20]


def linked_home(real: Path, into: Path) -> Path:
    """A home at ``into`` whose every entry links to ``real``'s, but ``.local/state`` and ``.cache/skilldeck``
    (fresh folders): what a process given ``HOME=into`` keeps of skilldeck's state stays out of the real one."""
    into.mkdir(parents=True, exist_ok=True)
    keep_apart = {".local": {"state"}, ".cache": {"skilldeck"}}
    entries = list(real.iterdir()) if real.is_dir() else []
    for entry in entries:
        if entry.name in keep_apart and entry.is_dir() and not entry.is_symlink():
            inner = into / entry.name
            inner.mkdir(exist_ok=True)
            for child in entry.iterdir():
                if child.name not in keep_apart[entry.name]:
                    (inner / child.name).symlink_to(child)
        else:
            (into / entry.name).symlink_to(entry)
    for folder in (".local/state", ".cache/skilldeck"):
        (into / folder).mkdir(parents=True, exist_ok=True)
    return into


def pytest_configure(config: pytest.Config) -> None:
    worker = hasattr(config, "workerinput")
    if _REAL_HOME not in os.environ:
        os.environ[_REAL_HOME] = str(Path.home())
    if not worker:
        if "SKILLDECK_HOME" in os.environ and _CALLERS_HOME not in os.environ:
            os.environ[_CALLERS_HOME] = os.environ["SKILLDECK_HOME"]
        config.stash[_GUARDED] = {folder: listing(folder) for folder in watched(os.environ)}
    temporary = Path(tempfile.mkdtemp(prefix="skilldeck-test-home-"))
    config.stash[_OWN_HOME] = temporary
    os.environ["SKILLDECK_HOME"] = str(temporary / "skilldeck")
    os.environ["HOME"] = str(linked_home(Path(os.environ[_REAL_HOME]), temporary / "home"))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    guarded = config.stash.get(_GUARDED, None)
    if guarded is None:
        return
    changed = []
    for folder, before in guarded.items():
        for line in differences(before, listing(folder)):
            changed.append(f"{folder}: {line}")
    if changed:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        message = "the test run changed the user's state (tests must keep theirs in a temporary home):"
        if reporter is not None:
            reporter.write_sep("=", "user state changed", red=True)
            reporter.write_line(message)
            for line in changed:
                reporter.write_line(f"    {line}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_OWN_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)
