"""skilldeck in a pydantic-ai agent: cards first, then exactly the loaded skill's tools.

Offline: the three demo servers run in-process and pydantic-ai's ``FunctionModel`` plays the
model (find → load_skill → the skill's tool → answer). Swap in a real model
(``Agent("anthropic:claude-sonnet-4-5", toolsets=[SkillToolset(session)])``) and it drives the same loop.

    pip install 'skilldeck[pydantic-ai]' && python examples/agents/pydantic-ai.py  (a hyphen: a file named pydantic_ai.py would shadow the package)
"""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from skilldeck.agents import SkillSession
from skilldeck.agents.pydantic_ai import SkillToolset
from skilldeck.demo import demo_servers
from skilldeck.gateway import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec

SCRIPT = [
    ToolCallPart("find", {"query": "find senior python jobs in Berlin"}),
    ToolCallPart("load_skill", {"id": "jobs/job-search"}),
    ToolCallPart("jobs__search_jobs", {"query": "python", "city": "Berlin"}),
]


def model() -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        print(f"turn {turn + 1}: the model sees {sorted(t.name for t in info.function_tools)}")
        return ModelResponse(parts=[SCRIPT[turn] if turn < len(SCRIPT) else TextPart("done")])

    return FunctionModel(respond)


async def main() -> None:
    specs = [ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()]
    async with Host(specs) as host:
        session = SkillSession(GatewayService(host))
        agent = Agent(model(), toolsets=[SkillToolset(session)])
        result = await agent.run("find senior python jobs in Berlin")
        for message in result.all_messages():
            for part in message.parts:
                if part.part_kind == "tool-return":
                    print(f"  {part.tool_name} -> {str(part.content)[:100]}")


if __name__ == "__main__":
    asyncio.run(main())
