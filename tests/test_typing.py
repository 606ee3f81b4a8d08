"""The package is typed (PEP 561) and mypy, configured in pyproject.toml, accepts it."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_package_ships_py_typed() -> None:
    assert resources.files("skilldeck").joinpath("py.typed").is_file()


def test_mypy_reports_nothing() -> None:
    # In a process of its own: mypy's object graph (gigabytes) would otherwise stay in the test process, where
    # every later full garbage collection walks it (at the end of the run, minutes of it). mypy is in the
    # test extra: a missing mypy fails here rather than skipping.
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--no-error-summary", "src"],
        cwd=REPO,  # the [tool.mypy] config and its cache
        capture_output=True,
        text=True,
        check=False,
    )
    errors = [line for line in run.stdout.splitlines() if re.match(r"\S+:\d+: error:", line)]
    assert not run.stderr, run.stderr
    assert errors == []
    assert run.returncode == 0, run.stdout
