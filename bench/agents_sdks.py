"""Agent-framework adapters on one LiveMCPBench task: the tools each framework shows its model per turn vs History A.

The 70 LiveMCPBench servers are simulated in-process (``gateway_agent.upstream_server``: the
catalog's tools with their real names, descriptions and input schemas; every ``tools/call`` counted).
A scripted model runs each framework's own agent loop for the task: ``find(question)``, then
``load_skill([top card id])``, then a call of the first tool it loaded (arguments built from the
schema's ``required`` properties), then an answer. Each turn the tool definitions the framework
hands its model are rendered as the framework sends them (name, description, JSON schema of the
parameters) and counted with skilldeck's tokenizer. History A is the same rendering of every tool of
every server (what the model is shown when the agent has them all), plus the adapter's own tools.

One function per framework (``run_<framework>``); each returns its record, and ``main`` writes them
all to ``bench/results/agents_sdks.json``. Run from the repository root (about 20 s)::

    .venv/bin/python bench/agents_sdks.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
# This file's name is the OpenAI Agents SDK's import name (``agents``): take bench/ off the path so
# ``import agents`` finds the SDK, and load the gateway benchmark's helpers by their path instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("gateway_agent", HERE / "gateway_agent.py")
assert _spec is not None
assert _spec.loader is not None
gateway_agent = sys.modules["gateway_agent"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gateway_agent)
catalog, minimal_arguments, upstream_server = (
    gateway_agent.catalog,
    gateway_agent.minimal_arguments,
    gateway_agent.upstream_server,
)

from skilldeck.agents import SkillSession  # noqa: E402
from skilldeck.gateway import GatewayService  # noqa: E402
from skilldeck.host import Host, InProcessServer, ServerSpec  # noqa: E402
from skilldeck.select._project import count_tokens  # noqa: E402

DEFAULT_OUTPUT = HERE / "results" / "agents_sdks.json"
DEFAULT_TASK = 0
"""Index of the task among LiveMCPBench's 95 (the first one, as loaded)."""


def _tokens(definitions: Sequence[Mapping[str, Any]]) -> int:
    return count_tokens(json.dumps(list(definitions), ensure_ascii=False))


def _definition(name: str, description: str, parameters: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "parameters": parameters}


