"""Fixtures for the integration tests: a real ``skilldeck serve --http`` subprocess, and npx.

The server is started exactly as a user would start it (``python -m skilldeck.cli serve
examples/skills --http 127.0.0.1:0``); port 0 lets the OS pick a free port, and the URL is read
back from the startup line ``skilldeck: serving N skills from ... at URL``, so there is no race
between choosing a port and binding it. The process is always terminated in teardown.

The npm-based checkers (the MCP conformance suite, MCP Inspector) run through ``npx``. Without
``npx`` on PATH these tests are skipped locally; under CI (``CI`` set) a missing ``npx`` fails.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "skills"

STARTUP_TIMEOUT = 30.0
STARTUP_LINE = re.compile(r"skilldeck: serving (\d+) skills from .* at (http://\S+)")

# Pinned npm packages. Node 22 comes from the npm registry (`node@22`) because the system Node
# may be older; both packages declare engines.node >= 22.
NODE = "node@22"
CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
# Generous: a cold npx cache downloads Node 22 plus the package (.ci/run pre-warms it).
NPX_TIMEOUT = 240.0


@dataclass
class RunningServer:
    """A ``skilldeck serve --http`` subprocess that is up and accepting connections."""

    url: str
    skill_count: int
    page_size: int | None
    log_path: Path
    process: subprocess.Popen[bytes]

    def log(self) -> str:
        text = self.log_path.read_text(errors="replace")
        return "\n".join(line.rstrip() for line in text.splitlines())

    def assert_alive(self) -> None:
        code = self.process.poll()
        assert code is None, f"skilldeck server exited with code {code} during the test; its log:\n{self.log()}"


def _port_open(url: str) -> bool:
    hostport = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=1):
            return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _start_server(log_dir: Path, page_size: int | None) -> tuple[RunningServer | None, str]:
    """Start the server; return it once it is listening, or ``(None, why)`` (process already stopped)."""
    cmd = [sys.executable, "-m", "skilldeck.cli", "serve", "examples/skills", "--http", "127.0.0.1:0"]
    if page_size is not None:
        cmd += ["--page-size", str(page_size)]
    log_path = log_dir / "server.log"
    # rich wraps stderr at 80 columns when it is not a terminal; keep the startup line on one line.
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        match = STARTUP_LINE.search(text)
        if match and _port_open(match.group(2)):
            server = RunningServer(
                url=match.group(2),
                skill_count=int(match.group(1)),
                page_size=page_size,
                log_path=log_path,
                process=proc,
            )
            return server, ""
        if proc.poll() is not None:
            return None, f"skilldeck server exited with code {proc.returncode} before it was ready:\n{text}"
        time.sleep(0.1)
    _stop(proc)
    return (
        None,
        f"skilldeck server not ready within {STARTUP_TIMEOUT:.0f}s; its log:\n{log_path.read_text(errors='replace')}",
    )


def _serve(tmp_path_factory: pytest.TempPathFactory, page_size: int | None) -> Iterator[RunningServer]:
    server, why = _start_server(tmp_path_factory.mktemp("skilldeck-server"), page_size)
    if server is None:
        pytest.fail(why, pytrace=False)
    try:
        yield server
    finally:
        _stop(server.process)


@pytest.fixture(scope="session")
def skilldeck_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``skilldeck serve examples/skills --http 127.0.0.1:<free port>`` with the default page size."""
    yield from _serve(tmp_path_factory, None)


@pytest.fixture(scope="session")
def paged_skilldeck_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The same server with ``--page-size 2``, so ``skills/list`` spans several pages."""
    yield from _serve(tmp_path_factory, 2)


@pytest.fixture(scope="session")
def npx() -> str:
    """Path to ``npx``; skips when it is missing, except under CI where it must be present."""
    path = shutil.which("npx")
    if path is None:
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail("npx is not on PATH, but CI is set: the npm-based checkers must run in CI", pytrace=False)
        pytest.skip("npx is not on PATH (install Node.js with npm to run the conformance and Inspector checks)")
    return path


@pytest.fixture(scope="session")
def conformance_cmd() -> list[str]:
    """npx arguments that run the pinned conformance suite on Node 22 (append the subcommand)."""
    return ["-p", NODE, "-p", CONFORMANCE, "conformance"]


@pytest.fixture(scope="session")
def inspector_cmd() -> list[str]:
    """npx arguments that run the pinned MCP Inspector CLI on Node 22 (append the target and options)."""
    return ["-p", NODE, "-p", INSPECTOR, "mcp-inspector", "--cli"]


@dataclass
class NpxResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"command: {' '.join(self.args)}\nexit code: {self.returncode}\n"
            f"--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-6000:]}"
        )


def npx_env(tmp_path: Path) -> dict[str, str]:
    """Environment for npx runs: no prompts, no colour, nothing written to the user's ~/.mcp-inspector."""
    return {
        **os.environ,
        "npm_config_yes": "true",
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        # npm itself runs on the system Node while fetching Node 22 packages; its EBADENGINE
        # warnings are noise here, real npm errors still show.
        "npm_config_loglevel": "error",
        "NO_COLOR": "1",
        "FORCE_COLOR": "0",
        "MCP_STORAGE_DIR": str(tmp_path / "inspector-storage"),
        "MCP_CATALOG_PATH": str(tmp_path / "inspector-catalog.json"),
        "MCP_CLIENT_CONFIG_PATH": str(tmp_path / "inspector-client.json"),
    }


@pytest.fixture
def run_npx(npx: str, tmp_path: Path):
    """Run ``npx -y <args>`` in a scratch directory and capture its output."""

    def run(*args: str) -> NpxResult:
        cmd = [npx, "-y", *args]
        try:
            proc = subprocess.run(
                cmd,
                cwd=tmp_path,
                env=npx_env(tmp_path),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=NPX_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            pytest.fail(f"npx timed out after {NPX_TIMEOUT:.0f}s\n" + NpxResult(cmd, -1, out, err).describe())
        return NpxResult(cmd, proc.returncode, proc.stdout, proc.stderr)

    return run
