"""Prometheus metrics of ``serve`` and the gateway, kept in a registry of their own and served on a private port.

``--metrics HOST:PORT`` serves ``GET /metrics`` on a listener of its own, not beside ``/mcp``: the
MCP endpoint may be public while what the metrics tell (which upstreams are down, what is refused
and why) stays on a loopback or cluster-internal address that only the scraper reaches.

:class:`ServingMetrics` holds what both servers report:

* ``skilldeck_requests_total{method,era,outcome}`` and ``skilldeck_request_seconds{method,era}``:
  every MCP request and notification, counted by the :class:`RequestMetrics` middleware (outermost,
  so its time is the whole handling); ``method`` is one of :data:`METHODS` or ``other``, ``era``
  one of the known protocol versions or ``other``;
* the HTTP bounds (:mod:`skilldeck.serving._connections`): connections and streams held, legacy
  sessions held, and ``skilldeck_http_bound_refusals_total{bound}`` each time a bound closed,
  refused or evicted something (:class:`HttpCounts`);
* the Redis bus of replicas (``--redis``): subscribed, in an outage, re-announcements.

Everything is read at scrape time or counted where it happens; no label takes a value from a
client (question text, subject ids, unknown tool names or methods): each label's values are a set
fixed by the code or by what the servers list.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

from skilldeck.serving._counts import HttpCounts

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "LATENCY_BUCKETS",
    "METHODS",
    "ReadAtScrape",
    "RequestMetrics",
    "Series",
    "ServingMetrics",
    "gauge",
    "serve_metrics",
]

METHODS: Final = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "subscriptions/listen",
        "skills/list",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/roots/list_changed",
    }
)
"""The methods counted by name; any other is counted as ``other`` (a client's made-up methods add no series)."""

LATENCY_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Seconds: a request answered from memory takes under a millisecond, a proxied call up to the upstream's timeout."""

_ERAS: Final = frozenset(KNOWN_PROTOCOL_VERSIONS)

F = TypeVar("F", bound=MetricWrapperBase)


class Series(Generic[F]):
    """The children of one labelled family kept by their label values: a request finds its series in a dict.

    ``family.labels(...)`` checks the values and takes the family's lock every time; a series is
    made by it once, on first use (so a series appears only once something was counted, as before),
    and then looked up. The values must come from a bounded set (this keeps one entry per series the
    family exports anyway), and the family's series are never removed. Two threads making the same
    series at once both get the one ``labels()`` returns (it holds the lock), so no count is lost.
    """

    __slots__ = ("_children", "_family")

    def __init__(self, family: F) -> None:
        self._family = family
        self._children: dict[tuple[str, ...], F] = {}

    def __call__(self, *values: str) -> F:
        """The child of these label values (``inc``, ``observe``)."""
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._family.labels(*values)
        return child


class RequestMetrics:
    """An MCP server middleware counting every request by method, era and outcome, and timing it."""

    def __init__(self, metrics: ServingMetrics) -> None:
        self._requests = Series(metrics.requests)
        self._seconds = Series(metrics.request_seconds)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        method = ctx.method if ctx.method in METHODS else "other"
        era = ctx.protocol_version if ctx.protocol_version in _ERAS else "other"
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await call_next(ctx)
            outcome = "tool_error" if _is_error(result) else "ok"
            return result
        finally:
            self._seconds(method, era).observe(time.perf_counter() - started)
            self._requests(method, era, outcome).inc()


def _is_error(result: Any) -> bool:
    if isinstance(result, dict):
        return result.get("isError") is True
    return getattr(result, "is_error", False) is True


class ServingMetrics:
    """The registry of one server (``serve`` or the gateway) and the families both report.

    Args:
        registry: where the families are registered; a new one by default (never the global one,
            so two servers in one process never mix their series).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "skilldeck_requests",
            "MCP requests and notifications handled, by method, protocol era and outcome (ok, error, tool_error)",
            ["method", "era", "outcome"],
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "skilldeck_request_seconds",
            "Time to handle an MCP request, by method and protocol era",
            ["method", "era"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.http = HttpCounts()
        self._server: MCPServer[Any] | None = None
        self._bus: Any = None
        self.registry.register(ReadAtScrape(self._state))

    def instrument(self, server: MCPServer[Any]) -> None:
        """Count ``server``'s requests (the outermost middleware) and report its legacy sessions."""
        self._server = server
        server.middleware.insert(0, RequestMetrics(self))

    def watch_bus(self, bus: Any) -> None:
        """Report the state of a Redis change bus (:class:`~skilldeck.serving._redis_bus.RedisSubscriptionBus`)."""
        self._bus = bus

    def _state(self) -> Iterator[Metric]:
        yield gauge("skilldeck_http_connections", "HTTP connections open", len(self.http.connections))
        yield gauge(
            "skilldeck_http_streams", "HTTP connections held by a stream (legacy GET, listen)", len(self.http.streaming)
        )
        refused = CounterMetricFamily(
            "skilldeck_http_bound_refusals",
            "Times an HTTP bound acted: connections (a new one closed), idle_closed (an idle one closed to make "
            "room), streams (a stream answered 503), request_time (a slow request closed), sessions_evicted",
            labels=["bound"],
        )
        for bound in ("connections", "idle_closed", "streams", "request_time", "sessions_evicted"):
            refused.add_metric([bound], self.http.refused[bound])
        yield refused
        sessions = None
        if self._server is not None:
            try:
                # no public count of sessions: a private name of the SDK (docs/sdk-workarounds.md#metrics)
                sessions = self._server.session_manager._server_instances
            except RuntimeError:  # not serving HTTP (yet)
                sessions = None
        yield gauge("skilldeck_legacy_sessions", "Legacy (2025-11-25) sessions held", len(sessions or ()))
        if self._bus is not None:
            bus = self._bus
            yield gauge(
                "skilldeck_redis_bus_up",
                "1 while the Redis change bus is subscribed and not in an outage",
                int(bus.subscribed.is_set() and not bus.outage),
            )
            reannounced = CounterMetricFamily(
                "skilldeck_redis_bus_reannouncements", "Times the bus re-announced every list after a Redis gap"
            )
            reannounced.add_metric([], bus.reannounced)
            yield reannounced
            coalesced = CounterMetricFamily(
                "skilldeck_redis_bus_coalesced", "Change events not delivered because an identical one was"
            )
            coalesced.add_metric([], bus.coalesced)
            yield coalesced


def gauge(name: str, documentation: str, value: float, labels: Iterable[tuple[str, str]] = ()) -> GaugeMetricFamily:
    """One gauge family of one sample (read at scrape time)."""
    pairs = list(labels)
    family = GaugeMetricFamily(name, documentation, labels=[k for k, _ in pairs])
    family.add_metric([v for _, v in pairs], value)
    return family


class ReadAtScrape(Collector):
    """Families read at scrape time from the server's own state."""

    def __init__(self, read: Callable[[], Iterator[Metric]]) -> None:
        self._read = read

    def collect(self) -> Iterator[Metric]:
        yield from self._read()

    def describe(self) -> Iterator[Metric]:
        return iter(())  # read at scrape time: nothing to check for clashes at registration


async def serve_metrics(
    metrics: ServingMetrics,
    sockets: list[Any],
    *,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Answer ``GET /metrics`` (Prometheus text format) on ``sockets`` until cancelled.

    ``sockets`` are bound already (:func:`skilldeck.serving._runner.bind`, so a taken port is the
    command line's error before anything starts). The listener leaves signals to the MCP server
    it runs beside: it stops when that one has stopped and its task is cancelled.
    """
    import uvicorn
    from prometheus_client import make_asgi_app

    exporter = make_asgi_app(metrics.registry)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] != "/metrics":
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"metrics are at /metrics\n"})
            return
        await exporter(scope, receive, send)

    class Listener(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the MCP server beside it handles SIGTERM and SIGINT

    server = Listener(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    if on_ready is not None:
        host, port = sockets[0].getsockname()[:2]
        on_ready(f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics")
    await server.serve(sockets=sockets)
