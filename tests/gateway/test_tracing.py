"""One OpenTelemetry trace runs client → gateway ``call`` → upstream, in both protocol eras.

The session runs in a process of its own (``tracing_run.py``: a tracer provider is process-wide,
and the other tests of a worker rely on there being none): the SDK's in-memory exporter collects
every span, printed as JSON lines, and the parents are followed here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skilldeck.serving._tracing import tracing

from ..server.helpers import start_gateway, stop
from .test_gateway_config import JOBS, write
from .test_metrics import Gateway

RUN = Path(__file__).with_name("tracing_run.py")
REPO = Path(__file__).resolve().parents[2]


def spans(era: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(RUN), era], cwd=REPO, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def ancestors(span: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[str]:
    """The names of ``span``'s parents, nearest first."""
    names = []
    while span["parent"] is not None and span["parent"] in by_id:
        span = by_id[span["parent"]]
        names.append(span["name"])
    return names


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_one_trace_runs_from_the_client_through_the_gateway_call_to_the_upstream(era: str) -> None:
    found = spans(era)
    by_id = {s["id"]: s for s in found}
    (client,) = [s for s in found if s["name"] == "client"]
    (call,) = [s for s in found if s["name"] == "skilldeck.call"]
    (upstream,) = [s for s in found if s["name"] == "tools/call search_jobs" and s["kind"] == "SERVER"]
    assert call["trace"] == client["trace"] == upstream["trace"]
    # the gateway's span nests inside the SDK's server span of the client's request (under the SDK client's
    # own span of the request where it opens one: a 2025-11-25 session's; the in-memory 2026-07-28 one does not) ...
    sent = ["MCP send tools/call call"] if era == "legacy" else []
    assert ancestors(call, by_id) == ["tools/call call", *sent, "client"]
    # ... and the upstream's server span under the SDK's client span the gateway's call opened
    to_upstream = ["MCP send tools/call search_jobs", "skilldeck.call", "tools/call call", *sent, "client"]
    assert ancestors(upstream, by_id) == to_upstream
    assert call["attributes"] == {
        "skilldeck.upstream": "jobs",
        "skilldeck.tool": "search_jobs",
        "skilldeck.decision": "sent",
        "skilldeck.is_error": False,
    }
    (find,) = [s for s in found if s["name"] == "skilldeck.find"]
    assert find["trace"] == client["trace"]
    assert find["attributes"]["skilldeck.decision"] == "answered"
    assert find["attributes"]["skilldeck.ranker"] == "lexical"
    assert 0 < find["attributes"]["skilldeck.confidence"] <= 1
    assert find["attributes"]["skilldeck.tokens_disclosed"] > 0
    (load,) = [s for s in found if s["name"] == "skilldeck.load"]
    assert load["attributes"]["skilldeck.tools"] == ["jobs/search_jobs"]


def test_without_a_tracer_provider_nothing_is_traced() -> None:
    assert not tracing()  # this process installed none: the decorated decisions run as they are


CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
LEGACY_CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
LEGACY_CALLER_SPAN = "b7ad6b7169203331"


def console_spans(text: str) -> list[dict[str, Any]]:
    """The spans the SDK's console exporter printed (each an indented JSON object) among the other lines."""
    decoder = json.JSONDecoder()
    found = []
    for start in (m.start() for m in re.finditer(r'^\{\n\s+"name"', text, re.MULTILINE)):
        span, _ = decoder.raw_decode(text, start)
        found.append(span)
    return found


def test_otel_variables_install_an_exporter_and_the_sdk_span_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OTEL_TRACES_EXPORTER`` alone (no ``opentelemetry-instrument``) makes ``gateway`` export its spans,
    under the service name ``skilldeck-gateway``, the SDK's per-request span kept as their parent, and a
    request's HTTP ``traceparent`` header (none in its ``_meta``) continues the caller's trace, in both
    eras: a 2026-07-28 request, and a request on a 2025-11-25 session (each its own caller's trace)."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # milliseconds between exports
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    config = write(tmp_path / "servers.json", {"mcpServers": {"jobs": JOBS}})
    log = tmp_path / "gateway.log"
    proc, found = start_gateway(config, log, "--lexical")
    try:
        gateway = Gateway(found.group("url"), "")
        find = {"name": "find", "arguments": {"query": "search job postings"}}
        traceparent = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
        assert not gateway.tool(find["name"], find["arguments"], traceparent)["structuredContent"]["abstain"]
        session = gateway.legacy_session()
        legacy_traceparent = {"traceparent": f"00-{LEGACY_CALLER_TRACE}-{LEGACY_CALLER_SPAN}-01"}
        answer = gateway.legacy(session, "tools/call", find, legacy_traceparent)
        assert "result" in answer, answer
        assert not answer["result"]["structuredContent"]["abstain"], answer
        deadline = time.monotonic() + 60
        while log.read_text().count('"name": "skilldeck.find"') < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop(proc)
    printed = console_spans(log.read_text())
    finds = [s for s in printed if s["name"] == "skilldeck.find"]
    requests = [s for s in printed if s["name"] == "tools/call find"]
    assert len(finds) == len(requests) == 2, printed
    for trace_id, span_id in ((CALLER_TRACE, CALLER_SPAN), (LEGACY_CALLER_TRACE, LEGACY_CALLER_SPAN)):
        (request,) = [s for s in requests if s["context"]["trace_id"] == f"0x{trace_id}"]
        (found,) = [s for s in finds if s["context"]["trace_id"] == f"0x{trace_id}"]
        assert found["parent_id"] == request["context"]["span_id"]
        assert request["parent_id"] == f"0x{span_id}"
        assert found["resource"]["attributes"]["service.name"] == "skilldeck-gateway"
        assert found["attributes"]["skilldeck.decision"] == "answered"
    eras = {s["attributes"]["mcp.protocol.version"] for s in requests}
    assert eras == {"2026-07-28", "2025-11-25"}, requests
