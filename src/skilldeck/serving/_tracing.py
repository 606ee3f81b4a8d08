"""OpenTelemetry spans of the gateway's decisions: ``find``, ``load``, ``call``, a skill's verification, a re-listing.

The MCP SDK already traces the wire: its server middleware opens a ``SERVER`` span per request,
parented by the trace context a client put in the request's ``_meta`` (``traceparent``), and its
client opens a ``CLIENT`` span per request it sends and puts that span's context in the request's
``_meta``. The gateway adds its own span between the two, named for the decision
(``skilldeck.find``, ``skilldeck.load``, ``skilldeck.call``); the upstream request the SDK sends
from inside ``skilldeck.call`` carries it on, so one trace runs client → gateway → upstream.

The attributes come from the records the decision writes (the decision log's and the audit log's,
through :meth:`~skilldeck._records.JsonLinesLog.subscribe`): :func:`annotate` sets them on the
span current when the record is written, which is the decision's own. Never the question's text or
the caller's identity: upstream, tool, outcome, confidence, ranker, tokens disclosed, reason code.

Nothing is installed here: ``opentelemetry-api`` (a dependency of the SDK) is a no-op until a
tracer provider is set (``opentelemetry-instrument``, or the ``skilldeck[otel]`` extra with the
``OTEL_*`` variables, see the docs). Until then :func:`traced` calls the function as it is: the
cost is one check of the global provider.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "TRACER_NAME",
    "HttpTraceContext",
    "annotate",
    "annotate_audit",
    "configure_from_environment",
    "honour_http_trace_context",
    "span",
    "traced",
    "tracing",
]

logger = logging.getLogger(__name__)

TRACER_NAME: Final = "skilldeck"
_tracer = trace.get_tracer(TRACER_NAME)

P = ParamSpec("P")
R = TypeVar("R")


def tracing() -> bool:
    """Whether a tracer provider is installed (spans are recorded somewhere)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def configure_from_environment(service_name: str) -> str | None:
    """Install a tracer provider exporting as the standard ``OTEL_*`` variables say, when they ask for one.

    Only when no provider is installed yet (``opentelemetry-instrument`` installs its own first, and
    that one is kept), the OpenTelemetry SDK is installed (``skilldeck[otel]``), ``OTEL_SDK_DISABLED``
    is not ``true``, and the variables name an exporter: ``OTEL_TRACES_EXPORTER`` (``otlp``,
    ``console``; ``none`` turns tracing off) or an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``,
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). The exporter and the resource read every other ``OTEL_*``
    variable themselves (headers, protocol, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``);
    ``service_name`` is the default service name. Returns the exporter installed, ``None`` when none was.
    """
    environ = os.environ
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if tracing() or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or exporter == "none":
        return None
    if not exporter and endpoint:
        exporter = "otlp"
    if exporter not in ("otlp", "console"):
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError:
        logger.warning(
            "OTEL_* asks for traces, but the OpenTelemetry SDK is not installed: pip install 'skilldeck[otel]'"
        )
        return None
    chosen: SpanExporter
    if exporter == "console":
        chosen = ConsoleSpanExporter()
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
                OTLPSpanExporter,
            )
        except ImportError:
            logger.warning(
                "OTEL_* asks for OTLP traces, but the exporter is not installed: pip install 'skilldeck[otel]'"
            )
            return None
        chosen = OTLPSpanExporter()
    resource = Resource.create({} if "OTEL_SERVICE_NAME" in environ else {"service.name": service_name})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(chosen))
    trace.set_tracer_provider(provider)  # flushed and shut down at exit
    return exporter


class HttpTraceContext:
    """An MCP server middleware: a request's HTTP ``traceparent`` header is its trace context when its ``_meta`` has none.

    The SDK's server span reads the context from ``_meta`` only; a client (or a proxy in front)
    that sends the W3C header instead would start a new trace. Placed before the SDK's middleware,
    this makes the header's context the current one, so the SDK's span, and the gateway's inside
    it, continue the caller's trace. A ``traceparent`` in ``_meta`` wins (the SDK reads it first).
    """

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        headers = getattr(ctx.request, "headers", None)
        if headers is None or "traceparent" not in headers or not tracing():
            return await call_next(ctx)
        token = otel_context.attach(propagate.extract(headers))
        try:
            return await call_next(ctx)
        finally:
            otel_context.detach(token)


def honour_http_trace_context(server: MCPServer[Any]) -> bool:
    """Put :class:`HttpTraceContext` first on ``server`` when a tracer provider is installed; whether it was."""
    if not tracing():
        return False
    server.middleware.insert(0, HttpTraceContext())
    return True


@contextmanager
def span(name: str, attributes: dict[str, Any] | None = None) -> Iterator[trace.Span | None]:
    """A span named ``skilldeck.NAME`` around the block while tracing; nothing otherwise."""
    if not tracing():
        yield None
        return
    with _tracer.start_as_current_span(f"skilldeck.{name}", attributes=_clean(attributes or {})) as current:
        yield current


def traced(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run the decorated function (or coroutine function) inside :func:`span` ``name``."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                if not tracing():
                    return await function(*args, **kwargs)
                with span(name):
                    return await function(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            if not tracing():
                return function(*args, **kwargs)
            with span(name):
                return function(*args, **kwargs)

        return run

    return decorate


def annotate(record: dict[str, Any]) -> None:
    """Set a decision record's bounded fields as attributes of the current span (a decision log listener)."""
    current = trace.get_current_span()
    if not current.is_recording():
        return
    kind = record.get("kind")
    attributes: dict[str, Any] = {}
    if kind == "find":
        attributes["skilldeck.decision"] = "abstained" if record.get("abstain") else "answered"
        attributes["skilldeck.confidence"] = record.get("confidence")
        attributes["skilldeck.ranker"] = record.get("ranker")
        attributes["skilldeck.low_confidence"] = record.get("low_confidence")
        attributes["skilldeck.tokens_disclosed"] = record.get("tokens")
    elif kind == "load":
        attributes["skilldeck.skills"] = list(record.get("skills") or ())
        attributes["skilldeck.tools"] = list(record.get("tools") or ())
        attributes["skilldeck.refused"] = [str(r.get("code")) for r in record.get("refused") or ()]
        attributes["skilldeck.tokens_disclosed"] = record.get("tokens")
    elif kind == "call":
        if "refused" in record:
            attributes["skilldeck.decision"] = "refused"
            attributes["skilldeck.refusal_reason"] = record.get("reason")
        else:
            upstream, _, tool = str(record.get("tool")).partition("/")
            attributes["skilldeck.upstream"] = upstream
            attributes["skilldeck.tool"] = tool
            attributes["skilldeck.decision"] = "sent"
            attributes["skilldeck.is_error"] = bool(record.get("isError") or "error" in record)
    current.set_attributes(_clean(attributes))


def annotate_audit(record: dict[str, Any]) -> None:
    """Set a policy decision on the current span (an audit log listener): refused, and why."""
    current = trace.get_current_span()
    if current.is_recording() and record.get("decision") == "refused":
        current.set_attributes({"skilldeck.decision": "refused", "skilldeck.refusal_reason": "policy"})


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if v is not None}
