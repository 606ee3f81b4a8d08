"""The whole History B path on the demo's real in-process servers, and the offline ``select`` CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skilldeck.ask import ask, snapshot_from_host
from skilldeck.cli import main
from skilldeck.demo import example_pack
from skilldeck.demo._servers import demo_servers
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.select._gate import InvalidArguments, ToolNotActive, ToolNotListed
from skilldeck.server import create_server

IN_SCOPE = {
    "Find senior Java roles in Costa Rica": "jobs/job-search",
    "Show me remote Python data engineer openings": "jobs/job-search",
    "File a bug report: the export button crashes the app": "tracker/bug-triage",
    "Close the CSV export bug, it is fixed": "tracker/bug-triage",
}
UNRELATED = [
    "What will the weather be in Paris tomorrow?",
    "Write a sonnet about my cat",
    "Translate 'good morning' into Japanese",
    "What is the capital of Australia?",
]


def demo_host() -> Host:
    return Host([ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()])


@pytest.mark.anyio
async def test_in_scope_questions_choose_and_unrelated_ones_abstain() -> None:
    async with demo_host() as host:
        for question, expected in IN_SCOPE.items():
            result = await ask(host, question)
            assert not result.decision.abstain, (question, result.decision.reason)
            chosen = result.decision.chosen[0]
            assert f"{chosen.server}/{chosen.name}" == expected, (question, result.decision.reason)
            assert result.loaded is not None
            assert result.loaded.verified
        for question in UNRELATED:
            result = await ask(host, question)
            assert result.decision.abstain, (question, result.decision.reason)
            assert "abstained" in result.decision.reason
            assert result.tools == []
            assert result.history_b.tool_count == 0


@pytest.mark.anyio
async def test_call_goes_through_the_gate_on_the_listing_session() -> None:
    async with demo_host() as host:
        args = {"query": "Java", "location": "Costa Rica", "seniority": "senior"}
        result = await ask(host, "Find senior Java roles in Costa Rica", call=("search_jobs", args))
        assert result.tools == [("jobs", "search_jobs")]
        assert result.call is not None
        jobs = result.call["result"]["structuredContent"]["result"]
        assert {j["id"] for j in jobs} >= {"JOB-2001", "JOB-2002"}
        assert all(j["country"] == "Costa Rica" and j["seniority"] == "senior" for j in jobs)
        for name, arguments, error in [
            ("get_job", {"job_id": "JOB-2001"}, ToolNotActive),
            ("drop_tables", {}, ToolNotListed),
            ("search_jobs", {"query": 5}, InvalidArguments),
        ]:
            with pytest.raises(error):
                await ask(host, "Find senior Java roles in Costa Rica", call=(name, arguments))


@pytest.mark.anyio
async def test_history_b_is_smaller_than_history_a_and_renders_for_both_apis() -> None:
    async with demo_host() as host:
        for render in ("openai", "anthropic", "text"):
            result = await ask(host, "Find senior Java roles in Costa Rica", render=render)  # type: ignore[arg-type]
            assert result.history_b.tool_count == 1
            assert result.history_a.tool_count == 8
            assert result.history_b.render == render


@pytest.mark.anyio
async def test_snapshot_and_select_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with demo_host() as host:
        snapshot = snapshot_from_host(host).to_json()
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(snapshot))
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"query": "Find senior Java roles in Costa Rica"})
        + "\n\n"
        + json.dumps({"query": UNRELATED[0]})
        + "\n"
    )
    assert main(["select", "--catalog", str(path), "--queries", str(queries), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2
    first: dict[str, Any] = lines[0]
    assert set(first) == {"query", "abstain", "confidence", "reason", "ranked", "tools", "needs"}
    assert first["needs"][0]["need"] == first["query"]  # one question: one need, with its own shortlist
    assert first["abstain"] is False
    assert 0.0 <= first["confidence"] <= 1.0
    assert len(first["ranked"]) >= 8  # every card of this small catalog (10 deep when there are 10)
    assert set(first["ranked"][0]) >= {"server", "kind", "name", "score"}
    assert first["tools"] == [{"server": "jobs", "name": "search_jobs"}]
    assert lines[1]["abstain"] is True
    queries.write_text("not json\n")
    assert main(["select", "--catalog", str(path), "--queries", str(queries)]) == 1
    assert "q.jsonl:1: not JSON" in capsys.readouterr().err


@pytest.mark.anyio
async def test_a_skill_larger_than_a_tool_less_catalog_is_reported_honestly() -> None:
    server, _ = create_server(example_pack(), name="pack")
    async with Host([ServerSpec("pack", InProcessServer(server))]) as host:
        result = await ask(host, "review my code for security problems")
    assert not result.decision.abstain
    assert result.loaded is not None
    a, b = result.history_a.tokens, result.history_b.tokens
    assert result.history_a.tool_count == 0
    assert b > a
    summary = result.to_json()["tokens"]["summary"]
    assert summary == result.token_summary
    assert "x fewer" not in summary
    assert "History B is larger here: the skill text and the cards outweigh a 0-tool catalog" in summary


def test_ask_cli_abstention_does_not_claim_a_skill(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", UNRELATED[0]]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "abstained: nothing is close enough" in out
    assert "History B (the cards only: it abstained)" in out
    assert "this skill" not in out
    assert "x fewer" in out  # 8 schemas against a few cards
