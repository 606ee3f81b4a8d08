"""The LangChain adapter: a scripted chat model runs find → load_skill → the tool call → answer, offline.

The agent is LangChain 1.x's ``create_agent`` (a LangGraph graph) with :class:`SkillMiddleware`;
the model is LangChain's ``GenericFakeChatModel`` playing scripted tool calls and recording the
tools it was bound to on each turn. Upstreams are real in-process servers that count every call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool

from skilldeck.agents import SkillSession
from skilldeck.agents.langchain import MAX_LOAD_IDS, SkillMiddleware, session_of, tool_name
from skilldeck.errors import UsageError

from ..gateway.gateway_clients_support import files_upstream, jobs_upstream, open_gateway, tool_calls

pytestmark = pytest.mark.anyio

OWN = ["find", "load_skill", "read_skill_file"]


class ScriptedChatModel(GenericFakeChatModel):
    """Plays scripted messages; ``shown`` records the tool names bound for each model call."""

    shown: list[list[str]] = []  # noqa: RUF012 - pydantic field, copied per instance

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.shown.append(sorted(t.name if isinstance(t, BaseTool) else str(t["name"]) for t in tools))
        return self


def turns(*messages: AIMessage) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(messages), shown=[])


def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"}])


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


async def test_find_load_call_answer_and_the_model_sees_only_the_loaded_tool() -> None:
    search = tool_name("jobs", "search_jobs")
    model = turns(
        call("find", {"query": "search python jobs"}, 1),
        call("load_skill", {"ids": ["jobs/job-search"]}, 2),
        call(search, {"query": "python"}, 3),
        AIMessage(content="Three python jobs."),
    )
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs, "files": files_upstream()}) as gw:
        agent = create_agent(model, middleware=[SkillMiddleware()])
        result = await agent.ainvoke({"messages": [("user", "find python jobs")]}, context=SkillSession(gw.service))
    assert result["messages"][-1].content == "Three python jobs."
    # no upstream tool before load_skill (of four listed); afterwards the skill's one tool, never delete_job
    assert model.shown == [OWN, OWN, sorted([*OWN, search]), sorted([*OWN, search])]
    found, loaded, searched = (str(m.content) for m in tool_messages(result))
    assert json.loads(found)["cards"][0]["id"] == "jobs/job-search"
    assert "# job-search" in loaded
    assert f"tools now available: {search}" in loaded
    assert "found 3 jobs for python" in searched
    assert [c["name"] for c in tool_calls(jobs)] == ["search_jobs"]


async def test_an_inactive_tool_call_is_refused_by_the_interceptor_and_never_sent() -> None:
    model = turns(
        call(tool_name("jobs", "delete_job"), {"job_id": "J-1"}, 1),
        call("load_skill", {"ids": ["jobs/job-search"]}, 2),
        call(tool_name("jobs", "delete_job"), {"job_id": "J-1"}, 3),
        AIMessage(content="I cannot delete jobs."),
    )
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw:
        agent = create_agent(model, middleware=[SkillMiddleware()])
        result = await agent.ainvoke({"messages": [("user", "delete job J-1")]}, context=SkillSession(gw.service))
    before, _, after = tool_messages(result)
    assert before.status == "error"
    assert "not active in this conversation (active tools: none)" in str(before.content)
    assert after.status == "error"
    assert f"active tools: {tool_name('jobs', 'search_jobs')}" in str(after.content)
    assert result["messages"][-1].content == "I cannot delete jobs."
    assert tool_calls(jobs) == []


async def test_an_active_tool_with_bad_arguments_is_refused_by_the_gate_unsent() -> None:
    model = turns(
        call("load_skill", {"ids": ["jobs/job-search"]}, 1),
        call(tool_name("jobs", "search_jobs"), {"query": 7}, 2),
        AIMessage(content="no"),
    )
    jobs = jobs_upstream()
    async with open_gateway({"jobs": jobs}) as gw:
        agent = create_agent(model, middleware=[SkillMiddleware()])
        result = await agent.ainvoke({"messages": [("user", "python jobs")]}, context=SkillSession(gw.service))
    refusal = str(tool_messages(result)[1].content)
    assert refusal.startswith("refused:"), refusal
    assert tool_calls(jobs) == []


async def test_load_skill_refuses_too_many_ids_and_loads_nothing() -> None:
    model = turns(call("load_skill", {"ids": [f"jobs/x{i}" for i in range(MAX_LOAD_IDS + 1)]}, 1), AIMessage("ok"))
    async with open_gateway({"jobs": jobs_upstream()}) as gw:
        session = SkillSession(gw.service)
        result = await create_agent(model, middleware=[SkillMiddleware()]).ainvoke(
            {"messages": [("user", "load everything")]}, context=session
        )
        assert session.active() == []
    assert f"at most {MAX_LOAD_IDS} ids" in str(tool_messages(result)[0].content)


def test_tool_names_fit_a_model_s_tool_name_rules() -> None:
    assert tool_name("jobs", "search_jobs") == "jobs__search_jobs"
    assert tool_name("my.server", "a/b c") == "my_server__a_b_c"
    assert len(tool_name("x" * 80, "y")) == 64


def test_a_run_without_a_session_is_told_how_to_pass_one() -> None:
    with pytest.raises(UsageError, match=r"context=SkillSession"):
        session_of(None)


def test_the_example_runs_offline_and_answers() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "agents" / "langchain_agent.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "the model sees ['find', 'jobs__search_jobs', 'load_skill', 'read_skill_file']" in done.stdout
    assert done.stdout.rstrip().endswith("Here are the Python jobs in Berlin.")
