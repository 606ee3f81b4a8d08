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

from ..server.helpers import CLI, REPO, start_serve, wait_for_startup
from ..server.helpers import stop as _stop

EXAMPLES = REPO / "examples" / "skills"

STARTUP_TIMEOUT = 30.0

# Pinned npm packages. Node 22 comes from the npm registry (`node@22.x.y`) because the system Node
# may be older; both packages declare engines.node >= 22. Exact, as the others: npx keeps one folder
# per set of -p packages and, given a range (`node@22`), reinstalls that folder in place at every run,
# so a second test process running from it meanwhile fails with "Cannot find module".
NODE = "node@22.23.3"
CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
# The TypeScript SDK's client package (its `ext/skills` entry point has SkillsClient); installed into
# the test cache by ensure_ts_client() and driven on Node 22 by tests/integration/ts_skills_client.mjs.
TS_CLIENT = "@modelcontextprotocol/client@2.4.0"
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


def _start_server(
    log_dir: Path, page_size: int | None, extra_args: tuple[str, ...] = (), pack: str = "examples/skills"
) -> tuple[RunningServer | None, str]:
    """Start the server on ``pack``; return it once it is listening, or ``(None, why)`` (process already stopped)."""
    cmd = [*CLI, "serve", pack, "--http", "127.0.0.1:0"]
    if page_size is not None:
        cmd += ["--page-size", str(page_size)]
    cmd += extra_args
    log_path = log_dir / "server.log"
    proc = start_serve(cmd, log_path)
    match = wait_for_startup(proc, log_path, STARTUP_TIMEOUT, ready=lambda m: _port_open(m.group(2)))
    if isinstance(match, str):
        _stop(proc)
        return None, match
    server = RunningServer(
        url=match.group(2), skill_count=int(match.group(1)), page_size=page_size, log_path=log_path, process=proc
    )
    return server, ""


def _serve(
    tmp_path_factory: pytest.TempPathFactory, page_size: int | None, extra_args: tuple[str, ...] = ()
) -> Iterator[RunningServer]:
    server, why = _start_server(tmp_path_factory.mktemp("skilldeck-server"), page_size, extra_args)
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


# A policy under which the default identity (this server has no token verifier, so every caller is
# answered as it) is admitted to every skill of examples/skills, with variables rendered into
# `refunds` (its email template's `{{currency}}`), so the served bytes are a rendered variant.
ADMIT_ALL_POLICY = """\
default_identity: {subject: conformance, tenant: acme, roles: [reader]}
skills:
  job-search:
    admit: {roles: [reader]}
  pdf-forms:
    admit: {tenants: [acme]}
  code-review:
    admit: [{roles: [admin]}, {tenants: [acme]}]
  security-review:
    admit: {roles: [reader]}
  refunds:
    instruction_only: true
    admit: {tenants: [acme]}
    variables:
      - when: {tenants: [acme]}
        set: {currency: EUR}
"""


