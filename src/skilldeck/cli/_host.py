"""``skilldeck skills`` and ``skilldeck load``: the host side on the command line.

SERVER is a URL (streamable HTTP), a label from ``--config``, or a stdio command after ``--``::

    skilldeck skills --config mcp.json
    skilldeck skills http://127.0.0.1:8000/mcp --json
    skilldeck load http://127.0.0.1:8000/mcp skill://pdf-forms/SKILL.md --file references/FORMS.md
    skilldeck load --all-files -- skilldeck serve examples/skills
    skilldeck load --config mcp.json docs/pdf-forms     # with --config, LABEL/NAME or a NAME alone will do

Exit codes say what failed: 0 ok, 1 bad input or configuration, 3 a server unreachable,
4 verification failed (size, digest, frontmatter, unlisted file), 5 byte budget exceeded,
6 refused (dynamic skill without ``--allow-dynamic``, cross-origin read, not approved).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from skilldeck.cli._exits import ExitCode
from skilldeck.cli._output import StdoutConsole, sdk_logs_in_one_line
from skilldeck.errors import ConfigError
from skilldeck.host import ApprovalStore, ContentCache, Host, LoadedSkill, ServerSpec, load_config
from skilldeck.host._api import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIMEOUT, spec_for_target

__all__ = ["add_host_commands", "run_load", "run_skills"]

logger = logging.getLogger(__name__)


def _home() -> Path:
    from skilldeck.host._api import skilldeck_home

    return skilldeck_home()


def _mebibytes(value: str) -> int:
    try:
        size = float(value)
    except ValueError:
        size = 0.0
    if not size > 0 or size * 1024 * 1024 > sys.maxsize:
        raise argparse.ArgumentTypeError(f"expected a positive number of MiB, got {value!r}")
    return max(1, int(size * 1024 * 1024))


def add_host_commands(sub: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="FILE", help="an mcpServers JSON file (Claude Desktop / Cursor format)")
    common.add_argument("--json", action="store_true", help="print JSON on stdout")
    common.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds a server has to connect, and for each request (default {DEFAULT_TIMEOUT:g})",
    )
    common.add_argument(
        "--max-response",
        type=_mebibytes,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        metavar="MIB",
        help="largest response, SSE event or stdio line a server may send, in MiB (default 32); more drops the server",
    )
    common.add_argument(
        "--home", type=Path, default=None, help="state folder (approvals, cache); default $SKILLDECK_HOME"
    )

    skills = sub.add_parser(
        "skills",
        parents=[common],
        server_command=True,
        help="list skill and tool cards per server",
        description="Connect to one server (a URL, a label of --config, or a stdio command after --) or every "
        "server of --config, and list its skill and tool cards as the host registers them.",
    )
    skills.add_argument("server", nargs="?", metavar="SERVER", help="URL or --config label (or '-- COMMAND ARGS')")
    skills.set_defaults(handler=run_skills)

    load = sub.add_parser(
        "load",
        parents=[common],
        server_command=True,
        help="load one skill, verified, and print it tagged with its origin",
        description="Load one skill of a server: its SKILL.md (and with --file or --all-files its supporting "
        "files) checked against the listed size and digest, approved once, and printed tagged with the server "
        "it came from.",
    )
    load.add_argument("server", nargs="?", metavar="SERVER", help="URL or --config label (or '-- COMMAND ARGS')")
    load.add_argument("skill", nargs="?", metavar="SKILL-URI", help="skill URI or name (default: the first listed)")
    load.add_argument("--file", action="append", default=[], metavar="REL", help="also read this supporting file")
    load.add_argument("--all-files", action="store_true", help="also read every listed supporting file")
    load.add_argument("--yes", action="store_true", help="approve the skill (and its allowed-tools) for this run")
    load.add_argument("--allow-dynamic", action="store_true", help="load generated skills, which cannot be verified")
    load.set_defaults(handler=run_load)


def _specs(args: argparse.Namespace, command: list[str] | None) -> list[ServerSpec]:
    if command:
        return [spec_for_target(command, timeout=args.timeout)]
    configured = load_config(args.config, timeout=args.timeout) if args.config else []
    if args.server is None:
        if not configured:
            raise ConfigError("name a SERVER (a URL, a --config label, or '-- COMMAND ARGS') or pass --config FILE")
        return configured
    for spec in configured:
        if spec.label == args.server:
            return [spec]
    if args.server.startswith(("http://", "https://")):
        return [spec_for_target(args.server, timeout=args.timeout)]
    known = ", ".join(s.label for s in configured) or "none (no --config)"
    raise ConfigError(f"{args.server!r} is neither a URL nor a configured label (labels: {known})")


# -- skills -------------------------------------------------------------------------------------------


async def _skills(args: argparse.Namespace, command: list[str] | None, out: Console, err: Console) -> int:
    specs = _specs(args, command)
    async with Host(specs, max_message_bytes=args.max_response) as host:
        data: dict[str, Any] = {"servers": [], "collisions": [str(c) for c in host.collisions()]}
        for spec in specs:
            label = spec.label
            failure = host.failures.get(label)
            report = host.report.servers.get(label)
            server: dict[str, Any] = {"label": label, "transport": spec.kind}
            if failure is not None or report is None or report.error is not None:
                reason = failure.reason if failure else (report.error if report else None) or "not connected"
                server.update(status="unreachable", error=reason)
            else:
                server.update(
                    status="connected",
                    protocolVersion=report.protocol_version,
                    skillsExtension=report.skills_declared,
                    skills=[{"name": host.skill_id(r), **r.entry.to_wire()} for r in host.skills if r.label == label],
                    tools=[dict(t.tool) for t in host.tools(label)],
                    rejected=[{"uri": r.uri, "reason": r.reason} for r in report.rejected],
                    notes=report.notes,
                )
            data["servers"].append(server)
        children = {  # an unreachable one already quotes the end of its stderr in its reason
            s.label: host.stderr(s.label) for s in specs if s.kind == "stdio" and s.label not in host.failures
        }
        legacy_only = {label for label in children if host.rejected_probe(label)}
    for label, text in children.items():  # what a stdio server said on stderr (e.g. skills it refused)
        if label in legacy_only:
            _legacy_only(label, text, err)
        else:
            _pass_stderr(label, text, err)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _print_cards(data, out, err)
    return ExitCode.UNREACHABLE if any(s["status"] != "connected" for s in data["servers"]) else ExitCode.OK


MAX_CHILD_STDERR_LINES = 20


def _pass_stderr(label: str, text: str, err: Console) -> None:
    """A stdio server's stderr, one line each under its label, at most :data:`MAX_CHILD_STDERR_LINES`."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    for line in lines[:MAX_CHILD_STDERR_LINES]:
        err.print(f"[dim]{escape(label)} (stderr):[/] {escape(line)}", highlight=False)
    if len(lines) > MAX_CHILD_STDERR_LINES:
        err.print(
            f"[dim]{escape(label)} (stderr):[/] … {len(lines) - MAX_CHILD_STDERR_LINES} more lines", highlight=False
        )


