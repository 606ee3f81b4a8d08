"""The official MCP conformance suite (server mode) against a running ``skilldeck serve --http``.

Each SEP-2640 (Skills extension) scenario is run with ``-o`` so the suite writes its checks to
``checks.json``; the test reads that file rather than scraping the pretty-printed output, and
requires: exit code 0, no FAILURE / WARNING / SKIPPED (or any other non-passing) check, and at
least one SUCCESS. The enumeration scenario runs again against a server started with
``--page-size 2``, so ``skills/list`` pagination is exercised over several pages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.conformance

SCENARIOS = ["sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"]
# INFO checks are informational notes; everything else besides SUCCESS counts as a problem.
PASSING = {"SUCCESS", "INFO"}


@pytest.fixture
def run_scenario(run_npx, conformance_cmd: list[str], tmp_path: Path):
    """Run one scenario against a server, assert it passed cleanly, and return its checks."""

    def run(server: Any, scenario: str) -> list[dict[str, Any]]:
        return _run_scenario(run_npx, conformance_cmd, server, scenario, tmp_path / "results")

    return run


def _run_scenario(
    run_npx, conformance_cmd: list[str], server: Any, scenario: str, out_dir: Path
) -> list[dict[str, Any]]:
    result = run_npx(*conformance_cmd, "server", "--url", server.url, "--scenario", scenario, "-o", str(out_dir))
    server.assert_alive()
    found = sorted(out_dir.glob(f"server-{scenario}-*/checks.json"))
    assert len(found) == 1, (
        f"expected one checks.json for {scenario} under {out_dir}, found {found} "
        f"(the scenario may have been skipped or crashed)\n{result.describe()}\n--- server log ---\n{server.log()}"
    )
    checks: list[dict[str, Any]] = json.loads(found[0].read_text())

    problems = [c for c in checks if c.get("status") not in PASSING]
    counts: dict[str, int] = {}
    for c in checks:
        counts[c.get("status", "?")] = counts.get(c.get("status", "?"), 0) + 1
    detail = "\n".join(
        f"  [{c.get('status')}] {c.get('id')}: {c.get('errorMessage') or c.get('description')}"
        + (f"\n      details: {json.dumps(c['details'])}" if c.get("details") else "")
        for c in problems
    )
    assert not problems, (
        f"conformance scenario {scenario} against {server.url} (page size {server.page_size or 'default'}): "
        f"{counts}\n{detail}\n--- server log ---\n{server.log()[-4000:]}"
    )
    assert counts.get("SUCCESS", 0) >= 1, f"{scenario}: no SUCCESS check at all: {counts}\n{result.describe()}"
    assert result.returncode == 0, (
        f"{scenario}: the suite exited non-zero although every check passed\n{result.describe()}"
    )
    return checks


def check(checks: list[dict[str, Any]], check_id: str) -> dict[str, Any]:
    matching = [c for c in checks if c.get("id") == check_id]
    assert matching, f"check {check_id} missing; ran: {sorted({c.get('id') for c in checks})}"
    return matching[0]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sep_2640_scenario(run_scenario, skilldeck_server, scenario: str) -> None:
    run_scenario(skilldeck_server, scenario)


def test_sep_2640_enumeration_paginated(run_scenario, paged_skilldeck_server) -> None:
    server = paged_skilldeck_server
    assert server.page_size == 2
    assert server.skill_count > 2, "the example pack must hold more than one page of skills at --page-size 2"
    checks = run_scenario(server, "sep-2640-skills-enumeration")

    # The suite walked several pages and saw every skill exactly once across them.
    pagination = check(checks, "sep-2640-skills-list-pagination")
    pages = (pagination.get("details") or {}).get("pages")
    assert isinstance(pages, int), f"pagination check carries no page count: {pagination}"
    assert pages >= -(-server.skill_count // 2), f"expected ≥ {-(-server.skill_count // 2)} pages, got {pagination}"
    atomic = check(checks, "sep-2640-skills-list-entry-atomic")
    assert (atomic.get("details") or {}).get("distinctUris") == server.skill_count, atomic
