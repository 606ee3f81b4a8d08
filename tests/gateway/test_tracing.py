"""One OpenTelemetry trace runs client → gateway ``call`` → upstream, in both protocol eras.

The session runs in a process of its own (``tracing_run.py``: a tracer provider is process-wide,
and the other tests of a worker rely on there being none): the SDK's in-memory exporter collects
every span, printed as JSON lines, and the parents are followed here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skilldeck.serving._tracing import tracing

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
