"""The request middleware and the gateway's decision counts find their series in a dict, bounded by the labels' values."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from skilldeck.gateway._metrics import GatewayMetrics
from skilldeck.serving._metrics import RequestMetrics, Series, ServingMetrics

MODERN = "2026-07-28"


def sample(metrics: ServingMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_a_series_is_made_on_first_use_and_then_the_same_one() -> None:
    metrics = ServingMetrics()
    series = Series(metrics.requests)
    assert sample(metrics, "skilldeck_requests_total", method="ping", era=MODERN, outcome="ok") is None
    first = series("ping", MODERN, "ok")
    first.inc()
    assert series("ping", MODERN, "ok") is first
    series("ping", MODERN, "ok").inc()
    assert sample(metrics, "skilldeck_requests_total", method="ping", era=MODERN, outcome="ok") == 2
    assert sample(metrics, "skilldeck_requests_total", method="ping", era=MODERN, outcome="error") is None


def test_the_middleware_counts_as_before_and_keeps_one_series_for_every_unknown_method_and_era() -> None:
    metrics = ServingMetrics()
    middleware = RequestMetrics(metrics)

    async def ok(_: Any) -> Any:
        return {"content": [], "isError": False}

    async def tool_error(_: Any) -> Any:
        return {"content": [], "isError": True}

    async def run() -> None:
        for n in range(200):
            await middleware(SimpleNamespace(method=f"made/up-{n}", protocol_version=f"1999-{n}"), ok)  # type: ignore[arg-type]
        await middleware(SimpleNamespace(method="tools/call", protocol_version=MODERN), tool_error)  # type: ignore[arg-type]

    asyncio.run(run())
    assert sample(metrics, "skilldeck_requests_total", method="other", era="other", outcome="ok") == 200
    assert sample(metrics, "skilldeck_request_seconds_count", method="other", era="other") == 200
    assert sample(metrics, "skilldeck_requests_total", method="tools/call", era=MODERN, outcome="tool_error") == 1
    assert len(middleware._requests._children) == 2  # (other, other, ok) and (tools/call, era, tool_error)


def test_the_gateway_counts_repeated_decisions_into_the_same_series() -> None:
    metrics = GatewayMetrics()
    call = {"kind": "call", "tool": "echo/echo", "isError": False, "seconds": 0.002}
    for _ in range(3):
        metrics.decision(call)
        metrics.decision({"kind": "call", "tool": "echo/nope", "refused": "not active", "reason": "tool_not_active"})
        metrics.audited({"decision": "refused"})
    assert sample(metrics, "skilldeck_calls_total", upstream="echo", tool="echo", outcome="ok") == 3
    assert sample(metrics, "skilldeck_call_seconds_count", upstream="echo") == 3
    assert sample(metrics, "skilldeck_call_refusals_total", reason="tool_not_active") == 3
    assert sample(metrics, "skilldeck_call_refusals_total", reason="policy") == 3
    assert sample(metrics, "skilldeck_policy_decisions_total", decision="refused") == 3
