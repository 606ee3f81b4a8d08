"""pydantic-ai: SkillToolset starts collapsed, load_skill reveals exactly the skill's tools, calls are gated.

Driven by pydantic-ai's own ``FunctionModel`` (scripted turns, no network) over real in-process
upstreams that count every ``tools/call`` they receive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from skilldeck.agents import SkillSession
from skilldeck.agents.pydantic_ai import SkillToolset
from skilldeck.gateway._meta import MAX_QUERY_CHARS

from ..gateway.gateway_clients_support import ToolSkill, jobs_upstream, open_gateway, recording_upstream, tool_calls

pytestmark = pytest.mark.anyio

Step = Callable[[list[ModelMessage]], ModelResponse]


def scripted(steps: list[Step], seen: list[list[str]]) -> FunctionModel:
    """A model that answers turn ``i`` with ``steps[i]`` and records the tool names it was shown each turn."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(sorted(t.name for t in info.function_tools))
        return steps[len(seen) - 1](messages)

    return FunctionModel(respond)


def call(name: str, args: dict[str, Any]) -> Step:
    return lambda _messages: ModelResponse(parts=[ToolCallPart(name, args)])


def answer(_messages: list[ModelMessage]) -> ModelResponse:
    return ModelResponse(parts=[TextPart("done")])


def returns(messages: list[ModelMessage]) -> list[Any]:
    """Every tool result (and failed result) the model received, in order."""
    return [
        part
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
        if isinstance(part, ToolReturnPart | RetryPromptPart)
    ]


async def test_find_load_call_answer_reveals_exactly_the_loaded_skills_tools() -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw:
        session = SkillSession(gw.service)
        seen: list[list[str]] = []
        model = scripted(
            [
                call("find", {"query": "search python jobs"}),
                call("load_skill", {"id": "jobs/job-search"}),
                call("jobs__search_jobs", {"query": "python"}),
                answer,
            ],
            seen,
        )
        agent = Agent(model, toolsets=[SkillToolset(session)])
        result = await agent.run("find me python jobs")
        assert result.output == "done"
        # collapsed until the load; then exactly the skill's one tool, never delete_job
        assert seen == [
            ["find", "load_skill", "read_skill_file"],
            ["find", "load_skill", "read_skill_file"],
            ["find", "jobs__search_jobs", "load_skill", "read_skill_file"],
            ["find", "jobs__search_jobs", "load_skill", "read_skill_file"],
        ]
        found, loaded, called = (p.content for p in returns(result.all_messages()))
        assert found["cards"][0]["id"] == "jobs/job-search"
        assert loaded["tools"] == ["jobs__search_jobs"]
        assert loaded["skills"][0]["verified"] is True
        assert "job-search" in loaded["skills"][0]["instructions"]
        assert called == {"result": "found 3 jobs for python"}  # the upstream's structuredContent
    assert [c["name"] for c in tool_calls(jobs)] == ["search_jobs"]


async def test_the_instructions_list_the_cards_for_the_prompt() -> None:
    async with open_gateway({"jobs": jobs_upstream()}) as gw:
        instructions: list[str | None] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            instructions.append(info.instructions)
            return ModelResponse(parts=[TextPart("ok")])

        agent = Agent(FunctionModel(respond), toolsets=[SkillToolset(SkillSession(gw.service))])
        await agent.run("search python jobs")
        assert "jobs/job-search (skill)" in (instructions[0] or "")


