"""``skilldeck history``: what the usage ledger holds (question, card, caller subject, time), and clearing it."""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape

from skilldeck._suggest import did_you_mean
from skilldeck.cli._exits import ExitCode
from skilldeck.cli._output import StdoutConsole, counted
from skilldeck.errors import UsageError
from skilldeck.learning import LEDGER_FILE, MAX_AUDIENCES, LedgerStore, Use

__all__ = ["add_history_command", "ledger_store"]


@asynccontextmanager
async def ledger_store(
    redis_url: str | None, name: str, *, create: bool = True, max_audiences: int = MAX_AUDIENCES
) -> AsyncIterator[LedgerStore]:
    """The gateway's ledger: in Redis under ``skilldeck:NAME:ledger`` with ``--redis``, else ``$SKILLDECK_HOME/ledger.sqlite3``
    (``create=False``: a file that does not exist reads as empty and is not created), holding at most
    ``max_audiences`` audiences."""
    if redis_url is not None:
        from skilldeck.learning import RedisLedgerStore

        async with RedisLedgerStore(
            redis_url, prefix=f"skilldeck:{name}:ledger", max_audiences=max_audiences
        ) as shared:
            yield shared
        return
    from skilldeck.host._credentials import skilldeck_home
    from skilldeck.learning import SqliteLedgerStore

    store = SqliteLedgerStore(skilldeck_home() / LEDGER_FILE, create=create, max_audiences=max_audiences)
    try:
        yield store
    finally:
        store.close()


def add_history_command(sub: Any) -> None:
    history = sub.add_parser(
        "history",
        help="show or clear the gateway's usage ledger (the questions it learned from)",
        description="Show what the gateway learned from use: per audience (the policy's tenant) and card, each "
        "question whose find led to a load and a successful call, with the caller's subject and the time. "
        "Kept in $SKILLDECK_HOME/ledger.sqlite3, or in Redis for replicas (--redis, --name).",
    )
    history.add_argument("--audience", metavar="TENANT", help="only this audience (a tenant; '' for no tenant)")
    history.add_argument("--card", metavar="ID", help="only this card (LABEL/NAME, as find shows it)")
    history.add_argument("--clear", action="store_true", help="forget what is shown instead of printing it")
    history.add_argument("--redis", metavar="URL", help="the ledger of gateway replicas in Redis at URL")
    history.add_argument(
        "--name", default="skilldeck-gateway", help="with --redis: the replicas' --name (default skilldeck-gateway)"
    )
    history.set_defaults(handler=run_history_command)


def _audience_name(audience: str) -> str:
    return repr(audience) if audience else "(no tenant)"


def _line(use: Use) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(use.at))
    return f"    {when}Z  {use.caller or '-'}  {use.question}"


async def _run(args: argparse.Namespace, out: Console) -> None:
    async with ledger_store(args.redis, args.name, create=False) as store:
        audiences = await store.audiences()
        if args.audience is not None and args.audience not in audiences:
            listed = ", ".join(_audience_name(a) for a in audiences) or "none"
            raise UsageError(
                f"the usage ledger at {store.where} holds no audience {args.audience!r}"
                f"{did_you_mean(args.audience, audiences)}; audiences: {listed}"
            )
        chosen = audiences if args.audience is None else [args.audience]
        held = {audience: (await store.load(audience))[1] for audience in chosen}
        if args.card is not None:
            cards = {u.card for uses in held.values() for u in uses}
            if args.card not in cards:
                raise UsageError(
                    f"no question is recorded for the card {args.card!r}{did_you_mean(args.card, cards)}; "
                    "card ids are LABEL/NAME, as find shows them (`skilldeck history` lists them)"
                )
        if args.clear:
            gone = 0
            for audience in chosen:
                gone += await store.clear(audience, None if args.card is None else [args.card])
            out.print(f"cleared {counted(gone, 'question')} from {escape(store.where)}", highlight=False)
            return
        if not any(held.values()):
            out.print(f"the usage ledger at {escape(store.where)} is empty", highlight=False)
            return
        for audience, uses in held.items():
            if args.card is not None:
                uses = [u for u in uses if u.card == args.card]
            if not uses:
                continue
            shown = sorted({u.card for u in uses})
            out.print(
                f"audience {escape(_audience_name(audience))}: {counted(len(uses), 'question')} on {counted(len(shown), 'card')}",
                highlight=False,
            )
            for card in shown:
                out.print(f"  {escape(card)}", highlight=False)
                for use in sorted((u for u in uses if u.card == card), key=lambda u: u.at, reverse=True):
                    out.print(escape(_line(use)), highlight=False, soft_wrap=True)


def run_history_command(args: argparse.Namespace, err: Console) -> int:
    out = StdoutConsole(soft_wrap=True, highlight=False)
    anyio.run(_run, args, out)
    return ExitCode.OK
