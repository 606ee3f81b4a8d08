"""What the per-call speed-ups keep: the policy's routed tools, computed once per audience, stay per audience.

The gateway's per-call cost is measured in ``bench/gateway.py``; these tests pin the behaviour a
cache or a faster event loop could break.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from skilldeck.errors import GateRefused
from skilldeck.serving._policy import load_policy

from ..server.helpers import GATEWAY_STARTUP_LINE, gc_report
from .gateway_clients_support import jobs_upstream, open_gateway, tool_calls

pytestmark = pytest.mark.anyio

ADMINS_ONLY = """\
default_identity: {subject: intern, tenant: acme, roles: [reader]}
skills:
  jobs/job-search:
    tools: [jobs/search_jobs]
    routes:
      - when: {roles: [admin]}
        allow: all
"""


@pytest.mark.parametrize("admin_first", [True, False])
async def test_routed_tools_are_kept_per_audience_and_recomputed_after_a_reindex(
    admin_first: bool, tmp_path: Path
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(ADMINS_ONLY)
    policy = load_policy(path)
    reader = policy.default_identity
    admin = replace(reader, subject="boss", roles=frozenset({"admin"}))
    jobs = jobs_upstream()
    args = {"query": "python"}
    async with open_gateway({"jobs": jobs}, policy=policy, pinned=[("jobs", "search_jobs")]) as gw:
        service = gw.service
        for _ in range(2):  # the second round runs on what the first cached
            for caller in [admin, reader] if admin_first else [reader, admin]:
                if caller is admin:
                    assert not (await service.call(caller, "a", "jobs/search_jobs", args)).get("isError")
                else:
                    with pytest.raises(
                        GateRefused, match="never listed a tool named 'search_jobs'"
                    ):  # not routed: not listed
                        await service.call(caller, "r", "jobs/search_jobs", args)
        assert len(tool_calls(jobs)) == 2
        # the skill that routes the tool is gone from the catalog: after the reindex nobody is routed it
        registry = gw.host.registry
        tools = [t.tool for t in registry.tools("jobs")]
        registry.remove_server("jobs")
        registry.set_tools("jobs", tools)  # the tools stay listed; only the skill routing them is gone
        service.reindex()
        with pytest.raises(GateRefused, match="never listed a tool named 'search_jobs'"):  # not routed: not listed
            await service.call(admin, "a", "jobs/search_jobs", args)
        assert len(tool_calls(jobs)) == 2


def test_the_gateway_command_runs_on_uvloop_where_it_is_installed() -> None:
    import anyio

    from skilldeck.serving._runner import event_loop_options

    async def loop_module() -> str:
        import asyncio

        return type(asyncio.get_running_loop()).__module__

    options = event_loop_options()
    if importlib.util.find_spec("uvloop") is None:  # e.g. Windows: asyncio's own loop, and no option
        assert options == {}
        return
    assert options == {"use_uvloop": True}
    assert anyio.run(loop_module, backend_options=options).startswith("uvloop")


def test_the_gateway_over_http_freezes_its_startup_heap_and_collects_less_often(tmp_path: Path) -> None:
    # its full collections were the longest stalls of its event loop in the soak (bench/soak.py)
    from skilldeck.serving._runner import SERVING_GC_THRESHOLDS

    config = tmp_path / "mcp.json"
    jobs = "from skilldeck.demo._servers import jobs_server; jobs_server().run()"
    config.write_text(json.dumps({"mcpServers": {"jobs": {"command": sys.executable, "args": ["-c", jobs]}}}))
    said = gc_report(
        ["gateway", "--config", str(config), "--http", "127.0.0.1:0", "--lexical"], tmp_path, GATEWAY_STARTUP_LINE
    )
    assert "frozen" in said, said
    assert f"thresholds {SERVING_GC_THRESHOLDS}" in said, said
