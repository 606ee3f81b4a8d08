"""The mutation list in tools/mutation.py still applies to the code: each snippet occurs exactly once.

Running the mutations takes minutes (``.venv/bin/python tools/mutation.py``); this only checks that
none went stale, so a change that moves a mutated line fails here and names the mutation to update.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def mutation(load_tool: Callable[[str], ModuleType]) -> ModuleType:
    return load_tool("mutation.py")


def test_every_mutation_applies_exactly_once_and_names_existing_tests(mutation: ModuleType) -> None:
    assert len(mutation.MUTATIONS) >= 50
    assert mutation.check() == []


def test_a_stale_snippet_is_reported_with_the_mutation_and_file(mutation: ModuleType, tmp_path: Path) -> None:
    stale = mutation.Mutation("demo", "src/x.py", "a > b", "a >= b", ("tests/test_x.py",), "an off-by-one")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x.py").write_text("a >= b\n")
    assert mutation.check(tmp_path, (stale,)) == [
        "demo: pattern not found in src/x.py: 'a > b'",
        "demo: no test file tests/test_x.py",
    ]
    (tmp_path / "src" / "x.py").write_text("a > b\na > b\n")
    with pytest.raises(mutation.PatternError, match="found 2 times"):
        mutation.mutate((tmp_path / "src" / "x.py").read_text(), stale)


def test_a_workers_venv_imports_its_copy_even_in_a_server_spawned_with_few_variables(
    mutation: ModuleType, tmp_path: Path
) -> None:
    """The SDK starts a stdio server with ``sys.executable`` and only PATH, HOME and a few more: the worker's
    venv must import the copy there too (with ``PYTHONPATH`` it imported the working tree's code), and the
    packages the tests need."""
    copy = tmp_path / "repo"
    (copy / "src" / "skilldeck").mkdir(parents=True)
    (copy / "src" / "skilldeck" / "__init__.py").write_text("MUTATED = True\n")
    python = mutation._make_venv(tmp_path, copy)
    spawned = subprocess.run(
        [python, "-c", "import skilldeck, mcp, pytest; print(skilldeck.MUTATED, skilldeck.__file__)"],
        env={"PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert spawned.stdout.split() == ["True", str(copy / "src" / "skilldeck" / "__init__.py")]
