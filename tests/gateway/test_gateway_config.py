"""``skilldeck gateway``'s configuration, from the outside: the real CLI process and a real client.

A legacy HTTP+SSE entry is spoken; a label given twice, a policy id that matches nothing (of an
upstream connected, or down at start) and a mistyped ``--pin``/``--grant`` are reported;
``--check`` says what each identity would see without serving; ``SIGHUP`` re-reads the files.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ..server.helpers import CLI, REPO, cli_env, start_gateway, stop
from .gateway_clients_support import check_structured

pytestmark = pytest.mark.anyio

EXAMPLES = REPO / "examples" / "skills"
JOBS_STDIO = "from skilldeck.demo.servers import jobs_server; jobs_server().run()"
DECK = {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(EXAMPLES)]}
JOBS = {"command": sys.executable, "args": ["-c", JOBS_STDIO]}
SSE_UPSTREAM = """
import uvicorn
from skilldeck.demo.servers import jobs_server
uvicorn.run(jobs_server().sse_app(host="127.0.0.1"), host="127.0.0.1", port=0, log_level="info")
"""
RUNNING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")
WAIT = 60.0
"""Seconds any one thing the gateway is waited for may take (generous: the machine may be loaded)."""


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2) if not isinstance(document, str) else document)
    return path


def run_gateway(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``skilldeck gateway ARGS`` to its end (``--check``, or a refusal at start)."""
    return subprocess.run(
        [*CLI, "gateway", *args],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=timeout,
    )


def wait_for_log(log: Path, found: Callable[[str], bool], what: str) -> str:
    deadline = time.monotonic() + WAIT
    while True:
        text = log.read_text(errors="replace")
        if found(text):
            return text
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not seen within {WAIT:.0f}s; the log:\n{text}", pytrace=False)
        time.sleep(0.1)


@pytest.fixture
def sse_upstream(tmp_path: Path) -> Iterator[str]:
    """The demo jobs server on the legacy HTTP+SSE transport (the SDK's ``sse_app``); yields its base URL."""
    log = tmp_path / "sse.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SSE_UPSTREAM], cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=cli_env()
        )
    try:
        text = wait_for_log(log, RUNNING.search, "the SSE upstream's startup line")
        match = RUNNING.search(text)
        assert match is not None
        yield match[1]
    finally:
        stop(proc)


# -- the legacy HTTP+SSE transport -------------------------------------------------------------------


async def test_a_legacy_sse_entry_is_spoken_beside_the_others(tmp_path: Path, sse_upstream: str) -> None:
    config = write(tmp_path / "mcp.json", {"mcpServers": {"old": {"type": "sse", "url": f"{sse_upstream}/sse"}, "deck": DECK}})
    proc, match = start_gateway(config, tmp_path / "gateway.log")
    try:
        assert match["up"] == match["total"] == "2", (tmp_path / "gateway.log").read_text()
        async with Client(match["url"], cache=None) as c:
            loaded = check_structured("load", await c.call_tool("load", {"ids": ["old/job-search"]}))
            assert [t["name"] for t in loaded["tools"]] == ["old/search_jobs"], loaded
            result = await c.call_tool("call", {"tool": "old/search_jobs", "arguments": {"query": "engineer"}})
            assert not result.is_error, result
            assert "JOB-" in json.dumps(result.structured_content), result
    finally:
        stop(proc)


async def test_an_sse_entry_that_does_not_answer_is_unavailable_and_the_rest_serve(tmp_path: Path) -> None:
    config = write(
        tmp_path / "mcp.json",
        {"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse", "timeout": 5}, "deck": DECK}},
    )
    proc, match = start_gateway(config, tmp_path / "gateway.log")
    try:
        assert (match["up"], match["total"]) == ("1", "2"), match.group(0)
        assert re.search(r"unavailable \[old\] .+", (tmp_path / "gateway.log").read_text())
    finally:
        stop(proc)
