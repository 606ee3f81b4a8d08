"""A question that already led to a successful call is answered with that card first, and says so."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from skilldeck.agents import SkillSession
from skilldeck.gateway._usage import HISTORY_UNREAD
from skilldeck.learning import SqliteLedgerStore
from skilldeck.learning._updates import HistoryUpdates
from skilldeck.select import History, Selector
from skilldeck.serving._policy import Caller

from ..gateway.gateway_clients_support import check_structured, client
from ..gateway.test_find_ranker import indexed
from ..host.hostile_http import serving_in_thread
from .learning_support import gateway_learning_in
from .test_recording import learning_gateway
from .usage_upstream import usage_server

pytestmark = pytest.mark.anyio

NEW = "umbrella for the rain in Paris on Saturday?"


async def test_a_question_that_worked_before_is_answered_with_its_card_first(tmp_path: Path) -> None:
    async with learning_gateway(tmp_path) as learning, client(learning.gateway, "modern") as c:
        before = check_structured("find", await c.call_tool("find", {"query": NEW}))
        assert [card["id"] for card in before["cards"][:2]] == ["up/events", "up/forecast"]  # forecast put forward
        assert "worked_before" not in before
        assert not (await c.call_tool("load", {"ids": ["up/forecast"]})).is_error
        assert not (await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})).is_error
        assert [u.question for u in await learning.uses()] == [NEW]
        assert learning.history()  # the ranker read it
        for asked in (NEW, "On Saturday in Paris: umbrellas for rain?"):  # the same words, other order and form
            result = await c.call_tool("find", {"query": asked})
            found = check_structured("find", result)
            assert found["cards"][0]["id"] == "up/forecast", found
            assert found["abstain"] is False
            assert found["worked_before"] == NEW
            assert "worked before for this question" in found["reason"]
            assert "up/forecast worked before for this question" in result.content[0].text  # type: ignore[union-attr]
        other = check_structured("find", await c.call_tool("find", {"query": "umbrella for the snow in Paris"}))
        assert "worked_before" not in other  # another question: ranked as usual


async def test_an_untrusted_past_question_is_not_recalled(tmp_path: Path) -> None:
    alice = Caller(subject="alice", authenticated=True)
    bob = Caller(subject="bob", authenticated=True)
    carol = Caller(subject="carol", authenticated=True)
    money = {"amount": 1, "currency": "USD"}
    async with learning_gateway(tmp_path) as learning:
        for caller, question, card, args in (
            (bob, "convert an amount of money to dollars", "up/convert", money),
            (carol, "convert an amount of money to pounds", "up/convert", money),  # two callers: trusted
            (alice, NEW, "up/forecast", {"city": "Paris"}),
        ):
            session = SkillSession(learning.service, caller=caller)
            session.find(question)
            await session.load([card])
            assert not (await session.call(card, args)).get("isError")
        assert learning.history(alice)
        # alice alone taught the forecast, in an audience of three callers: not trusted, so not recalled
        found = SkillSession(learning.service, caller=alice).find(NEW)
        assert "worked_before" not in found
        again = SkillSession(learning.service, caller=bob).find("convert an amount of money to dollars")
        assert again["worked_before"] == "convert an amount of money to dollars"  # the trusted card is


LIKE = "should I take an umbrella in Paris on Sunday?"  # MiniLM cosine 0.81 to NEW; PARAPHRASE: 0.92
PARAPHRASE = "umbrella for rain in Paris on Saturday"


async def test_with_the_encoder_a_like_question_or_a_near_paraphrase_says_it_worked_before(tmp_path: Path) -> None:
    """The default encoder ranks: after one successful use, a near paraphrase of its question is answered
    with its card first (``worked_before``), and a question only like it says what it is like (``like_before``)
    in the text the model reads."""
    from skilldeck.select._encoders import load_encoder

    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    try:
        async with (
            gateway_learning_in(store, encoder=load_encoder("minilm")) as learning,
            client(learning.gateway, "modern") as c,
        ):
            await indexed(learning.service)
            finds: list[dict[str, Any]] = []
            learning.service.log.subscribe(lambda e: finds.append(e) if e["kind"] == "find" else None)
            check_structured("find", await c.call_tool("find", {"query": NEW}))
            assert not (await c.call_tool("load", {"ids": ["up/forecast"]})).is_error
            assert not (await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})).is_error
            assert [u.question for u in await learning.uses()] == [NEW]
            assert list(learning.history().values()) == [[NEW]]  # read on a thread, which the next find waits for
            result = await c.call_tool("find", {"query": PARAPHRASE})
            found = check_structured("find", result)
            assert found["cards"][0]["id"] == "up/forecast", found
            assert found["worked_before"] == NEW, found
            assert "up/forecast worked before for this question" in result.content[0].text  # type: ignore[union-attr]
            result = await c.call_tool("find", {"query": LIKE})
            found = check_structured("find", result)
            assert "worked_before" not in found, found
            assert found["like_before"] == NEW, found
            assert found["like_before_card"] == "up/forecast", found  # what the like question led to
            assert found["cards"][0]["id"] == "up/events", found  # its server first; events leads it on its own words
            text = result.content[0].text  # type: ignore[union-attr]
            assert (
                f"up/events's server served a question like this one before ({NEW!r} led to a successful call of "
                "up/forecast)" in text
            ), text
            # the operator's log says which past question decided each find
            said = [(f["query"], f.get("worked_before"), f.get("like_before")) for f in finds]
            assert said == [(NEW, None, None), (PARAPHRASE, NEW, None), (LIKE, None, NEW)], said
    finally:
        store.close()


class HeldHistory:
    """Rankers read a whole history only once the test lets them (``entered``: one is being read)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        read = Selector.set_history

        def held(selector: Selector, history: History) -> None:
            self.entered.set()
            assert self.release.wait(60), "the test never let the history be read"
            read(selector, history)

        monkeypatch.setattr(Selector, "set_history", held)


