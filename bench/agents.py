"""Agent-framework adapters on one LiveMCPBench task: the tools shown to the model each turn vs History A.

The 70 LiveMCPBench servers are simulated in-process (``gateway_agent.upstream_server``: real tool
names, descriptions and schemas, every ``tools/call`` counted) behind one ``Host`` and
``GatewayService``. Each adapter runs the same scripted loop for one task, no LLM:

1. ``find(question)``; 2. ``load_skill(top card)``; 3. call the first loaded tool (arguments from
its schema's ``required``); 4. answer.

Per turn we count (cl100k, ``count_tokens``) the tool definitions the model is shown, rendered
Anthropic-style, against History A (every schema of every server, the same rendering). One
function per framework; each writes its own key of ``bench/results/agents.json``.

Run from the repository root: ``.venv/bin/python bench/agents.py`` (about 20 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skilldeck.agents import SkillSession
from skilldeck.gateway._service import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.select._project import count_tokens, history_a

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE))  # appended: bench/agents.py never shadows the agents package

from gateway_agent import catalog, minimal_arguments, upstream_server  # noqa: E402

DEFAULT_OUTPUT = HERE / "results" / "agents.json"
DEFAULT_TASK = None
"""The first task (catalog order) whose find answers and whose load activates a tool, unless ``--task``."""


def _tokens(value: Any) -> int:
    return count_tokens(json.dumps(value, ensure_ascii=False))


@asynccontextmanager
async def open_catalog() -> AsyncIterator[tuple[GatewayService, list[Any], dict[str, Any]]]:
    servers, tasks = catalog()
    upstreams = {str(s["label"]): upstream_server(str(s["label"]), s["tools"]) for s in servers}
    specs = [ServerSpec(label, InProcessServer(server), timeout=30) for label, (server, _) in upstreams.items()]
    async with Host(specs) as host:
        yield GatewayService(host), tasks, {label: counter for label, (_, counter) in upstreams.items()}


async def pick_task(service: GatewayService, tasks: list[Any], task_id: str | None) -> Any:
    for task in tasks:
        if task_id is not None and task.task_id != task_id:
            continue
        session = SkillSession(service)
        found = session.find(task.question[:2_000])
        if found["abstain"] or not found["cards"]:
            continue
        if (await session.load([found["cards"][0]["id"]]))["tools"]:
            return task
    raise SystemExit(f"no task {task_id or ''} answers and loads a tool")


def history_a_tokens(service: GatewayService, session: SkillSession) -> int:
    return history_a(service.index_for(session.caller).cards, "anthropic").tokens


# -- pydantic-ai -----------------------------------------------------------------------------------


async def pydantic_ai_run(service: GatewayService, task: Any) -> dict[str, Any]:
    """``SkillToolset`` driven by ``FunctionModel``: the tool definitions the model gets each turn."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from skilldeck.agents.pydantic_ai import SkillToolset

    session = SkillSession(service)
    turns: list[dict[str, Any]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        shown = [
            {"name": t.name, "description": t.description or "", "input_schema": t.parameters_json_schema}
            for t in info.function_tools
        ]
        turns.append(
            {
                "tools": [t["name"] for t in shown],
                "tool_tokens": _tokens(shown),
                "instructions_tokens": count_tokens(info.instructions or ""),
            }
        )
        returned = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if len(turns) == 1:
            return ModelResponse(parts=[ToolCallPart("find", {"query": task.question[:2_000]})])
        if len(turns) == 2:
            return ModelResponse(parts=[ToolCallPart("load_skill", {"id": returned[-1].content["cards"][0]["id"]})])
        if len(turns) == 3:
            name = returned[-1].content["tools"][0]
            schema = next(t.parameters_json_schema for t in info.function_tools if t.name == name)
            return ModelResponse(parts=[ToolCallPart(name, minimal_arguments(schema))])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), toolsets=[SkillToolset(session)])
    await agent.run(task.question)
    return {"history_a_tokens": history_a_tokens(service, session), "turns": turns}


# -- provider-native tool search -------------------------------------------------------------------


async def providers_run(service: GatewayService, task: Any) -> dict[str, Any]:
    """Anthropic and OpenAI renderings: the tools array sent (fixed) vs what the model is shown each turn."""
    from skilldeck.agents.providers import anthropic_load_result, anthropic_tools, openai_load_output, openai_tools

    out: dict[str, Any] = {}
    for provider in ("anthropic", "openai"):
        session = SkillSession(service)
        tools = anthropic_tools(session) if provider == "anthropic" else openai_tools(session)
        if provider == "anthropic":
            base = [t for t in tools if not t.get("defer_loading")]
        else:  # namespaces: the model sees their name and description until a search loads functions
            base = [t for t in tools if t["type"] != "namespace"]
            base += [{"name": t["name"], "description": t["description"]} for t in tools if t["type"] == "namespace"]
        found = session.find(task.question[:2_000])
        loaded = await session.load([found["cards"][0]["id"]])
        if provider == "anthropic":
            names = {b["tool_name"] for b in anthropic_load_result("toolu_1", loaded)[0]["content"]}
            revealed = [t for t in tools if t["name"] in names]
        else:
            revealed = openai_load_output("call_1", loaded, session)[0]["tools"]
        before, after = _tokens(base), _tokens(base) + _tokens(revealed)
        out[provider] = {
            "history_a_tokens": history_a_tokens(service, session),
            "request_tools_tokens": _tokens(tools),
            "request_tools_fixed": (anthropic_tools(session) if provider == "anthropic" else openai_tools(session))
            == tools,
            "turns": [
                {"step": "find", "tool_tokens": before},
                {"step": "load_skill", "tool_tokens": before},
                {"step": "call", "tool_tokens": after, "revealed": len(revealed)},
                {"step": "answer", "tool_tokens": after},
            ],
        }
    return out


def _merge(path: Path, results: Mapping[str, Any]) -> None:
    existing = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    existing.update(results)
    path.write_text(json.dumps(existing, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


async def run(task_id: str | None, output: Path) -> dict[str, Any]:
    async with open_catalog() as (service, tasks, counters):
        task = await pick_task(service, tasks, task_id)
        common = {
            "task": task.task_id,
            "question": task.question[:200],
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
        }
        results = {
            "pydantic-ai": {**common, **(await pydantic_ai_run(service, task))},
            "providers": {**common, **(await providers_run(service, task))},
        }
        results["pydantic-ai"]["upstream_calls"] = sum(sum(c.calls.values()) for c in counters.values())
    _merge(output, results)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=DEFAULT_TASK, help="a LiveMCPBench task id")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    results = asyncio.run(run(args.task, args.output))
    pyd = results["pydantic-ai"]
    print(f"task {pyd['task']}: History A {pyd['history_a_tokens']:,} tokens of tool definitions")
    for i, turn in enumerate(pyd["turns"], 1):
        print(f"  pydantic-ai turn {i}: {turn['tool_tokens']:,} tokens ({', '.join(turn['tools'])})")
    for provider, r in results["providers"].items():
        if isinstance(r, dict) and "turns" in r:
            shown = " / ".join(f"{t['tool_tokens']:,}" for t in r["turns"])
            print(f"  {provider}: shown per turn {shown}; tools array sent {r['request_tools_tokens']:,} (fixed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
