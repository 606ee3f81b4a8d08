"""``skilldeck gateway``: one MCP server in front of the servers of an ``mcpServers`` file."""

from __future__ import annotations

import argparse
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
from rich.console import Console
from rich.markup import escape

from skilldeck.cli._arguments import add_http_arguments, http_limits, positive, seconds
from skilldeck.cli._auth import add_auth_arguments, serve_auth, serve_warnings
from skilldeck.cli._console import add_console_argument, console_wanted
from skilldeck.cli._exits import ExitCode
from skilldeck.cli._history import ledger_store
from skilldeck.cli._metrics import MetricsListener, add_metrics_argument
from skilldeck.cli._output import bound_log_output, counted, json_log_output, sdk_logs_in_one_line
from skilldeck.cli._replicas import add_replica_arguments, replica_setup
from skilldeck.cli._select import encoder_flags, encoder_from_flags, vector_cache_dir
from skilldeck.errors import ConfigError
from skilldeck.learning import MAX_AUDIENCES
from skilldeck.learning._api import DEFAULT_LEDGER_TIMEOUT

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from skilldeck.catalog import AddedServers
    from skilldeck.cli._replicas import Replicas
    from skilldeck.gateway import Gateway, GatewayOptions
    from skilldeck.gateway._api import ActivationStore, AnonymousLearning, GatewayMetrics
    from skilldeck.host import Host, ServerSpec
    from skilldeck.host._api import CatalogChange
    from skilldeck.learning import Learner
    from skilldeck.select import Encoder
    from skilldeck.serving._api import HttpLimits, Policy

__all__ = ["add_gateway_command"]


def _pair(flag: str, sep: str) -> Any:
    def parse(value: str) -> tuple[str, str]:
        left, found, right = value.partition(sep)
        if not found or not left or not right:
            example = "docs/search" if sep == "/" else "docs:files"
            raise argparse.ArgumentTypeError(
                f"{flag} takes LABEL{sep}{'TOOL' if sep == '/' else 'LABEL'} ({example}), got {value!r}"
            )
        return left, right

    return parse