@asynccontextmanager
async def learned_before(tmp_path: Path) -> AsyncIterator[tuple[SqliteLedgerStore, str]]:
    """A ledger and an upstream served on loopback (one for every gateway the test starts, as one
    configuration gives), after one gateway's session found :data:`NEW`, loaded and called the forecast."""
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    app = usage_server().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    try:
        with serving_in_thread(app) as url:
            async with gateway_learning_in(store, url=url) as learning:
                session = SkillSession(learning.service)
                session.find(NEW)
                await session.load(["up/forecast"])
                assert not (await session.call("up/forecast", {"city": "Paris"})).get("isError")
            yield store, url
    finally:
        store.close()


async def test_after_a_restart_the_first_find_waits_for_the_history_and_answers_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new gateway on the ledger of a past one: its first ``find`` is the first time its index is built, and
    its ranker reads the whole history on a thread; the find waits for it, so the question that worked
    before is answered with its card; past the wait it is answered without and says so."""
    async with learned_before(tmp_path) as (store, url):
        await restarted(store, url, HeldHistory(monkeypatch))


async def restarted(store: SqliteLedgerStore, url: str, held: HeldHistory) -> None:
    """The two restarts of the test above."""
    async with gateway_learning_in(store, url=url) as learning, client(learning.gateway, "modern") as c:
        found: dict[str, Any] = {}

        async def ask() -> None:
            found.update(check_structured("find", await c.call_tool("find", {"query": NEW})))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            assert await anyio.to_thread.run_sync(held.entered.wait, 60)
            assert not found  # the find waits while the history is read
            held.release.set()
        assert found["worked_before"] == NEW, found
        assert found["cards"][0]["id"] == "up/forecast"
    held.entered.clear()
    held.release.clear()
    async with gateway_learning_in(store, url=url) as learning, client(learning.gateway, "modern") as c:
        learning.service.usage.history_wait = 0.0  # no wait at all: answered without the history
        late = check_structured("find", await c.call_tool("find", {"query": NEW}))
        assert "worked_before" not in late, late
        assert late["reason"].endswith(HISTORY_UNREAD), late
        assert held.entered.is_set()
        held.release.set()
        assert learning.history() == {learning.service.index_for(Caller()).ids["up/forecast"].key: [NEW]}
        again = check_structured("find", await c.call_tool("find", {"query": NEW}))
        assert again["worked_before"] == NEW, again
        assert not again["reason"].endswith(HISTORY_UNREAD)


async def test_in_process_afind_waits_for_the_history_and_find_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``SkillSession`` of a new service on a past one's ledger: ``afind`` (what the agent frameworks'
    ``find`` tools ask) waits for the history its ranker is reading; ``find`` answers with what it holds."""
    held = HeldHistory(monkeypatch)
    async with learned_before(tmp_path) as (store, url), gateway_learning_in(store, url=url) as learning:
        session = SkillSession(learning.service)
        found: dict[str, Any] = {}

        async def ask() -> None:
            found.update(await session.afind(NEW))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            assert await anyio.to_thread.run_sync(held.entered.wait, 60)
            assert "worked_before" not in session.find(NEW)  # the history is still being read
            assert not found  # afind waits for it
            held.release.set()
        assert found["worked_before"] == NEW, found
        assert found["cards"][0]["id"] == "up/forecast"


