"""Shared fixtures: the async backend and paths to the bundled examples."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "skills"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture(scope="session")
def load_bench() -> Callable[[str], ModuleType]:
    """Import a module of ``bench/`` by its path there (bench is not a package, and tests must not copy it)."""

    def load(relative: str) -> ModuleType:
        path = REPO / "bench" / relative
        name = "skilldeck_bench_" + path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that keep state (approvals, caches, card vectors) keep it in a temporary home, never the user's."""
    if "SKILLDECK_HOME" not in os.environ:
        monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path_factory.getbasetemp() / "skilldeck-home"))
    monkeypatch.setenv("SKILLDECK_KEYRING", "0")  # OAuth tokens a test stores go to that home, never to a keyring
