"""``--console`` of ``serve`` and ``gateway``: the flag, and the check that it has an HTTP listener to be served on."""

from __future__ import annotations

import argparse

from skilldeck.errors import UsageError

__all__ = ["add_console_argument", "console_wanted"]


def add_console_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--console",
        action="store_true",
        help=f"serve a read-only page at /console on the HTTP listener: {what}, as the viewer may see them "
        "(with --jwt-jwks the page asks for the viewer's bearer token)",
    )


def console_wanted(args: argparse.Namespace) -> bool:
    """Whether ``--console`` was given; it needs ``--http``.

    Raises:
        UsageError: ``--console`` without ``--http``.
    """
    if not args.console:
        return False
    if args.http is None:
        raise UsageError("--console is served on the HTTP listener: add --http HOST:PORT")
    return True