def history_a_definitions(servers: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every tool of every server, rendered as a framework shows it to its model."""
    return [
        _definition(str(t["name"]), str(t.get("description") or ""), t.get("inputSchema") or {"type": "object"})
        for server in servers
        for t in server["tools"]
    ]


async def _open_host(servers: Sequence[Mapping[str, Any]], stack: AsyncExitStack) -> Host:
    specs = [
        ServerSpec(str(s["label"]), InProcessServer(upstream_server(str(s["label"]), s["tools"])[0])) for s in servers
    ]
    return await stack.enter_async_context(Host(specs))


def _schema_of(servers: Sequence[Mapping[str, Any]], label: str, tool: str) -> Any:
    for server in servers:
        if server["label"] == label:
            for t in server["tools"]:
                if t["name"] == tool:
                    return t.get("inputSchema") or {}
    return {}


# -- LangChain ----------------------------------------------------------------------------------------


async def run_langchain(question: str, servers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """LangChain 1.x ``create_agent`` + :class:`~skilldeck.agents.langchain.SkillMiddleware`, a scripted chat model."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from skilldeck.agents.langchain import SkillMiddleware

    shown: list[list[dict[str, Any]]] = []

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            shown.append([convert_to_openai_tool(t)["function"] for t in tools])
            return self

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            outputs = [m for m in messages if isinstance(m, ToolMessage)]
            step = len(outputs)
            message: AIMessage
            if step == 0:
                message = _lc_call("find", {"query": question}, step)
            elif step == 1:
                top = json.loads(str(outputs[0].content))["cards"][0]["id"]
                message = _lc_call("load_skill", {"ids": [top]}, step)
            elif step == 2 and len(shown[-1]) > 3:
                tool = next(t for t in shown[-1] if t["name"] not in ("find", "load_skill", "read_skill_file"))
                message = _lc_call(tool["name"], minimal_arguments(tool["parameters"]), step)
            else:
                message = AIMessage(content="done")
            return ChatResult(generations=[ChatGeneration(message=message)])

    def _lc_call(name: str, args: dict[str, Any], n: int) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"}])

    async with AsyncExitStack() as stack:
        host = await _open_host(servers, stack)
        session = SkillSession(GatewayService(host))
        agent = create_agent(Scripted(messages=iter([])), middleware=[SkillMiddleware()])
        result = await agent.ainvoke({"messages": [("user", question)]}, context=session)
        history_a = _tokens([*history_a_definitions(servers), *shown[0]])
        loaded = [f"{label}/{tool}" for label, tool in session.active()]
    return _record("langchain", version("langchain"), shown, history_a, loaded, len(result["messages"]))


# -- OpenAI Agents SDK ----------------------------------------------------------------------------------


async def run_openai_agents(question: str, servers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """OpenAI Agents SDK: one MCP server object per upstream with skilldeck's ``tool_filter``, a scripted ``Model``.

    The SDK's MCP server objects reach the in-process upstreams through the SDK's own client-session
    base class given the ``MCPServer`` object as its transport (the mcp 2.x ``Client`` accepts one);
    over HTTP they would list and call exactly the same.
    """
    from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
    from agents.mcp.server import _MCPServerWithClientSession
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from skilldeck.agents.openai_agents import SkillTools

    shown: list[list[dict[str, Any]]] = []

    class InProcess(_MCPServerWithClientSession):
        def __init__(self, label: str, server: Any, tool_filter: Callable[..., Any]) -> None:
            super().__init__(cache_tools_list=True, client_session_timeout_seconds=30, tool_filter=tool_filter)
            self._label, self._server = label, server

        def create_streams(self) -> Any:
            return self._server

        @property
        def name(self) -> str:
            return self._label

    class Scripted(Model):
        async def get_response(
            self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, *a: Any, **k: Any
        ) -> ModelResponse:
            defs = [_definition(t.name, t.description, t.params_json_schema) for t in tools]
            shown.append(defs)
            outputs = [
                str(i["output"]) for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"
            ]
            step = len(outputs)
            item: Any
            if step == 0:
                item = _oa_call("find", {"query": question}, step)
            elif step == 1:
                item = _oa_call("load_skill", {"ids": [json.loads(outputs[0])["cards"][0]["id"]]}, step)
            elif step == 2 and len(defs) > 3:
                label, name = skills_session.active()[0]
                item = _oa_call(name, minimal_arguments(_schema_of(servers, label, name)), step)
            else:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                item = ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )
            return ModelResponse(output=[item], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    def _oa_call(name: str, args: dict[str, Any], n: int) -> ResponseFunctionToolCall:
        return ResponseFunctionToolCall(
            type="function_call", call_id=f"call_{n}", name=name, arguments=json.dumps(args)
        )

    skills = SkillTools()
    async with AsyncExitStack() as stack:
        host = await _open_host(servers, stack)
        skills_session = SkillSession(GatewayService(host))
        mcp_servers = []
        for s in servers:
            server = InProcess(str(s["label"]), upstream_server(str(s["label"]), s["tools"])[0], skills.tool_filter)
            mcp_servers.append(await stack.enter_async_context(server))
        agent = Agent(name="assistant", model=Scripted(), tools=skills.function_tools(), mcp_servers=mcp_servers)
        result = await Runner.run(agent, question, context=skills_session, run_config=RunConfig(tracing_disabled=True))
        history_a = _tokens([*history_a_definitions(servers), *shown[0]])
        loaded = [f"{label}/{tool}" for label, tool in skills_session.active()]
    return _record("openai-agents", version("openai-agents"), shown, history_a, loaded, len(result.new_items))


def _record(
    framework: str,
    framework_version: str,
    shown: list[list[dict[str, Any]]],
    history_a: int,
    loaded: list[str],
    items: int,
) -> dict[str, Any]:
    turns = [{"tools": [d["name"] for d in defs], "tokens": _tokens(defs)} for defs in shown]
    return {
        "framework": framework,
        "version": framework_version,
        "turns": turns,
        "loaded": loaded,
        "history_a_tokens": history_a,
        "max_turn_tokens": max(t["tokens"] for t in turns),
        "ratio_per_turn": round(history_a / max(t["tokens"] for t in turns), 1),
        "messages": items,
    }


RUNNERS = {"langchain": run_langchain, "openai-agents": run_openai_agents}


async def run(task_index: int, frameworks: Sequence[str]) -> dict[str, Any]:
    servers, tasks = catalog()
    task = tasks[task_index]
    results = [await RUNNERS[name](task.question, servers) for name in frameworks]
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["bench/agents_sdks.py", *sys.argv[1:]]),
        "python": platform.python_version(),
        "task": {"index": task_index, "task_id": task.task_id, "question": task.question},
        "servers": len(servers),
        "tools": sum(len(s["tools"]) for s in servers),
        "frameworks": results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--task", type=int, default=DEFAULT_TASK, help="index of the LiveMCPBench task")
    parser.add_argument("--frameworks", nargs="+", default=list(RUNNERS), choices=list(RUNNERS))
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    report = anyio.run(run, args.task, args.frameworks)
    args.output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"task {report['task']['task_id']}: {report['task']['question'][:100]}")
    for r in report["frameworks"]:
        per_turn = ", ".join(str(t["tokens"]) for t in r["turns"])
        print(
            f"{r['framework']} {r['version']}: tools shown per turn {per_turn} tokens; History A "
            f"{r['history_a_tokens']} tokens ({r['ratio_per_turn']}x the largest turn); loaded {r['loaded']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
