"""``skilldeck history``: what the usage ledger holds (question, card, caller subject, time), and clearing it."""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
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
from skilldeck.errors import ConfigError, UsageError
from skilldeck.learning import LEDGER_FILE, MAX_AUDIENCES, LedgerStore, Use
from skilldeck.learning._api import DEFAULT_LEDGER_TIMEOUT

__all__ = ["add_history_command", "ledger_store"]


@asynccontextmanager
async def ledger_store(
    redis_url: str | None,
    name: str,
    *,
    create: bool = True,
    max_audiences: int = MAX_AUDIENCES,
    lock_wait: float = DEFAULT_LEDGER_TIMEOUT,
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
    from skilldeck.host._api import skilldeck_home
    from skilldeck.learning import SqliteLedgerStore

    store = SqliteLedgerStore(
        skilldeck_home() / LEDGER_FILE, create=create, max_audiences=max_audiences, timeout=lock_wait
    )
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
    history.add_argument("--question", metavar="TEXT", help="only the entries of this exact question")
    history.add_argument("--clear", action="store_true", help="forget what is shown instead of printing it")
    history.add_argument(
        "--remove", metavar="ENTRY", help="forget one entry by the id the listing shows for it (8 hex digits)"
    )
    history.add_argument("--redis", metavar="URL", help="the ledger of gateway replicas in Redis at URL")
    history.add_argument(
        "--name", default="skilldeck-gateway", help="with --redis: the replicas' --name (default skilldeck-gateway)"
    )
    history.set_defaults(handler=run_history_command)


def _audience_name(audience: str) -> str:
    return repr(audience) if audience else "(no tenant)"


def entry_id(audience: str, use: Use) -> str:
    """A short, stable name of one entry (``--remove`` takes it): 8 hex digits of its key's digest."""
    key = json.dumps([audience, use.origin, use.card, use.question], ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _line(audience: str, use: Use) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(use.at))
    return f"    [{entry_id(audience, use)}] {when}Z  {use.caller or '-'}  {use.question}"


def _card_line(card: str, origins: set[str]) -> str:
    taught = "; ".join(sorted(o or "(recorded before upstreams were told apart)" for o in origins))
    return f"  {card}  (taught by {taught[:300]})"


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
        held = _only(held, "card", args.card, "no question is recorded for the card", CARD_HINT)
        held = _only(held, "question", args.question, "no entry holds the question", QUESTION_HINT)
        if args.remove is not None:
            await _remove(store, held, args.remove, out)
            return
        if args.clear:
            gone = 0
            for audience, uses in held.items():
                if uses or (args.card is None and args.question is None):
                    gone += await store.clear(
                        audience,
                        None if args.card is None else [args.card],
                        None if args.question is None else [args.question],
                    )
            out.print(f"cleared {counted(gone, 'question')} from {escape(store.where)}", highlight=False)
            return
        if not any(held.values()):
            out.print(f"the usage ledger at {escape(store.where)} is empty", highlight=False)
            return
        for audience, uses in held.items():
            if not uses:
                continue
            shown = sorted({u.card for u in uses})
            out.print(
                f"audience {escape(_audience_name(audience))}: {counted(len(uses), 'question')} on {counted(len(shown), 'card')}",
                highlight=False,
            )
            for card in shown:
                of_card = [u for u in uses if u.card == card]
                out.print(escape(_card_line(card, {u.origin for u in of_card})), highlight=False, soft_wrap=True)
                for use in sorted(of_card, key=lambda u: u.at, reverse=True):
                    out.print(escape(_line(audience, use)), highlight=False, soft_wrap=True)


CARD_HINT = "card ids are LABEL/NAME, as find shows them (`skilldeck history` lists them)"
QUESTION_HINT = "give it exactly as `skilldeck history` shows it"


def _only(held: dict[str, list[Use]], field: str, wanted: str | None, missing: str, hint: str) -> dict[str, list[Use]]:
    """``held`` with only the uses whose ``field`` is ``wanted`` (all when ``None``); a value no use has is
    refused, with the nearest one held."""
    if wanted is None:
        return held
    values = {str(getattr(u, field)) for uses in held.values() for u in uses}
    if wanted not in values:
        raise UsageError(f"{missing} {wanted!r}{did_you_mean(wanted, values)}; {hint}")
    return {a: [u for u in uses if getattr(u, field) == wanted] for a, uses in held.items()}


async def _remove(store: LedgerStore, held: dict[str, list[Use]], wanted: str, out: Console) -> None:
    """Forget the one entry whose id is ``wanted`` (refused, with the ids there are, when none is)."""
    found = [(a, u) for a, uses in held.items() for u in uses if entry_id(a, u) == wanted.strip().lower()]
    if not found:
        ids = [entry_id(a, u) for a, uses in held.items() for u in uses]
        raise UsageError(
            f"no entry has the id {wanted!r}{did_you_mean(wanted, ids)}; `skilldeck history` shows each entry's "
            "id in brackets"
        )
    audience, use = found[0]
    gone = await store.clear(audience, [use.card], [use.question])
    out.print(f"removed {counted(gone, 'question')} ({escape(use.card)}: {escape(use.question)!r})", highlight=False)


def run_history_command(args: argparse.Namespace, err: Console) -> int:
    out = StdoutConsole(soft_wrap=True, highlight=False)
    try:
        anyio.run(_run, args, out)
    except sqlite3.Error as exc:  # a file damaged after it opened: say what, never a traceback
        raise ConfigError(
            f"cannot read the usage ledger: {exc or type(exc).__name__} ({type(exc).__name__}); move "
            "$SKILLDECK_HOME/ledger.sqlite3 away (what it learned is lost with it)"
        ) from None
    return ExitCode.OK
