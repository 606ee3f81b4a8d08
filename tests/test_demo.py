"""``skilldeck demo`` runs on the bundled pack and shows the whole server path."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from skilldeck.demo import example_pack, run_demo


def test_example_pack_is_found() -> None:
    assert (example_pack() / "job-search" / "SKILL.md").is_file()


@pytest.mark.anyio
async def test_demo_shows_cards_verified_load_directory_and_refusal() -> None:
    out = io.StringIO()
    await run_demo(Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "2026-07-28 session (negotiated 2026-07-28)" in text
    assert "2025-11-25 session (negotiated 2025-11-25)" in text
    assert "8 skills" in text
    assert "size, digest and frontmatter verified" in text
    assert "regional/" in text
    assert "refused (-32602" in text
    assert "identical to the 2026-07-28 listing: True" in text
