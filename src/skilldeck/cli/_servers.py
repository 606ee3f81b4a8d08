"""``skilldeck servers add|list|remove``: the servers a person added from a catalog, from a terminal.

``add`` reads the server from the catalogs named (``--registry``, ``--registry-file``), else from
those a gateway cached under ``$SKILLDECK_HOME/catalog``; shows exactly what would run (as the
``add`` meta-tool's form does), asks for each input it needs (a secret without echo), and asks
to confirm (``--yes`` for scripts, which then take the inputs from ``--set NAME=VALUE``). It
writes ``$SKILLDECK_HOME/added.json`` only: a running gateway starts the server when it re-reads
its configuration (``SIGHUP``, or ``--watch-config``), else at its next start. Nothing is run here
but, for a PyPI package with no ``uvx`` at hand, the making of its venv once confirmed.
"""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from dataclasses import replace
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape

from skilldeck.cli._exits import ExitCode
from skilldeck.cli._gateway import add_registry_arguments
from skilldeck.cli._output import StdoutConsole
from skilldeck.errors import AddRefused, RegistryError, UsageError

__all__ = ["add_servers_command"]


def _assignment(value: str) -> tuple[str, str]:
    name, sep, given = value.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--set takes NAME=VALUE, got {value.partition('=')[0]!r}...")
    return name, given


def _label(value: str) -> str:
    from skilldeck.catalog._api import LABEL

    if not LABEL.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a label: a letter or digit, then letters, digits, '.', '_' or '-' (64 at most)"
        )
    return value


def add_servers_command(sub: Any) -> None:
    servers = sub.add_parser(
        "servers",
        help="add, list or remove servers from a catalog (kept in $SKILLDECK_HOME/added.json, started by the gateway)",
        description="The servers a person added from a server registry: kept in $SKILLDECK_HOME/added.json, "
        "apart from your own config, and started by `skilldeck gateway` beside the configured ones.",
    )
    servers.set_defaults(handler=run_servers_list)  # `skilldeck servers` alone lists them
    actions = servers.add_subparsers(dest="action", metavar="ACTION")
    add = actions.add_parser(
        "add",
        help="add a server from a catalog, after showing what it runs and asking",
        description="Show what adding NAME would run (the command with its pinned version, or the URL), ask for "
        "what it needs, confirm, and keep it in $SKILLDECK_HOME/added.json. A running gateway starts it on SIGHUP "
        "(or at once with --watch-config).",
    )
    add.add_argument("name", help="the server's registry name (io.github.owner/server), as a catalog card shows it")
    add.add_argument("--version", help="this exact version (default: the catalog's latest)")
    add.add_argument(
        "--label", type=_label, help="the upstream label its tools go under (default: its name's last part)"
    )
    add.add_argument(
        "--set",
        action="append",
        default=[],
        type=_assignment,
        metavar="NAME=VALUE",
        help="an input it needs (an environment variable, header or argument), instead of being asked (repeatable)",
    )
    add.add_argument("--yes", action="store_true", help="do not ask to confirm (for scripts; inputs come from --set)")
    add_registry_arguments(add, gateway=False)
    add.set_defaults(handler=run_servers_add)
    listed = actions.add_parser("list", help="the servers added, what each runs and where it came from")
    listed.set_defaults(handler=run_servers_list)
    remove = actions.add_parser("remove", help="forget an added server (a running gateway stops it on SIGHUP)")
    remove.add_argument("name", help="its label or its registry name")
    remove.set_defaults(handler=run_servers_remove)


async def _entry(args: argparse.Namespace, home: Any) -> Any:
    """The catalog entry ``args`` name: from the registries and files named, else from the cached catalogs."""
    from skilldeck.catalog import CatalogCache, CatalogEntry, RegistryClient, read_registry_file

    found: list[CatalogEntry] = []
    looked: list[str] = []
    for url in args.registry:
        looked.append(url)
        client = RegistryClient(url)
        try:
            found.append(await client.version(args.name, args.version or "latest"))
        except RegistryError as exc:
            if "HTTP 404" not in str(exc):
                raise
    for path in args.registry_file:
        looked.append(path)
        found += [e for e in read_registry_file(path).entries if e.name == args.name]
    if not args.registry and not args.registry_file:
        cache = CatalogCache(home / "catalog")
        for source in cache.sources():
            looked.append(source)
            cached = cache.read(source)
            found += [e for e in (cached[0] if cached else []) if e.name == args.name]
        if not looked:
            raise UsageError(
                f"no catalog is cached under {home / 'catalog'}; name one: --registry URL (or official), "
                "or --registry-file PATH"
            )
    matching = [e for e in found if args.version is None or e.version == args.version]
    if not matching:
        versions = ", ".join(sorted({e.version for e in found}))
        held = f" (it has {versions})" if versions else ""
        raise UsageError(
            f"{args.name}{' ' + args.version if args.version else ''} is in none of the catalogs read{held}: "
            + ", ".join(looked)
        )
    return matching[0]


