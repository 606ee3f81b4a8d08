"""Gateway replicas share one ledger in a real Redis: each learns from the others' uses, audiences apart.

Two gateways, each with its own host and upstream connection (as two replicas have), learn into
one :class:`~skilldeck.learning.RedisLedgerStore` namespace. What a client taught through the first
reaches the second's rankers at its next ``find``; a Redis that goes away fails no call.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest

from skilldeck.learning import RedisLedgerStore
from skilldeck.serving._policy import Caller

from ..gateway.gateway_clients_support import client
from .learning_support import gateway_learning_in

pytestmark = pytest.mark.anyio

WEATHER = "weather forecast for Paris tomorrow"
NAMESPACES = itertools.count()


async def test_a_second_replica_ranks_with_what_the_first_learned(redis_url: str) -> None:
    prefix = f"test:replicas:{next(NAMESPACES)}"
    async with (
        RedisLedgerStore(redis_url, prefix=prefix) as first_store,
        RedisLedgerStore(redis_url, prefix=prefix) as second_store,
        gateway_learning_in(first_store) as first,
        gateway_learning_in(second_store) as second,
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
