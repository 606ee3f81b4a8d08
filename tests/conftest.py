"""Shared fixtures: the async backend and paths to the bundled examples."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "skills"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES
