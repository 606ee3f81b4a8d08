"""``skilldeck demo`` runs on the bundled servers and pack and shows the whole path."""

from __future__ import annotations

import io
import json
import re
from importlib import resources
from pathlib import Path

import pytest
from rich.console import Console

from skilldeck.demo import example_pack, livemcpbench_snapshot, run_demo, tool_signature


def test_example_pack_is_found() -> None:
    assert (example_pack() / "job-search" / "SKILL.md").is_file()


def test_the_livemcpbench_snapshot_ships_in_the_package_with_its_licence() -> None:
    snapshot = livemcpbench_snapshot()
    assert len(snapshot.servers) == 70
    assert sum(len(s.tools) for s in snapshot.servers) == 527
    data = resources.files("skilldeck.demo") / "data"
    assert "Apache License" in (data / "LIVEMCPBENCH-LICENSE").read_text(encoding="utf-8")
    notice = (data / "README.md").read_text(encoding="utf-8")
    assert "icip-cas/LiveMCPBench" in notice
    assert "Changed from the original" in notice


def test_a_tool_schema_folds_to_one_line() -> None:
    tool = {
        "name": "search",
        "inputSchema": {"type": "object", "properties": {"q": {}, "limit": {}}, "required": ["q"]},
    }
    assert tool_signature("web", tool) == "web/search(q, limit?)"
    assert tool_signature("web", {"name": "ping"}) == "web/ping()"


@pytest.mark.anyio
async def test_demo_shows_the_history_b_path_the_abstention_and_the_extension() -> None:
    out = io.StringIO()
    await run_demo(Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    # part 1: question -> chosen skill -> verified SKILL.md -> one schema -> gated call -> tokens
    assert "chose skill jobs/job-search" in text
    assert 'origin="mcp" server="jobs" uri="skill://job-search/SKILL.md" verified="true"' in text
    # the exposed schema is folded to one line (name and parameters), not printed as JSON
    assert "exposed: 1 tool schema (" in text
    assert "\n  jobs/search_jobs(query, location?, seniority?, remote?, limit?)\n" in text
    assert '"anyOf"' not in text
    assert '"parameters"' not in text
    assert "JOB-2001  Senior Java Engineer (Spring Boot)" in text
    # History A against B, honestly, on the 3 demo servers ...
    assert "tokens (cl100k), these 3 servers: History A (every schema of every server, 8 tool schemas)" in text
    # ... and on LiveMCPBench's 70 real servers plus these 3, where the saving shows
    scale = next(line for line in text.splitlines() if line.startswith("tokens (cl100k), 73 servers:"))
    assert "History A (every schema of every server, 535 tool schemas)" in scale
    assert "History B (cards, this skill, 1 tool schema)" in scale
    ratio = re.search(r"· ([\d.]+)x fewer$", scale)
    assert ratio is not None, scale
    assert float(ratio.group(1)) >= 30  # the benchmark's target for History A / B
    assert (
        "70 servers, 527 tools (the bundled LiveMCPBench snapshot) + 3 demo servers: chose skill jobs/job-search"
        in text
    )
    # the out-of-scope question abstains with reasons and exposes nothing
    assert "abstained: nothing is close enough" in text
    assert "exposed tool schemas: 0" in text
    # part 2: the Skills extension in both eras
    assert "2026-07-28 session (negotiated 2026-07-28)" in text
    assert "2025-11-25 session (negotiated 2025-11-25)" in text
    assert "size, digest and frontmatter verified" in text
    assert "refused (-32602" in text
    assert "identical to the 2026-07-28 listing: True" in text


@pytest.mark.anyio
async def test_the_demo_drives_the_gateway_with_a_real_client_in_both_eras() -> None:
    from skilldeck.demo._gateway import gateway_tour

    out = io.StringIO()
    await gateway_tour(Console(file=out, width=400, color_system=None), livemcpbench_snapshot())
    text = out.getvalue()
    assert "2026-07-28 session" in text
    assert "2025-11-25 session" in text
    assert text.count("tools/list: ['find', 'load', 'read_skill_file', 'call']") == 2
    ratio = re.search(r"of LiveMCPBench's 70 servers [\d,]+ \((\d+)x the gateway's list\)", text)
    assert ratio is not None, text
    assert int(ratio.group(1)) >= 50
    assert text.count("find 'Find senior Java roles in Costa Rica' → jobs/job-search (skill") == 2
    assert text.count("tools now active: ['jobs/search_jobs']") == 2
    assert (
        "notifications/tools/list_changed received: True; tools/list now: ['find', 'load', 'read_skill_file', 'call', 'jobs__search_jobs']"
        in text
    )
    assert text.count("call jobs/search_jobs → isError=False") == 2
    assert (
        text.count(
            "call tracker/close_issue (never loaded) → isError=True: tracker/close_issue is not in the active skill's tools"
        )
        == 2
    )


@pytest.mark.anyio
async def test_history_a_is_one_measure_in_the_demo_and_the_gateways_decision_log(tmp_path: Path) -> None:
    from skilldeck.demo._gateway import gateway_tour
    from skilldeck.demo._servers import demo_servers
    from skilldeck.gateway import GatewayService
    from skilldeck.gateway._service import DecisionLog
    from skilldeck.host import Host, InProcessServer, ServerSpec
    from skilldeck.serving._policy import Caller

    out = io.StringIO()
    await gateway_tour(Console(file=out, width=400, color_system=None), livemcpbench_snapshot())
    shown = re.findall(
        r"History A \(every schema as OpenAI tools\) of these 3 servers is ([\d,]+) tokens", out.getvalue()
    )
    assert len(shown) == 2, out.getvalue()
    specs = [ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()]
    log = tmp_path / "decisions.jsonl"
    async with Host(specs) as host:
        GatewayService(host, log=DecisionLog(str(log))).find(Caller(), "c1", "find senior java roles")
    (logged,) = [json.loads(line)["history_a_tokens"] for line in log.read_text().splitlines()]
    assert {int(n.replace(",", "")) for n in shown} == {logged}
