"""Shared fixtures (the async backend, paths to the bundled examples, bench and tools loaders) and the run's end report."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "skills"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than there are cores, at most 4. Most tests wait on a server or client
    process more than they compute: on 2 cores, 3 workers ran the suite in 7:46 where 2 took 8:49."""
    return min(4, (os.cpu_count() or 1) + 1)


def pytest_configure(config: pytest.Config) -> None:
    """Register the plugins: the user's state guarded (every fixture, whatever its scope, in a temporary
    home), and the end of the run (skips grouped by reason, exit at the summary line)."""
    guard = _load_script("tests", "home_guard.py")
    config.pluginmanager.register(guard, "skilldeck-home-guard")
    config.pluginmanager.register(_load_script("tests", "session_report.py"), "skilldeck-session-report")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES


def _load_script(folder: str, relative: str) -> ModuleType:
    """Import a module of ``bench/``, ``tools/`` or ``tests/`` by its path (tests are not on ``sys.path``, and must not copy)."""
    path = REPO / folder / relative
    name = f"skilldeck_{folder}_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_bench() -> Callable[[str], ModuleType]:
    """Import a module of ``bench/`` by its path there."""
    return functools.partial(_load_script, "bench")


@pytest.fixture(scope="session")
def load_tool() -> Callable[[str], ModuleType]:
    """Import a module of ``tools/`` (the mutation tool) by its path there."""
    return functools.partial(_load_script, "tools")


@pytest.fixture(autouse=True)
def _state_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that keep state (approvals, caches, card vectors) keep it in the process's temporary home
    (``tests/home_guard.py`` set it before any fixture ran), never the user's.

    The caches are shared by the tests of a worker; the usage ledger is not: every test starts with
    none, so what one test's gateway learned never ranks another's questions."""
    for learned in Path(os.environ["SKILLDECK_HOME"]).glob("ledger.sqlite3*"):
        learned.unlink()
    monkeypatch.setenv("SKILLDECK_KEYRING", "0")  # OAuth tokens a test stores go to that home, never to a keyring
