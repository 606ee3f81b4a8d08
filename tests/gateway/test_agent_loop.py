"""The scripted agent loop of ``bench/gateway_agent.py`` on a handful of LiveMCPBench tasks, in both eras.

All 70 simulated upstreams (527 tools with their real schemas) sit behind the gateway; the
invariants the benchmark reports are pinned here: nothing that was not loaded reaches an upstream,
and what a client sees stays far smaller than every schema of every server (History A).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import jsonschema
import pytest

TASKS = 6


@pytest.fixture(scope="module")
def agent(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("gateway_agent.py")


@pytest.fixture(scope="module")
def catalog(agent: ModuleType) -> tuple[list[dict[str, Any]], list[Any]]:
    servers, tasks = agent.catalog()
    return servers, tasks


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_agent_loop_leaks_nothing_and_discloses_little(
    agent: ModuleType, catalog: tuple[list[dict[str, Any]], list[Any]], era: str
) -> None:
    servers, tasks = catalog
    out = await agent.run_loop(servers, tasks[:TASKS], mode=agent.ERAS[era], lexical=True)
    s = out["summary"]
    assert s["protocol_version"] == era
    assert (s["servers"], s["tools"]) == (70, 527)
    assert s["start_tools"] == ["find", "load", "read_skill_file", "call"]
    # nothing the conversation did not load reached an upstream, and the loaded tool's call did
    assert s["leaked_upstream_calls"] == 0
    assert s["probes_refused"] == s["unlisted_refused"] == TASKS
    assert s["answered"] >= TASKS - 1
    assert s["calls_sent"] == s["answered"], [t["call_refusal"] for t in out["tasks"]]
    # what a client sees: at start, and per answered task (find + load as received)
    assert s["start_ratio"] >= agent.START_RATIO_TARGET
    assert s["disclosed_ratio_median"] >= agent.TASK_RATIO_TARGET
    assert s["disclosed_ratio_p90"] >= agent.TASK_RATIO_TARGET
    assert agent.meets_targets(s)


@pytest.mark.anyio
async def test_the_leak_count_sees_a_call_the_gate_should_have_refused(
    agent: ModuleType, catalog: tuple[list[dict[str, Any]], list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark's zero means something: a gateway that let a not-loaded tool through is counted."""
    from skilldeck.gateway._service import GatewayService

    checked = GatewayService.check_call

    def lax(self: GatewayService, caller: Any, client: str, name: str, arguments: Any) -> tuple[str, str]:
        label, _, tool = name.partition("/")
        if any(t["name"] == tool for s in catalog[0] if s["label"] == label for t in s["tools"]):
            return label, tool  # listed, so let it through whether or not it is active
        return checked(self, caller, client, name, arguments)

    monkeypatch.setattr(GatewayService, "check_call", lax)
    out = await agent.run_loop(catalog[0], catalog[1][:2], lexical=True)
    assert out["summary"]["leaked_upstream_calls"] == 2
    assert out["summary"]["probes_refused"] == 0
    assert not agent.meets_targets(out["summary"])


def test_minimal_arguments_satisfy_every_catalog_schema(
    agent: ModuleType, catalog: tuple[list[dict[str, Any]], list[Any]]
) -> None:
    """The scripted call is not refused for its arguments: they validate against each of the 527 schemas.

    A string ``pattern`` is the one thing it does not try to satisfy (one catalog tool has one);
    the gate refuses such a call, and the benchmark reports it as refused, not as sent.
    """
    failures = []
    for server in catalog[0]:
        for tool in server["tools"]:
            schema = tool.get("inputSchema") or {"type": "object"}
            arguments = agent.minimal_arguments(schema)
            errors = [
                e for e in jsonschema.Draft202012Validator(schema).iter_errors(arguments) if e.validator != "pattern"
            ]
            if errors:
                failures.append(f"{server['label']}/{tool['name']}: {errors[0].message}")
    assert not failures
