"""``--metrics HOST:PORT`` of ``serve`` and ``gateway``: Prometheus metrics on a listener of their own.

The port is bound when the command starts (a taken port is one clear error before anything
connects) and served beside the MCP server until it stops (:func:`beside`).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from skilldeck.cli._arguments import host_port

if TYPE_CHECKING:
    import socket

    from skilldeck.serving._api import HttpLimits, ServingMetrics

__all__ = ["MetricsListener", "add_metrics_argument"]

M = TypeVar("M", bound="ServingMetrics")


def add_metrics_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics",
        type=host_port,
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics, a listener apart from the MCP endpoint "
        "(keep it on a private address; see docs/observability.md)",
    )


class MetricsListener:
    """The metrics of one command and the sockets they are served on (nothing when ``--metrics`` is not given)."""

    def __init__(self, metrics: ServingMetrics | None, sockets: list[socket.socket]) -> None:
        self.metrics = metrics
        self.sockets = sockets

    @classmethod
    def from_args(cls, args: argparse.Namespace, make: Callable[[], M]) -> tuple[MetricsListener, M | None]:
        """Bind ``--metrics`` (when given) and make the metrics; the listener and the metrics (typed as made)."""
        if getattr(args, "metrics", None) is None:
            return cls(None, []), None
        from skilldeck.serving._api import bind

        host, port = args.metrics
        sockets = bind(host, port)
        metrics = make()
        return cls(metrics, sockets), metrics

    def limits(self, limits: HttpLimits) -> HttpLimits:
        """``limits`` counting what the HTTP bounds hold and refuse into the metrics."""
        return limits if self.metrics is None else dataclasses.replace(limits, counts=self.metrics.http)

    async def beside(self, main: Callable[[], Awaitable[Any]], on_ready: Callable[[str], None] | None = None) -> Any:
        """Run ``main`` with the metrics served beside it; the listener stops when ``main`` returns."""
        if self.metrics is None:
            return await main()
        from skilldeck.serving._api import serve_metrics

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_metrics(self.metrics_or_fail(), self.sockets, on_ready=on_ready))
            try:
                return await main()
            finally:
                tg.cancel_scope.cancel()

    def metrics_or_fail(self) -> ServingMetrics:
        assert self.metrics is not None
        return self.metrics
