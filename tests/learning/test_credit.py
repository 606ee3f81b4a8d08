"""Which question a use teaches: the one whose answer put the loaded card forward, ranked best; nothing for
an abstention or a filler (``gateway/_activation.py``: :func:`credited`, :func:`best_question`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skilldeck.gateway._activation import Activation, best_question, credited
from skilldeck.gateway._redis_store import RedisActivationStore
from skilldeck.gateway._shortlist import FILLER_GAP

from ..gateway.gateway_clients_support import client
from .test_recording import learning_gateway

pytestmark = pytest.mark.anyio


def cards(*scored: tuple[str, float]) -> list[dict[str, Any]]:
    return [{"id": card, "score": score} for card, score in scored]


def test_an_answer_credits_the_cards_it_put_forward_never_a_filler_nor_an_abstention() -> None:
    shown = cards(
        ("fs/list", 1.0), ("fs/read", 1.0 - FILLER_GAP), ("time/now", 1.0 - FILLER_GAP - 0.01), ("mem/add", 0.0)
    )
    assert credited(shown, abstained=False, gap=FILLER_GAP) == ["fs/list", "fs/read"]  # at the gap exactly: put forward
    assert credited(shown, abstained=True, gap=FILLER_GAP) == []  # an abstention teaches nothing
    assert credited([], abstained=False, gap=FILLER_GAP) == []


def test_a_load_is_credited_to_the_question_that_ranked_the_card_best() -> None:
    asked = [("older, card second", ("a", "card")), ("newer, card third", ("a", "b", "card"))]
    assert best_question(asked, "card") == "older, card second"
    tied = [("older", ("card",)), ("newer", ("card",))]
    assert best_question(tied, "card") == "newer"  # as well ranked: the newest
    assert best_question(asked, "other") is None
    activation = Activation()
    activation.found("the filler's question", [])  # an abstention: nothing put forward
    activation.loaded("card", [("up", "t")])
    assert activation.succeeded(("up", "t")) == []  # nothing to credit
    activation.found("shows it second", ["a", "card"])
    activation.found("shows it first", ["card"])
    activation.found("shows it third", ["a", "b", "card"])
    activation.loaded("card", [("up", "t")])
    assert activation.succeeded(("up", "t")) == [("shows it first", "card")]


async def test_a_card_loaded_from_an_abstention_teaches_nothing(tmp_path: Path) -> None:
    async with learning_gateway(tmp_path) as learning, client(learning.gateway, "modern") as c:
        found = (await c.call_tool("find", {"query": "convert 10 dollars to euros"})).structured_content
        assert found["abstain"] is True, found  # lexically, nothing is close enough
        assert found["cards"][0]["id"] == "up/convert"
        assert not (await c.call_tool("load", {"ids": ["up/convert"]})).is_error
        called = await c.call_tool("call", {"tool": "up/convert", "arguments": {"amount": 10, "currency": "EUR"}})
        assert not called.is_error, called
        assert await learning.uses() == []
        # the same card from an answer that put it forward teaches that question
        await c.call_tool("find", {"query": "convert an amount of money to euros"})
        await c.call_tool("load", {"ids": ["up/convert"]})
        await c.call_tool("call", {"tool": "up/convert", "arguments": {"amount": 10, "currency": "EUR"}})
        assert [u.question for u in await learning.uses()] == ["convert an amount of money to euros"]


async def test_replicas_credit_the_question_that_ranked_the_card_best(redis_url: str) -> None:
    async with RedisActivationStore(redis_url, prefix="test:credit:best") as store:
        await store.found("k", "shows it second", ["a", "up/forecast"])
        await store.found("k", "shows it first", ["up/forecast"])
        await store.found("k", "shows it third", ["a", "b", "up/forecast"])
        await store.found("k", "abstained", [])
        await store.loaded("k", {"up/forecast": [("up", "forecast")]})
        assert await store.succeeded("k", ("up", "forecast")) == [("shows it first", "up/forecast")]
