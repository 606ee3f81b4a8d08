"""``skilldeck gateway`` under ``opentelemetry-instrument``, configured by the standard ``OTEL_*`` variables only.

The distro (``opentelemetry-distro``) installs its tracer provider before the gateway starts; the
gateway keeps it (no second provider, so no span is exported twice) and its spans reach the
exporter the variables name: the console one (read from the process's output) and OTLP over HTTP
(a loopback receiver here decodes the protobuf the exporter posts to ``/v1/traces``). An SDK client
in this process sends the caller's trace context (in ``_meta``, as the SDK does) with no tracer
provider of its own: the API's no-op tracer passes the caller's span context on.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ..server.helpers import GATEWAY_STARTUP_LINE, REPO, cli_env, stop, wait_for_startup
from .test_gateway_config import JOBS, write
from .test_tracing import CALLER_SPAN, CALLER_TRACE, console_spans

BIN = Path(sys.executable).parent
SERVICE = "gateway-under-instrument"
WAIT = 60.0


def instrumented_gateway(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[bytes], str, Path]:
    """``opentelemetry-instrument -- skilldeck gateway --config ... --http 127.0.0.1:0`` with ``env``: process, URL, log.

    The ``--`` is needed: the launcher's own options are parsed with abbreviations allowed, so the
    gateway's ``--config`` would otherwise be taken as an ambiguous ``--configurator``/``--config_file``.
    """
    config = write(tmp_path / "servers.json", {"mcpServers": {"jobs": JOBS}})
    log = tmp_path / "gateway.log"
    otel = {
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": SERVICE,
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # milliseconds between exports
        **env,
    }
    command = [str(BIN / "opentelemetry-instrument"), "--", str(BIN / "skilldeck")]
    command += ["gateway", "--config", str(config), "--http", "127.0.0.1:0", "--lexical"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=cli_env(**otel)
        )
    found = wait_for_startup(proc, log, WAIT, pattern=GATEWAY_STARTUP_LINE)
    if isinstance(found, str):
        stop(proc)
        pytest.fail(f"the gateway did not start: {found}", pytrace=False)
    return proc, found.group("url"), log


def find_load_call(url: str) -> None:
    """An SDK client's ``find``, ``load`` and ``call`` inside the caller's span ``CALLER_SPAN`` of ``CALLER_TRACE``."""
    sampled = trace.TraceFlags(trace.TraceFlags.SAMPLED)
    caller = trace.SpanContext(int(CALLER_TRACE, 16), int(CALLER_SPAN, 16), is_remote=True, trace_flags=sampled)

    async def session() -> None:
        token = otel_context.attach(trace.set_span_in_context(trace.NonRecordingSpan(caller)))
        try:
            async with Client(url, mode="auto", cache=None) as client:
                assert not (await client.call_tool("find", {"query": "search job postings"})).is_error
                assert not (await client.call_tool("load", {"ids": ["jobs/search_jobs"]})).is_error
                result = await client.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "x"}})
                assert not result.is_error, result
        finally:
            otel_context.detach(token)

    anyio.run(session)


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)


def check_one_trace(spans: list[dict[str, Any]]) -> None:
    """The gateway's decisions each exported once, in the caller's trace, under the SDK's span of the request.

    ``spans``: ``name``, ``trace``, ``id``, ``parent`` (hex, no ``0x``), ``service``.
    """
    ids = [s["id"] for s in spans]
    assert len(ids) == len(set(ids)), "a span was exported twice"
    by_name: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    for tool in ("find", "load", "call"):
        (request,) = by_name[f"tools/call {tool}"]
        (decision,) = by_name[f"skilldeck.{tool}"]
        assert request["trace"] == decision["trace"] == CALLER_TRACE
        assert request["parent"] == CALLER_SPAN
        assert decision["parent"] == request["id"]
    (sent,) = by_name["MCP send tools/call search_jobs"]
    assert sent["trace"] == CALLER_TRACE
    assert sent["parent"] == by_name["skilldeck.call"][0]["id"]
    assert {s["service"] for s in spans} == {SERVICE}


def test_console_exporter_under_opentelemetry_instrument(tmp_path: Path) -> None:
    proc, url, log = instrumented_gateway(tmp_path, OTEL_TRACES_EXPORTER="console")
    try:
        find_load_call(url)
        wait_for(lambda: '"name": "MCP send tools/call search_jobs"' in log.read_text())
    finally:
        stop(proc)
    text = log.read_text()
    printed = console_spans(text)
    assert printed, text
    # the distro's provider (it names the auto-instrumentation's version), not one of the gateway's own
    assert all("telemetry.auto.version" in s["resource"]["attributes"] for s in printed), printed
    assert "Overriding of current TracerProvider" not in text
    check_one_trace(
        [
            {
                "name": s["name"],
                "trace": s["context"]["trace_id"].removeprefix("0x"),
                "id": s["context"]["span_id"].removeprefix("0x"),
                "parent": s["parent_id"] and s["parent_id"].removeprefix("0x"),
                "service": s["resource"]["attributes"]["service.name"],
            }
            for s in printed
        ]
    )


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """A loopback OTLP/HTTP trace receiver: its base URL, and the export requests it decoded."""
    received: list[ExportTraceServiceRequest] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf":
                received.append(ExportTraceServiceRequest.FromString(body))
                self.send_response(200)
            else:
                self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def otlp_spans(received: list[ExportTraceServiceRequest]) -> list[dict[str, Any]]:
    found = []
    for request in received:
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    found.append(
                        {
                            "name": s.name,
                            "trace": s.trace_id.hex(),
                            "id": s.span_id.hex(),
                            "parent": s.parent_span_id.hex() or None,
                            "service": resource["service.name"],
                        }
                    )
    return found


def test_otlp_http_exporter_under_opentelemetry_instrument(tmp_path: Path) -> None:
    """The distro's default protocol is gRPC; ``OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`` picks the
    exporter ``skilldeck[otel]`` installs, posting to the endpoint's ``/v1/traces``."""
    with otlp_receiver() as (endpoint, received):
        proc, url, log = instrumented_gateway(
            tmp_path,
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        )
        try:
            find_load_call(url)
            wait_for(lambda: any(s["name"] == "MCP send tools/call search_jobs" for s in otlp_spans(received)))
        finally:
            stop(proc)
    assert received, log.read_text()
    check_one_trace(otlp_spans(received))
