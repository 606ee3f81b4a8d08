"""``GET /healthz`` and ``GET /readyz``: what a load balancer or an orchestrator asks a server over HTTP.

* ``/healthz``: the process is up and answering HTTP (``200 {"status": "up"}``);
* ``/readyz``: the server is ready to answer MCP requests (``200 {"status": "ready", ...}``), or
  not yet or no longer (``503 {"status": "not ready", ...}``); what "ready" means is the server's
  (:class:`Readiness`): ``serve`` has its catalog loaded, the gateway enough upstreams up and its
  index built. The rest of the body says why, in plain JSON.

Both are answered before the MCP endpoint sees the request: no authentication, no ``Host``
check, no session. They are also answered when ``--max-connections`` holds clients out: a few
connections past the limit are let in for them alone (:mod:`skilldeck.serving._connections`), and
:func:`probes_only` is what such a connection may ask.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "HEALTH_PATH",
    "PROBE_PATHS",
    "READY_PATH",
    "Readiness",
    "always_ready",
    "probes_only",
    "with_probes",
]

HEALTH_PATH: Final = "/healthz"
READY_PATH: Final = "/readyz"
PROBE_PATHS: Final = frozenset({HEALTH_PATH, READY_PATH})
_METHODS: Final = ("GET", "HEAD")


@dataclass(frozen=True)
class Readiness:
    """Whether the server is ready to answer, and what says so (merged into the ``/readyz`` body)."""

    ready: bool
    detail: Mapping[str, Any] = field(default_factory=dict)


def always_ready() -> Readiness:
    """Readiness of a server that is ready whenever it listens."""
    return Readiness(True)


def with_probes(app: ASGIApp, readiness: Callable[[], Readiness] = always_ready) -> ASGIApp:
    """``app``, with ``/healthz`` and ``/readyz`` answered in front of it (``readiness`` asked on each ``/readyz``)."""

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in PROBE_PATHS:
            await _probe(scope, send, readiness)
        else:
            await app(scope, receive, send)

    return answer


def probes_only(app: ASGIApp, max_connections: int) -> ASGIApp:
    """``app`` for a connection let in past ``max_connections`` for a health probe: anything else gets a 503 saying why."""

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PROBE_PATHS:
            await app(scope, receive, send)
            return
        message = (
            f"{max_connections} HTTP connections are open (--max-connections); this one was let in only for "
            f"{' or '.join(sorted(PROBE_PATHS))}. Retry later"
        )
        await _send_json(send, 503, {"error": message}, head=False, extra=[(b"retry-after", b"1")])

    return answer


async def _probe(scope: Scope, send: Send, readiness: Callable[[], Readiness]) -> None:
    head = scope["method"] == "HEAD"
    if scope["method"] not in _METHODS:
        allow = ", ".join(_METHODS).encode()
        await _send_json(send, 405, {"error": f"{scope['path']} answers GET"}, head=False, extra=[(b"allow", allow)])
    elif scope["path"] == HEALTH_PATH:
        await _send_json(send, 200, {"status": "up"}, head=head)
    else:
        found = readiness()
        body = {"status": "ready" if found.ready else "not ready", **found.detail}
        await _send_json(send, 200 if found.ready else 503, body, head=head)


async def _send_json(
    send: Send, status: int, body: Mapping[str, Any], *, head: bool, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else data})
