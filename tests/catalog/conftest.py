"""What the catalog tests share: server.json entries built to order, and the snapshot the benchmark reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "bench" / "registry" / "data"


def server(name: str = "io.github.example/weather", **fields: Any) -> dict[str, Any]:
    """A ``server.json`` (the ``server`` of an API entry) with an npm package, every field overridable."""
    base: dict[str, Any] = {
        "name": name,
        "description": "Weather forecasts and alerts for any city",
        "version": "1.2.3",
        "packages": [package()],
    }
    base.update(fields)
    return base


def entry(
    name: str = "io.github.example/weather",
    *,
    updated: str = "2026-01-01T00:00:00Z",
    status: str = "active",
    **fields: Any,
) -> dict[str, Any]:
    """An API entry (``{"server": ..., "_meta": ...}``) around :func:`server`."""
    official = {"status": status, "updatedAt": updated, "publishedAt": updated, "isLatest": True}
    return {"server": server(name, **fields), "_meta": {"io.modelcontextprotocol.registry/official": official}}


def package(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "registryType": "npm",
        "identifier": "@example/weather-mcp",
        "version": "1.2.3",
        "transport": {"type": "stdio"},
    }
    base.update(fields)
    return base


def snapshot() -> list[dict[str, Any]]:
    """The official registry's 471 seed entries (converted to the API's shape) and the four that install here."""
    return json.loads((DATA / "seed-2025-05-16.json").read_text()) + json.loads((DATA / "installable.json").read_text())


@pytest.fixture(scope="session")
def registry_app(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    """``bench/registry/server.py``: the loopback registry (the generic API, and the ways one misbehaves)."""
    return load_bench("registry/server.py")
