"""The ``skilldeck`` command line.

Each subcommand is a thin layer over the library: parse arguments, call one public function,
print the outcome with rich. Messages go to stderr so that stdio transports and ``--json``
output on stdout stay clean.

Its modules (private; a sibling package uses what ``__all__`` lists):

- ``__main__``: ``python -m skilldeck.cli``: the same as the ``skilldeck`` command.
- ``_arguments``: Argument types and the flags ``serve`` and ``gateway`` share (how they listen over HTTP).
- ``_auth``: ``skilldeck serve`` over HTTP: bearer-token verification flags and the warnings printed at
  start.
- ``_authoring``: ``skilldeck validate`` and ``skilldeck new``: for skill authors, before anything is
  served.
- ``_clients``: ``skilldeck clients``: the MCP clients on this machine and their servers; ``connect`` puts
  the gateway in front of one, ``disconnect`` puts its file back.
- ``_console``: ``--console`` of ``serve`` and ``gateway``: the flag, and the check that it has an HTTP
  listener to be served on.
- ``_exits``: Exit codes of the ``skilldeck`` command line, and the one map from errors to them.
- ``_gateway``: ``skilldeck gateway``: one MCP server in front of the servers of an ``mcpServers`` file.
- ``_history``: ``skilldeck history``: what the usage ledger holds (question, card, caller subject, time),
  and clearing it.
- ``_host``: ``skilldeck skills`` and ``skilldeck load``: the host side on the command line.
- ``_login``: ``skilldeck login`` and ``skilldeck logout``: OAuth 2.1 logins to remote MCP servers, once per
  server.
- ``_metrics``: ``--metrics HOST:PORT`` of ``serve`` and ``gateway``: Prometheus metrics on a listener of
  their own.
- ``_output``: Standard output for the command line, and what happens when its reader goes away.
- ``_replicas``: ``--redis``: what ``serve`` and ``gateway`` replicas behind a load balancer share (see
  docs/deploy.md).
- ``_select``: ``skilldeck ask``, ``skilldeck select`` and ``skilldeck snapshot``: selection on the command
  line.
- ``_servers``: ``skilldeck servers add|list|remove``: the servers a person added from a catalog, from a
  terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from rich.console import Console
from rich.markup import escape

from skilldeck import __version__
from skilldeck.cli._arguments import add_http_arguments, http_limits, positive
from skilldeck.cli._auth import add_auth_arguments, serve_auth, serve_warnings
from skilldeck.cli._authoring import add_authoring_commands
from skilldeck.cli._clients import add_clients_command
from skilldeck.cli._console import add_console_argument, console_wanted
from skilldeck.cli._exits import ExitCode, exit_for
from skilldeck.cli._gateway import add_gateway_command
from skilldeck.cli._history import add_history_command
from skilldeck.cli._host import add_host_commands
from skilldeck.cli._login import add_login_commands
from skilldeck.cli._metrics import MetricsListener, add_metrics_argument
from skilldeck.cli._output import (
    JsonLinesConsole,
    StdoutConsole,
    bound_log_output,
    json_log_output,
    sdk_logs_in_one_line,
    stdout_closed,
)
from skilldeck.cli._replicas import add_replica_arguments, replica_setup
from skilldeck.cli._select import add_select_commands
from skilldeck.cli._servers import add_servers_command
from skilldeck.errors import SkilldeckError, UsageError

if TYPE_CHECKING:
    from skilldeck.serving._api import ServingMetrics

__all__ = ["main"]

Handler = Callable[[argparse.Namespace, Console], int]
"""What a command runs: its parsed arguments and the stderr console in, an :class:`ExitCode` out."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose subcommands may take a stdio server command after the first ``--``.

    A subcommand made with ``server_command=True`` parses only what comes before ``--``, and
    stores the rest, verbatim, as ``args.server_command`` (``None`` without a ``--``).
    """

    def __init__(self, *args: Any, server_command: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.server_command = server_command

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if not self.server_command:
            return super().parse_known_args(args, namespace)
        own = list(sys.argv[1:] if args is None else args)
        command: list[str] | None = None
        if "--" in own:
            own, command = own[: own.index("--")], own[own.index("--") + 1 :]
        parsed, extras = super().parse_known_args(own, namespace)
        parsed.server_command = command
        return parsed, extras


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="skilldeck", description="MCP capability discovery: serve, find and load Agent Skills over MCP."
    )
    parser.add_argument("--version", action="version", version=f"skilldeck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    serve = sub.add_parser(
        "serve",
        help="serve skill folders over MCP (stdio, or streamable HTTP with --http)",
        description="Publish the skills of folders through the MCP Skills extension: each folder holding a SKILL.md "
        "is one skill. What cannot be served is refused and said on stderr (check a pack first with skilldeck "
        "validate).",
    )
    serve.add_argument("paths", nargs="+", metavar="PATH", help="folders holding skills (each SKILL.md folder is one)")
    add_http_arguments(serve)
    add_metrics_argument(serve)
    serve.add_argument(
        "--sse-responses",
        action="store_true",
        help="answer each HTTP request as an SSE stream rather than one JSON body (JSON by default: serve sends "
        "nothing during a request, and JSON costs about half the CPU; change notifications use SSE either way)",
    )
    serve.add_argument("--page-size", type=positive, default=50, metavar="N", help="skills per skills/list page")
    serve.add_argument("--watch", action="store_true", help="reload when files change and notify clients")
    serve.add_argument("--name", default="skilldeck", help="server name reported to clients")
    serve.add_argument("--policy", metavar="FILE", help="a YAML policy: which callers see which skills and tools")
    serve.add_argument(
        "--solon-talent",
        metavar="SKILL",
        help="also answer Solon AI's remote-talent protocol for this skill (needs --policy)",
    )
    add_replica_arguments(serve)
    add_auth_arguments(serve)
    add_console_argument(serve, "the skills served and the policy's decisions on calls")
    serve.set_defaults(handler=_cmd_serve)

    demo = sub.add_parser(
        "demo",
        help="run the whole path on the bundled example pack (no configuration needed)",
        description="Answer a question from cards on three in-process servers (the skill chosen, loaded verified, "
        "its tool called through the gate, History A and B counted), the same among LiveMCPBench's 70 servers, "
        "an out-of-scope question that abstains, then the Skills extension and the gateway with a real client "
        "in both protocol eras. Needs no configuration and no network.",
    )
    demo.set_defaults(handler=_cmd_demo)
    add_host_commands(sub)
    add_select_commands(sub)
    add_gateway_command(sub)
    add_servers_command(sub)
    add_clients_command(sub)
    add_history_command(sub)
    add_login_commands(sub)
    add_authoring_commands(sub)
    return parser


def _cmd_demo(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.demo import run_demo

    anyio.run(lambda: run_demo(StdoutConsole(soft_wrap=False)))
    return ExitCode.OK


@sdk_logs_in_one_line()  # as the gateway: the SDK's records one line each, not rich's wrapped tracebacks
def _cmd_serve(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.server import CatalogDiff, create_server, serve_http, serve_stdio
    from skilldeck.serving._api import (
        collect_less_often,
        collector_paused,
        configure_from_environment,
        drop_idle_tracing,
        event_loop_options,
        freeze_startup_heap,
        honour_http_trace_context,
        load_policy,
    )

    json_lines = args.log_format == "json"
    if json_lines:
        json_log_output()  # the handlers the decorator installed; uvicorn's are added once it is up
    if args.solon_talent and not args.policy:
        raise UsageError("--solon-talent needs --policy FILE: admission, instructions and routing come from it")
    policy = load_policy(args.policy) if args.policy else None
    verifier, auth = serve_auth(args)
    with_console = console_wanted(args)
    replicas = replica_setup(args.redis, args.name, settle=args.settle)
    with collector_paused():  # the catalog's objects live as long as the server: no pass over them while made
        server, extension = create_server(
            *args.paths,
            name=args.name,
            page_size=args.page_size,
            policy=policy,
            token_verifier=verifier,
            auth=auth,
            subscriptions=replicas.bus,
            request_state_keys=replicas.state_keys,
            request_state_codec=replicas.ring,
        )
    configure_from_environment("skilldeck")  # OTEL_* asking for traces installs a provider first
    drop_idle_tracing(server)  # nothing collects the SDK's per-request span unless a tracer provider is installed
    honour_http_trace_context(server)  # with a provider: a traceparent header continues the caller's trace
    listener, metrics = MetricsListener.from_args(args, _serving_metrics)
    if metrics is not None:
        metrics.instrument(server)
        if replicas.bus is not None:
            metrics.watch_bus(replicas.bus)
    if args.solon_talent:
        from skilldeck.server import enable_talent

        enable_talent(server, extension, args.solon_talent)
    for warning in serve_warnings(args):
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    anyio.run(extension.check_policy, server)  # an unknown skill or tool in the policy stops here
    for problem in extension.problems:
        err.print(f"[yellow]refused[/] {escape(str(problem))}", highlight=False, soft_wrap=True)
    where = ", ".join(args.paths)
    if len(extension.catalog) == 0:
        err.print(
            f"[yellow]warning[/] no skills found in {escape(where)}: a skill is a folder holding a SKILL.md "
            "(see the lines above for anything refused)",
            highlight=False,
        )
    count = len(extension.catalog)
    view = f" ({_policy_view(extension)})" if policy else ""

    reported = {str(problem): _saved(problem) for problem in extension.problems}

    def on_reload(diff: CatalogDiff) -> None:
        # Every reload is heard, not only one that changed the catalog: a new skill saved with a typo
        # changes nothing served, and its author must see why at once. A refusal is said once per save of
        # its file: not again when another skill's save reloads the pack.
        nonlocal reported
        problems = {str(problem): _saved(problem) for problem in extension.problems}
        if diff:
            err.print(
                f"reloaded: {len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed "
                f"({len(extension.catalog)} skills)",
                highlight=False,
            )
        for problem, saved in problems.items():
            if problem not in reported or reported[problem] != saved:
                err.print(f"[yellow]refused[/] {escape(problem)}", highlight=False, soft_wrap=True)
        for uri in diff.added:
            err.print(f"served {escape(uri)}", highlight=False, soft_wrap=True)
        reported = problems

    def on_policy_error(exc: Exception) -> None:
        err.print(f"[red]policy not applied[/] (the previous one stays): {escape(str(exc))}", highlight=False)

    def on_policy_applied(_: object) -> None:
        err.print(f"policy applied: {escape(args.policy)} ({_policy_view(extension)})", highlight=False)

    if args.http is None:
        bound_log_output(json_lines=json_lines)
        err.print(
            f"skilldeck: serving {count} skills from {where} over stdio{view}{replicas.start_note()}", highlight=False
        )
        anyio.run(
            replicas.around,
            lambda: listener.beside(
                lambda: serve_stdio(
                    server,
                    extension,
                    watch=args.watch,
                    on_reload=on_reload,
                    policy_path=args.policy,
                    on_policy_error=on_policy_error,
                    on_policy_applied=on_policy_applied,
                )
            ),
        )
        return ExitCode.OK

    host, port = args.http
    console = None
    if with_console:
        from skilldeck.server._api import ServeConsole
        from skilldeck.serving._api import Console as ConsolePage

        console = ConsolePage(ServeConsole(extension, title=args.name), verifier, host=host)
    freeze_startup_heap()  # the catalog and modules stay out of the collector's full passes
    collect_less_often()  # and a request's short-lived objects do not set off a young pass every few requests

    def on_ready(url: str) -> None:
        bound_log_output(
            json_lines=json_lines
        )  # what an outsider's requests make the server log is bounded (uvicorn's handlers exist now)
        watching = " (watching for changes)" if args.watch else ""
        err.print(
            f"skilldeck: serving {count} skills from {where} at {url}{watching}{view}{replicas.start_note()}",
            highlight=False,
        )
        if console is not None:
            from skilldeck.serving._api import console_url

            err.print(f"console at {console_url(url)}", highlight=False)

    anyio.run(
        replicas.around,
        lambda: listener.beside(
            lambda: serve_http(
                server,
                extension,
                host=host,
                port=port,
                path=args.path,
                watch=args.watch,
                on_reload=on_reload,
                on_ready=on_ready,
                policy_path=args.policy,
                on_policy_error=on_policy_error,
                on_policy_applied=on_policy_applied,
                max_sessions=args.max_sessions,
                session_idle_timeout=args.session_idle_timeout,
                json_response=not args.sse_responses,
                limits=listener.limits(http_limits(args)),
                on_stopped=lambda report: err.print(f"skilldeck: {report.line()}", highlight=False),
                console=console,
            ),
            on_ready=lambda url: err.print(f"metrics at {url}", highlight=False),
        ),
        backend_options=event_loop_options(),  # uvloop where installed
    )
    return ExitCode.OK


def _saved(problem: object) -> tuple[int, int] | None:
    """When the file a refusal names was last saved, and its size (``None`` when it cannot be read)."""
    try:
        found = os.stat(getattr(problem, "path", None) or "")
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def _serving_metrics() -> ServingMetrics:
    from skilldeck.serving._api import ServingMetrics

    return ServingMetrics()


def _policy_view(extension: Any) -> str:
    """What the policy in force leaves to its default identity (the caller on stdio or without a token)."""
    from skilldeck.server._api import catalog_for

    policy = extension.policy
    if policy is None:
        return "no policy"
    who = policy.default_identity
    parts = [f"tenant {who.tenant}" if who.tenant else "", "roles " + " ".join(sorted(who.roles)) if who.roles else ""]
    described = ", ".join(p for p in parts if p) or "no tenant or roles"
    seen = len(catalog_for(extension.catalog, policy, who))
    return f"policy: the default identity ({described}) sees {seen} of {len(extension.catalog)}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``skilldeck`` console script; returns the exit code.

    A closed standard output (``skilldeck skills … | head -1``) ends any command quietly with 141.
    """
    try:
        return int(_main(argv))
    except BrokenPipeError:
        return stdout_closed()
    except BaseExceptionGroup as group:  # printed from inside a task group
        if group.split(BrokenPipeError)[1] is None:
            return stdout_closed()
        raise


def _main(argv: Sequence[str] | None) -> int:
    parser = _build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    json_lines = getattr(args, "log_format", "text") == "json"
    err = JsonLinesConsole(stderr=True) if json_lines else Console(stderr=True, soft_wrap=True)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        return handler(args, err)
    except SkilldeckError as exc:
        code, heading = exit_for(exc)
        err.print(f"[red]{escape(heading)}[/]: {escape(str(exc))}", highlight=False)
        return code
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
