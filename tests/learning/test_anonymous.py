"""Callers without a verified identity cannot claim one: over HTTP without tokens they teach nothing by
default, and when let teach they are one untrusted caller, whatever their number (``GatewayService(anonymous=...)``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilldeck.agents import SkillSession
from skilldeck.learning import SqliteLedgerStore
from skilldeck.learning._ledger import ANONYMOUS
from skilldeck.serving._policy import Caller

from .learning_support import Learning, gateway_learning_in

pytestmark = pytest.mark.anyio

ALICE = Caller(subject="alice", authenticated=True)
TAUGHT = [f"weather forecast for city number {i}" for i in range(8)]
JUNK = "forecast weather junk"


async def teach(learning: Learning, caller: Caller, question: str, card: str, arguments: dict[str, object]) -> bool:
    """find → load → call in a conversation of its own; whether the call succeeded."""
    session = SkillSession(learning.service, caller=caller)
    session.find(question)
    await session.load([card])
    return not (await session.call(card, arguments)).get("isError")


@pytest.mark.parametrize("clients", [1, 2, 20])
async def test_a_flood_of_anonymous_clients_is_one_untrusted_caller(tmp_path: Path, clients: int) -> None:
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    try:
        async with gateway_learning_in(store, anonymous="untrusted") as learning:
            for question in TAUGHT:
                assert await teach(learning, ALICE, question, "up/forecast", {"city": "Paris"})
            for i in range(20):  # 20 junk uses, spread over the clients
                anonymous = Caller(client_id=None)  # no token: no identity, whatever the connection
                assert anonymous.authenticated is False
                question = f"{JUNK} {i} from client {i % clients}"
                assert await teach(learning, anonymous, question, "up/forecast", {"city": "Lyon"})
            uses = await learning.uses()
            forecast = [u for u in uses if u.card == "up/forecast"]
            mine = [u.question for u in forecast if u.caller == "alice"]
            theirs = [u for u in forecast if u.caller != "alice"]
            assert sorted(mine) == sorted(TAUGHT)  # what the identified caller taught is all kept
            assert {u.caller for u in theirs} == {ANONYMOUS}  # however many clients: one caller
            assert len(theirs) == len(mine)  # at most half of the card's questions
            origin = forecast[0].origin
            assert learning.service.learning is not None
            # the flooded card is capped (untrusted); what alice alone taught elsewhere stays trusted
            assert not learning.service.learning.questions_of("", (origin, "up/forecast")).trusted
            assert await teach(
                learning, ALICE, "convert an amount of money to euros", "up/convert", {"amount": 1, "currency": "EUR"}
            )
            assert learning.service.learning.questions_of("", (origin, "up/convert")).trusted
    finally:
        store.close()


async def test_anonymous_callers_alone_never_make_a_card_trusted(tmp_path: Path) -> None:
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    try:
        async with gateway_learning_in(store, anonymous="untrusted") as learning:
            for i in range(3):
                assert await teach(learning, Caller(), f"{JUNK} {i}", "up/forecast", {"city": "Lyon"})
            uses = await learning.uses()
            assert [u.caller for u in uses] == [ANONYMOUS] * 3
            assert learning.service.learning is not None
            # the audience's only caller, yet not trusted: anyone could be it
            assert not learning.service.learning.questions_of("", uses[0].ref).trusted
    finally:
        store.close()


async def test_by_default_over_http_without_tokens_anonymous_callers_teach_nothing(tmp_path: Path) -> None:
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    try:
        async with gateway_learning_in(store, anonymous="off") as learning:
            seen: list[dict[str, object]] = []
            learning.service.log.subscribe(lambda e: seen.append(e) if e["kind"] == "learned" else None)
            assert await teach(learning, Caller(), "weather forecast for Paris", "up/forecast", {"city": "Paris"})
            assert await learning.uses() == []
            assert [(e["recorded"], e.get("why")) for e in seen] == [(False, "anonymous")]
            assert await teach(learning, ALICE, "weather forecast for Lyon", "up/forecast", {"city": "Lyon"})
            assert [u.caller for u in await learning.uses()] == ["alice"]  # an identified caller still teaches
    finally:
        store.close()
