"""Through ``skilldeck gateway`` processes: past uses rank new questions better, across a restart
(SQLite) and on a second replica (Redis); ``--no-learning`` keeps nothing.

A real gateway process over HTTP on loopback in front of :mod:`usage_upstream` over stdio, a real
SDK client, ``$SKILLDECK_HOME`` of the test's own, a real ``redis-server``, and ``skilldeck history``
reading what was kept. The gateways rank lexically (``--lexical``: no encoder to load per process).

The catalog: ``up/events`` (what is on in a city this Saturday, in Paris or elsewhere) shares two
words with "umbrella for the rain in Paris on Saturday?", ``up/forecast`` (weather, temperature and
rain) one, so before learning events is first. Three past questions about umbrellas that led to a
successful forecast call make forecast first: its own evidence ("rain") is real, and history may
lift a card by at most its own evidence plus a quarter of the best card's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp.client import Client
from mcp_types import RequestParamsMeta

from skilldeck.cli import main

from ..server.helpers import CLI, cli_env, start_gateway, stop

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).resolve().parent / "usage_upstream.py"
MODERN = "2026-07-28"
WEATHER = "weather forecast for Paris tomorrow"


def gateway_config(tmp_path: Path) -> Path:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"up": {"command": sys.executable, "args": [str(UPSTREAM)]}}}))
    return config


async def use(
    url: str | tuple[str, str, str],
    conversation: str,
    question: str,
    card: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    succeeds: bool = True,
) -> None:
    """find → load → call through the gateway at ``url`` (or, for a tuple, each step through its own
    gateway, each in a connection of its own), in one conversation; each step must succeed (the call
    must fail, when not ``succeeds``)."""
    meta = cast(RequestParamsMeta, {"dev.skilldeck/conversation": conversation})
    urls = (url, url, url) if isinstance(url, str) else url
    async with Client(urls[0], mode=MODERN, cache=None) as client:
        found = await client.call_tool("find", {"query": question}, meta=meta)
        assert card in [c["id"] for c in found.structured_content["cards"]], found
    async with Client(urls[1], mode=MODERN, cache=None) as client:
        loaded = await client.call_tool("load", {"ids": [card]}, meta=meta)
        assert not loaded.is_error, loaded
    async with Client(urls[2], mode=MODERN, cache=None) as client:
        called = await client.call_tool("call", {"tool": tool, "arguments": arguments}, meta=meta)
        assert called.is_error is not succeeds, called


PAST = (
    "umbrella and forecast for Lyon today",
    "forecast: umbrella in Nice on Saturday",
    "umbrella or not in Lille this weekend, forecast",
)
"""Past questions whose answer put ``up/forecast`` first (a use teaches only the question of an answer that
did not abstain, for a card it put forward; the third is a low-confidence answer), each saying "umbrella",
which the forecast's text does not; only the second holds two of :data:`NEW`'s terms."""
NEW = "umbrella for the rain in Paris on Saturday?"


async def first_card(url: str, question: str) -> tuple[str, int]:
    """The id of the card ``find`` puts first for ``question``, and how many past questions it matched
    (holding two of its terms: of :data:`PAST`, only the one with "umbrella" and "Saturday" for :data:`NEW`)."""
    async with Client(url, mode=MODERN, cache=None) as client:
        found = await client.call_tool("find", {"query": question})
    return found.structured_content["cards"][0]["id"], found.structured_content.get("history", 0)


async def teach(url: str) -> None:
    """Each past question: find, load the forecast, call it (each in a conversation of its own)."""
    for i, question in enumerate(PAST):
        await use(url, f"past-{i}", question, "up/forecast", "up/forecast", {"city": "Lyon"})


async def history(capsys: pytest.CaptureFixture[str]) -> str:
    """What ``skilldeck history`` prints (on a thread: the command runs an event loop of its own)."""
    assert await anyio.to_thread.run_sync(main, ["history"]) == 0
    return capsys.readouterr().out


async def test_what_a_gateway_learned_is_kept_across_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "home"))
    config = gateway_config(tmp_path)
    proc, started = start_gateway(config, tmp_path / "first.log", "--lexical", "--learn-anonymous")
    try:
        await use(started["url"], "c1", WEATHER, "up/forecast", "up/forecast", {"city": "Paris"})
    finally:
        stop(proc)
    assert (tmp_path / "home" / "ledger.sqlite3").exists()
    assert "up/forecast" in await history(capsys)
    proc, started = start_gateway(config, tmp_path / "second.log", "--lexical", "--learn-anonymous")
    try:  # the restarted gateway reads the ledger in, keeps the cards still listed, and adds to it
        await use(
            started["url"],
            "c2",
            "convert an amount of money to euros",
            "up/convert",
            "up/convert",
            {"amount": 10, "currency": "EUR"},
        )
    finally:
        stop(proc)
    shown = await history(capsys)
    assert WEATHER in shown
    assert "convert an amount of money to euros" in shown
    assert "audience (no tenant): 2 questions on 2 cards" in shown


async def test_no_learning_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "home"))
    proc, started = start_gateway(gateway_config(tmp_path), tmp_path / "gateway.log", "--lexical", "--no-learning")
    try:
        await use(started["url"], "c1", WEATHER, "up/forecast", "up/forecast", {"city": "Paris"})
    finally:
        stop(proc)
    assert not (tmp_path / "home" / "ledger.sqlite3").exists()  # the gateway never opened it
    assert "is empty" in await history(capsys)
    assert not (tmp_path / "home" / "ledger.sqlite3").exists()  # nor did reading it


async def test_past_uses_rank_a_new_question_better_and_a_restart_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "home"))
    config = gateway_config(tmp_path)
    proc, started = start_gateway(config, tmp_path / "first.log", "--lexical", "--learn-anonymous")
    try:
        assert await first_card(started["url"], NEW) == ("up/events", 0)
        await teach(started["url"])
        # a find waits for its ranker to read the uses just recorded (HistoryUpdates.settled): no polling
        assert await first_card(started["url"], NEW) == ("up/forecast", 1)
    finally:
        stop(proc)
    proc, started = start_gateway(config, tmp_path / "second.log", "--lexical", "--learn-anonymous")
    try:  # the first find after a restart waits for the history to be read
        assert await first_card(started["url"], NEW) == ("up/forecast", 1)
    finally:
        stop(proc)


async def test_a_second_replica_ranks_with_what_the_first_learned(
    tmp_path: Path, redis: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    config = gateway_config(tmp_path)
    flags = ("--lexical", "--learn-anonymous", "--redis", redis.url, "--name", "learning-replicas")
    first, started_first = start_gateway(config, tmp_path / "first.log", *flags)
    try:
        second, started_second = start_gateway(config, tmp_path / "second.log", *flags)
        try:
            assert await first_card(started_second["url"], NEW) == ("up/events", 0)
            await teach(started_first["url"])
            assert await first_card(started_second["url"], NEW) == ("up/forecast", 1)  # its next find reads them
        finally:
            stop(second)
    finally:
        stop(first)
    argv = ["history", "--redis", redis.url, "--name", "learning-replicas"]
    assert await anyio.to_thread.run_sync(main, argv) == 0
    assert "audience (no tenant): 3 questions on 1 card" in capsys.readouterr().out


def learned(*logs: Path) -> list[str]:
    """The cards each ``learned`` record of the gateways' decision logs (``--log``) says were recorded."""
    found = []
    for log in logs:
        for line in log.read_text().splitlines() if log.exists() else ():
            record = json.loads(line)
            if record.get("kind") == "learned" and record.get("recorded"):
                found.append(str(record["card"]))
    return found