FLOOD = 50


async def all_waiting(updates: HistoryUpdates, selector: Selector) -> None:
    """Until :data:`FLOOD` finds wait for ``selector``'s history (the bound is a guard only)."""
    with anyio.fail_after(60):
        while updates.waiters(selector) < FLOOD:
            await anyio.lowlevel.checkpoint()


async def test_a_flood_of_finds_waiting_for_the_history_holds_no_thread_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FLOOD finds wait at once while the history is read: no thread each (the worker wakes them through the
    loop), all answered with it; then FLOOD finds that give up (no wait, or cancelled) leave no wake-up behind."""
    held = HeldHistory(monkeypatch)
    async with learned_before(tmp_path) as (store, url), gateway_learning_in(store, url=url) as learning:
        updates = learning.service.usage.history_updates
        selector = learning.service.index_for(Caller()).selector  # its whole history: being read
        assert await anyio.to_thread.run_sync(held.entered.wait, 60)
        threads = threading.active_count()
        answers: list[dict[str, Any]] = []

        async def ask() -> None:
            answers.append(await SkillSession(learning.service).afind(NEW))

        async with anyio.create_task_group() as tg:
            for _ in range(FLOOD):
                tg.start_soon(ask)
            await all_waiting(updates, selector)
            # the ledger's reader may have started; a thread per waiting find would be 40 more (anyio's pool)
            assert threading.active_count() <= threads + 2
            assert not answers
            held.release.set()
        assert len(answers) == FLOOD
        assert all(a.get("worked_before") == NEW for a in answers), answers[0]
        assert updates.waiters(selector) == 0
        # finds that give up: the wait over at once, or the request cancelled
        held.entered.clear()
        held.release.clear()
        learning.service.usage.history_updates.submit(selector, {})  # read again: held
        assert await anyio.to_thread.run_sync(held.entered.wait, 60)
        learning.service.usage.history_wait = 0.0
        for _ in range(FLOOD):
            assert (await SkillSession(learning.service).afind(NEW))["reason"].endswith(HISTORY_UNREAD)
        learning.service.usage.history_wait = 60.0
        async with anyio.create_task_group() as tg:
            for _ in range(FLOOD):
                tg.start_soon(ask)
            await all_waiting(updates, selector)
            tg.cancel_scope.cancel()
        assert updates.waiters(selector) == 0
        held.release.set()
