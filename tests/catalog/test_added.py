"""``added.json``: the servers a person added, apart from their config, private, and safe beside a second process."""

from __future__ import annotations

import json
import multiprocessing
import stat
from pathlib import Path
from typing import Any

import pytest

from skilldeck.catalog import AddedServers, Runtimes, choose, read_entry
from skilldeck.catalog._added import MAX_ADDED, MAX_ADDED_BYTES
from skilldeck.errors import AddRefused, ConfigError
from skilldeck.host._config import StdioServer

from .conftest import entry, package

HERE = Runtimes(npx="npx", python="python3", venvs="/v")


def kept(name: str = "io.github.example/weather", secret: str = "s3cret-value") -> dict[str, Any]:
    env = [{"name": "API_KEY", "isSecret": True}]
    launch, _ = choose(read_entry(entry(name, packages=[package(environmentVariables=env)])), HERE)
    assert launch is not None
    return launch.config_entry({"API_KEY": secret}, added_at="2026-01-02T03:04:05Z")


def test_an_added_server_is_kept_private_and_read_back_as_an_upstream(tmp_path: Path) -> None:
    added = AddedServers(tmp_path / "home")
    added.add("weather", kept())
    assert stat.S_IMODE(added.path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o700
    document = json.loads(added.path.read_text())
    assert document["dev.skilldeck/format"] == 1
    assert list(document["mcpServers"]) == ["weather"]
    (spec,) = added.specs(timeout=30)
    assert spec.label == "weather"
    assert spec.source == str(added.path)
    assert isinstance(spec.transport, StdioServer)
    assert spec.transport.args == ("-y", "@example/weather-mcp@1.2.3")
    assert spec.redact("stderr: s3cret-value") == "stderr: <API_KEY>"  # its secret never reaches a message
    assert added.find("io.github.example/weather") == "weather"
    assert added.find("weather") == "weather"


def test_a_server_is_added_once_and_a_label_taken_is_refused(tmp_path: Path) -> None:
    added = AddedServers(tmp_path)
    added.add("weather", kept())
    with pytest.raises(AddRefused) as twice:
        added.add("weather-2", kept())
    assert twice.value.code == "added"
    assert "added already (as 'weather')" in str(twice.value)
    with pytest.raises(AddRefused) as taken:
        added.add("weather", kept("io.github.other/weather"))
    assert taken.value.code == "label"
    assert "skilldeck servers remove weather" in str(taken.value)


def test_the_file_holds_its_most_and_refuses_one_more(tmp_path: Path) -> None:
    added = AddedServers(tmp_path)
    for i in range(MAX_ADDED):
        added.add(f"s{i}", kept(f"io.github.example/s{i}"))
    with pytest.raises(AddRefused, match=f"holds {MAX_ADDED} servers, its most"):
        added.add("one-more", kept("io.github.example/one-more"))
    assert len(added.entries()) == MAX_ADDED


def test_remove_forgets_by_label_or_name(tmp_path: Path) -> None:
    added = AddedServers(tmp_path)
    added.add("weather", kept())
    added.add("other", kept("io.github.example/other"))
    assert added.remove("io.github.example/weather") == "weather"
    assert added.remove("nothing") is None
    assert list(added.entries()) == ["other"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{half", "is not JSON"),
        ('{"servers": {}}', 'no "mcpServers" object'),
        ('{"dev.skilldeck/format": 2, "mcpServers": {}}', "written by a newer skilldeck"),
    ],
)
def test_a_file_that_cannot_be_read_is_never_written_over(tmp_path: Path, text: str, said: str) -> None:
    added = AddedServers(tmp_path)
    added.path.write_text(text)
    with pytest.raises(ConfigError, match=said):
        added.add("weather", kept())
    assert added.path.read_text() == text


def test_a_file_over_its_byte_bound_is_not_read(tmp_path: Path) -> None:
    added = AddedServers(tmp_path)
    added.path.write_text('{"mcpServers": {}, "pad": "' + "x" * MAX_ADDED_BYTES + '"}')
    with pytest.raises(ConfigError, match="is over"):
        added.entries()


def test_an_entry_that_is_no_server_entry_is_named(tmp_path: Path) -> None:
    added = AddedServers(tmp_path)
    added.path.write_text(json.dumps({"mcpServers": {"broken": {"args": ["x"]}}}))
    with pytest.raises(ConfigError, match=r"added.json: mcpServers.broken"):
        added.specs(timeout=30)


def _add_many(home: str, first: int, count: int) -> None:
    added = AddedServers(home)
    for i in range(first, first + count):
        added.add(f"s{i}", kept(f"io.github.example/s{i}"))


def test_two_processes_adding_at_once_both_land(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_many, args=(str(tmp_path), first, 15)) for first in (0, 100)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    assert len(AddedServers(tmp_path).entries()) == 30
