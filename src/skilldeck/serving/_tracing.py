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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, ParamSpec, TypeVar

from opentelemetry import trace

__all__ = ["TRACER_NAME", "annotate", "annotate_audit", "span", "traced", "tracing"]

TRACER_NAME: Final = "skilldeck"
_tracer = trace.get_tracer(TRACER_NAME)

P = ParamSpec("P")
R = TypeVar("R")


def tracing() -> bool:
    """Whether a tracer provider is installed (spans are recorded somewhere)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


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
