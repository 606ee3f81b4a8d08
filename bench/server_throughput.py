"""Requests per second of ``skills/list`` and ``resources/read``: skilldeck's server vs its peers.

Run from the repository root::

    .venv/bin/python bench/server_throughput.py            # 3 reps, ~8 minutes on 2 cores
    .venv/bin/python bench/server_throughput.py --quick    # 1 rep, shorter windows, ~2 minutes
    .venv/bin/python bench/server_throughput.py --peers ts --eras 2025-11-25 --profile /tmp/legacy.prof

Every server serves the same pack (``examples/skills``) over streamable HTTP on 127.0.0.1, each in
its own subprocess: skilldeck through ``python -m skilldeck.cli serve PACK --http 127.0.0.1:PORT``;
the peers (``--peers``, default all four):

- ``ts``: the official TypeScript SDK v2 (``@modelcontextprotocol/server`` 2.4.0, its skills extension
  ``loadSkills(root)`` + ``skills.attach(server)``) on Node 22 and plain ``node:http``, through
  ``bench/ts_skills_server/server.mjs``. Its pinned ``package.json`` and ``package-lock.json`` are
  installed on first use with ``npm ci`` (npm of ``npx -p node@22``) into ``bench/.ts-skills-server``;
  the server runs on that Node 22 binary directly, so its CPU time and memory are its own.
- ``ts-json``: the same TypeScript server with its 2025-11-25 transport answering one JSON body
  per request (``enableJsonResponse``), as skilldeck's server does by default.
- ``fastmcp``: FastMCP 4.2's ``fastmcp.skills.provider.SkillsDirectoryProvider`` through
  ``bench/_fastmcp_server.py`` run by a separate venv (``bench/.venv-fastmcp``, created and filled
  with ``pip install "fastmcp>=4.2,<4.3"`` when missing).
- ``sse``: skilldeck's own server with ``--sse-responses``, answering every request as an SSE
  stream (what it did before JSON bodies became the default), to show what that choice is worth.

All are measured in the same run, cell by cell, rotating which goes first, by the same load
generator in this process. Besides req/s, each cell records the server's CPU milliseconds per
completed request (CPU time of the server process over the window / requests completed in it):
the load generator shares the cores, so req/s alone rewards a server that leaves it more CPU.
``--profile PATH`` runs skilldeck's server under ``cProfile`` and writes its stats to PATH when
the run ends (pick one era with ``--eras`` to profile that era's path).

The load generator is a minimal keep-alive HTTP/1.1 client on asyncio streams (``--client raw``,
the default; ``--client httpx2`` uses the SDK's HTTP client instead, as a cross-check). It costs far
less CPU per request than httpx2, which matters on a 2-core machine where the generator and the
server share the cores. Each simulated client owns one TCP connection and one MCP session: it opens
the session once (2025-11-25: ``initialize`` + ``notifications/initialized`` and the
``Mcp-Session-Id`` header; 2026-07-28: one ``server/discover``, then every POST carries its own
``_meta`` envelope and ``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` headers), then sends
requests back to back. Requests completed during the measured window (after a warm-up) are counted
only if the response is a JSON-RPC result that is exactly right: the skills list holds the expected
skill URIs, a read returns the file's exact text or bytes. Every response is checked, not a sample.

Results: a table on stdout and ``bench/results/server_throughput.json`` (machine, versions, command
line, settings, every repetition of every cell).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
sys.path.append(str(BENCH))  # appended: bench/agents.py never shadows the agents package

from _common import free_port, stop, window_arguments, window_settings  # noqa: E402

PACK = REPO / "examples" / "skills"
FASTMCP_VENV = BENCH / ".venv-fastmcp"
FASTMCP_SERVER = BENCH / "_fastmcp_server.py"
TS_SERVER_DIR = BENCH / "ts_skills_server"
TS_MODULES = BENCH / ".ts-skills-server"  # git-ignored: node_modules installed from TS_SERVER_DIR's lock file
NODE = "node@22"
PEERS = ("ts", "ts-json", "fastmcp", "sse")
DEFAULT_OUTPUT = BENCH / "results" / "server_throughput.json"
FASTMCP_SPEC = "fastmcp>=4.2,<4.3"
HOST = "127.0.0.1"  # loopback only
PATH = "/mcp"

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ERAS = (MODERN, LEGACY)
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "skilldeck-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
ACCEPT = "application/json, text/event-stream"
REQUEST_TIMEOUT_S = 30.0


class BenchError(Exception):
    """A request failed or returned something other than the expected result."""


# -- what is measured ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    key: str
    label: str
    method: str
    uri: str | None = None

    @property
    def params(self) -> dict[str, Any]:
        return {"uri": self.uri} if self.uri else {}


OPERATIONS = {
    op.key: op
    for op in (
        Operation("list", "skills/list", "skills/list"),
        Operation("read-text", "resources/read SKILL.md", "resources/read", "skill://job-search/SKILL.md"),
        Operation("read-binary", "resources/read logo.png", "resources/read", "skill://pdf-forms/assets/logo.png"),
    )
}


def _skill_paths(pack: Path) -> list[str]:
    return sorted(p.parent.relative_to(pack).as_posix() for p in pack.rglob("SKILL.md"))


def _top_level(paths: list[str]) -> list[str]:
    """Skill folders not inside another skill folder (FastMCP serves a nested one as a file)."""
    return [p for p in paths if not any(p.startswith(f"{other}/") for other in paths if other != p)]


@dataclass(frozen=True)
class Expectations:
    """What a correct answer looks like, per operation, for one server."""

    skill_uris: frozenset[str]
    texts: dict[str, str]
    blobs: dict[str, str]

    def check(self, op: Operation, result: Any) -> None:
        if not isinstance(result, dict):
            raise BenchError(f"result is not an object: {result!r:.200}")
        if op.method == "skills/list":
            skills = result.get("skills")
            if not isinstance(skills, list):
                raise BenchError("skills/list result has no skills array")
            uris = {s.get("uri") for s in skills}
            if uris != self.skill_uris or len(skills) != len(self.skill_uris) or result.get("nextCursor"):
                raise BenchError(f"skills/list returned {sorted(map(str, uris))}, expected {sorted(self.skill_uris)}")
            for s in skills:
                name = s.get("frontmatter", {}).get("name")
                if s["uri"].removesuffix("/SKILL.md").rsplit("/", 1)[-1] != name:
                    raise BenchError(f"skills/list entry {s['uri']} has frontmatter name {name!r}")
            return
        contents = result.get("contents")
        if not isinstance(contents, list) or len(contents) != 1 or contents[0].get("uri") != op.uri:
            raise BenchError(f"resources/read {op.uri} returned {contents!r:.200}")
        item = contents[0]
        assert op.uri is not None
        if op.uri in self.texts:
            if item.get("text") != self.texts[op.uri]:
                raise BenchError(f"resources/read {op.uri}: text differs from the file")
        elif item.get("blob") != self.blobs[op.uri]:
            raise BenchError(f"resources/read {op.uri}: blob differs from the file's bytes")


def _expectations(pack: Path, skill_paths: list[str]) -> Expectations:
    texts: dict[str, str] = {}
    blobs: dict[str, str] = {}
    for op in OPERATIONS.values():
        if op.uri is None:
            continue
        data = (pack / op.uri.removeprefix("skill://")).read_bytes()
        if op.uri.endswith(".png"):
            blobs[op.uri] = base64.b64encode(data).decode("ascii")
        else:
            texts[op.uri] = data.decode("utf-8")
    return Expectations(frozenset(f"skill://{p}/SKILL.md" for p in skill_paths), texts, blobs)


# -- HTTP clients ---------------------------------------------------------------------------------


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


class RawHTTP:
    """One keep-alive HTTP/1.1 connection on asyncio streams: just enough for an MCP endpoint."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self._host, self._port = host, port
        self._path = path.encode()
        self._host_header = f"{host}:{port}".encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    @staticmethod
    def prepare(headers: dict[str, str]) -> bytes:
        return b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items())

    async def request(self, method: str, prepared: bytes, body: bytes = b"") -> Response:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        reader, writer = self._reader, self._writer
        assert reader is not None
        try:
            writer.write(
                b"%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n%s"
                % (method.encode(), self._path, self._host_header, prepared, len(body), body)
            )
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head[:-4].split(b"\r\n")
            status = int(lines[0].split(b" ", 2)[1])
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
            if "content-length" in headers:
                data = await reader.readexactly(int(headers["content-length"]))
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                parts = []
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                    if size == 0:
                        while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                            pass
                        break
                    parts.append((await reader.readexactly(size + 2))[:-2])
                data = b"".join(parts)
            else:
                data = await reader.read()
                headers["connection"] = "close"
        except BaseException:
            await self.aclose()
            raise
        if headers.get("connection", "").lower() == "close":
            await self.aclose()
        return Response(status, headers, data)

    async def aclose(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


class Httpx2HTTP:
    """The same interface on ``httpx2.AsyncClient`` (the HTTP client of the ``mcp`` SDK)."""

    def __init__(self, host: str, port: int, path: str) -> None:
        import httpx2

        self._url = f"http://{host}:{port}{path}"
        self._client = httpx2.AsyncClient(timeout=REQUEST_TIMEOUT_S)

    @staticmethod
    def prepare(headers: dict[str, str]) -> dict[str, str]:
        return headers

    async def request(self, method: str, prepared: dict[str, str], body: bytes = b"") -> Response:
        r = await self._client.request(method, self._url, headers=prepared, content=body)
        return Response(r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.content)

    async def aclose(self) -> None:
        await self._client.aclose()


CLIENTS: dict[str, Callable[[str, int, str], RawHTTP | Httpx2HTTP]] = {"raw": RawHTTP, "httpx2": Httpx2HTTP}


def _jsonrpc_message(response: Response, request_id: int) -> dict[str, Any]:
    if response.status != 200:
        raise BenchError(f"HTTP {response.status}: {response.body[:200]!r}")
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for event in response.body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = b"\n".join(line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:"))
            if data:
                msg = json.loads(data)
                if msg.get("id") == request_id and ("result" in msg or "error" in msg):
                    return msg
        raise BenchError(f"no response to request {request_id} in the SSE stream")
    msg = json.loads(response.body)
    if not isinstance(msg, dict) or msg.get("id") != request_id:
        raise BenchError(f"unexpected JSON-RPC message: {response.body[:200]!r}")
    return msg


class JSONRPCError(BenchError):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"JSON-RPC error {error.get('code')}: {error.get('message')}")
        self.code = error.get("code")


def _result(msg: dict[str, Any]) -> Any:
    if "error" in msg:
        raise JSONRPCError(msg["error"])
    return msg["result"]


# -- one MCP session on one connection -----------------------------------------------------------


class Session:
    """An MCP session of either era, reduced to 'send this request, give me the result'."""

    def __init__(self, http: RawHTTP | Httpx2HTTP, era: str) -> None:
        self.http = http
        self.era = era
        self._next_id = 0
        self._base = {"Accept": ACCEPT, "Content-Type": "application/json"}
        self._prepared: dict[tuple[str, str], tuple[Any, bytes]] = {}
        self.server_info: dict[str, Any] = {}
        self.meta: dict[str, Any] = META
        """The ``_meta`` envelope of every 2026-07-28 request (a subclass may add its own keys)."""

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def open(self) -> None:
        if self.era == MODERN:
            result = await self.call("server/discover", {})
            if MODERN not in result.get("supportedVersions", []):
                raise BenchError(f"server/discover does not list {MODERN}: {result!r:.300}")
            self.server_info = result
            return
        request_id = self._id()
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "skilldeck-bench", "version": "1"},
                },
            }
        ).encode()
        response = await self.http.request("POST", self.http.prepare(self._base), body)
        result = _result(_jsonrpc_message(response, request_id))
        if result.get("protocolVersion") != LEGACY:
            raise BenchError(f"initialize negotiated {result.get('protocolVersion')!r}, not {LEGACY}")
        self.server_info = result
        session_id = response.headers.get("mcp-session-id")
        if not session_id:
            raise BenchError("initialize reply carries no Mcp-Session-Id header")
        self._base = {**self._base, "Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY}
        note = await self.http.request(
            "POST", self.http.prepare(self._base), b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        )
        if note.status != 202:
            raise BenchError(f"notifications/initialized answered HTTP {note.status}")

    def _request_parts(self, method: str, params: dict[str, Any]) -> tuple[Any, bytes]:
        key = (method, str(params.get("uri") or params.get("name") or ""))
        cached = self._prepared.get(key)
        if cached is None:
            headers = dict(self._base)
            payload = dict(params)
            if self.era == MODERN:
                headers |= {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
                if method == "resources/read":
                    headers["Mcp-Name"] = params["uri"]  # plain ASCII URIs here: no =?base64? needed
                elif method == "tools/call":
                    headers["Mcp-Name"] = params["name"]
                payload["_meta"] = self.meta
            tail = json.dumps({"method": method, "params": payload}, separators=(",", ":")).encode()
            cached = (self.http.prepare(headers), b'{"jsonrpc":"2.0","id":%d,' + tail[1:].replace(b"%", b"%%"))
            self._prepared[key] = cached
        return cached

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        prepared, template = self._request_parts(method, params)
        request_id = self._id()
        response = await self.http.request("POST", prepared, template % request_id)
        return _result(_jsonrpc_message(response, request_id))

    async def close(self) -> None:
        try:
            if self.era == LEGACY and "Mcp-Session-Id" in self._base:
                await self.http.request("DELETE", self.http.prepare(self._base))
        except (OSError, asyncio.IncompleteReadError, BenchError):
            pass
        finally:
            await self.http.aclose()


# -- servers --------------------------------------------------------------------------------------


@dataclass
class Target:
    key: str
    label: str
    command: list[str]
    expectations: Expectations
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    sessions_opened: dict[str, int] = field(default_factory=dict)


def _start(target: Target, log_dir: Path) -> None:
    target.log_path = log_dir / f"{target.key}.log"
    log = target.log_path.open("wb")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **target.env}
    target.process = subprocess.Popen(target.command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
    log.close()


def _wait_ready(target: Target, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    assert target.process is not None
    while time.monotonic() < deadline:
        if target.process.poll() is not None:
            raise SystemExit(f"{target.label} exited with {target.process.returncode}:\n{_log_tail(target)}")
        try:
            with socket.create_connection((HOST, target.port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{target.label} did not listen on {HOST}:{target.port} within {timeout_s:.0f}s")


def _log_tail(target: Target, lines: int = 30) -> str:
    if target.log_path is None or not target.log_path.exists():
        return ""
    return "\n".join(target.log_path.read_text(errors="replace").splitlines()[-lines:])


def _stop(target: Target) -> None:
    stop(target.process, 10)


def _memory_kib(pid: int) -> dict[str, int]:
    """Resident set size now and at its peak (Linux /proc), in KiB."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return {"rss_kib": out.get("VmRSS", 0), "peak_rss_kib": out.get("VmHWM", 0)}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the FastMCP venv -----------------------------------------------------------------------------


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


_VERSIONS_SCRIPT = """
import importlib.metadata as m, importlib.util as u, json, platform, sys
names = sys.argv[1:]
out = {}
for n in names:
    try:
        out[n] = m.version(n)
    except m.PackageNotFoundError:
        out[n] = None
print(json.dumps({"python": platform.python_version(), "executable": sys.executable, "packages": out,
                  "uvloop": u.find_spec("uvloop") is not None, "httptools": u.find_spec("httptools") is not None}))
"""

MAIN_PACKAGES = [
    "skilldeck",
    "mcp",
    "mcp-types",
    "uvicorn",
    "starlette",
    "pydantic",
    "pydantic-core",
    "anyio",
    "httpx2",
]
FASTMCP_PACKAGES = ["fastmcp", "mcp", "mcp-types", "uvicorn", "starlette", "pydantic", "pydantic-core", "anyio"]


def _versions(python: Path | str, names: list[str]) -> dict[str, Any]:
    out = subprocess.run([str(python), "-c", _VERSIONS_SCRIPT, *names], capture_output=True, text=True, check=True)
    found: dict[str, Any] = json.loads(out.stdout)
    executable = Path(found["executable"])  # recorded relative to the repository: no machine paths in results
    if executable.is_relative_to(REPO):
        found["executable"] = executable.relative_to(REPO).as_posix()
    return found


def ensure_fastmcp_venv(spec: str, log: Callable[[str], None]) -> Path:
    python = _venv_python(FASTMCP_VENV)
    if python.exists():
        try:
            version = _versions(python, ["fastmcp"])["packages"]["fastmcp"]
        except (subprocess.CalledProcessError, json.JSONDecodeError):
            version = None
        if version and version.startswith("4.2."):
            return python
    if not python.exists():
        log(f"creating {FASTMCP_VENV.relative_to(REPO)} ...")
        subprocess.run([sys.executable, "-m", "venv", str(FASTMCP_VENV)], check=True)
    pip_install(python, spec, log)
    return python


def pip_install(python: Path, spec: str, log: Callable[[str], None]) -> None:
    """``pip install spec`` with the FastMCP venv's interpreter ``python``."""
    log(f"pip install {spec!r} into {FASTMCP_VENV.relative_to(REPO)} ...")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", spec],
        check=True,
        stdout=subprocess.DEVNULL,
    )


# -- the TypeScript SDK's node_modules ------------------------------------------------------------

TS_PACKAGES = ["@modelcontextprotocol/server", "@modelcontextprotocol/core", "@modelcontextprotocol/node", "zod"]


def _node22(log: Callable[[str], None]) -> str:
    """The path of the Node 22 binary ``npx -p node@22`` runs (fetched into npm's cache on first use)."""
    npx = shutil.which("npx")
    if npx is None:
        raise SystemExit("npx is not on PATH: install Node.js with npm to run the TypeScript SDK peer")
    log(f"resolving {NODE} through npx ...")
    out = subprocess.run(
        [npx, "-y", "-p", NODE, "node", "-p", "process.execPath"], capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


def ensure_ts_server(node: str, log: Callable[[str], None]) -> Path:
    """Install ``bench/ts_skills_server``'s locked dependencies into TS_MODULES once; return that folder.

    Reused while its marker holds the same package.json + package-lock.json; otherwise installed from
    scratch with ``npm ci`` run by the Node 22 of ``npx -p node@22`` (exactly the locked versions).
    """
    spec = "".join((TS_SERVER_DIR / name).read_text() for name in ("package.json", "package-lock.json"))
    marker = TS_MODULES / ".installed-from"
    if marker.is_file() and marker.read_text() == spec:
        return TS_MODULES
    shutil.rmtree(TS_MODULES, ignore_errors=True)
    TS_MODULES.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(TS_SERVER_DIR / name, TS_MODULES / name)
    log(f"npm ci {TS_SERVER_DIR.relative_to(REPO)} into {TS_MODULES.relative_to(REPO)} ...")
    npx = shutil.which("npx")
    assert npx is not None  # _node22 found it
    subprocess.run(
        [npx, "-y", "-p", NODE, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=TS_MODULES,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    marker.write_text(spec)
    return TS_MODULES


def _ts_versions(node: str, modules: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in TS_PACKAGES:
        manifest = modules / "node_modules" / name / "package.json"
        found[name] = json.loads(manifest.read_text())["version"] if manifest.is_file() else None
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return {"node": version, "packages": found}


# -- the load generator ---------------------------------------------------------------------------


@dataclass
class RepResult:
    rps: float
    completed: int
    errors: int
    p50_ms: float
    p99_ms: float
    server_cpu_pct: float
    client_cpu_pct: float
    server_cpu_ms_per_req: float = float("nan")
    first_error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        # NaN (no successful request, no /proc) is not JSON: write null
        return {k: ((round(v, 3) if v == v else None) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1)))]


SessionFactory = Callable[[RawHTTP | Httpx2HTTP, str], Session]


async def _open_sessions(
    target: Target, era: str, clients: int, client_kind: str, session: SessionFactory = Session
) -> list[Session]:
    sessions = [session(CLIENTS[client_kind](HOST, target.port, PATH), era) for _ in range(clients)]
    try:
        # a few at a time: 64 simultaneous handshakes is a connection storm, not what is measured
        semaphore = asyncio.Semaphore(8)

        async def open_one(s: Session) -> None:
            async with semaphore:
                await s.open()

        await asyncio.gather(*(open_one(s) for s in sessions))
        target.sessions_opened[era] = target.sessions_opened.get(era, 0) + clients
    except BaseException:
        await asyncio.gather(*(s.close() for s in sessions))
        raise
    return sessions


async def run_rep(
    target: Target,
    era: str,
    op: Operation,
    clients: int,
    warmup_s: float,
    duration_s: float,
    client_kind: str,
    session: SessionFactory = Session,
) -> RepResult:
    assert target.process is not None
    sessions = await _open_sessions(target, era, clients, client_kind, session)
    try:
        # every client checks one full answer before the clock starts (and every answer after it)
        async def check_first(s: Session) -> None:
            try:
                result = await s.call(op.method, op.params)
            except (asyncio.IncompleteReadError, ConnectionError):
                # the server closed a keep-alive connection idle since open() (uvicorn: after 5 s,
                # reached when 64 sessions open on a busy machine): the next request reconnects
                result = await s.call(op.method, op.params)
            target.expectations.check(op, result)

        await asyncio.gather(*(check_first(s) for s in sessions))
        t_start = time.perf_counter() + warmup_s
        t_end = t_start + duration_s
        latencies: list[float] = []
        counts = {"ok": 0, "errors": 0}
        first_error: list[str] = []

        async def worker(s: Session) -> None:
            method, params, check = op.method, op.params, target.expectations.check
            while True:
                t0 = time.perf_counter()
                if t0 >= t_end:
                    return
                try:
                    check(op, await s.call(method, params))
                    ok = True
                except Exception as exc:  # a wrong answer or a dropped connection: counted, not fatal
                    ok = False
                    if not first_error:
                        first_error.append(f"{type(exc).__name__}: {exc}")
                t1 = time.perf_counter()
                if t_start <= t1 <= t_end:
                    if ok:
                        counts["ok"] += 1
                        latencies.append(t1 - t0)
                    else:
                        counts["errors"] += 1

        cpu: dict[str, float] = {}

        async def sample_cpu() -> None:
            assert target.process is not None
            await asyncio.sleep(max(0.0, t_start - time.perf_counter()))
            s0, c0, w0 = _cpu_seconds(target.process.pid), time.process_time(), time.perf_counter()
            await asyncio.sleep(max(0.0, t_end - time.perf_counter()))
            s1, c1, w1 = _cpu_seconds(target.process.pid), time.process_time(), time.perf_counter()
            cpu["server"] = 100 * (s1 - s0) / (w1 - w0)
            cpu["server_s"] = s1 - s0
            cpu["client"] = 100 * (c1 - c0) / (w1 - w0)

        async with asyncio.timeout(warmup_s + duration_s + REQUEST_TIMEOUT_S):
            await asyncio.gather(sample_cpu(), *(worker(s) for s in sessions))
    finally:
        await asyncio.gather(*(s.close() for s in sessions))
    latencies.sort()
    return RepResult(
        rps=counts["ok"] / duration_s,
        completed=counts["ok"],
        errors=counts["errors"],
        p50_ms=1000 * _percentile(latencies, 0.50),
        p99_ms=1000 * _percentile(latencies, 0.99),
        server_cpu_pct=cpu.get("server", float("nan")),
        client_cpu_pct=cpu.get("client", float("nan")),
        # CPU time over the window / requests completed in it (the window is a few ticks wider: /proc)
        server_cpu_ms_per_req=1000 * cpu["server_s"] / counts["ok"]
        if counts["ok"] and "server_s" in cpu
        else float("nan"),
        first_error=first_error[0] if first_error else None,
    )


async def probe(target: Target, era: str, op: Operation, client_kind: str) -> tuple[str, str | None]:
    """('ok', None), ('n/a', why) when the server does not implement it, or ('invalid', why)."""
    sessions = await _open_sessions(target, era, 1, client_kind)
    try:
        result = await sessions[0].call(op.method, op.params)
        target.expectations.check(op, result)
    except JSONRPCError as exc:
        return "n/a", str(exc)
    except BenchError as exc:
        return "invalid", str(exc)
    finally:
        await sessions[0].close()
    return "ok", None


# -- the run --------------------------------------------------------------------------------------


def _cells(eras: list[str], ops: list[str], clients: list[int]) -> list[tuple[str, str, int]]:
    return [(era, op, c) for era in eras for op in ops for c in clients]


async def run_matrix(targets: list[Target], args: argparse.Namespace, say: Callable[[str], None]) -> dict[str, Any]:
    support: dict[tuple[str, str, str], tuple[str, str | None]] = {}
    for target in targets:
        for era in args.eras:
            for key in args.ops:
                support[target.key, era, key] = await probe(target, era, OPERATIONS[key], args.client)
                status, why = support[target.key, era, key]
                if status != "ok":
                    say(f"  {target.label} {era} {OPERATIONS[key].label}: {status} ({why})")
    invalid = [(k, v) for k, v in support.items() if v[0] == "invalid"]
    if invalid:
        raise SystemExit(f"wrong answers, not benchmarking: {invalid}")

    cells = _cells(args.eras, args.ops, args.clients)
    reps: dict[tuple[str, str, str, int], list[RepResult]] = {}
    runs = sum(1 for era, op, _c in cells for t in targets if support[t.key, era, op][0] == "ok") * args.reps
    done = 0
    for rep in range(args.reps):
        for i, (era, key, clients) in enumerate(cells):
            k = (rep + i) % len(targets)
            order = targets[k:] + targets[:k]  # rotate who goes first
            for target in order:
                if support[target.key, era, key][0] != "ok":
                    continue
                result = await run_rep(target, era, OPERATIONS[key], clients, args.warmup, args.duration, args.client)
                reps.setdefault((target.key, era, key, clients), []).append(result)
                done += 1
                say(
                    f"  [{done}/{runs}] rep {rep + 1} {target.label:<9} {era} {OPERATIONS[key].label:<24} "
                    f"c={clients:<3} {result.rps:8.0f} req/s  p50 {result.p50_ms:6.2f} ms  "
                    f"server CPU {result.server_cpu_pct:3.0f}% ({result.server_cpu_ms_per_req:.2f} ms/req)  "
                    f"client CPU {result.client_cpu_pct:3.0f}%"
                    + (f"  errors {result.errors} ({result.first_error})" if result.errors else "")
                )

    out_cells = []
    for era, key, clients in cells:
        row: dict[str, Any] = {"era": era, "operation": OPERATIONS[key].label, "op": key, "clients": clients}
        for target in targets:
            status, why = support[target.key, era, key]
            runs_ = reps.get((target.key, era, key, clients), [])
            entry: dict[str, Any] = {"status": status}
            if why:
                entry["reason"] = why
            if runs_:
                entry |= {
                    "median_rps": round(statistics.median(r.rps for r in runs_), 1),
                    "median_p50_ms": round(statistics.median(r.p50_ms for r in runs_), 3),
                    "median_p99_ms": round(statistics.median(r.p99_ms for r in runs_), 3),
                    "median_cpu_ms_per_req": round(statistics.median(r.server_cpu_ms_per_req for r in runs_), 3),
                    "errors": sum(r.errors for r in runs_),
                    "reps": [r.as_dict() for r in runs_],
                }
            row[target.key] = entry
        # skilldeck (targets[0]) over each peer: req/s ratio of the medians, and per rep (the servers
        # run back to back within each rep, so per-rep ratios share the machine's mood)
        row["ratio"], row["ratio_per_rep"] = {}, {}
        mine = reps.get((targets[0].key, era, key, clients), [])
        for peer in targets[1:]:
            a, b = row[targets[0].key].get("median_rps"), row[peer.key].get("median_rps")
            row["ratio"][peer.key] = round(a / b, 2) if a and b else None
            theirs = reps.get((peer.key, era, key, clients), [])
            pairs = zip(mine, theirs, strict=False)  # n/a cells have no runs on one side
            row["ratio_per_rep"][peer.key] = [round(x.rps / y.rps, 2) for x, y in pairs if y.rps]
        out_cells.append(row)
    servers = {
        t.key: {
            "sessions_opened": t.sessions_opened,
            **_memory_kib(t.process.pid),  # type: ignore[union-attr]
        }
        for t in targets
    }
    return {"support": {"|".join(k): v[0] for k, v in support.items()}, "servers": servers, "cells": out_cells}


def _fmt_rps(entry: dict[str, Any]) -> str:
    if entry["status"] != "ok":
        return entry["status"]
    return f"{entry['median_rps']:,.0f}"


def _fmt(entry: dict[str, Any], field: str) -> str:
    value = entry.get(field) if entry["status"] == "ok" else None
    return f"{value:.2f}" if isinstance(value, int | float) else "n/a"


def table_headers(labels: list[str]) -> list[str]:
    """labels[0] is skilldeck, the rest its peers: req/s each, skilldeck's ratio to each, CPU ms/req, p99."""
    own, peers = labels[0], labels[1:]
    return [
        "protocol",
        "operation",
        "clients",
        *(f"{label} req/s" for label in labels),
        *(f"{own} / {label}" for label in peers),
        "CPU ms/req " + " / ".join(labels),
        "p99 ms " + " / ".join(labels),
    ]


def table_rows(cells: list[dict[str, Any]], keys: list[str]) -> list[list[str]]:
    rows = []
    for c in cells:
        entries = [c[k] for k in keys]
        ratios = [c["ratio"].get(k) for k in keys[1:]]
        rows.append(
            [
                c["era"],
                c["operation"],
                str(c["clients"]),
                *(_fmt_rps(e) for e in entries),
                *(f"{r:.2f}x" if r else "n/a" for r in ratios),
                " / ".join(_fmt(e, "median_cpu_ms_per_req") for e in entries),
                " / ".join(_fmt(e, "median_p99_ms") for e in entries),
            ]
        )
    return rows


def markdown_table(cells: list[dict[str, Any]], keys: list[str], labels: list[str]) -> str:
    headers = table_headers(labels)
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" if i < 2 else "---:" for i in range(len(headers))) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(cells, keys)]
    return "\n".join(lines)


def print_table(cells: list[dict[str, Any]], keys: list[str], labels: list[str], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, h in enumerate(table_headers(labels)):
        table.add_column(h, justify="right" if i >= 2 else "left")
    for row in table_rows(cells, keys):
        table.add_row(*row)
    console = Console()
    if not console.is_terminal:  # piped: don't squeeze the table into 80 columns
        console = Console(width=180)
    console.print(table)


def machine(load_at_start: tuple[float, float, float] | None) -> dict[str, Any]:
    """The machine a run measured on, as the gateway's and observability benchmarks' JSON records it."""
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg_at_start": load_at_start,
        "loadavg_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0] if __doc__ else None)
    window_arguments(p, duration="1.5", clients=[1, 8, 64], quick=" (~1 minute)")
    p.add_argument("--eras", nargs="+", choices=ERAS, default=list(ERAS), help="protocol versions to run")
    p.add_argument("--ops", nargs="+", choices=list(OPERATIONS), default=list(OPERATIONS), help="operations to run")
    p.add_argument("--client", choices=list(CLIENTS), default="raw", help="load generator HTTP client (default raw)")
    p.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results path")
    p.add_argument(
        "--peers",
        nargs="*",
        choices=PEERS,
        default=list(PEERS),
        help="servers to compare with (default: all; none: ours alone)",
    )
    p.add_argument(
        "--profile", type=Path, metavar="PATH", help="run skilldeck's server under cProfile, write its stats to PATH"
    )
    p.add_argument(
        "--fastmcp-spec", default=FASTMCP_SPEC, help=f"pip requirement for the FastMCP venv ({FASTMCP_SPEC})"
    )
    args = p.parse_args(argv)
    if args.reps is None:
        args.reps = 1 if args.quick else 3
    if args.duration is None:
        args.duration = 1.0 if args.quick else 1.5
    if args.warmup is None:
        args.warmup = 0.3 if args.quick else 0.5
    if args.reps < 1 or args.duration <= 0 or args.warmup < 0 or min(args.clients) < 1 or max(args.clients) > 256:
        p.error("need reps >= 1, duration > 0, warmup >= 0 and 1 <= clients <= 256")
    return args


# uvicorn re-raises a SIGTERM it caught once it has shut down, which would kill ``python -m cProfile``
# before it writes: a handler installed first gets it instead (uvicorn restores it) and exits cleanly.
_PROFILED_SERVE = """
import cProfile, signal, sys, time
out, sys.argv = sys.argv[1], ["skilldeck", *sys.argv[2:]]
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
from skilldeck.cli import main
profile = cProfile.Profile(time.process_time)  # CPU time: what a loaded machine does not inflate
try:
    profile.runcall(main)
except SystemExit:
    pass
finally:
    profile.dump_stats(out)
"""


def _print_profile(path: Path, say: Callable[[str], None], top: int = 40) -> None:
    import io
    import pstats

    if not path.is_file():
        say(f"no profile at {path}: the server did not exit cleanly")
        return
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    say(out.getvalue())
    say(f"profile written to {path} (python -m pstats {path})")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    skill_paths = _skill_paths(PACK)
    own = [sys.executable, "-m", "skilldeck.cli", "serve", str(PACK), "--http"]
    if args.profile:
        own[1:3] = ["-c", _PROFILED_SERVE, str(args.profile.resolve())]
    targets = [Target("skilldeck", "skilldeck", own, _expectations(PACK, skill_paths))]
    if "sse" in args.peers:  # our own server answering every request as an SSE stream, as before JSON
        sse = [*own[:-1], "--sse-responses", own[-1]]
        targets.append(Target("skilldeck-sse", "skilldeck SSE", sse, _expectations(PACK, skill_paths)))
    versions: dict[str, Any] = {"skilldeck": _versions(sys.executable, MAIN_PACKAGES)}
    if "ts" in args.peers or "ts-json" in args.peers:
        node = _node22(say)
        modules = ensure_ts_server(node, say)
        ts_command = [node, str(TS_SERVER_DIR / "server.mjs"), str(modules), str(PACK), HOST]
        if "ts" in args.peers:
            targets.append(Target("ts", "TS SDK", list(ts_command), _expectations(PACK, skill_paths)))
        if "ts-json" in args.peers:  # its legacy transport with enableJsonResponse, as skilldeck serve answers
            targets.append(
                Target(
                    "ts-json",
                    "TS SDK JSON",
                    list(ts_command),
                    _expectations(PACK, skill_paths),
                    env={"TS_SKILLS_JSON_RESPONSE": "1"},
                )
            )
        versions["ts"] = _ts_versions(node, modules)
    if "fastmcp" in args.peers:
        fastmcp_python = ensure_fastmcp_venv(args.fastmcp_spec, say)
        targets.append(
            Target(
                "fastmcp",
                "FastMCP",
                [str(fastmcp_python), str(FASTMCP_SERVER), str(PACK), HOST],
                # FastMCP serves a SKILL.md folder inside another skill as a file of the outer skill
                _expectations(PACK, _top_level(skill_paths)),
                env={"FASTMCP_CHECK_FOR_UPDATES": "off", "FASTMCP_SHOW_SERVER_BANNER": "false"},
            )
        )
        versions["fastmcp"] = _versions(fastmcp_python, FASTMCP_PACKAGES)
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    started = dt.datetime.now(dt.UTC)
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="skilldeck-bench-") as log_dir:
        try:
            for target in targets:
                target.port = free_port(HOST)
                if target.key.startswith("skilldeck"):
                    target.command.append(f"{HOST}:{target.port}")
                else:
                    target.command.append(str(target.port))
                _start(target, Path(log_dir))
            for target in targets:
                _wait_ready(target)
                say(f"{target.label} listening at http://{HOST}:{target.port}{PATH} (pid {target.process.pid})")  # type: ignore[union-attr]
            results = asyncio.run(run_matrix(targets, args, say))
            for target in targets:
                info = results["servers"][target.key]
                say(
                    f"{target.label}: sessions opened {info['sessions_opened']}, "
                    f"RSS {info['rss_kib'] / 1024:.0f} MiB (peak {info['peak_rss_kib'] / 1024:.0f} MiB)"
                )
        finally:
            for target in targets:
                _stop(target)
            for target in targets:
                if target.process is not None and target.process.returncode not in (0, -15, None):
                    say(f"{target.label} exited with {target.process.returncode}:\n{_log_tail(target)}")
    elapsed = time.perf_counter() - wall0
    keys, labels = [t.key for t in targets], [t.label for t in targets]
    if args.profile:
        _print_profile(args.profile, say)

    report = {
        "benchmark": "server_throughput",
        "date": started.isoformat(timespec="seconds"),
        "command": shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])),
        "elapsed_s": round(elapsed, 1),
        "machine": {
            "cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "cpu_model": _cpu_model(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "loadavg_at_start": load_at_start,
        },
        "versions": versions,
        "settings": {
            **window_settings(args),
            "operations": {k: OPERATIONS[k].label for k in args.ops},
            "load_generator": args.client,
            "pack": str(PACK.relative_to(REPO)),
            "skills_served": {
                "skilldeck": len(skill_paths),
                "skilldeck-sse": len(skill_paths),
                "ts": len(skill_paths),
                "ts-json": len(skill_paths),
                "fastmcp": len(_top_level(skill_paths)),
            },
            "servers": {
                "skilldeck": "python -m skilldeck.cli serve examples/skills --http 127.0.0.1:PORT"
                + (" (under cProfile)" if args.profile else ""),
                "skilldeck-sse": "the same with --sse-responses (every request answered as an SSE stream)",
                "ts": "bench/ts_skills_server/server.mjs: loadSkills('examples/skills').attach(McpServer) per "
                "instance; 2026-07-28 via createMcpHandler(legacy: 'reject') + toNodeHandler, 2025-11-25 via "
                "one NodeStreamableHTTPServerTransport per session, routed by isLegacyRequest on node:http",
                "ts-json": "the same with TS_SKILLS_JSON_RESPONSE=1: its 2025-11-25 transport answers JSON "
                "(enableJsonResponse)",
                "fastmcp": "bench/_fastmcp_server.py: FastMCP(providers=[fastmcp.skills.provider."
                "SkillsDirectoryProvider('examples/skills')]).run_http_async(...)",
            },
            "peers": args.peers,
        },
        **results,
        "markdown_table": markdown_table(results["cells"], keys, labels),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    title = (
        f"median of {args.reps} x {args.duration:g} s (req/s; p50 latency per request), "
        f"{os.cpu_count()} CPUs, load generator: {args.client}"
    )
    print_table(results["cells"], keys, labels, title)
    print(markdown_table(results["cells"], keys, labels))
    try:
        shown = args.output.resolve().relative_to(Path.cwd())
    except ValueError:
        shown = args.output
    say(f"wrote {shown} in {elapsed:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
