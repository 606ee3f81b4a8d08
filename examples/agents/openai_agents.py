"""Skill-first disclosure in an OpenAI Agents SDK agent, offline.

The demo's ``jobs`` server runs over streamable HTTP on a free loopback port; the agent reaches it
through the SDK's own ``MCPServerStreamableHttp``, whose ``tool_filter`` shows a tool only once the
conversation loaded the skill naming it. skilldeck's host reaches the same server in-process for
skills. The model is a scripted ``Model`` (no API key): find → load_skill → search_jobs → answer.

    pip install 'skilldeck[openai-agents]' && python examples/agents/openai_agents.py
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
from agents.mcp import MCPServerStreamableHttp
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from skilldeck.agents import SkillSession
from skilldeck.agents.openai_agents import SkillTools
from skilldeck.demo import jobs_server
from skilldeck.gateway import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.server import run_http


class ScriptedModel(Model):
    """Calls find, load_skill, then search_jobs, then answers; prints the tools it is shown each turn."""

    def __init__(self) -> None:
        self.turn = 0

    async def get_response(
        self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.turn += 1
        print(f"turn {self.turn}: the model sees {sorted(t.name for t in tools)}")
        script = [
            ("find", {"query": "search python jobs in Berlin"}),
            ("load_skill", {"ids": ["jobs/job-search"]}),
            ("search_jobs", {"query": "python", "location": "Berlin"}),
        ]
        if self.turn <= len(script):
            name, arguments = script[self.turn - 1]
            item: Any = ResponseFunctionToolCall(
                type="function_call", call_id=f"call_{self.turn}", name=name, arguments=json.dumps(arguments)
            )
        else:
            found = [i["output"] for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"][-1]
            print(f"search_jobs answered: {str(found)[:160]}...")
            text = ResponseOutputText(type="output_text", text="Here are the Python jobs in Berlin.", annotations=[])
            item = ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def main() -> None:
    jobs = jobs_server()
    ready = anyio.Event()
    urls: list[str] = []

    def announce(url: str) -> None:
        urls.append(url)
        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_http(jobs, port=0, on_ready=announce, log_level="critical"))
        await ready.wait()
        skills = SkillTools()
        async with (
            Host([ServerSpec("jobs", InProcessServer(jobs))]) as host,
            MCPServerStreamableHttp(
                name="jobs",
                params={"url": urls[0]},
                tool_filter=skills.tool_filter,
                tool_input_guardrails=[skills.gate("jobs")],
            ) as server,
        ):
            agent = Agent(name="assistant", model=ScriptedModel(), tools=skills.function_tools(), mcp_servers=[server])
            session = SkillSession(GatewayService(host))
            result = await Runner.run(
                agent, "find python jobs in Berlin", context=session, run_config=RunConfig(tracing_disabled=True)
            )
            print(result.final_output)
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
