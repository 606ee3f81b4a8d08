"""The gateway's Prometheus metrics: its decisions as they are logged, and its upstreams and tables as they are.

:class:`GatewayMetrics` adds to :class:`~skilldeck.serving._metrics.ServingMetrics` (requests, HTTP
bounds, served at ``--metrics HOST:PORT``) what only the gateway knows. The decisions are observed
through the seam every observer shares, the records of the service's
:class:`~skilldeck.gateway._service.DecisionLog` and :class:`~skilldeck.serving._audit.AuditLog`
(:meth:`~skilldeck._records.JsonLinesLog.subscribe`), not by wrapping the service:

* ``skilldeck_find_total{outcome,ranker}`` (``answered``, ``low_confidence``, ``abstained``) and
  ``skilldeck_find_confidence{ranker}``;
* ``skilldeck_loads_total{outcome}``, the skills and tools a load activated, and
  ``skilldeck_load_refusals_total{reason}``;
* ``skilldeck_calls_total{upstream,tool,outcome}`` (``ok``, ``is_error``, ``failed``,
  ``input_required``), ``skilldeck_call_seconds{upstream}`` and ``skilldeck_call_refusals_total{reason}``;
* ``skilldeck_policy_decisions_total{decision}``, ``skilldeck_disclosed_tokens_total{kind}``.

A call is labelled with its tool only once the gate admitted it, so the tool is one an upstream
listed; a refused call (an unknown name, say) is counted by reason alone. Read at scrape time:
each configured upstream up or not, its restarts and the time of its last change, the activation
table's size, and the selection indexes' card vectors encoded of the total.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Final

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client import Counter as CounterFamily
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from skilldeck.gateway._service import GatewayService
from skilldeck.host._api import CatalogChange
from skilldeck.serving._api import LATENCY_BUCKETS, ReadAtScrape, Series, ServingMetrics, gauge

__all__ = ["CONFIDENCE_BUCKETS", "GatewayMetrics"]

CONFIDENCE_BUCKETS: Final = (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""``find``'s confidence, finer around the calibrated thresholds (about 0.3 to 0.45)."""


