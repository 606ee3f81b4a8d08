"""A request the gateway forwards to an upstream: the upstream's answer, or its error worded as the gateway's.

:func:`answer` awaits an upstream request as one call in flight on its connection (a reload that
replaces the upstream lets it finish first) and names the upstream in any error it passes on;
:func:`invalid` is a request's parameters refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from skilldeck.errors import shorten
from skilldeck.host import Connected

__all__ = ["answer", "invalid"]


def invalid(message: str) -> MCPError:
    """A request's parameters refused (``-32602``), saying why."""
    return MCPError(code=INVALID_PARAMS, message=message)


async def answer(connected: Connected, request: Awaitable[Any]) -> Any:
    """The upstream's answer; its error passed on with its code, anything else as an internal error.

    Counted as a call in flight on ``connected``: a reload that replaces the upstream lets it finish
    (within ``--shutdown-timeout``) before the old connection is closed, as it does a tool call."""
    try:
        with connected.call():
            return await request
    except MCPError as exc:
        raise MCPError(code=exc.error.code, message=f"[{connected.label}] {shorten(exc.error.message, 600)}") from None
    except Exception as exc:
        reason = connected.explain(exc)
        raise MCPError(code=INTERNAL_ERROR, message=f"[{connected.label}] failed: {shorten(reason, 600)}") from None
