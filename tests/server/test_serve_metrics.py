"""``serve --metrics``: requests by method, era and outcome, legacy sessions held, and each bound's refusals."""

from __future__ import annotations

import re
import socket
import subprocess
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..gateway.test_metrics import METRICS_LINE, Gateway, value
from .helpers import CLI, start_serve, stop, wait_for_startup


@contextmanager
def serve_with_metrics(pack: Path, log: Path, *flags: str) -> Iterator[tuple[Gateway, subprocess.Popen[bytes]]]:
    """``skilldeck serve PACK --http 127.0.0.1:0 --metrics 127.0.0.1:0 FLAGS``: its endpoints and its process."""
    listen = ["--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0"]
    proc = start_serve([*CLI, "serve", str(pack), *listen, *flags], log)
    try:
        serving = wait_for_startup(proc, log, 60)
        assert not isinstance(serving, str), serving
        found = METRICS_LINE.search(log.read_text())
        assert found is not None, log.read_text()
        yield Gateway(serving.group(2), found.group(1)), proc
    finally:
        stop(proc)


def test_serve_counts_skills_list_in_both_eras_and_holds_its_legacy_session(tmp_path: Path, examples_dir: Path) -> None:
    with serve_with_metrics(examples_dir, tmp_path / "serve.log", "--request-timeout", "1") as (server, _):
        where = urllib.parse.urlsplit(server.url)
        before = server.scrape()
        for _ in range(3):
            assert "skills" in server.request("skills/list")["result"]
        legacy = server.legacy_session()
        assert "skills" in server.legacy(legacy, "skills/list")["result"]
        server.request("no/such-method")
        # a connection that never sends a whole request is closed by --request-timeout, and counted
        with socket.create_connection((str(where.hostname), int(where.port or 0))) as silent:
            silent.sendall(b"POST /mcp HTTP/1.1\r\n")
            silent.settimeout(30)
            assert silent.recv(1) == b""
        after = server.scrape()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("skilldeck_requests_total", method="skills/list", era="2026-07-28", outcome="ok") == 3
    assert grew("skilldeck_requests_total", method="skills/list", era="2025-11-25", outcome="ok") == 1
    assert grew("skilldeck_requests_total", method="initialize", era="2025-11-25") == 1
    assert grew("skilldeck_requests_total", method="other", outcome="error") == 1
    assert grew("skilldeck_request_seconds_count", method="skills/list") == 4
    assert value(after, "skilldeck_legacy_sessions") == 1
    assert grew("skilldeck_http_bound_refusals_total", bound="request_time") == 1
    assert not any(re.search(r"no/such", series) for series in after)