async def test_a_call_of_a_tool_never_loaded_is_refused_and_nothing_is_sent() -> None:
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw:
        seen: list[list[str]] = []
        model = scripted(
            [
                call("jobs__delete_job", {"job_id": "J-1"}),  # never loaded: not even listed
                call("load_skill", {"id": "jobs/job-search"}),
                call("jobs__delete_job", {"job_id": "J-1"}),  # the skill does not name it
                call("jobs__search_jobs", {"query": 42}),  # loaded, but the arguments break its schema
                answer,
            ],
            seen,
        )
        agent = Agent(model, toolsets=[SkillToolset(SkillSession(gw.service))], retries=3)
        result = await agent.run("delete job J-1")
        assert result.output == "done"
        parts = returns(result.all_messages())
        texts = [str(getattr(p, "content", "")) for p in parts]
        assert "Unknown tool name: 'jobs__delete_job'" in texts[0]
        assert "Unknown tool name: 'jobs__delete_job'" in texts[2]
        refused = parts[3]
        assert isinstance(refused, ToolReturnPart)
        assert refused.outcome == "failed", refused
        assert "query" in str(refused.content)  # the gate's reason names the argument
        assert "jobs__delete_job" not in seen[-1]
    assert tool_calls(jobs) == []


async def test_find_refuses_an_overlong_query_before_ranking() -> None:
    async with open_gateway({"jobs": jobs_upstream()}) as gw:
        seen: list[list[str]] = []
        model = scripted([call("find", {"query": "x" * (MAX_QUERY_CHARS + 1)}), answer], seen)
        result = await Agent(model, toolsets=[SkillToolset(SkillSession(gw.service), cards=0)]).run("hi")
        (retry,) = returns(result.all_messages())
        assert "at most 2000 characters" in str(retry.content)
        assert gw.service.log.records == [] or all(r["kind"] != "find" for r in gw.service.log.records)


def test_the_example_runs_offline_and_reveals_the_skills_tool() -> None:
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "agents" / "pydantic-ai.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "turn 1: the model sees ['find', 'load_skill', 'read_skill_file']" in done.stdout
    assert "turn 3: the model sees ['find', 'jobs__search_jobs', 'load_skill', 'read_skill_file']" in done.stdout
    assert "jobs__search_jobs -> {'result': [" in done.stdout


async def test_read_skill_file_reads_a_loaded_skills_file_and_refuses_one_not_loaded() -> None:
    """The third tool every adapter offers: a file of a loaded skill, verified; before the load, the reason."""
    async with open_gateway({"jobs": jobs_upstream()}) as gw:
        seen: list[list[str]] = []
        read = {"skill": "jobs/job-search", "path": "SKILL.md"}
        model = scripted(
            [
                call("read_skill_file", read),
                call("load_skill", {"id": "jobs/job-search"}),
                call("read_skill_file", read),
                answer,
            ],
            seen,
        )
        agent = Agent(model, toolsets=[SkillToolset(SkillSession(gw.service))], retries=3)
        result = await agent.run("read the job-search skill")
        before, _loaded, after = returns(result.all_messages())
        assert "'jobs/job-search' is not a loaded skill (loaded: none); load it first" in str(before.content)
        assert isinstance(after, ToolReturnPart)
        assert "job-search" in str(after.content)
        assert after.outcome != "failed"


async def test_an_upstream_tool_that_answers_is_error_fails_the_call_for_the_model_with_its_text() -> None:
    """An upstream's ``isError: true`` result is the tool failing, not an answer: the model gets a failed tool
    return carrying the upstream's text (so it can tell the user, or retry), never a success to read as data."""

    def rebuild_index(region: str) -> str:
        """Rebuild the jobs index of a region."""
        raise ToolError(f"the {region} index is locked by another rebuild; try again in a minute")

    skill = ToolSkill("index-admin", "rebuild_index", "Rebuild the job postings index of a region.")
    upstream = recording_upstream("ops", skill, tools=[rebuild_index])
    async with open_gateway({"ops": upstream}) as gw:
        model = scripted(
            [call("load_skill", {"id": "ops/index-admin"}), call("ops__rebuild_index", {"region": "emea"}), answer], []
        )
        result = await Agent(model, toolsets=[SkillToolset(SkillSession(gw.service))]).run("rebuild emea")
        failed = returns(result.all_messages())[1]
        assert isinstance(failed, ToolReturnPart)
        assert failed.outcome == "failed", failed
        assert "the emea index is locked by another rebuild; try again in a minute" in str(failed.content)
    assert [c["arguments"] for c in tool_calls(upstream)] == [{"region": "emea"}]  # sent once: the upstream failed it