@contextmanager
def two_replicas(tmp_path: Path, redis_url: str, name: str) -> Iterator[tuple[str, str, tuple[Path, Path]]]:
    """Two ``skilldeck gateway --redis`` replicas of gateway ``name``: their URLs and decision logs."""
    config = gateway_config(tmp_path)
    logs = (tmp_path / "first.jsonl", tmp_path / "second.jsonl")
    flags = ("--lexical", "--learn-anonymous", "--redis", redis_url, "--name", name)
    first, started_first = start_gateway(config, tmp_path / "first.log", *flags, "--log", str(logs[0]))
    try:
        second, started_second = start_gateway(config, tmp_path / "second.log", *flags, "--log", str(logs[1]))
        try:
            yield started_first["url"], started_second["url"], logs
        finally:
            stop(second)
    finally:
        stop(first)


async def history_of(redis_url: str, name: str, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``skilldeck history --redis URL --name NAME`` prints."""
    argv = ["history", "--redis", redis_url, "--name", name]
    assert await anyio.to_thread.run_sync(main, argv) == 0
    return capsys.readouterr().out


async def test_a_path_split_across_replicas_is_learned_once(
    tmp_path: Path, redis: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """find on one replica, load on the other, call on either: the replica that saw the call records
    the question, once, and the next find on either replica ranks the card better."""
    with two_replicas(tmp_path, redis.url, "learning-split") as (a, b, logs):
        assert await first_card(a, NEW) == ("up/events", 0)
        for i, (question, call_on) in enumerate(zip(PAST, (a, b, a), strict=True)):
            await use((a, b, call_on), f"split-{i}", question, "up/forecast", "up/forecast", {"city": "Lyon"})
        assert learned(*logs) == ["up/forecast"] * len(PAST)  # each use once, by one replica
        assert await first_card(b, NEW) == ("up/forecast", 1)
        assert await first_card(a, NEW) == ("up/forecast", 1)
    shown = await history_of(redis.url, "learning-split", capsys)
    assert f"audience (no tenant): {len(PAST)} questions on 1 card" in shown


async def test_a_refused_or_failed_call_split_across_replicas_teaches_nothing(
    tmp_path: Path, redis: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with two_replicas(tmp_path, redis.url, "learning-split-refused") as (a, b, logs):
        # refused by the gate (no city), then an upstream isError, each found on one and called on the other
        await use((a, b, a), "refused", WEATHER, "up/forecast", "up/forecast", {}, succeeds=False)
        await use((b, a, b), "failed", "archive this note", "up/archive", "up/archive", {"note": "x"}, succeeds=False)
        assert learned(*logs) == []
    assert "is empty" in await history_of(redis.url, "learning-split-refused", capsys)


def test_check_never_opens_the_ledger(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [*CLI, "gateway", "--config", str(gateway_config(tmp_path)), "--check", "--lexical"],
        env=cli_env(SKILLDECK_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "anyone (no policy): up: 0 skills, 5 tools" in done.stdout
    assert not (home / "ledger.sqlite3").exists()
