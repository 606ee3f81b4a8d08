"""SkillSession: the gateway's loop for in-process agent adapters, one activation per session."""

from __future__ import annotations

import anyio
import pytest

from skilldeck.agents import SkillSession
from skilldeck.errors import GateRefused
from skilldeck.gateway import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec

from .gateway_clients_support import jobs_upstream, open_gateway, tool_calls

pytestmark = pytest.mark.anyio


async def test_a_session_finds_loads_and_calls_and_sees_only_what_it_loaded() -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw:
        session, other = SkillSession(gw.service), SkillSession(gw.service)
        found = session.find("search python jobs")
        assert found["cards"][0]["id"] == "jobs/job-search", found
        assert session.active_tools() == []
        loaded = await session.load(["jobs/job-search"])
        assert [t["name"] for t in loaded["tools"]] == ["jobs/search_jobs"]
        assert [t["name"] for t in session.active_tools()] == ["jobs/search_jobs"]
        assert "inputSchema" in session.active_tools()[0]
        result = await session.call("jobs/search_jobs", {"query": "python"})
        assert not result.get("isError"), result
        # another session's activation is its own: the same call is refused there, nothing sent
        with pytest.raises(GateRefused, match="active tools: none"):
            await other.call("jobs/search_jobs", {"query": "python"})
        with pytest.raises(GateRefused, match="jobs/delete_job is not in the active skill's tools"):
            await session.call("jobs/delete_job", {"job_id": "J-1"})
    assert [c["name"] for c in tool_calls(jobs)] == ["search_jobs"]


async def test_a_session_over_a_default_service_ranks_with_the_default_encoder() -> None:
    specs = [ServerSpec("jobs", InProcessServer(jobs_upstream().server))]
    async with Host(specs) as host:
        session = SkillSession(GatewayService(host))  # as the adapters' examples build it
        ranker = session.service.index_for(session.caller).selector.ranker
        assert await anyio.to_thread.run_sync(ranker.wait, 120), ranker.indexing
        found = session.find("python jobs in Berlin")
        assert found["ranker"] == "semantic", found
        assert found["cards"][0]["server"] == "jobs", found