def _ask(launch: Any, given: dict[str, str], interactive: bool, err: Console) -> dict[str, str]:
    values = dict(given)
    for item in launch.inputs:
        if item.name in values or not interactive:
            continue
        what = f"{item.name}{' (secret)' if item.secret else ''}"
        hint = f" [{item.default}]" if item.default and not item.secret else ""
        need = " (required)" if item.required and item.default is None else " (Enter to leave it out)"
        if item.description:
            err.print(f"  {escape(item.description)}", highlight=False, soft_wrap=True)
        prompt = f"{what}{hint}{need}: "
        value = getpass.getpass(prompt) if item.secret else input(prompt)
        if value:
            values[item.name] = value
    return values


def run_servers_add(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.catalog import AddedServers, choose, decide, find_runtimes
    from skilldeck.catalog._api import prepare, what_runs
    from skilldeck.host._api import skilldeck_home

    home = skilldeck_home()
    entry = anyio.run(_entry, args, home)
    launch, reasons = choose(entry, find_runtimes(home))
    if launch is None:
        raise AddRefused(f"{entry.name} cannot be added here: {'; '.join(reasons)}", code="not_runnable")
    if args.label:
        launch = replace(launch, as_label=args.label)
    out = StdoutConsole(soft_wrap=True, highlight=False)
    out.print(f"{escape(entry.name)} {escape(entry.version)}")
    for line in what_runs(launch):
        out.print(escape(line))
    interactive = sys.stdin.isatty() and not args.yes
    values = decide(launch, "accept", _ask(launch, dict(args.set), interactive, err))
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal, so nothing can be confirmed: pass --yes (and the inputs with --set)")
        if input("Add it? [y/N] ").strip().lower() not in ("y", "yes"):
            out.print("nothing was added")
            return ExitCode.REFUSED
    anyio.run(prepare, launch)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    added = AddedServers(home)
    added.add(launch.label, launch.config_entry(values, added_at=stamp))
    out.print(
        f"added as {escape(launch.label)!r} to {escape(str(added.path))}; a running gateway starts it when it re-reads "
        "its config (SIGHUP, or at once with --watch-config), otherwise at its next start"
    )
    return ExitCode.OK


def run_servers_list(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.catalog import AddedServers
    from skilldeck.catalog._api import ADDED_META
    from skilldeck.host._api import skilldeck_home

    added = AddedServers(skilldeck_home())
    out = StdoutConsole(soft_wrap=True, highlight=False)
    entries = added.entries()
    if not entries:
        out.print(f"no servers added ({escape(str(added.path))} holds none)")
        return ExitCode.OK
    for label, entry in entries.items():
        origin = entry.get(ADDED_META) or {}
        secrets = set(origin.get("secrets") or [])
        if "url" in entry:
            runs = str(entry["url"])
            named = sorted(entry.get("headers") or {})
        else:
            runs = " ".join([str(entry.get("command", "")), *map(str, entry.get("args") or [])])
            named = sorted(entry.get("env") or {})
        given = ", ".join(f"{n} (secret)" if n in secrets else n for n in named)
        out.print(f"{escape(label)}: {escape(str(origin.get('name', '?')))} {escape(str(origin.get('version', '?')))}")
        out.print(f"  runs: {escape(runs)}")
        if given:
            out.print(f"  with: {escape(given)}")
        out.print(
            f"  from: {escape(str(origin.get('registry', '?')))}, added {escape(str(origin.get('addedAt', '?')))}"
        )
    return ExitCode.OK


def run_servers_remove(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.catalog import AddedServers
    from skilldeck.host._api import skilldeck_home

    added = AddedServers(skilldeck_home())
    label = added.remove(args.name)
    if label is None:
        raise UsageError(f"no added server is named {args.name!r} (see `skilldeck servers list`)")
    out = StdoutConsole(soft_wrap=True, highlight=False)
    out.print(f"removed {escape(label)!r} from {escape(str(added.path))}; a running gateway stops it on SIGHUP")
    return ExitCode.OK