def add_gateway_command(sub: Any) -> None:
    gateway = sub.add_parser(
        "gateway",
        help="one MCP server in front of many: find, load and call their tools skill by skill",
        description="Serve the servers of an mcpServers file through four meta-tools (find, load, read_skill_file, "
        "call), disclosing tool schemas only for what a client loads.",
    )
    gateway.add_argument(
        "--config", required=True, metavar="FILE", help="an mcpServers JSON file (Claude Desktop, Cursor, VS Code)"
    )
    add_http_arguments(gateway)
    add_metrics_argument(gateway)
    gateway.add_argument(
        "--policy",
        metavar="FILE",
        help="per-caller admission and tool routing, by LABEL/NAME and LABEL/TOOL "
        "(prompts LABEL/PROMPT, resources LABEL/URI, all of one upstream LABEL/*)",
    )
    gateway.add_argument(
        "--pin",
        action="append",
        default=[],
        type=_pair("--pin", "/"),
        metavar="LABEL/TOOL",
        help="list this upstream tool to every client from the start (repeatable)",
    )
    gateway.add_argument(
        "--names",
        choices=("label", "upstream"),
        default="label",
        help="label (default): upstream tools and prompts as LABEL__NAME, resources as upstream://LABEL/URI; "
        "upstream: their own names and URIs where no other upstream lists the same (the rest as with label)",
    )
    gateway.add_argument(
        "--grant",
        action="append",
        default=[],
        type=_pair("--grant", ":"),
        metavar="LABEL:LABEL",
        help="let skills of the first server activate tools of the second (repeatable)",
    )
    gateway.add_argument(
        "--check",
        action="store_true",
        help="connect, check the policy against the upstreams, print what each identity of the policy would "
        "see, and exit (0: all good; 1: the policy names what no upstream serves; 3: an upstream is unavailable)",
    )
    gateway.add_argument(
        "--watch-config",
        action="store_true",
        help="re-read the config and policy files whenever they change (as SIGHUP does)",
    )
    gateway.add_argument("--log", metavar="FILE", help="append every find/load/call as a JSON line")
    gateway.add_argument(
        "--timeout",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="per upstream: to connect, and for each request",
    )
    gateway.add_argument(
        "--allow-dynamic",
        action="store_true",
        help="let clients load generated (unverifiable) skills, and re-publish them",
    )
    gateway.add_argument(
        "--budget-window",
        type=seconds,
        default=600.0,
        metavar="SECONDS",
        help="each upstream may make the gateway download 64 MiB of skill content per this many seconds (default 600)",
    )
    gateway.add_argument(
        "--name",
        default="skilldeck-gateway",
        help="server name reported to clients (replicas of one gateway: the same name, see --redis)",
    )
    encoder_flags(gateway)
    gateway.add_argument(
        "--ready-upstreams",
        type=positive,
        default=1,
        metavar="N",
        help="over HTTP, GET /readyz answers ready while at least N upstreams are up (default 1)",
    )
    gateway.add_argument(
        "--no-learning",
        action="store_true",
        help="record no usage: by default a question whose find led to a load and a successful call is kept "
        "for that card (question, card, caller subject, time) in $SKILLDECK_HOME/ledger.sqlite3, or in Redis "
        "with --redis, and ranks it better next time (see `skilldeck history`)",
    )
    gateway.add_argument(
        "--ledger-audiences",
        type=positive,
        default=MAX_AUDIENCES,
        metavar="N",
        help=f"audiences (tenants) the usage ledger holds at most (default {MAX_AUDIENCES}): once full, uses of "
        "another audience are not recorded (logged once an hour), what others learned is kept",
    )
    gateway.add_argument(
        "--learn-anonymous",
        action="store_true",
        help="over HTTP without token verification, learn from use anyway: every caller without a token is one "
        "untrusted caller (at most half of a card's questions once a caller with a token taught it, never "
        "lifting a card for others beyond its own evidence); by default they teach nothing",
    )
    gateway.add_argument(
        "--ledger-timeout",
        type=float,
        default=DEFAULT_LEDGER_TIMEOUT,
        metavar="SECONDS",
        help=f"how long recording a use waits for another process holding the ledger's lock (default "
        f"{DEFAULT_LEDGER_TIMEOUT:g}; at most 60) before it is dropped with one log line; only the client whose "
        "call taught it waits, every other client is served meanwhile",
    )
    add_registry_arguments(gateway)
    add_replica_arguments(gateway, gateway=True)
    add_auth_arguments(gateway)
    add_console_argument(gateway, "the upstreams, the catalog, a search box running find, and decisions live")
    gateway.set_defaults(handler=run_gateway_command)


