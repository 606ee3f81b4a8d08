"""``skilldeck history``: shows the ledger under ``$SKILLDECK_HOME``, filters it, clears it, names what does not exist."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from skilldeck.cli import main
from skilldeck.learning import LEDGER_FILE, Change, SqliteLedgerStore, Use


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "home"))
    store = SqliteLedgerStore(tmp_path / "home" / LEDGER_FILE)
    written = {
        "acme": [
            Use("weather forecast for Paris", "up/forecast", "alice", 0.0),
            Use("convert 10 dollars to euros", "up/convert", "alice", 60.0),
        ],
        "globex": [Use("rain in Lyon", "up/forecast", "bob", 120.0)],
    }
    for audience, uses in written.items():
        anyio.run(store.apply, audience, Change(written=uses), 0)
    store.close()
    return tmp_path / "home"


def test_history_shows_what_is_stored_per_audience_and_card(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history"]) == 0
    out = capsys.readouterr().out
    assert "audience 'acme': 2 questions on 2 cards" in out
    assert "1970-01-01 00:01:00Z  alice  convert 10 dollars to euros" in out
    assert "audience 'globex': 1 question on 1 card" in out
    assert main(["history", "--audience", "globex", "--card", "up/forecast"]) == 0
    out = capsys.readouterr().out
    assert "rain in Lyon" in out
    assert "acme" not in out


def test_clearing_one_card_of_one_audience_leaves_the_rest(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--audience", "acme", "--card", "up/forecast", "--clear"]) == 0
    assert "cleared 1 question from" in capsys.readouterr().out
    assert main(["history"]) == 0
    out = capsys.readouterr().out
    assert "weather forecast for Paris" not in out
    assert "convert 10 dollars to euros" in out
    assert "rain in Lyon" in out
    assert main(["history", "--clear"]) == 0
    assert "cleared 2 questions" in capsys.readouterr().out
    assert main(["history"]) == 0
    assert "is empty" in capsys.readouterr().out


def test_an_audience_or_card_that_does_not_exist_is_an_error_with_a_suggestion(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--audience", "acmee"]) == 1
    err = capsys.readouterr().err
    assert "holds no audience 'acmee' (did you mean 'acme'?)" in err
    assert main(["history", "--card", "up/forcast", "--clear"]) == 1
    err = capsys.readouterr().err
    assert "no question is recorded for the card 'up/forcast' (did you mean 'up/forecast'?)" in err
    assert main(["history", "--audience", "globex", "--card", "up/convert"]) == 1  # acme's card, not globex's
    assert "'up/convert'" in capsys.readouterr().err
    assert main(["history"]) == 0
    assert "weather forecast for Paris" in capsys.readouterr().out  # nothing was cleared


def test_no_ledger_yet_reads_as_empty_and_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "fresh"))
    assert main(["history"]) == 0
    assert f"the usage ledger at {tmp_path / 'fresh' / LEDGER_FILE} is empty" in capsys.readouterr().out
    assert main(["history", "--audience", "acme"]) == 1
    assert "holds no audience 'acme'; audiences: none" in capsys.readouterr().err
    assert not (tmp_path / "fresh").exists()
