"""A client that leaves in the middle of sending its request is not an error of the server's.

The SDK reads a request's body with Starlette, which raises ``ClientDisconnect`` when the client
hangs up before the body is whole; nothing catches it, so uvicorn logs "Exception in ASGI
application" with a traceback of some forty lines each time (60 such requests gave 30
tracebacks, 106 KB of log). :func:`quiet_disconnects` ends such a request quietly, counted at
debug level; there is nobody left to answer.

A stop-gap for the SDK: ``docs/sdk-workarounds.md#disconnects`` says what it corrects and what
change to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it relies on.
"""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["quiet_disconnects"]

logger = logging.getLogger(__name__)


def quiet_disconnects(app: ASGIApp) -> ASGIApp:
    """``app``, ending a request whose client left mid-body without a traceback (see the module docs)."""

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await app(scope, receive, send)
        except ClientDisconnect:
            logger.debug(
                "the client left before its request's body was whole: %s %s", scope.get("method"), scope.get("path")
            )

    return answer
