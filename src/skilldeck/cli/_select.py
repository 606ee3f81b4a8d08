"""``skilldeck ask``, ``skilldeck select`` and ``skilldeck snapshot``: selection on the command line.

``ask`` runs the whole path on live servers (``--config``) or, with no configuration, on the
demo's in-process servers. ``select`` ranks offline against a catalog snapshot, one JSON line per
query with ``--json``. ``snapshot`` writes a live discovery as a snapshot.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from skilldeck.cli._exits import ExitCode
from skilldeck.cli._output import StdoutConsole
from skilldeck.errors import SkilldeckError
from skilldeck.host import Host, InProcessServer, ServerSpec, load_config

if TYPE_CHECKING:  # selection loads numpy: imported where a command runs, not when the CLI starts
    from skilldeck.select import Decision

__all__ = [
    "add_select_commands",
    "encoder_flags",
    "encoder_from_flags",
    "run_ask",
    "run_select",
    "run_snapshot",
    "vector_cache_dir",
]


def add_select_commands(sub: Any) -> None:
    ask = sub.add_parser(
        "ask",
        help="choose the capability for a question (or abstain), load it, optionally call a tool",
        description="Rank the cards of the servers (the demo's three without --config) for a question, choose one "
        "or abstain when none fits, load the chosen skill verified, print what a model would be given (History B) "
        "against every tool schema (History A), and with --call call one of its tools through the gate.",
    )
    ask.add_argument("question", help="the question, in the user's words")
    ask.add_argument("--config", metavar="FILE", help="an mcpServers JSON file; default: the demo's servers")
    ask.add_argument(
        "--render",
        choices=["openai", "anthropic", "text"],
        default="openai",
        help="how the loaded capability is shown: as tools for that provider's API, or as text (default openai)",
    )
    ask.add_argument("--call", metavar="TOOL", help="call this tool through the gate (label/tool or tool)")
    ask.add_argument("--args", metavar="JSON", default="{}", help="the tool call's arguments as a JSON object")
    ask.add_argument("--json", action="store_true", help="print the decision and what was loaded as JSON on stdout")
    encoder_flags(ask)
    ask.add_argument("--threshold", type=float, help="override the calibrated abstention threshold")
    ask.add_argument("--log", type=Path, help="append the decision to this JSON-lines file")
    ask.add_argument("--yes", action="store_true", help="approve the chosen skill for this run")
    ask.set_defaults(handler=run_ask)

    select = sub.add_parser(
        "select",
        help="rank capabilities offline against a catalog snapshot",
        description="Rank the cards of a catalog snapshot (from skilldeck snapshot) for one question or a file of "
        "them, without connecting to any server: the ranked cards with their scores, and the choice or the "
        "abstention with its reason.",
    )
    select.add_argument(
        "--catalog", required=True, type=Path, metavar="FILE", help="a catalog snapshot (as skilldeck snapshot writes)"
    )
    group = select.add_mutually_exclusive_group(required=True)
    group.add_argument("--query", metavar="Q", help="one question to rank the catalog for")
    group.add_argument(
        "--queries",
        type=Path,
        metavar="FILE.jsonl",
        help="one JSON object per line with a 'query', and optionally 'needs': the question split into needs",
    )
    select.add_argument(
        "--need",
        action="append",
        default=[],
        metavar="TEXT",
        help="with --query: one need of the question (repeat; each is ranked and judged on its own)",
    )
    select.add_argument("--json", action="store_true", help="one JSON line per query")
    encoder_flags(select)
    select.add_argument("--threshold", type=float, help="override the calibrated abstention threshold")
    select.add_argument("--depth", type=int, default=10, help="ranked entries per query (at least 10; default 10)")
    select.set_defaults(handler=run_select)

    snapshot = sub.add_parser(
        "snapshot",
        help="write a live discovery as a catalog snapshot (JSON on stdout)",
        description="Connect to the servers of an mcpServers file, list their skills and tools, and write them as "
        "one JSON catalog snapshot on stdout, for skilldeck select and the benchmarks (--bodies: each skill's "
        "SKILL.md too, loaded verified).",
    )
    snapshot.add_argument(
        "--config", required=True, metavar="FILE", help="an mcpServers JSON file of the servers to list"
    )
    snapshot.add_argument("--bodies", action="store_true", help="load each skill (verified) and include its SKILL.md")
    snapshot.set_defaults(handler=run_snapshot)


def encoder_flags(parser: argparse.ArgumentParser) -> None:
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--semantic",
        metavar="ENCODER",
        default="minilm",
        help="the encoder fused with the lexical ranker: minilm (default, MiniLM run by numpy) or wordllama",
    )
    how.add_argument("--lexical", action="store_true", help="rank lexically only (no encoder is loaded)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="where card vectors are kept between runs; default $SKILLDECK_HOME/cache/%%vectors",
    )
    parser.add_argument("--no-cache", action="store_true", help="keep no card vectors on disk")


def encoder_from_flags(args: argparse.Namespace, err: Console) -> Any:
    """The encoder asked for; when the default one cannot load, lexical ranking with a one-line notice."""
    if args.lexical:
        return None
    from skilldeck.select._api import DEFAULT_ENCODER, default_encoder, load_encoder

    if args.semantic != DEFAULT_ENCODER:
        return load_encoder(args.semantic)  # asked for by name: an error, not a fallback
    encoder, notice = default_encoder()
    if notice is not None:
        err.print(f"[yellow]notice[/] {escape(notice)}", highlight=False, soft_wrap=True)
    return encoder


def vector_cache_dir(args: argparse.Namespace) -> Path | None:
    if args.no_cache or args.lexical:
        return None
    if args.cache_dir is not None:
        return Path(args.cache_dir)
    from skilldeck.cli._host import _home

    return _home() / "cache" / VECTOR_FOLDER


VECTOR_FOLDER = "%vectors"
"""Inside the host's cache folder; never a server's folder there (labels are percent-encoded)."""


def _specs(config: str | None) -> list[ServerSpec]:
    if config:
        return load_config(config)
    from skilldeck.demo import demo_servers

    return [ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()]


# -- ask ----------------------------------------------------------------------------------------------


async def _ask(args: argparse.Namespace, out: Console, err: Console) -> int:
    from skilldeck.ask import ask
    from skilldeck.select import DecisionLog

    encoder = encoder_from_flags(args, err)

    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise SkilldeckError(f"--args is not JSON: {exc}") from None
    if not isinstance(call_args, dict):
        raise SkilldeckError("--args must be a JSON object")
    async with Host(_specs(args.config), require_approval=False) as host:
        for label, failure in host.failures.items():
            err.print(f"[red]unreachable[/] {escape(label)}: {escape(failure.reason)}", highlight=False)
        result = await ask(
            host,
            args.question,
            encoder=encoder,
            cache_dir=vector_cache_dir(args) if encoder is not None else None,
            render=args.render,
            threshold=args.threshold,
            log=DecisionLog(args.log) if args.log else None,
            call=(args.call, call_args) if args.call else None,
        )
    if args.json:
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return ExitCode.OK
    decision = result.decision
    table = Table(title="cards, ranked for the question", show_edge=False)
    for column in ("#", "kind", "origin", "name", "score"):
        table.add_column(column)
    for i, scored in enumerate(decision.ranked[:8], 1):
        table.add_row(
            str(i), scored.card.kind, escape(scored.card.server), escape(scored.card.name), f"{scored.score:.2f}"
        )
    out.print(table)
    style = "yellow" if decision.abstain else "green"
    out.print(f"[{style}]{escape(decision.reason)}[/]", highlight=False)
    if result.loaded is not None:
        out.print(Panel(escape(result.loaded.tagged()), title="verified skill (origin-tagged)"))
    if result.tools:
        rendered = result.history_b.tools
        text = rendered if isinstance(rendered, str) else json.dumps(rendered, indent=2, ensure_ascii=False)
        out.print(Panel(escape(text), title=f"exposed tool schemas ({args.render})"))
    out.print(f"tokens: {result.token_summary}", highlight=False)
    if result.call is not None:
        out.print(
            Panel(
                escape(json.dumps(result.call["result"], indent=2, ensure_ascii=False)[:3000]),
                title=f"tools/call {result.call['server']}/{result.call['tool']}",
            )
        )
    return ExitCode.OK  # an abstention too: it is a valid answer, not an error


# -- select -------------------------------------------------------------------------------------------


def _select(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.select import Selector, build_cards, load_snapshot
    from skilldeck.select._api import MAX_NEEDS

    snapshot = load_snapshot(args.catalog)
    encoder = encoder_from_flags(args, err)
    selector = Selector(
        build_cards(snapshot),
        encoder=encoder,
        threshold=args.threshold,
        cache_dir=vector_cache_dir(args) if encoder is not None else None,
    )
    queries: list[str]
    needs: list[list[str]] = []
    if args.query is not None:
        queries = [args.query]
        needs = [list(args.need)]
    else:
        if args.need:
            raise SkilldeckError("--need goes with --query; in a --queries file, give each line a 'needs' list")
        queries = []
        for number, line in enumerate(args.queries.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SkilldeckError(f"{args.queries}:{number}: not JSON ({exc})") from None
            if not isinstance(item, dict) or not isinstance(item.get("query"), str):
                raise SkilldeckError(f"{args.queries}:{number}: expected an object with a 'query' string")
            split = item.get("needs", [])
            if not isinstance(split, list) or not all(isinstance(n, str) for n in split) or len(split) > MAX_NEEDS:
                raise SkilldeckError(f"{args.queries}:{number}: 'needs' must be a list of at most {MAX_NEEDS} strings")
            queries.append(item["query"])
            needs.append(split)
    depth = max(10, args.depth)
    if len(args.need) > MAX_NEEDS:
        raise SkilldeckError(f"at most {MAX_NEEDS} --need per question")
    for query, split in zip(queries, needs, strict=True):
        decision = selector.decide(split or query)
        if split:
            decision = replace(decision, query=query)
        if args.json:
            print(json.dumps(_select_line(decision, depth), ensure_ascii=False))
        else:
            print(f"{query}\n  -> {decision.reason}")
    return ExitCode.OK


def _select_line(decision: Decision, depth: int) -> dict[str, Any]:
    full = decision.to_json(depth=depth)
    return {key: full.get(key, []) for key in ("query", "abstain", "confidence", "reason", "ranked", "tools", "needs")}


# -- snapshot -----------------------------------------------------------------------------------------


async def _snapshot(args: argparse.Namespace, err: Console) -> int:
    from skilldeck.ask import snapshot_from_host

    async with Host(load_config(args.config)) as host:
        for label, failure in host.failures.items():
            err.print(f"[red]unreachable[/] {escape(label)}: {escape(failure.reason)}", highlight=False)
        bodies: dict[tuple[str, str], str] = {}
        if args.bodies:
            for record in host.skills:
                try:
                    bodies[record.key] = (await host.load(record)).text
                except SkilldeckError as exc:
                    err.print(f"[yellow]skipped body[/] {escape(str(exc))}", highlight=False)
        snapshot = snapshot_from_host(host, bodies)
    print(json.dumps(snapshot.to_json(), indent=2, ensure_ascii=False))
    return ExitCode.OK


# -- entry points ---------------------------------------------------------------------------------------


def run_ask(args: argparse.Namespace, err: Console) -> int:
    return int(anyio.run(lambda: _ask(args, StdoutConsole(), err)))


def run_select(args: argparse.Namespace, err: Console) -> int:
    return _select(args, err)


def run_snapshot(args: argparse.Namespace, err: Console) -> int:
    return int(anyio.run(lambda: _snapshot(args, err)))