def registry_base(value: str) -> str:
    from skilldeck.catalog import registry_url

    try:
        return registry_url(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_registry_arguments(parser: argparse.ArgumentParser, *, gateway: bool = True) -> None:
    """``--registry`` and ``--registry-file`` (and, for the gateway, ``--registry-refresh``)."""
    parser.add_argument(
        "--registry",
        action="append",
        default=[],
        type=registry_base,
        metavar="URL",
        help="a server registry speaking the MCP registry API (repeatable; 'official' for the official MCP "
        "Registry): find adds servers of it a person could add to weak answers, and the add tool asks them"
        if gateway
        else "a server registry to read the server from (repeatable; 'official' for the official MCP Registry); "
        "default: the catalogs a gateway cached under $SKILLDECK_HOME",
    )
    parser.add_argument(
        "--registry-file",
        action="append",
        default=[],
        metavar="PATH",
        help="a JSON file of server.json entries (a registry API page or a list), for teams without network (repeatable)",
    )
    if gateway:
        parser.add_argument(
            "--registry-refresh",
            type=seconds,
            default=3_600.0,
            metavar="SECONDS",
            help="read the catalogs again this often (default 3600; only what changed, from a registry)",
        )


async def upstream_names_lines(middleware: Any) -> list[str]:
    """What ``--names upstream`` keeps, and each name that stays ``LABEL__NAME`` (or ``upstream://LABEL/URI``)."""
    from skilldeck.gateway._api import META, tool_collisions

    listed: dict[str, list[str]] = {}
    for record in middleware.service.upstreams.tools():
        listed.setdefault(record.label, []).append(record.name)
    collisions = tool_collisions(listed, META)
    if middleware.forwarded is not None:
        names = await middleware.forwarded.refresh_names()
        collisions += names.collisions() if names is not None else []
    if not collisions:
        return ["names: the upstreams' own names (none collides)"]
    return [
        f"names: the upstreams' own names, but {len(collisions)} collide and keep the label form "
        "(LABEL__NAME, upstream://LABEL/URI):",
        *(f"  {c}" for c in collisions),
    ]


def anonymous_learning(args: argparse.Namespace) -> AnonymousLearning:
    """What a use by a caller without a token teaches: a stdio gateway's one user, fully; over HTTP without
    token verification nothing, unless ``--learn-anonymous`` (then they are one untrusted caller)."""
    if args.http is None:
        return "trusted"
    return "untrusted" if args.learn_anonymous else "off"


def run_gateway_command(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.catalog import AddedServers
    from skilldeck.host._api import skilldeck_home
    from skilldeck.serving._api import event_loop_options, load_policy

    with_console = console_wanted(args)  # a flag that cannot work is said before anything is read
    home = skilldeck_home()
    added = AddedServers(home)
    specs = _specs(args, added, err)
    policy = load_policy(args.policy) if args.policy else None
    verifier, auth = serve_auth(args)
    # Replicas share activations and the request-state key; each follows its upstreams itself, so
    # upstream changes reach its own listeners without a shared bus (see docs/deploy.md).
    replicas = replica_setup(args.redis, args.name, bus=False)
    for warning in serve_warnings(args, gateway=True):
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    encoder = encoder_from_flags(args, err)  # `find` ranks as `skilldeck select` does, unless --lexical
    listener, metrics = MetricsListener.from_args(args, _gateway_metrics)
    options = gateway_options(
        args,
        specs,
        policy=policy,
        encoder=encoder,
        home=home,
        added=added,
        limits=listener.limits(http_limits(args)),
        console=with_console,
    )
    run = _GatewayRun(args, err, options, replicas, listener, metrics, (verifier, auth))
    with sdk_logs_in_one_line():
        anyio.run(run.main, backend_options=event_loop_options())
    return run.code


def _specs(args: argparse.Namespace, added: AddedServers, err: Console) -> list[ServerSpec]:
    """The upstreams of ``--config`` and the servers a person added (the config's entry wins a label in both).

    Raises:
        ConfigError: no server at all, or flags no such gateway can meet.
    """
    from skilldeck.host import load_config

    specs = load_config(args.config, timeout=args.timeout)
    configured = {spec.label for spec in specs}
    for spec in added.specs(timeout=args.timeout):  # servers a person added from a catalog
        if spec.label in configured:
            err.print(
                f"[yellow]warning:[/] {escape(str(added.path))}: {escape(spec.label)!r} is also in {escape(args.config)}, "
                "whose entry is used; remove one (skilldeck servers remove LABEL) or rename it",
                highlight=False,
                soft_wrap=True,
            )
            continue
        specs.append(spec)
    if not specs:
        raise ConfigError(f"{args.config} names no servers; add entries under mcpServers")
    if args.ready_upstreams > len(specs):
        raise ConfigError(
            f"--ready-upstreams {args.ready_upstreams}: {args.config} names only {len(specs)} servers, so the "
            f"gateway would never be ready; pass at most {len(specs)}"
        )
    if not 0 < args.ledger_timeout <= 60:
        raise ConfigError(f"--ledger-timeout {args.ledger_timeout:g}: give a number of seconds above 0 and at most 60")
    return specs


def gateway_options(
    args: argparse.Namespace,
    specs: Sequence[ServerSpec],
    *,
    policy: Policy | None,
    encoder: Encoder | None,
    home: Path,
    added: AddedServers,
    limits: HttpLimits,
    console: bool,
) -> GatewayOptions:
    """The gateway ``args`` ask for, as :func:`~skilldeck.gateway.build_gateway` takes it."""
    from skilldeck.gateway import GatewayOptions
    from skilldeck.gateway._api import Source

    catalogs = [Source(url, "registry") for url in args.registry] + [Source(p, "file") for p in args.registry_file]
    return GatewayOptions(
        tuple(specs),
        args.config,
        policy=policy,
        policy_path=args.policy,
        name=args.name,
        names=args.names,
        grants=tuple(args.grant),
        pinned=tuple(args.pin),
        log_path=args.log,
        timeout=args.timeout,
        allow_dynamic=args.allow_dynamic,
        budget_window=args.budget_window,
        encoder=encoder,
        cache_dir=vector_cache_dir(args) if encoder is not None else None,
        anonymous=anonymous_learning(args),
        explain_hidden=args.http is None,  # on stdio the one caller wrote the policy: say what it hides
        catalogs=() if args.check else tuple(catalogs),  # --check answers no client: no catalog is read
        catalog_refresh=args.registry_refresh,
        home=home,
        added=added,
        drain=args.shutdown_timeout,
        http=args.http,
        path=args.path,
        max_sessions=args.max_sessions,
        session_idle_timeout=args.session_idle_timeout,
        limits=limits,
        watch_config=args.watch_config,
        ready_upstreams=args.ready_upstreams,
        console=console,
    )


class _GatewayRun:
    """One run of ``skilldeck gateway``: the stores it opens, the gateway it builds, and what it prints."""

    def __init__(
        self,
        args: argparse.Namespace,
        err: Console,
        options: GatewayOptions,
        replicas: Replicas,
        listener: MetricsListener,
        metrics: GatewayMetrics | None,
        auth: tuple[Any, Any],
    ) -> None:
        self.args, self.err, self.options = args, err, options
        self.replicas, self.listener, self.metrics, self.auth = replicas, listener, metrics, auth
        self.json_lines = args.log_format == "json"
        self.code = ExitCode.OK

    def report(self, level: str, text: str) -> None:
        heading = {"error": "[red]error:[/] ", "warning": "[yellow]warning:[/] "}.get(level, "")
        self.err.print(f"{heading}{escape(text)}", highlight=False, soft_wrap=True)

    async def main(self) -> None:
        from skilldeck.learning import Learner

        args, replicas = self.args, self.replicas
        if self.json_lines:
            json_log_output()  # the handlers sdk_logs_in_one_line installed; uvicorn's are added once it is up
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(replicas.keys_in_step())
            shared = None
            if replicas.redis_url is not None:
                from skilldeck.gateway._api import RedisActivationStore

                store = RedisActivationStore(replicas.redis_url, prefix=f"skilldeck:{args.name}:activation")
                shared = await stack.enter_async_context(store)
            learning = None
            if not args.no_learning and not args.check:  # --check records nothing: it answers no client
                ledger = ledger_store(
                    replicas.redis_url, args.name, max_audiences=args.ledger_audiences, lock_wait=args.ledger_timeout
                )
                try:
                    learning = Learner(await stack.enter_async_context(ledger))
                except ConfigError as exc:  # learning is optional: every upstream is served without it
                    self.report("warning", f"serving without learning from use: {exc}")
            await self.listener.beside(
                lambda: self.serve(shared, learning),
                on_ready=lambda url: self.err.print(f"metrics at {url}", highlight=False),
            )

    async def serve(self, shared: ActivationStore | None, learning: Learner | None) -> None:
        from skilldeck.gateway import build_gateway
        from skilldeck.gateway._api import audience_lines

        verifier, auth = self.auth
        async with build_gateway(
            self.options,
            report=self.report,
            learning=learning,
            shared=shared,
            metrics=self.metrics,
            token_verifier=verifier,
            auth=auth,
            request_state_keys=self.replicas.state_keys,
            request_state_codec=self.replicas.ring,
            on_transition=self.on_transition,
            on_connected=self.on_connected,
        ) as gateway:
            if self.args.check:
                for line in audience_lines(gateway.service):
                    print(line)
                self.code = ExitCode.UNREACHABLE if gateway.host.failures else ExitCode.OK
                return
            if self.options.names == "upstream":
                for line in await upstream_names_lines(gateway.middleware):
                    self.report("info", line)
            await gateway.serve(
                on_ready=self.ready_line(gateway),
                on_change=lambda change: self.on_change(gateway.host, change),
                on_stopped=lambda report: self.err.print(f"skilldeck gateway: {report.line()}", highlight=False),
            )

    def on_connected(self, host: Host) -> None:
        """Every upstream was tried: say which are unavailable, and which speak 2025-11-25 only."""
        err = self.err
        for label, failure in sorted(host.failures.items()):
            err.print(
                f"[yellow]unavailable[/] \\[{escape(label)}] {escape(failure.describe())}",
                highlight=False,
                soft_wrap=True,
            )
        for label in sorted(host.sessions):
            if host.rejected_probe(label):  # its stderr trace of the probe is not shown
                err.print(f"\\[{escape(label)}] speaks 2025-11-25 only", highlight=False)

    def on_transition(self, label: str, text: str) -> None:
        # a warning (its colour is the level of its --log-format json line)
        self.err.print(f"[yellow]\\[{escape(label)}] {escape(text)}[/]", highlight=False, soft_wrap=True)

    def on_change(self, host: Host, change: CatalogChange) -> None:
        err = self.err
        if "reconnected" in change.reasons and "removed" not in change.reasons and change.tools is not None:
            skills = len([r for r in host.skills if r.label == change.label])
            tools = len(change.tools)
            what = counted(tools, "tool") + (f", {counted(skills, 'skill')}" if skills else "")
            err.print(f"\\[{escape(change.label)}] back: {what}", highlight=False)
            return
        if {"down", "reconnected", "removed"} & change.reasons:  # told when it happened (a transition, a reload)
            return
        err.print(
            f"\\[{escape(change.label)}] changed: re-listed ({', '.join(sorted(change.reasons)) or 'requested'})",
            highlight=False,
        )

    def ready_line(self, gateway: Gateway) -> Callable[[str], None]:
        """What is said once the gateway serves: its upstreams, where, what the policy hides, the console."""
        host, specs, err, replicas = gateway.host, self.options.specs, self.err, self.replicas
        skills, tools = len(host.skills), len(host.tools())
        up = len(specs) - len(host.failures)
        hides = _policy_hides(gateway.service, self.options.policy)
        json_lines, console = self.json_lines, gateway.console

        def on_ready(where: str) -> None:
            bound_log_output(json_lines=json_lines)  # what an outsider's requests make the gateway log is bounded
            err.print(
                f"skilldeck gateway: {up} of {len(specs)} servers ({skills} skills, {tools} tools) "
                f"{'over stdio' if where == 'stdio' else 'at ' + where}{replicas.start_note()}",
                highlight=False,
            )
            if hides:
                err.print(escape(hides), highlight=False, soft_wrap=True)
            if console is not None:
                from skilldeck.serving._api import console_url

                err.print(f"console at {console_url(where)}", highlight=False)

        return on_ready


def _policy_hides(service: Any, policy: Any) -> str:
    """What the policy hides from its default identity (the stdio caller, or HTTP without a token): said at start,
    since under a policy a tool no rule grants is hidden ("" without a policy)."""
    if policy is None:
        return ""
    tools, skills = service.hidden_from(policy.default_identity)
    hint = "; public_tools: [LABEL/*] makes every tool of a server public" if tools else ""
    return (
        f"the policy hides {counted(tools, 'tool')} and {counted(skills, 'skill')} of the upstreams from the "
        f"default identity (stdio, or HTTP without a token){hint}"
    )


def _gateway_metrics() -> GatewayMetrics:
    from skilldeck.gateway._api import GatewayMetrics

    return GatewayMetrics()
