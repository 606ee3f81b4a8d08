"""The ledger belongs to the upstreams that taught it: two gateways on one home, labels that differ,
an older ledger file, and removing one entry with ``skilldeck history``.

Real ``skilldeck gateway`` processes on one ``$SKILLDECK_HOME`` (the test's own), a real SDK client, the
usage upstream over stdio, and the example pack served by ``skilldeck serve`` for a gateway of another
configuration.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest

from skilldeck.cli import main
from skilldeck.learning import SqliteLedgerStore, Use
from skilldeck.learning._stores import SCHEMA_VERSION

from ..conftest import EXAMPLES
from ..server.helpers import start_gateway, stop
from .test_gateway_learning import NEW, UPSTREAM, WEATHER, first_card, teach, use

pytestmark = pytest.mark.anyio


def config_of(tmp_path: Path, name: str, servers: dict[str, dict[str, object]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def upstream(label: str) -> dict[str, dict[str, object]]:
    return {label: {"command": sys.executable, "args": [str(UPSTREAM)]}}


PACK = {"pack": {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(EXAMPLES)]}}


async def history(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert await anyio.to_thread.run_sync(main, ["history", *args]) == 0
    return capsys.readouterr().out


async def test_a_second_gateway_of_another_configuration_keeps_what_the_first_learned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "home"))
    first, started = start_gateway(
        config_of(tmp_path, "a.json", upstream("up")), tmp_path / "a.log", "--lexical", "--learn-anonymous"
    )
    try:
        await use(started["url"], "c1", WEATHER, "up/forecast", "up/forecast", {"city": "Paris"})
    finally:
        stop(first)
    assert "up/forecast" in await history(capsys)
    # a desktop's gateway and an editor's, one home: the second has none of the first's upstreams
    second, started = start_gateway(
        config_of(tmp_path, "b.json", PACK), tmp_path / "b.log", "--lexical", "--learn-anonymous"
    )
    try:  # a find reads the ledger and prunes the cards its own upstreams no longer list
        assert (await first_card(started["url"], "review my pull request"))[0] == "pack/code-review"
    finally:
        stop(second)
    shown = await history(capsys)
    assert "up/forecast" in shown, shown  # never pruned by a gateway whose configuration does not hold its upstream
    assert WEATHER in shown


async def test_the_same_server_under_another_label_ranks_with_what_it_taught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "home"))
    first, started = start_gateway(
        config_of(tmp_path, "a.json", upstream("up")), tmp_path / "a.log", "--lexical", "--learn-anonymous"
    )
    try:
        await teach(started["url"])
    finally:
        stop(first)
    renamed = config_of(tmp_path, "b.json", upstream("weather"))  # the same command line, another label
    second, started = start_gateway(renamed, tmp_path / "b.log", "--lexical", "--learn-anonymous")
    try:
        assert await first_card(started["url"], NEW) == ("weather/forecast", 1)
    finally:
        stop(second)
    assert "up/forecast" in await history(capsys)  # kept as taught: the entry names the card it was found as


async def test_a_ledger_of_the_first_layout_is_brought_up_to_date_with_every_use_kept(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE uses (audience TEXT NOT NULL, card TEXT NOT NULL, question TEXT NOT NULL, caller TEXT NOT NULL,
            at REAL NOT NULL, PRIMARY KEY (audience, card, question)) WITHOUT ROWID;
        CREATE TABLE versions (audience TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO uses VALUES ('', 'up/forecast', 'weather in Paris', 'alice', 5.0);
        INSERT INTO uses VALUES ('acme', 'up/convert', 'dollars to euros', '', 6.0);
        INSERT INTO versions VALUES ('', 3);
        """
    )
    db.commit()
    db.close()
    store = SqliteLedgerStore(path)
    try:
        assert await store.load("") == (3, [Use("weather in Paris", "up/forecast", "alice", 5.0, "")])
        assert (await store.load("acme"))[1] == [Use("dollars to euros", "up/convert", "", 6.0, "")]
    finally:
        store.close()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    check.close()


async def test_a_ledger_of_a_newer_layout_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    before = path.read_bytes()
    from skilldeck.errors import ConfigError

    with pytest.raises(ConfigError, match=f"has layout {SCHEMA_VERSION + 1}, newer than this skilldeck knows"):
        SqliteLedgerStore(path)
    assert path.read_bytes() == before


async def test_history_removes_one_entry_by_its_id_or_by_its_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "home"))
    store = SqliteLedgerStore(tmp_path / "home" / "ledger.sqlite3")
    from skilldeck.learning import Change

    uses = [Use(q, "up/forecast", "alice", float(i), "stdio x") for i, q in enumerate(("one", "two", "three"))]
    assert await store.apply("", Change(written=uses), 0) == 1
    store.close()
    shown = await history(capsys)
    ids = [line.split("]")[0].split("[")[1] for line in shown.splitlines() if line.startswith("    [")]
    assert len(ids) == 3, shown
    assert "taught by stdio x" in shown
    removed = await history(capsys, "--remove", ids[0])  # the newest first: "three"
    assert "removed 1 question (up/forecast: 'three')" in removed
    assert (
        await history(capsys, "--question", "two", "--clear")
        == f"cleared 1 question from {tmp_path / 'home' / 'ledger.sqlite3'}\n"
    )
    left = await history(capsys)
    assert "one" in left
    assert "two" not in left
    assert "three" not in left
    assert await anyio.to_thread.run_sync(main, ["history", "--remove", "ffffffff"]) != 0
    assert "no entry has the id 'ffffffff'" in capsys.readouterr().err
    assert await anyio.to_thread.run_sync(main, ["history", "--question", "nothing like it"]) != 0
    assert "no entry holds the question 'nothing like it'" in capsys.readouterr().err
