"""The package is typed (PEP 561) and mypy, configured in pyproject.toml, accepts it."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_package_ships_py_typed() -> None:
    assert resources.files("skilldeck").joinpath("py.typed").is_file()


def test_mypy_reports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from mypy import api  # in the test extra: a missing mypy fails here rather than skipping

    monkeypatch.chdir(REPO)  # the [tool.mypy] config and its cache
    stdout, stderr, _ = api.run(["--config-file", "pyproject.toml", "--no-error-summary", "src"])
    errors = [line for line in stdout.splitlines() if re.match(r"\S+:\d+: error:", line)]
    assert not stderr, stderr
    assert errors == []
