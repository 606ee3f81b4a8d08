"""What each adapter shows the model, under a policy that hides tools and with one tool name on two servers.

Two real in-process upstreams, ``east`` and ``west``, each list a tool ``search`` (with different input
schemas, so a schema taken from the wrong server shows) and a tool ``purge``, and each has a skill naming
its own ``search``. The policy routes ``purge`` to administrators only. Two sessions on one service, a
user's (the policy's default identity) and an administrator's, must each be shown what their caller
may load: never the other's tools, never the other server's ``search`` under this one's name, and
``defer_loading`` on exactly the tools the model has not chosen yet. Frameworks are driven with their
own test models (pydantic-ai's ``FunctionModel``) or their own types (the OpenAI Agents SDK's
``ToolFilterContext``, LangChain ``StructuredTool`` s); providers' renderings are compared as data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as OpenAIAgent
from agents import RunContextWrapper, ToolInputGuardrailData
from agents.mcp import ToolFilterContext
from agents.tool_context import ToolContext
from mcp_types import Tool as MCPTool
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from skilldeck.agents import SkillSession
from skilldeck.agents.langchain import SkillMiddleware
from skilldeck.agents.openai_agents import SkillTools
from skilldeck.agents.providers import anthropic_load_result, anthropic_tools, openai_load_output, openai_tools, tool_id
from skilldeck.agents.pydantic_ai import SkillToolset
from skilldeck.errors import GateRefused
from skilldeck.serving._policy import Caller, load_policy

from ..gateway.gateway_clients_support import Gateway, east_upstream, open_gateway, tool_calls, west_upstream
from ..host.hostile import HostileServer

pytestmark = pytest.mark.anyio

RULE = """\
  {label}/{label}-search:
    tools: [{label}/search, {label}/purge]
    routes: [{{when: {{roles: [admin]}}, allow: all}}, {{when: {{roles: [user]}}, allow: [{label}/search]}}]
"""
POLICY = "default_identity: {subject: intern, roles: [user]}\nskills:\n" + "".join(
    RULE.format(label=label) for label in ("east", "west")
)
ADMIN = Caller(subject="root", roles=frozenset({"admin"}))
NOT_ACTIVE = "is not in the active skill's tools"


@asynccontextmanager
async def archives(
    tmp_path: Path, *, policy: bool = True
) -> AsyncIterator[tuple[Gateway, HostileServer, HostileServer]]:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    east, west = east_upstream(), west_upstream()
    async with open_gateway({"east": east, "west": west}, policy=load_policy(path) if policy else None) as gw:
        yield gw, east, west


def deferred(tools: list[dict[str, Any]]) -> dict[str, bool]:
    """Each tool's name and whether it is deferred (``defer_loading`` true)."""
    return {t["name"]: t.get("defer_loading") is True for t in tools}


async def test_provider_tool_lists_show_each_caller_its_routed_tools_deferred_and_same_names_apart(
    tmp_path: Path,
) -> None:
    async with archives(tmp_path) as (gw, east, west):
        admin, user = SkillSession(gw.service, caller=ADMIN), SkillSession(gw.service)
        # the administrator asks first: the user must not be shown what was built for them
        assert deferred(anthropic_tools(admin)) == {
            "find": False,
            "load_skill": False,
            "east__search": True,
            "east__purge": True,
            "west__search": True,
            "west__purge": True,
        }
        tools = anthropic_tools(user)
        assert deferred(tools) == {"find": False, "load_skill": False, "east__search": True, "west__search": True}
        assert [k for t in tools[:2] for k in t if k == "defer_loading"] == []  # not even defer_loading: false
        schemas = {t["name"]: t["input_schema"] for t in tools}
        assert sorted(schemas["west__search"]["properties"]) == ["query", "region"]
        assert sorted(schemas["east__search"]["properties"]) == ["query"]

        listed = openai_tools(user)
        namespaces = {n["name"]: deferred(n["tools"]) for n in listed if n["type"] == "namespace"}
        assert namespaces == {"east": {"search": True}, "west": {"search": True}}
        assert "purge" not in str(listed)

        assert tool_id(user, "west__search") == "west/search"
        assert tool_id(user, "east__search") == "east/search"
        assert tool_id(user, "search", namespace="west") == "west/search"
        assert tool_id(user, "search", namespace="east") == "east/search"
        assert tool_id(user, "west__purge") is None  # hidden from the user: no name maps to it
        assert tool_id(user, "purge", namespace="west") is None
        assert tool_id(admin, "west__purge") == "west/purge"

        loaded = await user.load(["west/west-search"])
        result, _ = anthropic_load_result("toolu_1", loaded)
        assert result["content"] == [{"type": "tool_reference", "tool_name": "west__search"}]
        output, _ = openai_load_output("call_1", loaded, user)
        assert [(n["name"], deferred(n["tools"])) for n in output["tools"]] == [("west", {"search": False})]
        assert sorted(output["tools"][0]["tools"][0]["parameters"]["properties"]) == ["query", "region"]
        assert anthropic_tools(user) == tools  # the same array on every turn

        await user.call("west/search", {"query": "letters", "region": "north"})
        with pytest.raises(GateRefused, match=NOT_ACTIVE):
            await user.call("east/search", {"query": "letters"})
        with pytest.raises(GateRefused, match="never listed a tool named 'purge'"):
            await user.call("west/purge", {})
    assert tool_calls(east) == []
    assert [(c["name"], c["arguments"]) for c in tool_calls(west)] == [
        ("search", {"query": "letters", "region": "north"})
    ]


