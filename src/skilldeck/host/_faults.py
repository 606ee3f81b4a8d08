"""How a server's faults are worded: what a failed request, a transport error or a message over the
host's limit is told as (one short line a person can act on), for :mod:`skilldeck.host._connect` and
the transports it opens (:mod:`skilldeck.host._transports`)."""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.lowlevel
from mcp.client.auth import OAuthFlowError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    METHOD_NOT_FOUND,
    PARSE_ERROR,
)
from pydantic import ValidationError

from skilldeck.errors import LoginRequired
from skilldeck.host import _stdio_guard as stdio_guard
from skilldeck.host._broken_request import (
    broken_answer_said,
)
from skilldeck.host._config import HttpServer, ServerSpec

logger = logging.getLogger("skilldeck.host._connect")


def seconds(value: float) -> str:
    """``0.7 s``, ``12 s``: a wait as a person reads it."""
    return f"{value:.1f} s" if value < 9.95 else f"{value:.0f} s"


def request_error(exc: BaseException) -> str:
    """Words for a failed request: the server's error message, else the exception's type and text."""
    return exc.error.message if isinstance(exc, MCPError) else f"{type(exc).__name__}: {exc}"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        if inner:
            return _describe(inner[0])
    if isinstance(exc, LoginRequired):
        return str(exc)
    if isinstance(exc, OAuthFlowError):  # discovery, registration or a token request of the SDK's flow failed
        return f"OAuth failed: {exc}"
    if (fault := _transport_fault(exc)) is not None:
        return fault
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text


def _not_found_hint(spec: ServerSpec, exc: BaseException) -> str | None:
    """For an HTTP server that answered 404 at its URL: say so, and where MCP endpoints usually are."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    transport = spec.transport
    if not (isinstance(transport, HttpServer) and isinstance(exc, MCPError)):
        return None
    if exc.error.code != METHOD_NOT_FOUND or exc.error.message != "Not Found":  # the SDK's words for an HTTP 404
        return None
    url = transport.url
    split = urlsplit(url)
    if split.path.rstrip("/").endswith("/mcp"):
        return f"no MCP endpoint at {url} (HTTP 404 Not Found); check the server's endpoint path"
    suggestion = urlunsplit(split._replace(path=split.path.rstrip("/") + "/mcp", query="", fragment=""))
    return (
        f"no MCP endpoint at {url} (HTTP 404 Not Found); streamable HTTP servers usually answer at "
        f"a path such as /mcp: try {suggestion}"
    )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB" if size >= 1024 * 1024 else f"{size} bytes"


_OVER_LIMIT = "response over "
_OVER_LIMIT_SAID = re.compile(r"response over (\d+) bytes")
"""How a request's error says its answer passed the limit (:class:`_ResponseTooLarge`, the stdio guard)."""


def _over_limit(size: int) -> str:
    """The reason given for a server whose message passed the host's limit."""
    return (
        f"{_OVER_LIMIT}{_mib(size)}, the host's limit per message "
        "(raise it with --max-response or max_message_bytes if you trust this server)"
    )


def _short_parse_error(text: str) -> str:
    """``expected ident at line 1 column 2`` out of a pydantic report, without the echoed input."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Invalid JSON:"):
            return line.removeprefix("Invalid JSON:").split(" [type=", 1)[0].strip()
    return ""


def _stream_fault(exc: Exception) -> str:
    """The reason for a message the transport handed to the session as an exception instead of a message.

    That is a stdio line that is not JSON-RPC (or the guard's marker line in place of one), or an
    SSE event on the standalone stream that does not parse.
    """
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False)
        first: dict[str, Any] = dict(errors[0]) if errors else {}
        raw = first.get("input")
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        if isinstance(raw, str) and raw.startswith(stdio_guard.MARKER + " "):
            problem, _, detail = raw[len(stdio_guard.MARKER) + 1 :].strip().partition(" ")
            if problem == stdio_guard.LINE_TOO_LONG and detail.isdigit():
                return _over_limit(int(detail))
            if problem == stdio_guard.NOT_UTF8:
                return f"sent invalid JSON (not UTF-8, at {detail} of a line)"
            return detail or "the server could not be started"
        if first.get("type") == "json_invalid":
            detail = str(first.get("msg", "")).removeprefix("Invalid JSON:").strip()
            return f"sent invalid JSON ({detail})" if detail else "sent invalid JSON"
        return "sent invalid JSON-RPC (a message that is not a JSON-RPC request, notification or response)"
    return f"sent an unreadable message ({_describe(exc)})"


def _transport_fault(exc: BaseException) -> str | None:
    """``sent invalid JSON`` for the ``-32700`` error the SDK's HTTP transport answers a request with
    when the response does not parse; ``None`` for any other error."""
    if isinstance(exc, MCPError) and (over := _OVER_LIMIT_SAID.search(exc.error.message)) is not None:
        return _over_limit(int(over.group(1)))  # one request's answer, cut at the limit (HTTP or the stdio guard)
    if (
        isinstance(exc, MCPError)
        and exc.error.code == PARSE_ERROR
        and (broke := broken_answer_said(exc.error.message)) is not None
    ):
        return broke  # one request's answer broke off (the SDK says "Failed to parse JSON response: ...")
    if isinstance(exc, MCPError) and exc.error.code == PARSE_ERROR and exc.error.message.startswith("Failed to parse"):
        detail = _short_parse_error(exc.error.message)
        return f"sent invalid JSON ({detail})" if detail else "sent invalid JSON"
    return None


def _guard_exit(exc: Exception) -> int | None:
    """The exit code in the stdio guard's last line (the server's stdout ended), else ``None``."""
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors(include_url=False)
    raw = errors[0].get("input") if errors else None
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    prefix = f"{stdio_guard.MARKER} {stdio_guard.EXITED} "
    if isinstance(raw, str) and raw.startswith(prefix):
        code = raw[len(prefix) :].strip()
        if code.lstrip("-").isdigit():
            return int(code)
    return None
