"""Skill-first disclosure in a LangChain agent, offline.

LangChain 1.x's ``create_agent`` with skilldeck's ``SkillMiddleware`` over the demo's three
in-process servers (jobs, tracker, files: eight tools). The model is LangChain's
``GenericFakeChatModel`` playing a script (no API key): find → load_skill → search_jobs → answer;
each turn prints the tools the model was shown.

    pip install 'skilldeck[langchain]' && python examples/agents/langchain_agent.py
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from skilldeck.agents import SkillSession
from skilldeck.agents.langchain import SkillMiddleware, tool_name
from skilldeck.demo import demo_servers
from skilldeck.gateway import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec


class ShowingFakeModel(GenericFakeChatModel):
    """The scripted model; prints the tool names it is bound to before each turn."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        print("the model sees", sorted(getattr(t, "name", None) or t["name"] for t in tools))
        return self


def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"}])


async def main() -> None:
    model = ShowingFakeModel(
        messages=iter(
            [
                call("find", {"query": "search python jobs in Berlin"}, 1),
                call("load_skill", {"ids": ["jobs/job-search"]}, 2),
                call(tool_name("jobs", "search_jobs"), {"query": "python", "location": "Berlin"}, 3),
                AIMessage(content="Here are the Python jobs in Berlin."),
            ]
        )
    )
    specs = [ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()]
    async with Host(specs) as host:
        agent = create_agent(model, middleware=[SkillMiddleware()])
        session = SkillSession(GatewayService(host))
        result = await agent.ainvoke({"messages": [("user", "find python jobs in Berlin")]}, context=session)
    print("search_jobs answered:", str(result["messages"][-2].content)[:160], "...")
    print(result["messages"][-1].content)


if __name__ == "__main__":
    anyio.run(main)
