"""``skilldeck demo`` runs on the bundled servers and pack and shows the whole path."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from skilldeck.demo import example_pack, run_demo


def test_example_pack_is_found() -> None:
    assert (example_pack() / "job-search" / "SKILL.md").is_file()


@pytest.mark.anyio
async def test_demo_shows_the_history_b_path_the_abstention_and_the_extension() -> None:
    out = io.StringIO()
    await run_demo(Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    # part 1: question -> chosen skill -> verified SKILL.md -> one schema -> gated call -> tokens
    assert "chose skill jobs/job-search" in text
    assert 'origin="mcp" server="jobs" uri="skill://job-search/SKILL.md" verified="true"' in text
    assert "exposed: 1 tool schema(s) — jobs/search_jobs" in text
    assert "JOB-2001  Senior Java Engineer (Spring Boot)" in text
    assert "History A, every schema of every server" in text
    # the out-of-scope question abstains with reasons and exposes nothing
    assert "abstained: nothing is close enough" in text
    assert "exposed tool schemas: 0" in text
    # part 2: the Skills extension in both eras
    assert "2026-07-28 session (negotiated 2026-07-28)" in text
    assert "2025-11-25 session (negotiated 2025-11-25)" in text
    assert "size, digest and frontmatter verified" in text
    assert "refused (-32602" in text
    assert "identical to the 2026-07-28 listing: True" in text