async def test_two_sessions_of_one_service_never_share_what_they_loaded(tmp_path: Path) -> None:
    async with archives(tmp_path, policy=False) as (gw, east, west):
        first, second = SkillSession(gw.service), SkillSession(gw.service)
        await first.load(["east/east-search"])
        assert first.active() == [("east", "search")]
        assert second.active() == []
        assert second.active_tools() == []
        with pytest.raises(GateRefused, match=NOT_ACTIVE):
            await second.call("east/search", {"query": "x"})
        await second.load(["west/west-search"])
        assert [t["name"] for t in first.active_tools()] == ["east/search"]
        assert [(t["name"], sorted(t["inputSchema"]["properties"])) for t in second.active_tools()] == [
            ("west/search", ["query", "region"])
        ]
        await first.call("east/search", {"query": "x"})
    assert [c["name"] for c in tool_calls(east)] == ["search"]
    assert tool_calls(west) == []


Step = Callable[[list[ModelMessage]], ModelResponse]


async def test_pydantic_ai_shows_same_named_tools_of_two_servers_as_two_each_calling_its_own(tmp_path: Path) -> None:
    async with archives(tmp_path) as (gw, east, west):
        seen: list[dict[str, str]] = []
        steps: list[Step] = [
            lambda _: ModelResponse(parts=[ToolCallPart("load_skill", {"id": "east/east-search"})]),
            lambda _: ModelResponse(parts=[ToolCallPart("load_skill", {"id": "west/west-search"})]),
            lambda _: ModelResponse(parts=[ToolCallPart("west__search", {"query": "maps", "region": "south"})]),
            lambda _: ModelResponse(parts=[ToolCallPart("east__search", {"query": "letters"})]),
            lambda _: ModelResponse(parts=[TextPart("done")]),
        ]

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append(
                {t.name: ",".join(sorted(t.parameters_json_schema.get("properties", {}))) for t in info.function_tools}
            )
            return steps[len(seen) - 1](messages)

        agent = Agent(FunctionModel(respond), toolsets=[SkillToolset(SkillSession(gw.service), cards=0)])
        result = await agent.run("search both archives")
        assert result.output == "done"
    meta = {"find": "limit,needs,query", "load_skill": "id", "read_skill_file": "path,skill"}
    assert seen == [
        meta,
        {**meta, "east__search": "query"},
        {**meta, "east__search": "query", "west__search": "query,region"},
        {**meta, "east__search": "query", "west__search": "query,region"},
        {**meta, "east__search": "query", "west__search": "query,region"},
    ]
    assert [(c["name"], c["arguments"]) for c in tool_calls(west)] == [("search", {"query": "maps", "region": "south"})]
    assert [(c["name"], c["arguments"]) for c in tool_calls(east)] == [("search", {"query": "letters"})]


async def test_openai_agents_filter_shows_each_servers_tool_only_where_it_was_loaded(tmp_path: Path) -> None:
    async with archives(tmp_path) as (gw, _east, _west):
        skills = SkillTools(labels={"West archive": "west"})
        session = SkillSession(gw.service)
        agent: OpenAIAgent[Any] = OpenAIAgent(name="assistant")

        def shown(server: str, tool: str) -> bool:
            context = ToolFilterContext(RunContextWrapper(context=session), agent, server)
            return skills.tool_filter(context, MCPTool(name=tool, input_schema={"type": "object"}))

        await session.load(["west/west-search"])
        assert shown("West archive", "search")
        assert not shown("east", "search")  # the same name on the server whose skill was not loaded
        assert not shown("West archive", "purge")
        await session.load(["east/east-search"])
        assert shown("east", "search")
        assert not shown("east", "purge")


async def test_langchain_shows_each_loaded_servers_tool_under_its_own_name_and_schema(tmp_path: Path) -> None:
    async with archives(tmp_path) as (gw, east, west):
        middleware = SkillMiddleware()
        session = SkillSession(gw.service)
        assert middleware.shown(session) == []
        await session.load(["west/west-search"])
        assert [t.name for t in middleware.shown(session)] == ["west__search"]
        await session.load(["east/east-search", "east/purge", "west/purge"])  # purge: hidden from this caller
        tools = {t.name: t for t in middleware.shown(session)}
        assert sorted(tools) == ["east__search", "west__search"]
        assert sorted(tools["west__search"].args) == ["query", "region"]
        assert await tools["west__search"].ainvoke({"query": "maps", "region": "south"}) == "west found maps in south"
        assert await tools["east__search"].ainvoke({"query": "letters"}) == "east found letters"
    assert [c["arguments"] for c in tool_calls(west)] == [{"query": "maps", "region": "south"}]
    assert [c["arguments"] for c in tool_calls(east)] == [{"query": "letters"}]


async def test_openai_agents_gate_maps_a_bare_name_to_its_one_loaded_server_and_refuses_it_once_two_are(
    tmp_path: Path,
) -> None:
    """Without a server name the guardrail knows a call by its tool name alone: one active tool of that name
    is that server's; two (east's and west's ``search``, both loaded) are refused, never sent to the first."""
    async with archives(tmp_path) as (gw, _east, _west):
        session = SkillSession(gw.service)
        agent: OpenAIAgent[Any] = OpenAIAgent(name="assistant")
        gate = SkillTools().gate()

        async def verdict(tool: str, arguments: str) -> tuple[str, Any]:
            context = ToolContext(session, tool_name=tool, tool_call_id="call_1", tool_arguments=arguments)
            out = await gate.run(ToolInputGuardrailData(context=context, agent=agent))
            return out.behavior["type"], out.behavior.get("message")

        await session.load(["west/west-search"])
        assert await verdict("search", '{"query": "maps", "region": "south"}') == ("allow", None)
        await session.load(["east/east-search"])
        kind, reason = await verdict("search", '{"query": "maps"}')
        assert kind == "reject_content"
        assert reason == "refused: 'search' is listed by several servers (east, west); qualify it as label/search"
