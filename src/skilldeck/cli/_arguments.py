"""Argument types and the flags ``serve`` and ``gateway`` share (how they listen over HTTP)."""

from __future__ import annotations

import argparse
import math

from skilldeck.serving._api import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SHUTDOWN_TIMEOUT,
    DEFAULT_STREAM_SHARE,
    HttpLimits,
)

__all__ = ["add_http_arguments", "host_port", "http_limits", "positive", "seconds", "share"]


def host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (e.g. 127.0.0.1:8000), got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return int(value)


def seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {value!r}")
    return seconds


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    """``--http``, ``--path``, the legacy-session bounds, the connection bounds and the log format of a server command."""
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="how the lines on stderr read: text for people (default), or json: one object per line with time, "
        "level, logger and message (and upstream where a line is about one), for log shippers",
    )
    parser.add_argument("--http", type=host_port, metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    parser.add_argument(
        "--max-sessions",
        type=positive,
        default=1_000,
        metavar="N",
        help="legacy (2025-11-25) HTTP sessions held at once; when full, the least recently used idle one "
        "gives way to a new client (default 1000)",
    )
    parser.add_argument(
        "--session-idle-timeout",
        type=seconds,
        default=600.0,
        metavar="SECONDS",
        help="end a legacy HTTP session after this long without a request or open stream (default 600)",
    )
    parser.add_argument(
        "--max-connections",
        type=positive,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help="HTTP connections open at once, streams included; past it the connection longest without a "
        "request in flight is closed to make room, or the new one if every one is busy "
        f"(default {DEFAULT_MAX_CONNECTIONS})",
    )
    parser.add_argument(
        "--stream-share",
        type=share,
        default=DEFAULT_STREAM_SHARE,
        metavar="FRACTION",
        help="the share of --max-connections that streams (legacy GET streams, subscriptions/listen) may hold; "
        f"past it a new stream is answered 503 (default {DEFAULT_STREAM_SHARE:g})",
    )
    parser.add_argument(
        "--request-timeout",
        type=seconds,
        default=DEFAULT_REQUEST_TIMEOUT,
        metavar="SECONDS",
        help="close a connection that has not sent a whole request (head and body) this long after opening or "
        f"after the request's first byte (default {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    parser.add_argument(
        "--shutdown-timeout",
        type=seconds,
        default=DEFAULT_SHUTDOWN_TIMEOUT,
        metavar="SECONDS",
        help="on SIGTERM: stop accepting, end open streams, give requests in flight this long, then cut them "
        f"and exit (default {DEFAULT_SHUTDOWN_TIMEOUT:g})",
    )


def share(value: str) -> float:
    """A fraction above 0 and at most 1 (``0.5``)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.5, got {value!r}") from None
    if not 0 < number <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction above 0 and at most 1, got {value!r}")
    return number


def http_limits(args: argparse.Namespace) -> HttpLimits:
    """The connection bounds ``--max-connections``, ``--request-timeout`` and ``--shutdown-timeout`` ask for."""
    return HttpLimits(
        max_connections=args.max_connections,
        request_timeout=args.request_timeout,
        shutdown_timeout=args.shutdown_timeout,
        stream_share=args.stream_share,
    )
