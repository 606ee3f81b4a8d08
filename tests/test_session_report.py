"""The end of a test run (tests/session_report.py), checked on a small suite run in a pytest of its own.

Skips are grouped by reason above the final line; the process exits right after that line with pytest's own
exit status (0, 1 on a failure, 5 when no test ran), with or without pytest-xdist, and its atexit handlers
still run.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parent / "session_report.py"

CONFTEST = f"""
import atexit
import importlib.util

_spec = importlib.util.spec_from_file_location("session_report_under_test", {str(PLUGIN)!r})
_plugin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_plugin)
atexit.register(print, "atexit handlers ran")  # AT_EXIT


def pytest_configure(config):
    config.pluginmanager.register(_plugin, "session-report")
"""

SUITE = """
import os

import pytest


class Finalized:
    def __del__(self):
        print("interpreter teardown ran")


KEPT = Finalized()


@pytest.fixture
def redis():
    pytest.skip("redis-server is not installed (apt-get install redis-server)")


def test_passes():
    pass


def test_fails_when_asked():
    assert os.environ.get("SMALL_SUITE_FAILS") != "1"


def test_one_replica(redis):
    pass


def test_two_replicas(redis):
    pass


@pytest.mark.skip(reason="haproxy is not installed (apt-get install haproxy)")
def test_balanced():
    pass
"""


def _run(folder: Path, *args: str, fail: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SMALL_SUITE_FAILS": "1" if fail else "0", "PYTEST_ADDOPTS": ""}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rfExX", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_small.py").write_text(SUITE)
    return tmp_path


AT_EXIT = "atexit handlers ran"


def _final_lines(stdout: str) -> list[str]:
    """The output's non-blank lines, without the atexit handler's (printed after the summary line)."""
    return [line for line in stdout.splitlines() if line.strip() and line != AT_EXIT]


def test_skips_are_grouped_by_reason_above_the_final_line_and_the_process_exits_there(suite: Path) -> None:
    run = _run(suite)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = _final_lines(run.stdout)
    section = next(i for i, line in enumerate(lines) if "skipped, by reason" in line)
    assert lines[section + 1 :] == [
        "2 skipped: redis-server is not installed (apt-get install redis-server)",
        "    in test_small.py (2)",
        "1 skipped: haproxy is not installed (apt-get install haproxy)",
        "    in test_small.py (1)",
        lines[-1],
    ]
    assert "2 passed, 3 skipped" in lines[-1]
    assert "SKIPPED" not in run.stdout  # not listed a second time in the short summary
    assert run.stdout.rstrip().endswith(AT_EXIT)  # atexit handlers still run, after the summary line
    assert "interpreter teardown ran" not in run.stdout  # what took minutes after a full run


def test_the_exit_status_is_pytests(suite: Path) -> None:
    failed = _run(suite, fail=True)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "FAILED test_small.py::test_fails_when_asked" in failed.stdout
    assert "1 failed, 1 passed, 3 skipped" in _final_lines(failed.stdout)[-1]
    none = _run(suite, "-k", "no_such_test")
    assert none.returncode == 5, none.stdout + none.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("xdist") is None, reason="pytest-xdist is not installed (pip install -e '.[test]')"
)
def test_the_same_under_xdist(suite: Path) -> None:
    failed = _run(suite, "-n", "2", fail=True)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    lines = _final_lines(failed.stdout)
    assert "2 skipped: redis-server is not installed (apt-get install redis-server)" in lines
    assert "1 failed, 1 passed, 3 skipped" in lines[-1]
