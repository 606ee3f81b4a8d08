"""The ledger's stores, SQLite and a real Redis, under one contract: versions, isolation, clearing, restarts."""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from skilldeck.learning import (
    MAX_AUDIENCES,
    Change,
    Learner,
    LedgerFull,
    LedgerStore,
    RedisLedgerStore,
    SqliteLedgerStore,
    Use,
)

pytestmark = pytest.mark.anyio

PREFIXES = itertools.count()


@asynccontextmanager
async def a_store(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, **options: Any
) -> AsyncIterator[LedgerStore]:
    """A SQLite store in ``tmp_path``, or a Redis one in a namespace of its own."""
    if kind == "sqlite":
        sqlite = SqliteLedgerStore(tmp_path / "ledger.sqlite3", **options)
        try:
            yield sqlite
        finally:
            sqlite.close()
        return
    url = request.getfixturevalue("redis_url")
    async with RedisLedgerStore(url, prefix=f"test:ledger:{next(PREFIXES)}", **options) as shared:
        yield shared


@pytest.fixture(params=["sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LedgerStore]:
    async with a_store(request.param, request, tmp_path) as opened:
        yield opened


def use(question: str, card: str = "up/weather", caller: str = "alice", at: float = 1.0) -> Use:
    return Use(question, card, caller, at)


async def test_a_change_applies_on_the_version_it_was_made_on_and_only_then(store: LedgerStore) -> None:
    assert await store.version("acme") == 0
    assert await store.apply("acme", Change(written=[use("weather in Paris")]), 0) == 1
    assert await store.apply("acme", Change(written=[use("stale writer")]), 0) is None  # another came first
    version, uses = await store.load("acme")
    assert (version, uses) == (1, [use("weather in Paris")])
    assert await store.apply("acme", Change(removed=[use("weather in Paris")]), 1) == 2
    assert await store.load("acme") == (2, [])


async def test_two_audiences_never_share_a_use_and_clearing_one_leaves_the_other(store: LedgerStore) -> None:
    await store.apply("acme", Change(written=[use("acme q"), use("acme other", card="up/currency")]), 0)
    await store.apply("globex", Change(written=[use("globex q", caller="bob")]), 0)
    assert await store.audiences() == ["acme", "globex"]
    assert [u.question for u in (await store.load("globex"))[1]] == ["globex q"]
    assert await store.clear("acme", ["up/currency"]) == 1
    assert [u.question for u in (await store.load("acme"))[1]] == ["acme q"]
    assert await store.clear("acme") == 1
    assert await store.audiences() == ["globex"]
    assert (await store.load("globex"))[1] == [use("globex q", caller="bob")]
    assert await store.version("acme") == 3  # every change, clearing too, moves the version


async def test_two_learners_on_one_store_see_each_others_uses(store: LedgerStore) -> None:
    clock = itertools.count(1)
    first, second = (Learner(store, clock=lambda: float(next(clock))) for _ in range(2))
    await first.refresh("")
    await second.refresh("")
    assert await first.record("", "weather in Paris", "up/weather", "alice")
    # the second's view is stale: its change is refused, it reads the audience again and retries
    assert await second.record("", "rain in Lyon", "up/weather", "bob")
    assert await first.refresh("")
    assert first.questions("") == {("", "up/weather"): ["rain in Lyon", "weather in Paris"]}
    assert not await second.refresh("")  # nothing moved since its own write
    assert await store.clear("") == 2
    assert await first.refresh("")
    assert first.questions("") == {}


async def test_the_sqlite_ledger_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "home" / "ledger.sqlite3"
    before = SqliteLedgerStore(path)
    assert await Learner(before, clock=lambda: 5.0).record("", "weather in Paris", "up/weather", "alice")
    before.close()
    after = SqliteLedgerStore(path)
    assert await after.load("") == (1, [use("weather in Paris", at=5.0)])
    assert path.parent.stat().st_mode & 0o777 == 0o700
    after.close()


async def test_a_file_that_is_not_a_ledger_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.write_bytes(b"not a database" * 100)
    from skilldeck.errors import ConfigError

    with pytest.raises(
        ConfigError, match=r"move the file away \(what it learned is lost with it\) or set SKILLDECK_HOME elsewhere"
    ):
        SqliteLedgerStore(path)


async def test_redis_entries_not_written_by_a_gateway_are_left_out(redis_url: str) -> None:
    async with RedisLedgerStore(redis_url, prefix="test:ledger:forged") as store:
        await store.apply("", Change(written=[use("honest")]), 0)
        keys, _ = store._keys("")
        await store._redis.hset(keys[0], mapping={"not json": "x", '["up/weather","forged"]': '["eve","soon"]'})
        assert (await store.load(""))[1] == [use("honest")]


async def test_a_learner_holds_at_most_its_audiences_and_reads_an_evicted_one_again(tmp_path: Path) -> None:
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    learner = Learner(store, clock=lambda: 1.0, max_audiences=2)
    for audience in ("acme", "globex", "initech"):
        assert await learner.record(audience, f"question of {audience}", "up/weather", "alice")
    assert sorted(learner._ledgers) == ["globex", "initech"]  # two held: acme, the least recent, went
    assert learner.questions("acme") == {}  # not held: nothing read until it is refreshed
    assert await learner.refresh("acme")
    assert learner.questions("acme") == {("", "up/weather"): ["question of acme"]}
    assert sorted(learner._ledgers) == ["acme", "initech"]
    store.close()


async def test_a_change_the_store_refused_to_write_is_not_believed_written(tmp_path: Path) -> None:
    import sqlite3

    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    learner = Learner(store, clock=lambda: 1.0)
    await learner.refresh("")
    store._lanes["write"].db.execute("PRAGMA query_only = ON")  # reads answer, every write fails
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await learner.record("", "weather in Paris", "up/weather", "alice")
    assert learner.questions("") == {}
    store._lanes["write"].db.execute("PRAGMA query_only = OFF")
    assert await learner.record("", "weather in Paris", "up/weather", "alice")
    assert learner.questions("") == {("", "up/weather"): ["weather in Paris"]}
    store.close()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_a_store_holds_n_audiences_and_refuses_the_first_use_of_one_more(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """At N audiences a new one is refused, never made room for: the N keep what they learned and
    keep learning; clearing one frees its place."""
    async with a_store(kind, request, tmp_path, max_audiences=3) as store:
        for i, audience in enumerate(("acme", "globex", "initech")):  # N
            assert await store.apply(audience, Change(written=[use(f"q{i}")]), 0) == 1
        with pytest.raises(LedgerFull, match="holds 3 audiences, its most"):  # N + 1
            await store.apply("umbrella", Change(written=[use("flood")]), 0)
        assert await store.audiences() == ["acme", "globex", "initech"]
        assert await store.load("umbrella") == (0, [])
        assert await store.apply("acme", Change(written=[use("more")]), 1) == 2  # one of the N learns on
        version = await store.apply("umbrella", Change(), 0)  # a change that writes nothing is no use
        assert version is not None
        assert await store.clear("globex") == 1
        assert await store.apply("umbrella", Change(written=[use("now there is room")]), version) is not None
        assert await store.audiences() == ["acme", "initech", "umbrella"]


async def test_a_learner_records_nothing_for_an_audience_the_store_refused_and_says_so_once_an_hour(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3", max_audiences=1)
    learner = Learner(store, clock=lambda: 5.0)
    assert await learner.record("acme", "weather in Paris", "up/weather", "alice")
    with caplog.at_level(logging.WARNING, logger="skilldeck.learning._learner"):
        for i in range(50):  # a flood of new audiences (tenants) learns nothing, and logs one line
            assert not await learner.record(f"tenant-{i}", "weather in Paris", "up/weather", "mallory")
    assert learner.refused == 50
    assert [r.getMessage() for r in caplog.records] == [
        f"the usage ledger at {store.where} holds 1 audiences, its most: uses of another audience are not "
        "recorded (clear one with `skilldeck history --audience T --clear`, or raise --ledger-audiences) "
        "(1 refused since the last warning)"
    ]
    assert learner.questions("tenant-0") == {}  # not believed recorded in memory either
    assert await store.audiences() == ["acme"]
    assert await learner.record("acme", "rain in Lyon", "up/weather", "alice")  # the audience held learns on
    assert MAX_AUDIENCES == 256
    store.close()


async def test_a_learner_says_how_many_callers_an_audience_has_and_what_they_trust(tmp_path: Path) -> None:
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    learner = Learner(store, clock=lambda: 1.0)
    assert learner.callers("") == 0
    assert not learner.questions_of("", ("", "up/weather")).trusted
    await learner.record("", "weather in Paris", "up/weather", "alice")
    assert learner.callers("") == 1
    assert learner.questions_of("", ("", "up/weather")).trusted  # the audience's only caller teaches fully
    await learner.record("", "merge two pdfs", "up/pdf", "bob")
    assert learner.callers("") == 2
    assert not learner.questions("")[("", "up/weather")].trusted  # one caller of several: capped
    store.close()
