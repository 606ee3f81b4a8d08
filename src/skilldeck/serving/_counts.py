"""What the HTTP bounds of ``serve`` and the gateway hold and how often each acted: plain counts, read by metrics.

Kept apart from :mod:`skilldeck.serving._metrics` so that the bounds count without importing
``prometheus_client`` (a server started without ``--metrics`` never imports it).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HttpCounts", "refusal_code"]


@dataclass
class HttpCounts:
    """What the HTTP bounds hold now and how often each one acted (read by :class:`~skilldeck.serving._metrics.ServingMetrics`).

    :func:`~skilldeck.serving._connections.bounded_protocol` keeps its sets of streaming and probing
    connections here, and counts under ``refused``: ``connections`` (a new connection closed, every
    place busy), ``idle_closed`` (an idle connection closed to make room), ``streams`` (a stream
    answered 503), ``request_time`` (a request that did not arrive in time); the session table adds
    ``sessions_evicted``.
    """

    connections: set[Any] = field(default_factory=set)
    """uvicorn's set of open connections (bound at the first connection)."""
    streaming: set[Any] = field(default_factory=set)
    probing: set[Any] = field(default_factory=set)
    refused: Counter[str] = field(default_factory=Counter)


def refusal_code(exc: BaseException) -> str:
    """A refusal's reason as a label value: its error class in snake case (``ToolNotActive`` → ``tool_not_active``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()
