"""The suite's guard of the user's state (``tests/home_guard.py``), run on small suites of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

TOUCHES = """
import os
from pathlib import Path

def test_writes_where_it_is_told():
    target = Path(os.environ["TARGET"])
    target.mkdir(parents=True, exist_ok=True)
    (target / "ledger.sqlite3").write_text("learned")

def test_its_own_home():
    assert "skilldeck-test-home-" in os.environ["SKILLDECK_HOME"]
    (Path(os.environ["SKILLDECK_HOME"]) / "cache").mkdir(parents=True, exist_ok=True)
"""


def run(tmp_path: Path, target: Path, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "suite"
    suite.mkdir(parents=True, exist_ok=True)
    (suite / "test_touch.py").write_text(TOUCHES)
    environ = {
        **os.environ,
        "PYTHONPATH": str(TESTS),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TARGET": str(target),
        **env,
    }
    environ.pop("SKILLDECK_TEST_CALLERS_HOME", None)
    environ.pop("SKILLDECK_HOME", None)
    environ.update(env)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "home_guard",
            "-p",
            "no:cacheprovider",
            "-c",
            os.devnull,
            "--rootdir",
            str(suite),
            *extra,
            str(suite),
        ],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("where", ["state", "cache"])
def test_a_test_writing_the_user_s_state_fails_the_run(tmp_path: Path, where: str) -> None:
    done = run(tmp_path, tmp_path / where / "skilldeck")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the test run changed the user's state" in done.stdout, done.stdout
    assert f"{tmp_path / where / 'skilldeck'}: created ledger.sqlite3" in done.stdout, done.stdout


def test_a_change_to_a_file_already_there_fails_it_too(tmp_path: Path) -> None:
    home = tmp_path / "state" / "skilldeck"
    home.mkdir(parents=True)
    (home / "ledger.sqlite3").write_text("what the user learned")
    os.utime(home / "ledger.sqlite3", ns=(0, 0))
    done = run(tmp_path, home)
    assert done.returncode == 1, done.stdout
    assert f"{home}: changed ledger.sqlite3" in done.stdout, done.stdout


def test_the_caller_s_skilldeck_home_is_never_the_tests_and_is_guarded(tmp_path: Path) -> None:
    callers = tmp_path / "callers-home"
    done = run(tmp_path, callers, SKILLDECK_HOME=str(callers))
    assert done.returncode == 1, done.stdout
    assert f"{callers}: created ledger.sqlite3" in done.stdout, done.stdout
    # with xdist the workers inherit the replaced SKILLDECK_HOME: the caller's is still the one guarded
    done = run(tmp_path / "x", callers / "more", "-n", "2", SKILLDECK_HOME=str(callers))
    assert done.returncode == 1, done.stdout
    assert f"{callers}: created more" in done.stdout, done.stdout


def test_a_run_that_keeps_to_its_own_home_passes(tmp_path: Path) -> None:
    done = run(tmp_path, tmp_path / "elsewhere")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "user state changed" not in done.stdout
