"""An upstream on mcp 1.x (mcp-server-time) refuses the 2026-07-28 probe and writes a 31-error validation
trace of it to stderr, then works over 2025-11-25. ``skilldeck skills`` and ``skilldeck gateway`` say so in
one line (``[time] speaks 2025-11-25 only``) instead of passing the trace on; the trace's end goes to
the debug log, bounded."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from skilldeck.cli import _host as host_cli

from ..server.helpers import start_gateway, stop

pytestmark = pytest.mark.thirdparty

ONE_LINE = "[time] speaks 2025-11-25 only"


def time_config(tmp_path: Path, python: Path) -> Path:
    path = tmp_path / "mcp.json"
    server = {"command": str(python), "args": ["-m", "mcp_server_time", "--local-timezone", "Etc/UTC"]}
    path.write_text(json.dumps({"mcpServers": {"time": server}}))
    return path


def test_skills_reports_a_probe_refusing_upstream_in_one_line(
    time_server_python: Path, tmp_path: Path, run_skilldeck: Any
) -> None:
    result = run_skilldeck("skills", "--config", str(time_config(tmp_path, time_server_python)), "--json")
    assert result.returncode == 0, result.describe()
    (server,) = json.loads(result.stdout)["servers"]
    assert server["protocolVersion"] == "2025-11-25", server
    assert {t["name"] for t in server["tools"]} == {"get_current_time", "convert_time"}, server
    assert result.stderr.strip().splitlines() == [ONE_LINE], result.describe()


def test_gateway_reports_a_probe_refusing_upstream_in_one_line_at_start(
    time_server_python: Path, tmp_path: Path
) -> None:
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(time_config(tmp_path, time_server_python), log)
    try:
        assert match["up"] == "1", match.group(0)
        text = log.read_text()
        assert text.count(ONE_LINE) == 1, text
        assert "validation error" not in text, text
    finally:
        stop(proc)


def test_the_trace_goes_to_the_debug_log_as_a_bounded_tail(caplog: pytest.LogCaptureFixture) -> None:
    trace = "\n".join(f"line {n}" for n in range(100))
    console = Console(record=True, width=200)
    with caplog.at_level(logging.DEBUG, logger=host_cli.__name__):
        host_cli._legacy_only("time", trace, console)
    assert console.export_text().splitlines() == [ONE_LINE]
    (record,) = caplog.records
    assert record.levelno == logging.DEBUG
    logged = record.getMessage().splitlines()[1:]
    assert logged == [f"line {n}" for n in range(100 - host_cli.MAX_CHILD_STDERR_LINES, 100)], logged