def _legacy_only(label: str, text: str, err: Console) -> None:
    """One line for a server that refused the 2026-07-28 probe (and works over 2025-11-25).

    Its stderr, often a long validation trace of the probe it did not know, goes to the debug log,
    its last :data:`MAX_CHILD_STDERR_LINES` lines and 4,000 characters at most.
    """
    err.print(f"\\[{escape(label)}] speaks 2025-11-25 only", highlight=False)
    tail = "\n".join([line.rstrip() for line in text.splitlines() if line.strip()][-MAX_CHILD_STDERR_LINES:])
    logger.debug("[%s] stderr after the 2026-07-28 probe (its end):\n%s", label, tail[-4000:])


def _card(text: str, limit: int = 110) -> str:
    first = text.strip().split("\n")[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _print_cards(data: dict[str, Any], out: Console, err: Console) -> None:
    for server in data["servers"]:
        if server["status"] != "connected":
            err.print(
                f"[red]✗ {escape(server['label'])}[/] ({server['transport']}): {escape(server['error'])}",
                highlight=False,
            )
            continue
        ext = "skills extension" if server["skillsExtension"] else "no skills extension"
        out.print(
            f"[bold]{escape(server['label'])}[/] ({server['transport']}, {server['protocolVersion']}, {ext}): "
            f"{len(server['skills'])} skills, {len(server['tools'])} tools",
            highlight=False,
        )
        if server["skills"]:
            table = Table(show_edge=False, pad_edge=False)
            table.add_column("skill")
            table.add_column("description")
            table.add_column("files", justify="right")
            for s in server["skills"]:
                files = "dynamic" if isinstance(s["resources"], str) else str(len(s["resources"]))
                table.add_row(escape(s["name"]), escape(_card(str(s["frontmatter"]["description"]))), files)
            out.print(table)
        if server["tools"]:
            table = Table(show_edge=False, pad_edge=False)
            table.add_column("tool")
            table.add_column("description")
            for t in server["tools"]:
                table.add_row(escape(f"{server['label']}/{t['name']}"), escape(_card(str(t.get("description") or ""))))
            out.print(table)
        for r in server["rejected"]:
            detail = f"{server['label']}: {r['uri']}: {r['reason']}"
            err.print(f"[yellow]rejected[/] {escape(detail)}", highlight=False)
        for note in server["notes"]:
            err.print(f"[yellow]note[/] {escape(server['label'] + ': ' + note)}", highlight=False)
    for collision in data["collisions"]:
        err.print(f"[yellow]collision[/] {escape(collision)}", highlight=False)


# -- load ---------------------------------------------------------------------------------------------


def _load_specs(args: argparse.Namespace, command: list[str] | None) -> list[ServerSpec]:
    """The servers ``load`` connects to: SERVER's, or with ``--config`` and only a skill, the skill's.

    ``load --config FILE NAME`` and ``load --config FILE LABEL/NAME`` name a skill without a SERVER:
    ``LABEL/`` picks that server; a bare name is looked up on every configured server.
    """
    if command or not args.config:
        return _specs(args, command)
    configured = load_config(args.config, timeout=args.timeout)
    labels = {spec.label: spec for spec in configured}
    if args.server is not None and args.skill is None and args.server not in labels and "://" not in args.server:
        args.skill, args.server = args.server, None
    if args.server is not None or args.skill is None:
        return _specs(args, command)
    if "://" in args.skill:
        if len(configured) == 1:
            return configured
        raise ConfigError(f"name the server of {args.skill}: load --config {args.config} LABEL {args.skill}")
    label, slash, _ = args.skill.partition("/")
    if not slash:
        return configured
    if label not in labels:
        known = ", ".join(labels) or "none"
        raise ConfigError(f"{args.skill!r}: no server labelled {label!r} in {args.config} (labels: {known})")
    return [labels[label]]


async def _load(args: argparse.Namespace, command: list[str] | None, out: Console, err: Console) -> int:
    specs = _load_specs(args, command)
    if len(specs) != 1 and not args.skill:
        raise ConfigError("load needs exactly one SERVER, or a skill to look for (NAME or LABEL/NAME)")
    spec = specs[0]
    home = args.home or _home()
    approvals = ApprovalStore(home / "approvals.json")
    host = Host(
        specs,
        approvals=approvals,
        cache=ContentCache(home / "cache"),
        allow_dynamic=args.allow_dynamic,
        max_message_bytes=args.max_response,
    )
    async with host:
        for failure in host.failures.values():
            err.print(f"[red]unreachable[/] {escape(failure.label + ': ' + failure.reason)}", highlight=False)
        if len(host.failures) == len(specs):
            return ExitCode.UNREACHABLE
        if args.skill and len(specs) > 1:
            record = host.resolve(args.skill)
        elif args.skill:
            if "://" in args.skill:
                record = await host.record_for_uri(spec.label, args.skill)
            else:
                record = host.resolve(args.skill if "/" in args.skill else f"{spec.label}/{args.skill}")
        else:
            listed = [r for r in host.skills if r.label == spec.label]
            if not listed:
                err.print(f"{spec.label} lists no skills; name one by URI", highlight=False)
                return ExitCode.INPUT
            record = listed[0]
        loaded = await host.load(record)
        granted = _settle_approval(host, loaded, args, err)
        files: list[tuple[str, bytes]] = []
        references = list(args.file)
        if args.all_files:
            references += [u for u in loaded.listed_files() if u != loaded.uri and u not in references]
        for reference in references:
            uri = host.loader(record.label).listed(loaded, reference)  # a name the entry lacks is a typo: say so
            files.append((uri, await host.read(loaded, reference)))
    _print_loaded(loaded, files, granted, args.json, out)
    return ExitCode.OK


def _settle_approval(host: Host, loaded: LoadedSkill, args: argparse.Namespace, err: Console) -> list[str]:
    requested = loaded.entry.frontmatter.get("allowed-tools")
    if loaded.origin != "mcp" or host.approvals.allows_tools(loaded.label, loaded.entry):
        return host.allowed_tools(loaded)
    if args.yes:  # for this run only: nothing is written to the approvals file
        host.approvals.approve(loaded.label, loaded.entry, allowed_tools=True, persist=False)
    elif isinstance(requested, str) and sys.stdin.isatty():
        answer = input(f"[{loaded.label}] {loaded.uri} asks for allowed-tools '{requested}'. Grant? [y/N] ")
        if answer.strip().lower() in ("y", "yes"):
            host.approvals.approve(loaded.label, loaded.entry, allowed_tools=True)
    elif isinstance(requested, str):
        err.print(f"note: allowed-tools '{requested}' ignored (not approved; pass --yes to grant)", highlight=False)
    return host.allowed_tools(loaded)


def _print_loaded(
    loaded: LoadedSkill, files: list[tuple[str, bytes]], granted: list[str], as_json: bool, out: Console
) -> None:
    if as_json:
        payload = {
            "server": loaded.label,
            "origin": loaded.origin,
            "uri": loaded.uri,
            "verified": loaded.verified,
            "entry": loaded.entry.to_wire(),
            "content": loaded.text,
            "allowedTools": granted,
            "files": [_file_json(uri, data) for uri, data in files],
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    print(loaded.tagged())
    for uri, data in files:
        try:
            print(loaded.tagged(data.decode("utf-8"), uri=uri))
        except UnicodeDecodeError:
            print(loaded.tagged(f"[{len(data)} bytes of binary content]", uri=uri))


def _file_json(uri: str, data: bytes) -> dict[str, Any]:
    try:
        return {"uri": uri, "size": len(data), "text": data.decode("utf-8")}
    except UnicodeDecodeError:
        import base64

        return {"uri": uri, "size": len(data), "blob": base64.b64encode(data).decode("ascii")}


# -- entry points ---------------------------------------------------------------------------------------


def _run(coro_fn: Any, args: argparse.Namespace, command: list[str] | None, err: Console) -> int:
    out = StdoutConsole(soft_wrap=True)
    with sdk_logs_in_one_line():
        return int(anyio.run(lambda: coro_fn(args, command, out, err)))


def run_skills(args: argparse.Namespace, err: Console) -> int:
    return _run(_skills, args, args.server_command, err)


def run_load(args: argparse.Namespace, err: Console) -> int:
    if args.server_command is not None and args.server and not args.skill:
        args.skill, args.server = args.server, None  # `load SKILL-URI -- COMMAND ARGS`
    return _run(_load, args, args.server_command, err)
