"""The registry benchmark runs from a clone: its catalog ships in ``bench/registry/data`` with its licence,
and every question is meant for a server of that catalog that could be added."""

from __future__ import annotations

import json

from skilldeck.catalog import Runtimes, choose, read_page

from .conftest import DATA, snapshot

EVERYWHERE = Runtimes(npx="npx", uvx="uvx", container="docker", python="python3", venvs="/v")


def test_the_seed_ships_with_the_registrys_licence() -> None:
    licence = (DATA / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License")
    assert len(json.loads((DATA / "seed-2025-05-16.json").read_text())) == 471


def test_every_question_is_meant_for_a_server_of_the_catalog_that_could_be_added() -> None:
    asked = json.loads((DATA.parent / "questions.json").read_text())
    entries = {e.name: e for e in read_page(snapshot()).entries}
    servers = [q["server"] for q in asked["out_of_scope"]]
    assert len(servers) >= 60
    assert len(set(servers)) == len(servers)
    for name in servers:
        assert name in entries, name
        assert choose(entries[name], EVERYWHERE)[0] is not None, name
    assert len(asked["in_scope"]) == 10
