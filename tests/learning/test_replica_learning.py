"""Gateway replicas share one ledger in a real Redis: each learns from the others' uses, audiences apart.

Two gateways, each with its own host and upstream connection (as two replicas have), learn into
one :class:`~skilldeck.learning.RedisLedgerStore` namespace. What a client taught through the first
reaches the second's rankers at its next ``find``; a Redis that goes away fails no call. A client's
path (find → load → call) is kept in the shared activation store, bounded as in one process, and a
successful call takes its pending question out once, whichever replica sees it.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import anyio
import pytest

from skilldeck.gateway._activation import FINDS_KEPT, PENDING_KEPT
from skilldeck.gateway._redis_store import MAX_PENDING_CHARS, RedisActivationStore
from skilldeck.learning import RedisLedgerStore
from skilldeck.serving._policy import Caller

from ..gateway.gateway_clients_support import client
from ..host.hostile_http import serving_in_thread
from .learning_support import gateway_learning_in
from .usage_upstream import usage_server

pytestmark = pytest.mark.anyio

WEATHER = "weather forecast for Paris tomorrow"
NAMESPACES = itertools.count()


async def test_a_second_replica_ranks_with_what_the_first_learned(redis_url: str) -> None:
    prefix = f"test:replicas:{next(NAMESPACES)}"
    app = usage_server().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    with serving_in_thread(app) as url:  # replicas of one configuration: one upstream, the same URL
        await _second_ranks_with_the_first(redis_url, prefix, url)


async def _second_ranks_with_the_first(redis_url: str, prefix: str, url: str) -> None:
    async with (
        RedisLedgerStore(redis_url, prefix=prefix) as first_store,
        RedisLedgerStore(redis_url, prefix=prefix) as second_store,
        gateway_learning_in(first_store, url=url) as first,
        gateway_learning_in(second_store, url=url) as second,
        client(first.gateway, "modern") as c1,
        client(second.gateway, "modern") as c2,
    ):
        await c2.call_tool("find", {"query": "anything"})
        assert second.history() == {}
        await c1.call_tool("find", {"query": WEATHER})
        await c1.call_tool("load", {"ids": ["up/forecast"]})
        await c1.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
        await c2.call_tool("find", {"query": "rain in Lyon"})  # the second replica reads the moved version in
        key = second.service.index_for(Caller()).ids["up/forecast"].key
        assert second.history() == {key: [WEATHER]}
        # and the second's own use reaches the first: one ledger, two writers
        await c2.call_tool("load", {"ids": ["up/forecast"]})
        await c2.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Lyon"}})
        await c1.call_tool("find", {"query": "anything"})
        assert first.history() == {key: ["rain in Lyon", WEATHER]}
        assert len(await first.uses()) == 2


async def test_a_redis_that_went_away_fails_no_call(redis: Any, caplog: pytest.LogCaptureFixture) -> None:
    async with (
        RedisLedgerStore(redis.url, prefix=f"test:replicas:{next(NAMESPACES)}", timeout=0.5) as store,
        gateway_learning_in(store) as learning,
        client(learning.gateway, "modern") as c,
    ):
        found = await c.call_tool("find", {"query": WEATHER})
        await c.call_tool("load", {"ids": ["up/forecast"]})
        redis.kill()
        try:
            with caplog.at_level(logging.WARNING, logger="skilldeck.gateway._service"):
                called = await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
                again = await c.call_tool("find", {"query": WEATHER})
        finally:
            redis.start()
        assert not called.is_error, called
        assert again.structured_content["cards"] == found.structured_content["cards"]
        assert await learning.uses() == []  # the use that could not be written is not believed written
        await c.call_tool("find", {"query": "anything"})  # Redis is back: the audience is read again
        assert learning.history() == {}
        assert "the usage ledger at redis://127.0.0.1" in caplog.text
        assert "cannot be written" in caplog.text


FORECAST = ("up", "forecast")


async def test_a_shared_path_completes_the_newest_question_once_whoever_takes_it(redis_url: str) -> None:
    async with RedisActivationStore(redis_url, prefix=f"test:paths:{next(NAMESPACES)}") as store:
        await store.loaded("c", {"up/forecast": [FORECAST]})  # no find before it: not followed
        assert await store.succeeded("c", FORECAST) == []
        await store.found("c", "weather in Paris", ["up/forecast", "up/events"])
        await store.found("c", "rain in Lyon", ["up/forecast"])
        await store.found("c", "convert money", ["up/convert"])
        await store.loaded("c", {"up/forecast": [FORECAST], "up/clock": [("up", "clock")]})  # clock: never shown
        assert await store.succeeded("c", ("up", "convert")) == []  # another card's tool
        assert await store.succeeded("other", FORECAST) == []  # another client
        taken: list[list[tuple[str, str]]] = []

        async def take() -> None:
            taken.append(await store.succeeded("c", FORECAST))

        async with anyio.create_task_group() as tg:  # two replicas see a successful call at once
            tg.start_soon(take)
            tg.start_soon(take)
        assert sorted(taken) == [[], [("rain in Lyon", "up/forecast")]]
        assert await store.succeeded("c", ("up", "clock")) == []


async def test_a_shared_path_keeps_its_last_finds_and_loads_at_n_and_forgets_at_n_plus_one(redis_url: str) -> None:
    async with RedisActivationStore(redis_url, prefix=f"test:paths:{next(NAMESPACES)}") as store:
        for client, finds in (("kept", FINDS_KEPT), ("forgotten", FINDS_KEPT + 1)):
            await store.found(client, "weather in Paris", ["up/forecast"])
            for i in range(finds - 1):
                await store.found(client, f"other question {i}", ["up/convert"])
            await store.loaded(client, {"up/forecast": [FORECAST]})
        assert await store.succeeded("kept", FORECAST) == [("weather in Paris", "up/forecast")]
        assert await store.succeeded("forgotten", FORECAST) == []
        cards = [f"up/t{i}" for i in range(PENDING_KEPT + 1)]
        for start in range(0, len(cards), 40):
            await store.found("many", "a question", cards[start : start + 40])
        for card in cards:
            await store.loaded("many", {card: [("up", card[3:])]})
        record, _, _ = store._keys("many")
        assert await store._redis.hlen(f"{record}:p") == PENDING_KEPT
        # a card naming more tools than an entry holds: those that fit are followed, the rest not
        await store.found("wide", "a wide skill", ["up/wide"])
        await store.loaded("wide", {"up/wide": [("up", f"tool-{i:04}") for i in range(2_000)]})
        wide, _, _ = store._keys("wide")
        assert len(await store._redis.hget(f"{wide}:p", "up/wide")) <= MAX_PENDING_CHARS + 2_100
        assert await store.succeeded("wide", ("up", "tool-1999")) == []
        assert await store.succeeded("wide", ("up", "tool-0000")) == [("a wide skill", "up/wide")]
        assert await store.succeeded("many", ("up", "t0")) == []  # the oldest load gave way
        assert await store.succeeded("many", ("up", "t1")) == [("a question", "up/t1")]


async def test_a_shared_path_is_dropped_with_its_client_and_never_trusts_what_a_gateway_did_not_write(
    redis_url: str,
) -> None:
    async with RedisActivationStore(redis_url, prefix=f"test:paths:{next(NAMESPACES)}", max_clients=2) as store:
        await store.found("a", "weather in Paris", ["up/forecast"])
        await store.loaded("a", {"up/forecast": [FORECAST]})
        record, _, _ = store._keys("a")
        assert await store._redis.exists(f"{record}:q", f"{record}:p", f"{record}:o") == 3
        await store.found("b", "q", ["up/forecast"])
        await store.found("c", "q", ["up/forecast"])  # a third client: the least recently used ("a") gives way
        assert await store._redis.exists(f"{record}:q", f"{record}:p", f"{record}:o") == 0
        assert await store.succeeded("a", FORECAST) == []
        record, _, _ = store._keys("c")
        await store._redis.hset(
            f"{record}:p", mapping={"up/x": "not json", "up/y": '["' + "q" * 3_000 + '",[["up","forecast"]]]'}
        )
        assert await store.succeeded("c", FORECAST) == []


async def test_a_path_through_one_replica_with_a_shared_store_is_learned_once(redis_url: str) -> None:
    prefix = f"test:paths:{next(NAMESPACES)}"
    async with (
        RedisLedgerStore(redis_url, prefix=f"{prefix}:ledger") as ledger,
        RedisActivationStore(redis_url, prefix=f"{prefix}:activation") as shared,
        gateway_learning_in(ledger, shared=shared) as first,
        gateway_learning_in(ledger, shared=shared) as second,
        client(first.gateway, "modern") as c1,
        client(second.gateway, "modern") as c2,
    ):
        learned: list[str] = []
        for replica in (first, second):
            replica.service.log.subscribe(lambda e: learned.append(e["card"]) if e["kind"] == "learned" else None)
        await c1.call_tool("find", {"query": WEATHER})
        await c1.call_tool("load", {"ids": ["up/forecast"]})
        await c1.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
        await c2.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})  # the same client
        await c1.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})
        assert learned == ["up/forecast"]
        assert [u.question for u in await first.uses()] == [WEATHER]
