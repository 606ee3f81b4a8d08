"""The OpenAI Agents SDK adapter: a scripted model runs find → load_skill → the tool call → answer, offline.

The agent's MCP server object talks streamable HTTP to a real upstream on loopback (the SDK's own
``MCPServerStreamableHttp``); skilldeck's host reaches the same upstream in-process. The model is a
``Model`` of the SDK's interface that plays a script and records the tools it was shown each turn.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, ModelSettings, ModelTracing, RunConfig, Runner, Tool, Usage
from agents.mcp import MCPServerStreamableHttp
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from skilldeck.agents import SkillSession
from skilldeck.agents.openai_agents import MAX_LOAD_IDS, SkillTools, session_of
from skilldeck.errors import UsageError

from ..gateway.gateway_clients_support import Gateway, jobs_upstream, open_gateway, tool_calls
from ..host.hostile import HostileServer
from ..host.hostile_http import serving_in_thread

pytestmark = pytest.mark.anyio

OFFLINE = RunConfig(tracing_disabled=True)
"""No trace export: the tests never reach the network."""


def call(name: str, arguments: dict[str, Any], n: int) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", id=f"fc_{n}", call_id=f"call_{n}", name=name, arguments=json.dumps(arguments)
    )


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """Plays ``turns`` in order (each a list of output items); records the tool names shown and the input per turn."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)
        self.shown: list[list[str]] = []
        self.inputs: list[Any] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.shown.append(sorted(t.name for t in tools))
        self.inputs.append(input)
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests run the agent without streaming")


def output(model: ScriptedModel, turn: int) -> str:
    """The last function call output the model received as input on ``turn``."""
    return [str(item["output"]) for item in model.inputs[turn] if item.get("type") == "function_call_output"][-1]


@asynccontextmanager
async def jobs_agent(model: ScriptedModel) -> AsyncIterator[tuple[Agent[Any], HostileServer, Gateway]]:
    """An agent with skilldeck's tools and an MCP server object for ``jobs`` over HTTP on loopback."""
    jobs = jobs_upstream()
    skills = SkillTools()
    with http_url(jobs) as url:
        async with (
            open_gateway({"jobs": jobs}) as gw,
            MCPServerStreamableHttp(
                name="jobs",
                params={"url": url},
                tool_filter=skills.tool_filter,
                tool_input_guardrails=[skills.gate("jobs")],
            ) as server,
        ):
            agent = Agent(name="assistant", model=model, tools=skills.function_tools(), mcp_servers=[server])
            yield agent, jobs, gw


def http_url(upstream: HostileServer) -> Any:
    return serving_in_thread(upstream.server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1"))


async def test_find_load_call_answer_and_the_model_sees_only_the_loaded_tool() -> None:
    model = ScriptedModel(
        [
            [call("find", {"query": "search python jobs"}, 1)],
            [call("load_skill", {"ids": ["jobs/job-search"]}, 2)],
            [call("search_jobs", {"query": "python"}, 3)],
            [say("Three python jobs.")],
        ]
    )
    async with jobs_agent(model) as (agent, jobs, gw):
        session = SkillSession(gw.service)
        result = await Runner.run(agent, "find python jobs", context=session)
    assert result.final_output == "Three python jobs."
    skilldeck_tools = ["find", "load_skill", "read_skill_file"]
    # before load_skill no upstream tool is shown; after it exactly the skill's one tool, never delete_job
    with_skill = sorted([*skilldeck_tools, "search_jobs"])
    assert model.shown == [skilldeck_tools, skilldeck_tools, with_skill, with_skill]
    assert json.loads(output(model, 1))["cards"][0]["id"] == "jobs/job-search"
    loaded = output(model, 2)
    assert "# job-search" in loaded
    assert "tools now available: search_jobs" in loaded
    assert "found 3 jobs for python" in output(model, 3)
    assert [c["name"] for c in tool_calls(jobs)] == ["search_jobs"]


async def test_a_call_the_gate_refuses_is_answered_to_the_model_and_never_sent() -> None:
    # search_jobs is active, but the arguments break its schema: skilldeck's gate refuses before the SDK sends
    model = ScriptedModel(
        [
            [call("load_skill", {"ids": ["jobs/job-search"]}, 1)],
            [call("search_jobs", {"query": 7}, 2)],
            [say("I could not search.")],
        ]
    )
    async with jobs_agent(model) as (agent, jobs, gw):
        result = await Runner.run(agent, "find python jobs", context=SkillSession(gw.service), run_config=OFFLINE)
    assert result.final_output == "I could not search."
    refusal = output(model, 2)
    assert refusal.startswith("refused:"), refusal
    assert "search_jobs" in refusal
    assert tool_calls(jobs) == []


async def test_an_unloaded_tool_is_not_shown_and_its_call_is_refused_unsent() -> None:
    model = ScriptedModel(
        [
            [call("load_skill", {"ids": ["jobs/job-search"]}, 1)],
            [call("delete_job", {"job_id": "J-1"}, 2)],
            [say("I cannot delete jobs.")],
        ]
    )
    async with jobs_agent(model) as (agent, jobs, gw):
        config = RunConfig(tracing_disabled=True, tool_not_found_behavior="return_error_to_model")
        result = await Runner.run(agent, "delete job J-1", context=SkillSession(gw.service), run_config=config)
    assert "delete_job" not in model.shown[1]
    assert "not found" in output(model, 2)
    assert result.final_output == "I cannot delete jobs."
    assert tool_calls(jobs) == []


async def test_load_skill_refuses_too_many_ids_and_loads_nothing() -> None:
    model = ScriptedModel(
        [[call("load_skill", {"ids": [f"jobs/x{i}" for i in range(MAX_LOAD_IDS + 1)]}, 1)], [say("too many")]]
    )
    async with jobs_agent(model) as (agent, _jobs, gw):
        session = SkillSession(gw.service)
        await Runner.run(agent, "load everything", context=session, run_config=OFFLINE)
        assert session.active() == []
    assert f"at most {MAX_LOAD_IDS} ids" in output(model, 1)


def test_a_run_without_a_session_is_told_how_to_pass_one() -> None:
    with pytest.raises(UsageError, match=r"context=SkillSession"):
        session_of({"user": "x"})


def test_the_example_runs_offline_and_answers() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "agents" / "openai_agents.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "turn 3: the model sees ['find', 'load_skill', 'read_skill_file', 'search_jobs']" in done.stdout
    assert done.stdout.rstrip().endswith("Here are the Python jobs in Berlin.")


async def test_load_skill_takes_exactly_the_most_ids() -> None:
    ids = ["jobs/job-search", *(f"jobs/x{i}" for i in range(MAX_LOAD_IDS - 1))]
    model = ScriptedModel([[call("load_skill", {"ids": ids}, 1)], [say("loaded")]])
    async with jobs_agent(model) as (agent, _jobs, gw):
        session = SkillSession(gw.service)
        await Runner.run(agent, "load these", context=session, run_config=OFFLINE)
        assert session.active() == [("jobs", "search_jobs")]
    assert "at most" not in output(model, 1)
    assert "tools now available: search_jobs" in output(model, 1)
