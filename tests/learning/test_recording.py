"""What the gateway and SkillSession record: a question only when its find led to a load and a successful call.

A real upstream over streamable HTTP on loopback (:mod:`usage_upstream`), a real gateway and SDK
client (and :class:`~skilldeck.agents.SkillSession`, what every adapter builds on), a real SQLite
ledger. Every path that is not find → load → call of that card's tool, complete and without
``isError``, records nothing; the one that is records exactly one entry, and the rankers of that
audience (and of no other) read it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from skilldeck.agents import SkillSession
from skilldeck.errors import GateRefused
from skilldeck.learning import SqliteLedgerStore
from skilldeck.serving._policy import Caller, Policy

from ..gateway.gateway_clients_support import client, refusal
from .learning_support import Learning, gateway_learning_in

pytestmark = pytest.mark.anyio

WEATHER = "weather forecast for Paris tomorrow"
TOOLS = ("up/forecast", "up/convert", "up/archive", "up/clock")


@asynccontextmanager
async def learning_gateway(
    tmp_path: Path, *, policy: Policy | None = None, pinned: Iterable[tuple[str, str]] = ()
) -> AsyncIterator[Learning]:
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    try:
        async with gateway_learning_in(store, policy=policy, pinned=pinned) as learning:
            yield learning
    finally:
        store.close()


async def test_find_load_and_a_successful_call_record_the_question_once(tmp_path: Path) -> None:
    async with learning_gateway(tmp_path) as learning, client(learning.gateway, "modern") as c:
        found = await c.call_tool("find", {"query": WEATHER})
        assert "up/forecast" in [card["id"] for card in found.structured_content["cards"]]
        assert not (await c.call_tool("load", {"ids": ["up/forecast"]})).is_error
        assert await learning.uses() == []  # a load alone teaches nothing
        called = await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
        assert not called.is_error, called
        assert [(u.question, u.card, u.caller) for u in await learning.uses()] == [(WEATHER, "up/forecast", "")]
        # the same load's next call: the question is learned already, nothing more is recorded
        await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Lyon"}})
        assert len(await learning.uses()) == 1
        card = learning.service.index_for(Caller()).ids["up/forecast"]
        assert learning.history() == {card.key: [WEATHER]}


async def test_a_refused_call_records_nothing(tmp_path: Path) -> None:
    async with learning_gateway(tmp_path) as learning, client(learning.gateway, "modern") as c:
        await c.call_tool("find", {"query": WEATHER})
        await c.call_tool("load", {"ids": ["up/forecast"]})
        invalid = await c.call_tool("call", {"tool": "up/forecast", "arguments": {"town": "Paris"}})
        refusal(invalid, "city")  # the gate refused the arguments: nothing was sent
        not_loaded = await c.call_tool("call", {"tool": "up/convert", "arguments": {"amount": 1, "currency": "EUR"}})
        refusal(not_loaded, "active tools: up/forecast")
        assert await learning.uses() == []
        assert learning.history() == {}


async def test_a_call_that_comes_back_with_is_error_records_nothing(tmp_path: Path) -> None:
    async with learning_gateway(tmp_path) as learning, client(learning.gateway, "modern") as c:
        found = await c.call_tool("find", {"query": "archive this note in the records store"})
        assert "up/archive" in [card["id"] for card in found.structured_content["cards"]]
        await c.call_tool("load", {"ids": ["up/archive"]})
        failed = await c.call_tool("call", {"tool": "up/archive", "arguments": {"note": "minutes"}})
        refusal(failed, "the records store is down")
        assert await learning.uses() == []


async def test_a_call_of_another_cards_tool_records_nothing_for_either(tmp_path: Path) -> None:
    async with learning_gateway(tmp_path) as learning, client(learning.gateway, "modern") as c:
        found = await c.call_tool("find", {"query": WEATHER, "limit": 1})
        assert [card["id"] for card in found.structured_content["cards"]] == ["up/forecast"]
        # convert was loaded by id, not after a find that showed it; forecast waits for its own call
        await c.call_tool("load", {"ids": ["up/forecast", "up/convert"]})
        called = await c.call_tool("call", {"tool": "up/convert", "arguments": {"amount": 2, "currency": "EUR"}})
        assert not called.is_error, called
        assert await learning.uses() == []
        await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
        assert [u.card for u in await learning.uses()] == ["up/forecast"]


async def test_a_call_without_a_find_or_of_a_pinned_tool_records_nothing(tmp_path: Path) -> None:
    async with (
        learning_gateway(tmp_path, pinned=[("up", "clock")]) as learning,
        client(learning.gateway, "modern") as c,
    ):
        await c.call_tool("load", {"ids": ["up/forecast"]})
        assert not (await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})).is_error
        await c.call_tool("find", {"query": "what time is it in UTC"})
        assert not (await c.call_tool("call", {"tool": "up/clock", "arguments": {}})).is_error
        assert await learning.uses() == []


async def test_another_clients_call_does_not_complete_this_clients_find_and_load(tmp_path: Path) -> None:
    async with (
        learning_gateway(tmp_path) as learning,
        client(learning.gateway, "legacy") as first,
        client(learning.gateway, "legacy") as second,
    ):
        await first.call_tool("find", {"query": WEATHER})
        await second.call_tool("load", {"ids": ["up/forecast"]})
        await second.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
        assert await learning.uses() == []  # the find was the first client's, the load and call the second's


EVERY_TOOL = Policy(public_tools=frozenset(TOOLS))


async def test_two_audiences_learn_apart_through_skill_sessions(tmp_path: Path) -> None:
    alice = Caller(subject="alice", tenant="acme", authenticated=True)
    bob = Caller(subject="bob", tenant="globex", authenticated=True)
    async with learning_gateway(tmp_path, policy=EVERY_TOOL) as learning:
        acme, globex = SkillSession(learning.service, caller=alice), SkillSession(learning.service, caller=bob)
        for session, question in ((acme, WEATHER), (globex, "rain in Lyon this week")):
            assert "up/forecast" in [card["id"] for card in session.find(question)["cards"]]
            await session.load(["up/forecast"])
            assert not (await session.call("up/forecast", {"city": "Lyon"})).get("isError")
        assert [(u.question, u.caller) for u in await learning.uses("acme")] == [(WEATHER, "alice")]
        assert [(u.question, u.caller) for u in await learning.uses("globex")] == [("rain in Lyon this week", "bob")]
        key = learning.service.index_for(alice).ids["up/forecast"].key
        assert learning.history(alice) == {key: [WEATHER]}
        assert learning.history(bob) == {key: ["rain in Lyon this week"]}
        with pytest.raises(GateRefused):  # a session's refused call: nothing recorded
            await acme.call("up/archive", {"note": "x"})
        assert len(await learning.uses("acme")) == 1


async def test_a_cleared_ledger_reaches_the_running_gateways_rankers(tmp_path: Path) -> None:
    async with learning_gateway(tmp_path) as learning, client(learning.gateway, "modern") as c:
        await c.call_tool("find", {"query": WEATHER})
        await c.call_tool("load", {"ids": ["up/forecast"]})
        await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
        assert learning.history() != {}
        other = SqliteLedgerStore(tmp_path / "ledger.sqlite3")  # as `skilldeck history --clear` opens it
        assert await other.clear("") == 1
        other.close()
        await c.call_tool("find", {"query": "anything"})  # each find reads a moved version in
        assert learning.history() == {}


async def test_a_flood_by_one_caller_holds_at_most_half_of_a_card_and_stays_in_its_tenant(tmp_path: Path) -> None:
    bob = Caller(subject="bob", tenant="acme", authenticated=True)
    mallory = Caller(subject="mallory", tenant="acme", authenticated=True)
    carol = Caller(subject="carol", tenant="globex", authenticated=True)
    async with learning_gateway(tmp_path, policy=EVERY_TOOL) as learning:
        honest = SkillSession(learning.service, caller=bob)
        honest.find(WEATHER)
        await honest.load(["up/forecast"])
        await honest.call("up/forecast", {"city": "Paris"})
        flood = SkillSession(learning.service, caller=mallory)
        for i in range(100):  # crafted questions, each a real find → load → call of the forecast
            flood.find(f"weather forecast crafted question {i}")
            await flood.load(["up/forecast"])
            assert not (await flood.call("up/forecast", {"city": "Paris"})).get("isError")
        kept = await learning.uses("acme")
        assert sorted(u.caller for u in kept) == ["bob", "mallory"]  # one each: mallory's newest replaced its own
        assert next(u.question for u in kept if u.caller == "mallory") == "weather forecast crafted question 99"
        assert await learning.uses("globex") == []
        assert learning.history(carol) == {}


async def test_a_legacy_clients_call_of_the_injected_tool_records_the_question_once(tmp_path: Path) -> None:
    async with learning_gateway(tmp_path) as learning, client(learning.gateway, "legacy") as c:
        await c.call_tool("find", {"query": WEATHER})
        await c.call_tool("load", {"ids": ["up/forecast"]})
        called = await c.call_tool("up__forecast", {"city": "Paris"})  # listed to this session by the load
        assert not called.is_error, called
        assert [(u.question, u.card) for u in await learning.uses()] == [(WEATHER, "up/forecast")]


async def test_a_tenants_rankers_trust_its_only_callers_questions_then_those_two_callers_taught(tmp_path: Path) -> None:
    """Alone in its tenant, alice's questions are trusted; once bob uses another card, the tenant's rankers
    are handed the whole history again and alice's card is not trusted any more, until bob teaches it too."""
    alice = Caller(subject="alice", tenant="acme", authenticated=True)
    bob = Caller(subject="bob", tenant="acme", authenticated=True)

    async def teach(caller: Caller, question: str, card: str, arguments: dict[str, object]) -> None:
        session = SkillSession(learning.service, caller=caller)
        session.find(question)
        await session.load([card])
        assert not (await session.call(card, arguments)).get("isError")

    def trusted() -> set[str]:
        assert learning.history(alice)  # settled
        ranker = learning.service.index_for(alice).selector.ranker
        return {ranker.cards[i].name for i in ranker.history.trusted}

    async with learning_gateway(tmp_path, policy=EVERY_TOOL) as learning:
        await teach(alice, WEATHER, "up/forecast", {"city": "Paris"})
        assert trusted() == {"forecast"}
        await teach(bob, "convert an amount of money to dollars", "up/convert", {"amount": 10, "currency": "USD"})
        assert trusted() == set()
        await teach(bob, "weather forecast for Lyon tomorrow", "up/forecast", {"city": "Lyon"})
        assert trusted() == {"forecast"}