class GatewayMetrics(ServingMetrics):
    """The metrics of one gateway: call :meth:`observe` once its service exists (see the module docs)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        super().__init__(registry)
        r = self.registry
        self.finds = CounterFamily(
            "skilldeck_find", "find answers by outcome and ranker", ["outcome", "ranker"], registry=r
        )
        self.confidence = Histogram(
            "skilldeck_find_confidence", "find's confidence", ["ranker"], buckets=CONFIDENCE_BUCKETS, registry=r
        )
        self.loads = CounterFamily(
            "skilldeck_loads", "load requests by outcome (loaded, partly_refused, refused)", ["outcome"], registry=r
        )
        self.loaded = CounterFamily("skilldeck_load_activated", "what loads activated", ["kind"], registry=r)
        self.load_refusals = CounterFamily(
            "skilldeck_load_refusals", "ids a load refused, by reason", ["reason"], registry=r
        )
        self.calls = CounterFamily(
            "skilldeck_calls",
            "calls sent upstream, by upstream, tool and outcome (ok, is_error, failed, input_required)",
            ["upstream", "tool", "outcome"],
            registry=r,
        )
        self.call_seconds = Histogram(
            "skilldeck_call_seconds",
            "time an upstream took to answer a call",
            ["upstream"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.call_refusals = CounterFamily(
            "skilldeck_call_refusals", "calls refused before anything was sent, by reason", ["reason"], registry=r
        )
        self.policy = CounterFamily(
            "skilldeck_policy_decisions", "policy decisions on calls (allowed, refused)", ["decision"], registry=r
        )
        self.tokens = CounterFamily(
            "skilldeck_disclosed_tokens", "tokens of what find and load answered", ["kind"], registry=r
        )
        # each decision finds its series in a dict (labels() checks and locks on every call)
        self._finds, self._confidence, self._tokens = Series(self.finds), Series(self.confidence), Series(self.tokens)
        self._loads, self._loaded, self._load_refusals = (
            Series(self.loads),
            Series(self.loaded),
            Series(self.load_refusals),
        )
        self._calls, self._call_seconds = Series(self.calls), Series(self.call_seconds)
        self._call_refusals, self._policy = Series(self.call_refusals), Series(self.policy)
        self._service: GatewayService | None = None
        self._restarts: Counter[str] = Counter()
        self._changed: dict[str, float] = {}
        self.registry.register(ReadAtScrape(self._gateway_state))

    def observe(self, service: GatewayService) -> Callable[[], None]:
        """Count ``service``'s decisions from now on and report its state; returns what stops the counting."""
        self._service = service
        stops = [service.log.subscribe(self.decision), service.audit.subscribe(self.audited)]

        def stop() -> None:
            for unsubscribe in stops:
                unsubscribe()

        return stop

    def changed(self, change: CatalogChange) -> None:
        """An upstream changed (re-listed, lost, back): its last change is now; one back counts as a restart."""
        if not change.label:
            return
        self._changed[change.label] = time.time()
        if "reconnected" in change.reasons:
            self._restarts[change.label] += 1

    # -- the decisions -----------------------------------------------------------------------------

    def decision(self, record: dict[str, Any]) -> None:
        """Count one record of the decision log (a ``find``, ``load`` or ``call``)."""
        kind = record.get("kind")
        if kind == "find":
            self._find(record)
        elif kind == "load":
            self._load(record)
        elif kind == "call":
            self._call(record)

    def _find(self, record: dict[str, Any]) -> None:
        ranker = str(record.get("ranker"))
        if record.get("abstain"):
            outcome = "abstained"
        else:
            outcome = "low_confidence" if record.get("low_confidence") else "answered"
        self._finds(outcome, ranker).inc()
        self._confidence(ranker).observe(float(record.get("confidence") or 0.0))
        self._tokens("find").inc(int(record.get("tokens") or 0))

    def _load(self, record: dict[str, Any]) -> None:
        refused = record.get("refused") or []
        activated = bool(record.get("skills") or record.get("tools"))
        outcome = "loaded" if not refused else ("partly_refused" if activated else "refused")
        self._loads(outcome).inc()
        self._loaded("skill").inc(len(record.get("skills") or ()))
        self._loaded("tool").inc(len(record.get("tools") or ()))
        for entry in refused:
            self._load_refusals(str(entry.get("code", "refused"))).inc()
        self._tokens("load").inc(int(record.get("tokens") or 0))

    def _call(self, record: dict[str, Any]) -> None:
        if "refused" in record:  # the name is the caller's, listed or not: counted by reason alone
            self._call_refusals(str(record.get("reason", "refused"))).inc()
            return
        upstream, _, tool = str(record.get("tool")).partition("/")
        if "inputRequired" in record:
            outcome = "input_required"
        elif "error" in record:
            outcome = "failed"
        else:
            outcome = "is_error" if record.get("isError") else "ok"
        self._calls(upstream, tool, outcome).inc()
        seconds = record.get("seconds")
        if seconds is not None:
            self._call_seconds(upstream).observe(float(seconds))

    def audited(self, record: dict[str, Any]) -> None:
        """Count one policy decision on a call; a refusal is a call refused for the reason ``policy``."""
        decision = "refused" if record.get("decision") == "refused" else "allowed"
        self._policy(decision).inc()
        if decision == "refused":
            self._call_refusals("policy").inc()

    # -- the state, read at scrape time ------------------------------------------------------------

    def _gateway_state(self) -> Iterator[Metric]:
        service = self._service
        if service is None:
            return
        upstreams = service.upstreams
        connected = upstreams.connected
        up = GaugeMetricFamily("skilldeck_upstream_up", "1 while the upstream is connected", labels=["upstream"])
        restarts = CounterMetricFamily(
            "skilldeck_upstream_restarts", "times the upstream came back after it was lost", labels=["upstream"]
        )
        changed = GaugeMetricFamily(
            "skilldeck_upstream_last_change_timestamp_seconds",
            "when the upstream last changed (re-listed, lost, back), Unix time; 0: not since the start",
            labels=["upstream"],
        )
        for label in upstreams.configured:
            up.add_metric([label], int(label in connected))
            restarts.add_metric([label], self._restarts[label])
            changed.add_metric([label], self._changed.get(label, 0.0))
        yield up
        yield restarts
        yield changed
        yield gauge("skilldeck_activations", "clients whose loaded skills and tools are held", len(service.activations))
        held, done, total = service.indexes.index_progress()
        yield gauge("skilldeck_index_vectors_encoded", "card vectors of the selection indexes encoded", done)
        yield gauge("skilldeck_index_vectors", "card vectors the selection indexes need", total)
        yield gauge("skilldeck_indexes", "selection indexes held (one per audience and set of upstreams up)", held)
