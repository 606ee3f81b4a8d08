"""Registry discovery end to end with real parts: a loopback registry, the real npm memory server, a real PyPI server.

``skilldeck gateway --registry URL`` is started as a user would, in front of ``skilldeck serve
examples/skills`` only, with a loopback registry (``bench/registry/server.py``) serving the
official registry's seed entries and the four that install here (``bench/registry/data``). The
official Python client, in both eras, asks what nothing configured fits; ``find`` shows the
memory server's catalog card; ``add`` is accepted by the client's elicitation callback; the
gateway runs exactly ``npx -y @modelcontextprotocol/server-memory@2026.8.31`` (seen in its
process tree) and its tools are found, loaded and called. Declined, nothing runs (the process
tree is checked). The PyPI time server is added with no ``uvx`` on the PATH: from a venv of its
own under ``$SKILLDECK_HOME/venvs``, made once the person agreed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import mcp_types as types
import pytest
from mcp.client import Client

from ..host.hostile_http import serving_in_thread
from ..host.process_tree import tree
from ..server.helpers import REPO, start_gateway, stop
from .conftest import SERVER_MEMORY

pytestmark = [pytest.mark.thirdparty, pytest.mark.anyio]

DATA = REPO / "bench" / "registry" / "data"
MEMORY = "io.github.modelcontextprotocol/server-memory"
TIME = "io.github.modelcontextprotocol/server-time"
QUESTION = "remember that Ada works at Acme: keep people and their relations in a knowledge graph"


@pytest.fixture(scope="module")
def registry(load_bench: Callable[[str], ModuleType]) -> Iterator[str]:
    entries = json.loads((DATA / "seed-2025-05-16.json").read_text()) + json.loads(
        (DATA / "installable.json").read_text()
    )
    app = load_bench("registry/server.py").Registry(entries)
    with serving_in_thread(app, path="/ok") as url:
        yield url


def gateway_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, without_uvx: bool = False) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SKILLDECK_HOME", str(home))
    monkeypatch.setenv("npm_config_yes", "true")
    monkeypatch.setenv("npm_config_update_notifier", "false")
    if without_uvx and shutil.which("uvx"):
        folders = [f for f in os.environ["PATH"].split(os.pathsep) if not (Path(f) / "uvx").exists()]
        monkeypatch.setenv("PATH", os.pathsep.join(folders))
    return home


def config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    deck = {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(REPO / "examples" / "skills")]}
    path.write_text(json.dumps({"mcpServers": {"deck": deck}}))
    return path


def running(pid: int, argument: str) -> list[str]:
    """The command lines of ``pid``'s descendants one of whose arguments is ``argument``."""
    found = []
    for child, _ in tree(pid):
        try:
            args = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argument.encode() in args:
            found.append(" ".join(a.decode(errors="replace") for a in args if a))
    return found


