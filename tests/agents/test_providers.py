"""Provider-native tool search: deferred tools answered by skilldeck, checked against the SDKs' request types.

The renderings are validated with pydantic against ``anthropic`` and ``openai`` request TypedDicts
(the types ``messages.create`` / ``responses.create`` take), no network. A scripted conversation
runs find → load_skill → call over real in-process upstreams, and the tools array is compared
turn by turn: it must not change (the provider's prompt cache holds).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import MessageParam, ToolParam
from openai.types.responses import ResponseInputItemParam
from openai.types.responses import ToolParam as ResponsesToolParam
from pydantic import TypeAdapter

from skilldeck.agents import SkillSession
from skilldeck.agents.providers import (
    anthropic_load_result,
    anthropic_tools,
    arguments,
    openai_load_output,
    openai_tools,
    tool_id,
)
from skilldeck.errors import GateRefused

from ..gateway.gateway_clients_support import jobs_upstream, open_gateway, tool_calls

pytestmark = pytest.mark.anyio

ANTHROPIC_TOOLS = TypeAdapter(list[ToolParam])
ANTHROPIC_MESSAGE = TypeAdapter(MessageParam)
OPENAI_TOOLS = TypeAdapter(list[ResponsesToolParam])
OPENAI_INPUT = TypeAdapter(list[ResponseInputItemParam])


def strict(adapter: TypeAdapter[Any], value: Any) -> None:
    """``value`` validates as the SDK type, and no key was dropped on the way (TypedDicts ignore extras)."""
    adapter.validate_python(value, strict=False)
    assert json.loads(adapter.dump_json(adapter.validate_python(value))) == json.loads(json.dumps(value))


async def test_anthropic_every_tool_deferred_and_load_skill_answered_with_tool_references() -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw:
        session = SkillSession(gw.service)
        tools = anthropic_tools(session)
        strict(ANTHROPIC_TOOLS, tools)
        visible = [t["name"] for t in tools if not t.get("defer_loading")]
        deferred = sorted(t["name"] for t in tools if t.get("defer_loading"))
        assert visible == ["find", "load_skill"]
        assert deferred == ["jobs__delete_job", "jobs__search_jobs"]

        loaded = await session.load(["jobs/job-search"])
        content = anthropic_load_result("toolu_1", loaded)
        strict(ANTHROPIC_MESSAGE, {"role": "user", "content": content})
        result, instructions = content
        assert result["content"] == [{"type": "tool_reference", "tool_name": "jobs__search_jobs"}]
        assert "job-search" in instructions["text"]
        assert anthropic_tools(session) == tools  # unchanged after the load: the cached prefix holds

        name = tool_id(session, "jobs__search_jobs")
        assert name == "jobs/search_jobs"
        await session.call(name, arguments({"query": "python"}))
        # the model names a deferred tool it was never given a reference to: refused, nothing sent
        with pytest.raises(GateRefused, match="is not in the active skill"):
            await session.call(tool_id(session, "jobs__delete_job") or "", {"job_id": "J-1"})
    assert [c["name"] for c in tool_calls(jobs)] == ["search_jobs"]


async def test_anthropic_a_load_that_activates_nothing_is_an_error_result_with_the_reason() -> None:
    async with open_gateway({"jobs": jobs_upstream()}) as gw:
        session = SkillSession(gw.service)
        content = anthropic_load_result("toolu_2", await session.load(["jobs/no-such-skill"]))
        strict(ANTHROPIC_MESSAGE, {"role": "user", "content": content})
        (result,) = content
        assert result["is_error"] is True
        assert "no card has the id 'jobs/no-such-skill'" in result["content"][0]["text"]


async def test_openai_tool_search_namespaces_deferred_and_answered_with_the_loaded_tools() -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw:
        session = SkillSession(gw.service)
        tools = openai_tools(session)
        strict(OPENAI_TOOLS, tools)
        find, search, namespace = tools
        assert (find["type"], find["name"]) == ("function", "find")
        assert (search["type"], search["execution"]) == ("tool_search", "client")
        assert search["parameters"]["required"] == ["id"]
        assert namespace["type"] == "namespace"
        assert namespace["name"] == "jobs"
        assert {f["name"]: f["defer_loading"] for f in namespace["tools"]} == {"search_jobs": True, "delete_job": True}

        loaded = await session.load(["jobs/job-search"])
        items = openai_load_output("call_1", loaded, session)
        strict(OPENAI_INPUT, items)
        output, message = items
        assert output["type"] == "tool_search_output"
        assert output["call_id"] == "call_1"
        (loaded_namespace,) = output["tools"]
        assert [f["name"] for f in loaded_namespace["tools"]] == ["search_jobs"]
        assert "defer_loading" not in loaded_namespace["tools"][0]  # loaded: its schema is the model's now
        assert loaded_namespace["tools"][0]["parameters"]["required"] == ["query"]
        assert "job-search" in message["content"][0]["text"]
        assert openai_tools(session) == tools

        name = tool_id(session, "search_jobs", namespace="jobs")
        assert name == "jobs/search_jobs"
        await session.call(name, arguments('{"query": "python"}'))
        with pytest.raises(GateRefused, match="not a JSON object"):
            arguments("[1, 2")
        with pytest.raises(GateRefused, match="is not in the active skill"):
            await session.call(tool_id(session, "delete_job", namespace="jobs") or "", {"job_id": "J-1"})
    assert [c["name"] for c in tool_calls(jobs)] == ["search_jobs"]


async def test_a_name_no_catalog_tool_has_maps_to_nothing() -> None:
    async with open_gateway({"jobs": jobs_upstream()}) as gw:
        session = SkillSession(gw.service)
        assert tool_id(session, "jobs__rm_rf") is None
        assert tool_id(session, "search_jobs", namespace="files") is None
