"""Standard output for the command line, and what happens when its reader goes away.

``skilldeck skills … | head -1`` closes the pipe while skilldeck is still writing. Every command
then stops quietly with exit code 141 (128 + SIGPIPE, what a shell reports for a process killed
by a broken pipe), whether it was printing with rich or plain ``print``.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from skilldeck.cli.exits import ExitCode

__all__ = ["StdoutConsole", "sdk_logs_in_one_line", "stdout_closed"]


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


@contextmanager
def sdk_logs_in_one_line() -> Iterator[None]:
    """While a command runs, the MCP SDK's warnings print one line each on stderr, without tracebacks.

    Records that carry an exception are left out: the SDK logs those when it turns a server's bad
    message into an error for a request or the session, and the host reports that per server, with
    the server's label and the reason ("sent invalid JSON", "response over 32 MiB").
    """
    logger = logging.getLogger("mcp")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.addFilter(lambda record: record.exc_info is None)
    handler.setFormatter(logging.Formatter("note: %(name)s: %(message)s"))
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