class Person:
    def __init__(self, action: str, content: dict[str, Any]) -> None:
        self.action, self.content, self.messages = action, content, []  # type: ignore[var-annotated]

    async def __call__(self, ctx: Any, params: Any) -> types.ElicitResult:
        self.messages.append(params.message)
        if self.action != "accept":
            return types.ElicitResult(action=self.action)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content=self.content)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_the_memory_server_is_found_added_run_pinned_and_used(
    npx: str, registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, era: Literal["auto", "legacy"]
) -> None:
    home = gateway_env(tmp_path, monkeypatch)
    memory_file = tmp_path / "memory.jsonl"
    person = Person("accept", {"MEMORY_FILE_PATH": str(memory_file)})
    proc, match = start_gateway(
        config(tmp_path), tmp_path / "gateway.log", "--registry", registry, "--lexical", timeout=120
    )
    try:
        async with Client(
            match["url"], mode=era, cache=None, elicitation_callback=person, read_timeout_seconds=180
        ) as c:
            found = structured(await c.call_tool("find", {"query": QUESTION}))
            cards = {card["name"]: card for card in found.get("catalog", [])}
            assert MEMORY in cards, found
            card = cards[MEMORY]
            assert card["runs"] == {
                "registryType": "npm",
                "package": "@modelcontextprotocol/server-memory",
                "version": "2026.8.31",
            }
            assert card["needs"] == {"env": ["MEMORY_FILE_PATH"]}
            assert running(proc.pid, SERVER_MEMORY) == []  # find runs nothing
            added = structured(await c.call_tool("add", {"id": card["id"]}))
            assert added["server"] == "server-memory", added
            assert added["tools"] >= 5, added
            assert f"It runs, on this machine: npx -y {SERVER_MEMORY}" in person.messages[0]
            (command,) = running(proc.pid, SERVER_MEMORY)
            assert command.endswith(f"-- npx -y {SERVER_MEMORY}"), command  # behind the stdio guard, exactly pinned
            found = structured(await c.call_tool("find", {"query": "create entities in the knowledge graph"}))
            assert found["cards"][0]["id"] == "server-memory/create_entities", found
            structured(await c.call_tool("load", {"ids": ["server-memory/create_entities"]}))
            entities = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["works at Acme"]}]}
            called = await c.call_tool("call", {"tool": "server-memory/create_entities", "arguments": entities})
            assert not called.is_error, called.content
        assert "Ada" in memory_file.read_text()
        kept = json.loads((home / "added.json").read_text())["mcpServers"]["server-memory"]
        assert (kept["command"], kept["args"]) == ("npx", ["-y", SERVER_MEMORY])
    finally:
        stop(proc)


async def test_a_decline_runs_nothing(npx: str, registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = gateway_env(tmp_path, monkeypatch)
    person = Person("decline", {})
    proc, match = start_gateway(
        config(tmp_path), tmp_path / "gateway.log", "--registry", registry, "--lexical", timeout=120
    )
    try:
        async with Client(match["url"], mode="auto", cache=None, elicitation_callback=person) as c:
            found = structured(await c.call_tool("find", {"query": QUESTION}))
            card = next(card for card in found["catalog"] if card["name"] == MEMORY)
            before = tree(proc.pid)
            answer = await c.call_tool("add", {"id": card["id"]})
            assert answer.is_error
            assert "the person declined" in answer.content[0].text
            assert len(person.messages) == 1
            assert tree(proc.pid) == before  # add answers after it started what it runs: nothing was
            assert "server-memory" not in (tmp_path / "gateway.log").read_text()
            assert running(proc.pid, SERVER_MEMORY) == []
            assert running(proc.pid, "npx") == []
        assert not (home / "added.json").exists()
    finally:
        stop(proc)


async def test_a_pypi_server_runs_from_a_venv_of_its_own_without_uvx(
    registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = gateway_env(tmp_path, monkeypatch, without_uvx=True)
    person = Person("accept", {"--local-timezone": "Etc/UTC"})
    proc, match = start_gateway(
        config(tmp_path), tmp_path / "gateway.log", "--registry", registry, "--lexical", timeout=120
    )
    try:
        async with Client(
            match["url"], mode="auto", cache=None, elicitation_callback=person, read_timeout_seconds=600
        ) as c:
            found = structured(await c.call_tool("find", {"query": "convert the current time between time zones"}))
            card = next(card for card in found.get("catalog", []) if card["name"] == TIME)
            assert card["runs"] == {"registryType": "pypi", "package": "mcp-server-time", "version": "2026.10.10"}
            added = structured(await c.call_tool("add", {"id": card["id"]}))
            venv = home / "venvs" / "mcp-server-time-2026.10.10"
            assert f"(first installing mcp-server-time==2026.10.10 into {venv} with pip)" in person.messages[0]
            assert added["server"] == "server-time", added
            assert added["tools"] == 2, added
            commands = running(
                proc.pid, str(venv / "bin" / "mcp-server-time")
            )  # the stdio guard, and the script itself
            assert commands, commands
            assert all(c.endswith("--local-timezone Etc/UTC") for c in commands), commands
            structured(await c.call_tool("load", {"ids": ["server-time/get_current_time"]}))
            called = await c.call_tool(
                "call", {"tool": "server-time/get_current_time", "arguments": {"timezone": "Etc/UTC"}}
            )
            assert not called.is_error
            assert "Etc/UTC" in called.content[0].text
    finally:
        stop(proc)
