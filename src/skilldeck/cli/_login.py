"""``skilldeck login`` and ``skilldeck logout``: OAuth 2.1 logins to remote MCP servers, once per server.

::

    skilldeck login github --config mcp.json          # opens the browser; tokens go to the credential store
    skilldeck login github --config mcp.json --no-browser   # prints the URL to open instead
    skilldeck logout github --config mcp.json

The host and the gateway then use (and refresh) the stored tokens; an upstream whose tokens are
missing or refused is reported unavailable with the ``login`` command to run. See ``docs/oauth.md``.
"""

from __future__ import annotations

import argparse
import webbrowser
from typing import Any

import anyio
import anyio.to_thread
from rich.console import Console
from rich.markup import escape

from skilldeck.cli._exits import ExitCode
from skilldeck.cli._output import sdk_logs_in_one_line
from skilldeck.errors import ConfigError
from skilldeck.host import ServerSpec, load_config
from skilldeck.host._api import DEFAULT_TIMEOUT, spec_for_target

__all__ = ["add_login_commands"]


def add_login_commands(sub: Any) -> None:
    from skilldeck.host._api import LOGIN_TIMEOUT

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("server", metavar="LABEL", help="a label of --config, or the server's URL")
    common.add_argument("--config", metavar="FILE", help="an mcpServers JSON file (Claude Desktop, Cursor, VS Code)")

    login = sub.add_parser(
        "login",
        parents=[common],
        help="log in to an HTTP server that asks for OAuth, and store its tokens",
        description="Run the OAuth authorization-code flow once (a browser page, a loopback redirect) and store "
        "the tokens in the credential store (the system keyring, else $SKILLDECK_HOME/credentials).",
    )
    login.add_argument("--no-browser", action="store_true", help="print the URL to open instead of opening a browser")
    login.add_argument(
        "--timeout",
        type=float,
        default=LOGIN_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for the browser to come back (default {LOGIN_TIMEOUT:g})",
    )
    login.set_defaults(handler=_cmd_login)

    logout = sub.add_parser(
        "logout",
        parents=[common],
        help="forget the stored OAuth tokens of a server",
        description="Remove the OAuth tokens skilldeck login stored for a server (from the keyring, or the file "
        "under $SKILLDECK_HOME/credentials); the next connection asks for a login again.",
    )
    logout.set_defaults(handler=_cmd_logout)


def _spec(args: argparse.Namespace) -> ServerSpec:
    if args.config:
        specs = load_config(args.config, timeout=DEFAULT_TIMEOUT)
        for spec in specs:
            if spec.label == args.server:
                return spec
        known = ", ".join(s.label for s in specs) or "none"
        raise ConfigError(f"{args.config} has no server {args.server!r} (labels: {known})")
    if args.server.startswith(("http://", "https://")):
        return spec_for_target(args.server)
    raise ConfigError(f"{args.server!r} is not a URL: pass --config FILE to log in to one of its labels")


@sdk_logs_in_one_line()
def _cmd_login(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.host._api import connect_once, default_store, login

    spec = _spec(args)
    store = default_store()

    async def show(url: str) -> None:
        err.print(f"To log in to {escape(spec.label)}, open this URL in a browser:", highlight=False)
        err.print(escape(url), highlight=False, soft_wrap=True)
        if not args.no_browser:
            await anyio.to_thread.run_sync(webbrowser.open, url)
        err.print(f"waiting for the browser to come back (up to {args.timeout:g} s)...", highlight=False)

    async def run() -> bool:
        return await login(spec, store, show, connect_once, timeout=args.timeout)

    if not anyio.run(run):
        err.print(f"{escape(spec.label)} did not ask for a login: nothing was stored", highlight=False)
        return ExitCode.OK
    err.print(f"logged in to {escape(spec.label)}; tokens stored in {escape(store.where)}", highlight=False)
    return ExitCode.OK


def _cmd_logout(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.host._api import default_store, logout

    spec = _spec(args)
    store = default_store()
    if logout(spec, store):
        err.print(
            f"logged out of {escape(spec.label)}: its tokens were removed from {escape(store.where)}", highlight=False
        )
    else:
        err.print(f"no tokens were stored for {escape(spec.label)}", highlight=False)
    return ExitCode.OK
