"""One traced session through a gateway, run in a process of its own (a tracer provider is process-wide).

``python tests/gateway/tracing_run.py ERA`` (``modern`` or ``legacy``): installs the OpenTelemetry
SDK's tracer provider with its in-memory exporter, serves the demo jobs server over streamable HTTP
on loopback as the upstream, and, inside a client span, has an SDK client find, load and call
``jobs/search_jobs`` through an in-process gateway. Prints every finished span as one JSON line.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import anyio
import uvicorn
from mcp.client import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from skilldeck.demo._servers import jobs_server
from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.host import Host, HttpServer, ServerSpec


def main(era: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    app = jobs_server().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    upstream = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=upstream.run, daemon=True)
    thread.start()
    while not upstream.started:
        thread.join(0.02)
    port = upstream.servers[0].sockets[0].getsockname()[1]

    async def session() -> None:
        async with Host([ServerSpec("jobs", HttpServer(f"http://127.0.0.1:{port}/mcp"), timeout=30)]) as host:
            server, _ = create_gateway(GatewayService(host, encoder=None))
            mode: Any = "auto" if era == "modern" else "legacy"
            async with Client(server, mode=mode, cache=None) as client:
                with trace.get_tracer("tracing-test").start_as_current_span("client", kind=trace.SpanKind.CLIENT):
                    await client.call_tool("find", {"query": "search job postings"})
                    await client.call_tool("load", {"ids": ["jobs/search_jobs"]})
                    result = await client.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "x"}})
                    assert not result.is_error, result

    anyio.run(session)
    upstream.should_exit = True
    thread.join(10)
    for span in exporter.get_finished_spans():
        context, parent = span.get_span_context(), span.parent
        print(
            json.dumps(
                {
                    "name": span.name,
                    "kind": span.kind.name,
                    "trace": f"{context.trace_id:032x}",
                    "id": f"{context.span_id:016x}",
                    "parent": f"{parent.span_id:016x}" if parent is not None else None,
                    "attributes": dict(span.attributes or {}),
                },
                default=list,
            )
        )


if __name__ == "__main__":
    main(sys.argv[1])
