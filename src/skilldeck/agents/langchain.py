"""History B in LangChain 1.x agents (LangGraph underneath): one middleware narrows the tools and gates the calls.

:class:`SkillMiddleware` is an ``AgentMiddleware`` for ``langchain.agents.create_agent``:

* it registers ``find``, ``load_skill`` and ``read_skill_file`` with the agent;
* ``awrap_model_call`` narrows the model's tools each turn (``request.override(tools=...)``) to
  those plus the upstream tools active in the run's :class:`~skilldeck.agents.SkillSession`, so
  before ``load_skill`` the model sees no upstream tool at all, and after it exactly the skill's;
* ``awrap_tool_call`` is the tool-call interceptor: a call of an upstream tool that is not active
  in this session is answered with a refusal (a ``ToolMessage`` with ``status="error"``) and never
  sent; an active one runs through skilldeck's gate on the host's upstream session.

Upstream tools reach the model as ``LABEL__TOOL`` (a model's tool names may not hold ``/``). The
session is the run's context (``agent.ainvoke(..., context=session)``, or any context object with a
``skill_session`` attribute); the middleware is asynchronous (``ainvoke``/``astream``)::

    agent = create_agent(model, middleware=[SkillMiddleware()])
    await agent.ainvoke({"messages": [("user", "find python jobs")]}, context=SkillSession(service))
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, ToolCallRequest
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command

from skilldeck.agents._session import SkillSession, file_text
from skilldeck.errors import SkilldeckError, shorten
from skilldeck.gateway._api import MAX_LOAD_IDS

__all__ = ["MAX_LOAD_IDS", "SkillMiddleware", "session_of", "tool_name"]

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")


def session_of(context: object) -> SkillSession:
    """The :class:`SkillSession` of a run: the context itself, or its ``skill_session`` attribute.

    Raises:
        UsageError: the run was started without a session in its context.
    """
    return SkillSession.of(context, how="agent.ainvoke(..., context=SkillSession(service))")


def tool_name(label: str, tool: str) -> str:
    """The name the model sees for the upstream tool ``label/tool``: ``LABEL__TOOL``, 64 name characters at most."""
    return _NOT_IN_NAME.sub("_", f"{label}__{tool}")[:64]


def _session(runtime: Any) -> SkillSession:
    return session_of(getattr(runtime, "context", None))


class SkillMiddleware(AgentMiddleware[Any, Any, Any]):
    """Skill-first disclosure for a LangChain agent (see the module docs)."""

    def __init__(self) -> None:
        super().__init__()
        self.tools = _skill_tools()
        self._own = frozenset(t.name for t in self.tools)

    def shown(self, session: SkillSession) -> list[BaseTool]:
        """The session's active upstream tools as LangChain tools (what the model may call now)."""
        return [_upstream_tool(session, tool) for tool in session.active_tools()]

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        """Show the model the agent's own tools and this session's active upstream tools, nothing else."""
        session = _session(request.runtime)
        tools: list[BaseTool | dict[str, Any]] = [*request.tools, *self.shown(session)]
        return await handler(request.override(tools=tools))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Run the agent's own tools as they are; an upstream tool only when active here, else refuse unsent."""
        name = str(request.tool_call["name"])
        if request.tool is not None or name in self._own:
            return await handler(request)
        session = _session(request.runtime)
        for tool in self.shown(session):
            if tool.name == name:
                return await handler(request.override(tool=tool))
        active = ", ".join(tool_name(label, t) for label, t in session.active()) or "none"
        return ToolMessage(
            content=(
                f"refused: {shorten(name)} is not active in this conversation (active tools: {active}); "
                "call find, then load_skill with the card's id; nothing was sent"
            ),
            tool_call_id=str(request.tool_call.get("id") or ""),
            name=name,
            status="error",
        )


def _upstream_tool(session: SkillSession, tool: Mapping[str, Any]) -> BaseTool:
    """A LangChain tool for an active upstream tool (``tool`` as :meth:`SkillSession.active_tools` lists it)."""
    qualified = str(tool["name"])
    label, _, name = qualified.partition("/")

    async def run(**arguments: Any) -> str:
        try:
            return _result_text(await session.call(qualified, arguments))
        except SkilldeckError as exc:
            return f"refused: {exc}"

    schema = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return StructuredTool(
        name=tool_name(label, name),
        description=str(tool.get("description") or qualified),
        args_schema=dict(schema),
        coroutine=run,
    )


def _result_text(result: Mapping[str, Any]) -> str:
    """An MCP ``CallToolResult`` as the text a ``ToolMessage`` carries (an error says so)."""
    texts = [str(c.get("text", "")) for c in result.get("content", []) if c.get("type") == "text"]
    text = "\n".join(texts) if texts else json.dumps(result.get("structuredContent", result), ensure_ascii=False)
    return f"error: {text}" if result.get("isError") else text


def _skill_tools() -> list[BaseTool]:
    """``find``, ``load_skill`` and ``read_skill_file``, reading the session from the run's context."""

    async def find(query: str, runtime: ToolRuntime[Any, Any]) -> str:
        """Find the skills (and tools) that fit a task. Returns ranked cards with ids for load_skill, or an abstention.

        Args:
            query: the task in a sentence.
        """
        return json.dumps(await _session(runtime).afind(query), ensure_ascii=False)

    async def load_skill(ids: list[str], runtime: ToolRuntime[Any, Any]) -> str:
        """Load skills by card id (from find): returns their verified instructions; their tools become callable.

        Args:
            ids: card ids from find, e.g. ["jobs/job-search"].
        """
        if len(ids) > MAX_LOAD_IDS:
            return f"refused: at most {MAX_LOAD_IDS} ids per load_skill call (got {len(ids)}); load fewer"
        loaded = await _session(runtime).load(ids)
        parts = [str(skill["content"]) for skill in loaded["skills"]]
        named = [tool_name(*str(t["name"]).split("/", 1)) for t in loaded["tools"]]
        parts.append("tools now available: " + (", ".join(named) if named else "none"))
        parts.extend(f"refused {r['id']}: {r['reason']}" for r in loaded["refused"])
        return "\n\n".join(parts)

    async def read_skill_file(skill: str, path: str, runtime: ToolRuntime[Any, Any]) -> str:
        """Read a supporting file of a loaded skill (a path its instructions mention).

        Args:
            skill: the loaded skill's id, e.g. "jobs/job-search".
            path: the file's path inside the skill, e.g. "references/FILTERS.md".
        """
        try:
            out = await _session(runtime).read_skill_file(skill, path)
        except SkilldeckError as exc:
            return f"refused: {exc}"
        return file_text(out)

    return [
        StructuredTool.from_function(coroutine=fn, parse_docstring=True) for fn in (find, load_skill, read_skill_file)
    ]