@pytest.fixture(scope="session")
def policy_skilldeck_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``skilldeck serve examples/skills --http ... --policy <ADMIT_ALL_POLICY>``."""
    policy = tmp_path_factory.mktemp("skilldeck-policy") / "admit-all.yaml"
    policy.write_text(ADMIT_ALL_POLICY)
    yield from _serve(tmp_path_factory, None, ("--policy", str(policy)))


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


# -- third-party MCP servers and the skilldeck host CLI ------------------------------------------------

# Pinned third-party MCP servers for tests/integration/test_thirdparty_servers.py. The npm ones run
# over stdio as `npx -y <spec>`; the exact spec is npx's cache key, and .ci/run pre-warms each one.
# They run on the system Node (they declare no engines and start on Node 20).
SERVER_EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
SERVER_FILESYSTEM = "@modelcontextprotocol/server-filesystem@2026.8.31"
SERVER_MEMORY = "@modelcontextprotocol/server-memory@2026.8.31"
# mcp-server-time (PyPI) 2026.10.10 needs mcp<2, while the project venv must keep mcp 2.3, so it lives
# in a venv of its own under the test cache (see time_server_python); its mcp is pinned too.
TIME_SERVER = "mcp-server-time==2026.10.10 mcp==1.30.0"
# FastMCP's client (fastmcp.Client with its skills methods) pins its own mcp, so it too lives in a venv
# of its own (see ensure_fastmcp_venv) and is driven by tests/integration/fastmcp_client.py.
FASTMCP = "fastmcp==4.2.3"

# Seconds a `skilldeck skills` / `skilldeck load` run may take before the test gives up on it.
SKILLDECK_CLI_TIMEOUT = 120.0
PIP_TIMEOUT = 240.0


def tool_cache_dir() -> Path:
    """Where tests keep tools installed outside the project venv (outside the repository, so never committed).

    ``$SKILLDECK_TEST_CACHE``, else ``$XDG_CACHE_HOME/skilldeck-tests``, else ``~/.cache/skilldeck-tests``.
    """
    if explicit := os.environ.get("SKILLDECK_TEST_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skilldeck-tests"


def ensure_time_server_venv() -> Path:
    """Create (once) a venv holding ``TIME_SERVER`` under the test cache; return its ``python``.

    The venv is reused while its marker names the same pins and ``mcp_server_time`` imports;
    otherwise it is rebuilt from scratch. A lock file keeps two runs from building it at once.
    ``.ci/run`` calls this too, so CI builds it before the tests start.

    Raises:
        RuntimeError: the venv could not be created or the packages not installed (output attached).
    """
    return _ensure_pip_venv(TIME_SERVER, "import mcp_server_time")


def ensure_fastmcp_venv() -> Path:
    """A venv holding ``FASTMCP`` (exactly that version); return its ``python``.

    FastMCP pins its own ``mcp``, so it never enters the project venv. The bench's
    ``bench/.venv-fastmcp`` (made by ``bench/server_throughput.py``) is reused when it holds the same
    version; otherwise a venv of its own is built once under the test cache, next to the
    mcp-server-time one, and reused while its marker names the same pin. ``.ci/run`` calls this too.

    Raises:
        RuntimeError: the venv could not be created or FastMCP not installed (output attached).
    """
    version = FASTMCP.partition("==")[2]
    probe = (
        "import importlib.metadata, fastmcp.client, fastmcp.skills\n"
        f"assert importlib.metadata.version('fastmcp') == {version!r}"
    )
    bench = REPO / "bench" / ".venv-fastmcp" / "bin" / "python"
    if bench.exists() and _probe(bench, probe):
        return bench
    return _ensure_pip_venv(FASTMCP, probe)


def _probe(python: Path, code: str) -> bool:
    proc = subprocess.run([str(python), "-c", code], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return proc.returncode == 0


def _ensure_pip_venv(spec: str, probe: str) -> Path:
    """Create (once) a venv under the test cache holding the pip requirements ``spec``; return its ``python``.

    Reused while its marker names the same ``spec`` and the Python code ``probe`` runs without error;
    otherwise rebuilt from scratch. A lock file keeps two runs from building it at once.
    """
    import fcntl

    cache = tool_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / ("venv-" + re.sub(r"[^A-Za-z0-9.]+", "-", spec).strip("-"))
    python = venv / "bin" / "python"
    marker = venv / ".skilldeck-tests-complete"

    def usable() -> bool:
        if not marker.is_file() or marker.read_text() != spec or not python.exists():
            return False
        return _probe(python, probe)

    def run(cmd: list[str]) -> None:
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
        env.pop("VIRTUAL_ENV", None)
        proc = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=PIP_TIMEOUT, env=env
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n"
                f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
            )

    with (cache / (venv.name + ".lock")).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if usable():
            return python
        shutil.rmtree(venv, ignore_errors=True)
        # sys.executable may itself be a venv's python; `-m venv` builds on its base interpreter.
        run([sys.executable, "-m", "venv", str(venv)])
        run([str(python), "-m", "pip", "install", "--quiet", *spec.split()])
        marker.write_text(spec)
        if not usable():
            raise RuntimeError(f"{venv}: installed {spec}, but this check fails: {probe}")
    return python


def ensure_ts_client() -> Path:
    """Install (once) ``TS_CLIENT`` with npm into a folder of the test cache; return that folder.

    Its ``node_modules`` holds the package and its dependencies; the folder is reused while its
    marker names the same spec and the package's ``package.json`` is there, otherwise it is
    installed from scratch. A lock file keeps two runs from installing at once. ``.ci/run`` calls
    this too, so CI installs it before the tests start.

    Raises:
        RuntimeError: npm is missing or the install failed (output attached).
    """
    import fcntl

    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is not on PATH: install Node.js with npm to install {TS_CLIENT}")
    cache = tool_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    folder = cache / ("npm-" + re.sub(r"[^A-Za-z0-9.]+", "-", TS_CLIENT).strip("-"))
    marker = folder / ".skilldeck-tests-complete"
    name = TS_CLIENT.rpartition("@")[0]
    installed = folder / "node_modules" / name / "package.json"
    with (cache / (folder.name + ".lock")).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and marker.read_text() == TS_CLIENT and installed.is_file():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / "package.json").write_text('{"name": "skilldeck-tests-ts-client", "private": true}\n')
        cmd = [npm, "install", "--no-audit", "--no-fund", "--no-update-notifier", "--save-exact", TS_CLIENT]
        env = {**os.environ, "npm_config_loglevel": "error"}
        proc = subprocess.run(
            cmd, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=PIP_TIMEOUT, env=env
        )
        if proc.returncode != 0 or not installed.is_file():
            raise RuntimeError(
                f"command failed with exit code {proc.returncode} in {folder}: {' '.join(cmd)}\n"
                f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
            )
        marker.write_text(TS_CLIENT)
    return folder


@pytest.fixture(scope="session")
def ts_client_dir(npx: str) -> Path:
    """The folder whose ``node_modules`` holds ``TS_CLIENT`` (see :func:`ensure_ts_client`)."""
    try:
        return ensure_ts_client()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"could not install {TS_CLIENT}:\n{exc}", pytrace=False)


@pytest.fixture(scope="session")
def ts_skills_client_cmd(ts_client_dir: Path) -> list[str]:
    """npx arguments that run tests/integration/ts_skills_client.mjs on Node 22 (append URL, era, folders)."""
    script = Path(__file__).resolve().parent / "ts_skills_client.mjs"
    return ["-p", NODE, "node", str(script), str(ts_client_dir)]


@pytest.fixture(scope="session")
def fastmcp_python() -> Path:
    """The ``python`` of the venv holding ``FASTMCP`` (it runs tests/integration/fastmcp_client.py)."""
    try:
        return ensure_fastmcp_venv()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"could not prepare the FastMCP venv ({FASTMCP}):\n{exc}", pytrace=False)


@pytest.fixture(scope="session")
def npm_server_specs() -> dict[str, str]:
    """The pinned npm MCP servers by short name, each to be run as ``npx -y <spec>``."""
    return {"everything": SERVER_EVERYTHING, "filesystem": SERVER_FILESYSTEM, "memory": SERVER_MEMORY}


@pytest.fixture(scope="session")
def time_server_python() -> Path:
    """The ``python`` of the venv holding ``mcp-server-time`` (run it as ``python -m mcp_server_time``)."""
    try:
        return ensure_time_server_venv()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"could not prepare the mcp-server-time venv ({TIME_SERVER}):\n{exc}", pytrace=False)


def skilldeck_command() -> list[str]:
    """The installed ``skilldeck`` console script next to this interpreter, else ``python -m skilldeck.cli``."""
    script = Path(sys.executable).parent / "skilldeck"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "skilldeck.cli"]


@pytest.fixture(scope="session")
def skilldeck_cmd() -> list[str]:
    """Argv prefix that runs this checkout's ``skilldeck`` CLI (the venv's console script)."""
    return skilldeck_command()


@dataclass
class CliResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    """Wall-clock seconds the command took."""

    def describe(self) -> str:
        return (
            f"command: {' '.join(self.args)}\nexit code: {self.returncode} after {self.elapsed:.1f}s\n"
            f"--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-6000:]}"
        )


@pytest.fixture
def run_skilldeck(tmp_path: Path):
    """Run the ``skilldeck`` CLI with ``$SKILLDECK_HOME`` in a fresh temp dir; capture output and wall time.

    Returns ``run(*args, home=None)``; ``home`` overrides the state folder (e.g. to reuse a cache).
    """
    default_home = tmp_path / "skilldeck-home"

    def run(*args: str, home: Path | None = None) -> CliResult:
        cmd = [*skilldeck_command(), *args]
        env = {**os.environ, "SKILLDECK_HOME": str(home or default_home), "COLUMNS": "400", "NO_COLOR": "1"}
        start = time.monotonic()
        try:
            proc = subprocess.run(
                cmd,
                cwd=tmp_path,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=SKILLDECK_CLI_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            pytest.fail(
                f"skilldeck did not finish within {SKILLDECK_CLI_TIMEOUT:.0f}s\n"
                + CliResult(cmd, -1, out, err, time.monotonic() - start).describe()
            )
        return CliResult(cmd, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)

    return run
