"""``skilldeck clients``: the MCP clients on this machine and their servers; ``connect`` puts the gateway in
front of one, ``disconnect`` puts its file back."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from skilldeck._suggest import did_you_mean
from skilldeck.cli._exits import ExitCode
from skilldeck.cli._output import StdoutConsole, counted
from skilldeck.clients import (
    CLIENTS,
    SCOPES,
    Client,
    ConnectPlan,
    Found,
    Location,
    client_named,
    default_upstreams,
    locate,
    plan_connect,
    servers_in,
)
from skilldeck.clients._api import (
    Connections,
    digest,
    mode_of,
    read_any,
    read_bytes,
    read_text,
    upstream_servers,
    write_bytes,
    write_text,
)
from skilldeck.errors import ClientFileError, UsageError

__all__ = ["add_clients_command", "skilldeck_command"]


def add_clients_command(sub: Any) -> None:
    names = ", ".join(c.name for c in CLIENTS)
    clients = sub.add_parser(
        "clients",
        help="list the MCP clients here and their servers; connect puts the gateway in front of one",
        description=f"List the MCP clients found on this machine ({names}) and, per client and scope, the "
        "servers configured there. `clients connect CLIENT` moves that client's servers into skilldeck's "
        "upstreams file and writes one entry that starts the gateway in their place; `clients disconnect "
        "CLIENT` puts the client's file back as it was.",
    )
    _common(clients)
    clients.add_argument("--json", action="store_true", help="print the listing as JSON")
    clients.set_defaults(handler=_cmd_list)
    actions = clients.add_subparsers(dest="action", metavar="ACTION")

    connect = actions.add_parser(
        "connect",
        help="move a client's servers behind the gateway",
        description="Move CLIENT's servers into the upstreams file (merged with what is there: the same server "
        "from two clients once, matched by command, arguments and URL; a label already taken gets the client's "
        "name added) and write one `skilldeck` entry into the client that starts the gateway, with the absolute "
        "path of this skilldeck. The client's file keeps its comments, key order and other keys; a copy of it "
        "as it was is kept for `clients disconnect`. Servers the gateway cannot run as the client did stay "
        "in the client, and the output says why.",
    )
    _client_arguments(connect)
    connect.add_argument(
        "--upstreams",
        metavar="FILE",
        help="the gateway's mcpServers file (default ~/.config/skilldeck/upstreams.json; two clients may share one)",
    )
    connect.add_argument(
        "--dry-run", action="store_true", help="print the diff of every file it would change, and stop"
    )
    connect.set_defaults(handler=_cmd_connect)

    disconnect = actions.add_parser(
        "disconnect",
        help="put a connected client's file back as it was",
        description="Restore the client's file byte for byte from the copy `clients connect` kept. A file edited "
        "since the connect is left alone unless --force (the edited file is kept beside the copy). The upstreams "
        "file is left as it is.",
    )
    _client_arguments(disconnect)
    disconnect.add_argument("--force", action="store_true", help="restore even a file edited since the connect")
    disconnect.add_argument("--dry-run", action="store_true", help="print the diff of the restore, and stop")
    disconnect.set_defaults(handler=_cmd_disconnect)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project",
        metavar="DIR",
        default=None,
        help="the project whose files the project (and Claude Code's local) scope means (default: this folder)",
    )


def _client_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("client", metavar="CLIENT", help=", ".join(c.name for c in CLIENTS))
    parser.add_argument(
        "--scope",
        choices=SCOPES,
        default="user",
        help="the user's own file (default), the project's, or Claude Code's per-project entry in ~/.claude.json (local)",
    )
    _common(parser)


# -- where things are ------------------------------------------------------------------------------


def _home() -> str:
    return os.environ.get("HOME") or os.environ.get("USERPROFILE") or str(Path.home())


def _project(args: argparse.Namespace) -> str:
    return os.path.abspath(args.project or os.getcwd())


def _location(client: Client, scope: str, args: argparse.Namespace) -> Location:
    return locate(client, scope, system=sys.platform, home=_home(), environ=os.environ, project=_project(args))


def _asked(args: argparse.Namespace) -> tuple[Client, Location]:
    """The client and the location that ``CLIENT --scope SCOPE --project DIR`` name."""
    client = _client(args.client)
    try:
        return client, _location(client, args.scope, args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _client(name: str) -> Client:
    client = client_named(name)
    if client is None:
        known = [c.name for c in CLIENTS]
        raise UsageError(f"no client {name!r}{did_you_mean(name, known)}; the clients are {', '.join(known)}")
    return client


def skilldeck_command(argv0: str | None = None, executable: str | None = None) -> list[str]:
    """The absolute command that starts this skilldeck: its console script, else this Python with ``-m``.

    A desktop client starts servers with a short ``PATH`` (no virtual environment's ``bin``), so a
    bare ``skilldeck`` would not be found; the script's absolute path starts it with its own Python.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if Path(argv0).stem == "skilldeck":
        found = argv0 if os.sep in argv0 or "/" in argv0 else shutil.which(argv0)
        if found:
            return [os.path.abspath(found)]  # not resolved: a venv's script and interpreter are links
    beside = Path(executable).parent / ("skilldeck.exe" if os.name == "nt" else "skilldeck")
    if beside.is_file():
        return [os.path.abspath(beside)]
    return [os.path.abspath(executable), "-m", "skilldeck.cli"]


# -- listing ---------------------------------------------------------------------------------------


def _summary(found: Found) -> tuple[str, str]:
    if found.gateway is not None:
        return "gateway", f"the skilldeck gateway on {found.gateway or '(no --config)'}"
    if found.entry is None:
        return "kept", f"stays in the client: {found.kept}"
    entry = found.entry
    if "url" in entry:
        url = re.sub(r"\?.*", "?…", str(entry["url"]))  # a query may carry a key
        return entry.get("type", "http"), url + (" (disabled)" if entry.get("disabled") else "")
    words = [str(entry["command"]), *map(str, entry.get("args") or [])]
    extra = f" (env: {', '.join(sorted(entry['env']))})" if entry.get("env") else ""
    return "stdio", " ".join(words) + extra + (" (disabled)" if entry.get("disabled") else "")


def _scan(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for client in CLIENTS:
        for scope in client.scopes:
            location = _location(client, scope, args)
            text = read_text(location.path)
            installed = text is not None or os.path.exists(location.installed_marker)
            if scope == "user" and not installed:
                continue
            if scope != "user" and text is None:
                continue
            row: dict[str, Any] = {
                "client": client.name,
                "title": client.title,
                "scope": scope,
                "path": location.path,
                "exists": text is not None,
                "servers": [],
            }
            try:
                found = servers_in(location, text or "", home=_home())
            except ClientFileError as exc:
                row["error"] = str(exc)
                found = []
            for f in found:
                kind, what = _summary(f)
                row["servers"].append({"label": f.label, "kind": kind, "summary": what})
            if scope == "local" and not row["servers"] and "error" not in row:
                continue  # ~/.claude.json exists for every project; only one that has servers here is listed
            rows.append(row)
    return rows


def _cmd_list(args: argparse.Namespace, err: Console) -> int:
    rows = _scan(args)
    out = StdoutConsole(soft_wrap=True, highlight=False)
    if args.json:
        print(json.dumps({"clients": rows}, indent=2))
        return ExitCode.OK
    seen = {row["client"] for row in rows}
    title = None
    for row in rows:
        if row["title"] != title:
            title = row["title"]
            out.print(f"[bold]{escape(title)}[/] ({row['client']})")
        count = counted(len(row["servers"]), "server") if row["exists"] else "no file yet"
        out.print(f"  {row['scope']:<8} {escape(row['path'])}: {count}")
        if "error" in row:
            out.print(f"    [red]{escape(row['error'])}[/]")
        width = max((len(s["label"]) for s in row["servers"]), default=0)
        for server in row["servers"]:
            out.print(f"    {escape(server['label']):<{width}}  {server['kind']:<7} {escape(server['summary'])}")
    missing = [c.name for c in CLIENTS if c.name not in seen]
    if missing:
        out.print(f"not found here: {', '.join(missing)}")
    if rows:
        out.print("connect one: skilldeck clients connect CLIENT [--scope user|project|local] [--dry-run]")
    return ExitCode.OK


# -- diffs, with secrets left out ------------------------------------------------------------------

_SECRET_KEYS = {"env", "envs", "headers", "http_headers", "settings"}
_SECRET_NAME = re.compile(r"token|secret|password|passwd|api[_-]?key|authorization|credential", re.IGNORECASE)


def _secrets(data: object, under_secret: bool = False) -> Iterable[str]:
    """Every value under an ``env``, ``headers`` or extension ``settings`` key, or under a key named like a
    secret (``*token*``, ``*password*``...), anywhere in ``data``."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield from _secrets(value, under_secret or key in _SECRET_KEYS or bool(_SECRET_NAME.search(str(key))))
    elif isinstance(data, list):
        for value in data:
            yield from _secrets(value, under_secret)
    elif under_secret and data is not None and not isinstance(data, bool):
        text = str(data)
        if not re.fullmatch(r"(\$\{[^}]+\})*", text):
            yield text


def _redacted(text: str, secrets: Iterable[str]) -> str:
    forms = {s for secret in secrets for s in (secret, json.dumps(secret)[1:-1]) if s}
    for secret in sorted(forms, key=len, reverse=True):
        text = re.sub(rf"(?<![\w]){re.escape(secret)}(?![\w])", "***", text)
    return text


def _parsed(path: str, text: str | None) -> object:
    return read_any(path, text) if text else None


def _diff(path: str, before: str | None, after: str | None) -> str:
    secrets = [*_secrets(_parsed(path, before)), *_secrets(_parsed(path, after))]
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        (after or "").splitlines(keepends=True),
        fromfile=path if before is not None else "/dev/null",
        tofile=path if after is not None else "/dev/null",
    )
    out = []
    for line in lines:
        if line.startswith(("+", "-", " ")) and not line.startswith(("+++", "---")):
            line = line[0] + _redacted(line[1:], secrets)
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


# -- connect ---------------------------------------------------------------------------------------


def _home_state() -> Connections:
    from skilldeck.host._api import skilldeck_home

    return Connections(skilldeck_home())


def _cmd_connect(args: argparse.Namespace, err: Console) -> int:
    client, location = _asked(args)
    if args.scope == "user" and not os.path.exists(location.installed_marker) and read_bytes(location.path) is None:
        raise UsageError(
            f"{client.title} does not look installed here: there is no {location.installed_marker}; "
            "install it (or start it once), then run this again"
        )
    upstreams = os.path.abspath(
        os.path.expanduser(args.upstreams)
        if args.upstreams
        else default_upstreams(system=sys.platform, home=_home(), environ=os.environ)
    )
    if os.path.realpath(upstreams) == os.path.realpath(location.path):
        raise UsageError(
            f"--upstreams {upstreams} is {client.title}'s own file; name another file for the gateway's servers"
        )
    state = _home_state()
    with state.locked():
        before = read_text(location.path)
        upstreams_before = read_text(upstreams)
        plan = plan_connect(
            location,
            before,
            upstreams=upstreams,
            upstreams_text=upstreams_before,
            command=skilldeck_command(),
            home=_home(),
        )
        _report(plan, err)
        if args.dry_run:
            for change in plan.changes:
                sys.stdout.write(_diff(change.path, change.before, change.after))
            err.print(f"--dry-run: nothing was written ({counted(len(plan.changes), 'file')} would change)")
            return ExitCode.OK
        if not plan.changes:
            err.print(f"{client.title} ({args.scope}) is connected already: nothing to change")
            return ExitCode.OK
        _apply(plan, state, args, err)
    return ExitCode.OK


def _report(plan: ConnectPlan, err: Console) -> None:
    location = plan.location
    err.print(f"{escape(location.client.title)} ({location.scope}): {escape(location.path)}", highlight=False)
    for move in plan.moves:
        if move.how == "added":
            line = f"moves [bold]{escape(move.label)}[/] into the upstreams file"
        elif move.how == "same":
            line = f"moves [bold]{escape(move.label)}[/]: the same server as {escape(move.upstream)!r} there"
            line += f" ({escape(move.note)})" if move.note else ""
        else:
            line = (
                f"moves [bold]{escape(move.label)}[/] as [bold]{escape(move.upstream)}[/]: "
                f"{escape(move.label)!r} there is another server"
            )
        err.print(f"  {line}", highlight=False)
    for kept in plan.kept:
        err.print(f"  keeps [bold]{escape(kept.label)}[/] in the client: {escape(kept.kept or '')}", highlight=False)
    if plan.client_change is not None:
        err.print(f"  starts the gateway as [bold]{escape(plan.gateway_label)}[/]", highlight=False)
    http = [m.upstream for m in plan.moves if m.how != "same" and _is_http_without_auth(plan, m.upstream)]
    for label in http:
        err.print(
            f"  {escape(label)} is an HTTP server: if it asks for a login, run "
            f"skilldeck login {escape(label)} --config {escape(plan.upstreams)}",
            highlight=False,
        )


def _is_http_without_auth(plan: ConnectPlan, label: str) -> bool:
    change = next((c for c in plan.changes if c.path == plan.upstreams), None)
    if change is None:
        return False
    _, servers = upstream_servers(change.after, plan.upstreams)
    entry = servers.get(label) or {}
    headers = {k.lower() for k in (entry.get("headers") or {})}
    return "url" in entry and "authorization" not in headers


def _apply(plan: ConnectPlan, state: Connections, args: argparse.Namespace, err: Console) -> None:
    location = plan.location
    connections = state.load()
    key = (location.client.name, location.scope, location.path)
    record = state.find(*key, connections)
    for written in plan.changes:
        if written.path == plan.upstreams:
            write_text(written.path, written.after, expected=written.before, private=written.private)
            if written.private:
                err.print(
                    f"secrets (env, headers) of {', '.join(plan.private)} are now in {escape(written.path)} (mode 0600)",
                    highlight=False,
                )
            else:
                err.print(f"wrote {escape(written.path)}", highlight=False)
    change = plan.client_change
    if change is None:
        return
    if record is None:
        original = None if change.before is None else change.before.encode("utf-8")
        backup = None if original is None else state.keep_copy("\0".join(key), original)
        record = state.record(
            client=location.client.name,
            scope=location.scope,
            path=location.path,
            upstreams=plan.upstreams,
            written="",
            backup=backup,
            mode=mode_of(location.path),
        )
        connections.append(record)
    write_text(change.path, change.after, expected=change.before)
    written_digest = digest(change.after.encode("utf-8"))
    connections = [replace(c, written=written_digest) if (c.client, c.scope, c.path) == key else c for c in connections]
    state.save(connections)
    err.print(f"wrote {escape(change.path)}", highlight=False)
    if record.backup:
        err.print(
            f"the file as it was: {escape(str(state.folder / record.backup))} "
            f"(`skilldeck clients disconnect {location.client.name} --scope {location.scope}` puts it back)",
            highlight=False,
        )
    err.print(
        f"restart {escape(location.client.title)} (or reload its MCP servers); check what the gateway will "
        f"serve with: {' '.join(skilldeck_command())} gateway --config {escape(plan.upstreams)} --check",
        highlight=False,
    )


# -- disconnect ------------------------------------------------------------------------------------


def _cmd_disconnect(args: argparse.Namespace, err: Console) -> int:
    client, location = _asked(args)
    state = _home_state()
    with state.locked():
        connections = state.load()
        key = (location.client.name, location.scope, location.path)
        record = state.find(*key, connections)
        if record is None:
            raise ClientFileError(
                f"no connect of {client.name} ({args.scope}) is recorded for {location.path}; nothing to restore"
            )
        current = read_bytes(location.path)
        original = None if record.backup is None else state.copy(record.backup)
        edited = digest(current) != record.written
        later = [c for c in connections if c.path == location.path and c is not record and c.written == digest(current)]
        if later and not args.force:
            raise ClientFileError(
                f"{location.path} was changed after this by `clients connect {later[0].client} --scope "
                f"{later[0].scope}`; disconnect that first (connections in one file are undone last first)"
            )
        if edited and not args.force:
            raise ClientFileError(
                f"{location.path} was edited since `clients connect` ({record.at}); restoring it would lose those "
                "edits. Run with --dry-run to see them, or --force to restore anyway (the edited file is kept)"
            )
        if args.dry_run:
            sys.stdout.write(
                _diff(
                    location.path,
                    None if current is None else current.decode("utf-8", "replace"),
                    None if original is None else original.decode("utf-8"),
                )
            )
            err.print("--dry-run: nothing was written")
            return ExitCode.OK
        if edited and current is not None:
            kept = state.keep_copy("\0".join(key), current, suffix="edited")
            err.print(f"the edited file is kept as {escape(str(state.folder / kept))}", highlight=False)
        if original is None:
            if current is not None:
                os.unlink(os.path.realpath(location.path))
            err.print(f"removed {escape(location.path)} (connect made it)", highlight=False)
        else:
            write_bytes(location.path, original, expected=current, private=False, mode=record.mode)
            err.print(f"restored {escape(location.path)} as it was before {record.at}", highlight=False)
        state.save([c for c in connections if c is not record])
        if record.backup:
            state.drop_copy(record.backup)
    err.print(
        f"the upstreams file {escape(record.upstreams)} is left as it is (other clients may use its servers)",
        highlight=False,
    )
    return ExitCode.OK
