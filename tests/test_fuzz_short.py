"""The short fuzz run of CI: bench/fuzz.py's schema-aware inputs, a fixed seed, every cell (serve and gateway,
2026-07-28 and 2025-11-25, in process and over HTTP), then the inputs that once failed. Sized by counting inputs:
about a minute on two cores. Each finding names its oracle (crash, traceback, 5xx, no-reply, outside-pack, ...)
and the input that made it; the long mode and its figures are in bench/README.md."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SEED = 20261201
INPROC_INPUTS = 6_000
HTTP_INPUTS = 1_000
HUGE = 200_000
CELLS = [
    (target, era, transport)
    for target in ("serve", "gateway")
    for era in ("2026-07-28", "2025-11-25")
    for transport in ("inproc", "http")
]


@pytest.fixture(scope="module")
def fuzz(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("fuzz.py")


def _report(findings: list[Any]) -> str:
    return "\n".join(f"{f.kind} in {f.cell}: {f.detail[:300]}\n  input: {json.dumps(f.case)[:600]}" for f in findings)


@pytest.mark.parametrize(("target", "era", "transport"), CELLS)
def test_fuzz_cell(fuzz: ModuleType, tmp_path: Path, target: str, era: str, transport: str) -> None:
    pack = fuzz.plant_pack(tmp_path)
    uris = fuzz.pack_uris(pack)
    count = INPROC_INPUTS if transport == "inproc" else HTTP_INPUTS
    inputs = [
        *fuzz.cases(SEED, era, target, uris, count, huge=HUGE),
        *fuzz.regression_cases(era, target),
    ]
    # one POST at a time: two in flight may share an id, which the SDK leaves unanswered (a known, open finding)
    cell = fuzz.run_cell(
        fuzz.Cell(target, era, transport), inputs, pack, tmp_path, concurrency=1, warmup=count // 5, middle=count // 2
    )
    fuzz.rss_finding(cell, 50.0)

    assert cell.inputs == len(inputs)
    unknown = [f for f in cell.findings if not fuzz.is_known(f)]
    assert not unknown, _report(unknown)
    # the inputs reached the server and were answered, not refused wholesale
    assert cell.answered >= count // 2, (cell.answered, cell.statuses)


def test_the_generator_is_deterministic_and_covers_every_mutation(fuzz: ModuleType, tmp_path: Path) -> None:
    uris = fuzz.pack_uris(fuzz.plant_pack(tmp_path))
    first = [c.body() for c in fuzz.cases(7, "2025-11-25", "gateway", uris, 300, huge=1_000)]
    again = [c.body() for c in fuzz.cases(7, "2025-11-25", "gateway", uris, 300, huge=1_000)]
    other = [c.body() for c in fuzz.cases(8, "2025-11-25", "gateway", uris, 300, huge=1_000)]
    assert first == again
    assert first != other
    mutations = {c.mutation.split("-")[0] for c in fuzz.cases(7, "2026-07-28", "serve", uris, 2_000, huge=1_000)}
    assert mutations >= {"valid", "wrong", "huge", "deep", "unknown", "bad", "no", "missing", "extra", "not"}, mutations
    methods = {
        c.message.get("method")
        for c in fuzz.cases(7, "2026-07-28", "gateway", uris, 2_000, huge=1_000)
        if c.mutation == "valid"
    }
    assert {"server/discover", "tools/call", "skills/get", "resources/directory/read"} <= methods, methods
    assert "initialize" not in methods  # 2026-07-28 has no initialize
    legacy = {
        c.message.get("method")
        for c in fuzz.cases(7, "2025-11-25", "serve", uris, 2_000, huge=1_000)
        if c.mutation == "valid"
    }
    assert "initialize" in legacy
    assert "server/discover" not in legacy


@pytest.mark.anyio
async def test_the_oracles_see_a_leak_and_a_traceback(fuzz: ModuleType, tmp_path: Path) -> None:
    """A server that reads any path it is given, and raises on one name, is caught by the outside-pack and
    traceback oracles: the harness can tell a fault when there is one."""
    from mcp.server.mcpserver import MCPServer

    fuzz.plant_pack(tmp_path)
    leaky = MCPServer("leaky")

    @leaky.tool()
    def read(path: str) -> str:
        """Reads whatever it is told to."""
        if path == "boom":
            raise RuntimeError("boom")
        return (tmp_path / path).read_text()

    cell = fuzz.Cell("leaky", "2025-11-25", "inproc")
    cases = [
        fuzz.Case(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "read", "arguments": {"path": "secret.txt"}},
            }
        ),
        fuzz.Case(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "read", "arguments": {"path": "boom"}},
            }
        ),
    ]
    handler = fuzz._ErrorRecords()
    logging.getLogger().addHandler(handler)
    try:
        await fuzz._legacy_inproc(cell, iter(cases), leaky, handler)
    finally:
        logging.getLogger().removeHandler(handler)
    kinds = {(f.kind, f.case["message"]["id"]) for f in cell.findings}
    assert kinds == {("outside-pack", 1), ("traceback", 2)}, cell.findings
    assert cell.answered == 2
