"""Standard output for the command line, and what happens when its reader goes away.

``skilldeck skills … | head -1`` closes the pipe while skilldeck is still writing. Every command
then stops quietly with exit code 141 (128 + SIGPIPE, what a shell reports for a process killed
by a broken pipe), whether it was printing with rich or plain ``print``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.text import Text

from skilldeck.cli._exits import ExitCode

__all__ = [
    "JsonLinesConsole",
    "JsonLogFormatter",
    "LogLineCut",
    "LogRateLimit",
    "StdoutConsole",
    "bound_log_output",
    "counted",
    "json_log_output",
    "sdk_logs_in_one_line",
    "stdout_closed",
]


class StdoutConsole(Console):
    """A rich console on standard output that lets a broken pipe reach :func:`skilldeck.cli.main`.

    (Rich's own handling exits with code 1, which this command line uses for bad input.)
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError("standard output was closed")


def stdout_closed() -> ExitCode:
    """Point standard output at the null device (so the interpreter's last flush cannot fail
    again) and return :attr:`ExitCode.BROKEN_PIPE`."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout already closed or not a real file
        pass
    return ExitCode.BROKEN_PIPE


class _OneLine(logging.Formatter):
    """``warning: message`` on one line, as the command line's own lines read (no time, no source, no traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}"


@contextmanager
def sdk_logs_in_one_line() -> Iterator[None]:
    """While a command runs, the MCP SDK's warnings print one line each on stderr, without tracebacks,
    and its deprecation warnings (``MCPDeprecationWarning``) not at all; skilldeck's own warnings
    print as ``warning: …``, like every other line of the command (not in the SDK's rich log format).

    Records that carry an exception are left out: the SDK logs those when it turns a server's bad
    message into an error for a request or the session, and the host reports that per server, with
    the server's label and the reason ("sent invalid JSON", "response over 32 MiB").
    """
    from mcp.shared.exceptions import MCPDeprecationWarning

    sdk = logging.StreamHandler(sys.stderr)
    sdk.setLevel(logging.WARNING)
    sdk.addFilter(lambda record: record.exc_info is None)
    sdk.setFormatter(logging.Formatter("note: %(name)s: %(message)s"))
    own = logging.StreamHandler(sys.stderr)
    own.setLevel(logging.WARNING)
    own.setFormatter(_OneLine())
    installed = [(logging.getLogger("mcp"), sdk), (logging.getLogger("skilldeck"), own)]
    propagates = [logger.propagate for logger, _ in installed]
    for logger, handler in installed:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        with warnings.catch_warnings():  # what the SDK deprecates is for developers, not for an operator's log
            warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
            yield
    finally:
        for (logger, handler), propagate in zip(installed, propagates, strict=True):
            logger.removeHandler(handler)
            logger.propagate = propagate


class LogRateLimit(logging.Filter):
    """A handler's filter: each logger's records of one level pass in bursts of ``burst``, then one per ``every`` seconds.

    A server logs some requests it refuses (a wrong ``Host`` header, an unknown session, a bad
    HTTP request): each line is cheap for the sender and costs the server more than answering
    (``rich`` formatting, the write), and a flood of them fills the log. Past the burst, records
    are dropped and counted; the next one let through says how many of its kind were dropped.
    At most ``max_kinds`` (logger, level) pairs are tracked, the least recently seen forgotten first.
    """

    def __init__(
        self,
        burst: int = 20,
        every: float = 1.0,
        *,
        max_kinds: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        if burst < 1 or every <= 0 or max_kinds < 1:
            raise ValueError("burst and max_kinds must be at least 1, every a positive number of seconds")
        self.burst = burst
        self.every = every
        self.max_kinds = max_kinds
        self._clock = clock
        self._kinds: OrderedDict[tuple[str, int], list[float]] = OrderedDict()
        """(logger, level) -> [tokens, when last refilled, records dropped since the last let through]."""

    def filter(self, record: logging.LogRecord) -> bool:
        now = self._clock()
        kind = (record.name, record.levelno)
        state = self._kinds.get(kind)
        if state is None:
            state = self._kinds[kind] = [float(self.burst), now, 0.0]
            if len(self._kinds) > self.max_kinds:
                self._kinds.popitem(last=False)
        else:
            self._kinds.move_to_end(kind)
            state[0] = min(float(self.burst), state[0] + (now - state[1]) / self.every)
            state[1] = now
        if state[0] < 1:
            state[2] += 1
            return False
        state[0] -= 1
        if state[2]:
            dropped, state[2] = int(state[2]), 0.0
            record.msg = f"{record.getMessage()} ({dropped} more like this were dropped: over {self.burst} at once)"
            record.args = None
        return True


class LogLineCut(logging.Filter):
    """A handler's filter: a record's message is cut to ``limit`` characters, its control characters escaped.

    What a server logs often quotes what a client sent (a ``Host`` header, a session id, a name);
    an attacker's 20,000-character value printed whole costs the server more than answering it,
    and ``rich`` wraps an unbroken line in time quadratic in its length, on the event loop. A cut
    message says how long it was; a newline or escape sequence a client put in it cannot forge a
    second line or restyle the terminal.
    """

    def __init__(self, limit: int = 1_000) -> None:
        super().__init__()
        if limit < 16:
            raise ValueError("limit must be at least 16 characters")
        self.limit = limit

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: leave it to the handler
            return True
        whole = text.rstrip("\r\n")  # a line's own end (uvicorn ends some messages with one) is not escaped
        head = whole[: self.limit]
        if len(whole) <= self.limit and head.isprintable():
            if len(whole) < len(text):
                record.msg, record.args = whole, None
            return True
        text = whole
        escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in head)
        if len(text) > self.limit or len(escaped) > self.limit:
            escaped = f"{escaped[: self.limit]}\u2026 ({len(text)} characters)"
        record.msg, record.args = escaped, None
        return True


def _every_handler() -> set[logging.Handler]:
    """Every logging handler there is now: the root's and every named logger's (the SDK's, uvicorn's...)."""
    loggers: list[logging.Logger] = [logging.getLogger()]
    loggers += [lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    return {h for lg in loggers for h in lg.handlers}


def bound_log_output(burst: int = 20, every: float = 1.0, *, json_lines: bool = False) -> int:
    """Put a :class:`LogRateLimit` and a :class:`LogLineCut` on every logging handler there is now (the
    root's, the SDK's, uvicorn's).

    Call it once the server is up (the SDK and uvicorn install their handlers while starting).
    Each handler gets its own filter, so a record two handlers print is counted once by each.
    With ``json_lines`` (``--log-format json``) every handler also formats as :func:`json_log_output` does.
    Returns how many handlers got a filter.
    """
    added = 0
    for handler in _every_handler():
        if not any(isinstance(f, LogRateLimit) for f in handler.filters):
            handler.addFilter(LogRateLimit(burst, every))
            handler.addFilter(LogLineCut())  # after the rate limit: a dropped record is not cut for nothing
            added += 1
    if json_lines:
        json_log_output()
    return added


def _json_line(level: str, logger: str, message: str, created: float, **fields: Any) -> str:
    """One log line for a log shipper: ``{"time", "level", "logger", "message", ...fields}``."""
    when = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps({"time": when, "level": level, "logger": logger, "message": message, **fields})


class JsonLogFormatter(logging.Formatter):
    """A logging record as one JSON object (``--log-format json``); an exception is named, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {}
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            fields["exception"] = f"{type(exc).__name__}: {exc}"
        return _json_line(record.levelname.lower(), record.name, record.getMessage(), record.created, **fields)


_UPSTREAM = re.compile(r"^(?:unavailable )?\[([^\]]+)\] ")
_LEAD = re.compile(r"^(?:error|warning):? ")


class JsonLinesConsole(Console):
    """The command line's stderr console for ``--log-format json``: each line it is given is one JSON object.

    A line's level is the colour the text form gives it (red: ``error``, yellow: ``warning``, else
    ``info``), its message the plain text without a leading ``error:``/``warning:``, and a line about
    one upstream (``[label] …``, ``unavailable [label] …``) carries it as ``upstream``. The logger is
    ``skilldeck.cli``; records of Python's logging are formatted by :class:`JsonLogFormatter`.
    """

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", **_: Any) -> None:
        text = Text(sep).join(o if isinstance(o, Text) else Text.from_markup(str(o)) for o in objects)
        styles = " ".join(str(span.style) for span in text.spans)
        level = "error" if "red" in styles else "warning" if "yellow" in styles else "info"
        plain = text.plain
        fields: dict[str, Any] = {}
        if (upstream := _UPSTREAM.match(plain)) is not None:
            fields["upstream"] = upstream.group(1)
        message = _LEAD.sub("", plain, count=1) if level != "info" else plain
        self.file.write(_json_line(level, "skilldeck.cli", message, time.time(), **fields) + "\n")
        self.file.flush()


def json_log_output() -> int:
    """Give every logging handler there is now (the root's, the SDK's, uvicorn's, skilldeck's) a
    :class:`JsonLogFormatter`; call it again once the server is up, as :func:`bound_log_output`.

    Returns how many handlers there were.
    """
    handlers = _every_handler()
    for handler in handlers:
        handler.setFormatter(JsonLogFormatter())
    return len(handlers)


def counted(n: int, noun: str) -> str:
    """``"1 tool"``, ``"2 tools"``: ``n`` and ``noun``, plural unless ``n`` is 1."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
