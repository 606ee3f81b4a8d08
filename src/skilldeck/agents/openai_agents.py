"""History B in the OpenAI Agents SDK: a ``tool_filter`` driven by the active skill, and ``find``/``load_skill`` tools.

The agent keeps its own MCP server objects (``MCPServerStreamableHttp``, ``MCPServerStdio``, ...),
one per upstream, named as the upstream's label in the skilldeck host. :class:`SkillTools` gives
it, in the SDK's own terms:

* :meth:`SkillTools.function_tools`: ``find`` (cards, never schemas) and ``load_skill`` (the
  verified instructions; the skill's tools become active), plus ``read_skill_file``;
* :meth:`SkillTools.tool_filter`: the callable ``tool_filter`` of every MCP server object: a tool
  is shown to the model only while it is active in the run's :class:`~skilldeck.agents.SkillSession`,
  so before ``load_skill`` the model sees no upstream tool at all;
* :meth:`SkillTools.gate`: a tool input guardrail for the MCP server objects: every call passes
  skilldeck's gate (active in this session, routed by the policy, arguments valid against the
  upstream schema) before the SDK sends it, and a refused call is answered to the model with the
  reason (nothing is sent).

The session is the run's context (``Runner.run(agent, question, context=session)``, or any context
object with a ``skill_session`` attribute), so one agent serves many conversations, each with its
own activation::

    skills = SkillTools()
    jobs = MCPServerStreamableHttp(
        name="jobs", params={"url": url}, tool_filter=skills.tool_filter, tool_input_guardrails=[skills.gate()]
    )
    agent = Agent(name="assistant", tools=skills.function_tools(), mcp_servers=[jobs])
    result = await Runner.run(agent, "find python jobs in Berlin", context=SkillSession(GatewayService(host)))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agents import FunctionTool, RunContextWrapper, ToolGuardrailFunctionOutput, function_tool
from agents.mcp import ToolFilterContext
from agents.tool_guardrails import ToolInputGuardrail, ToolInputGuardrailData
from mcp.types import Tool as MCPTool

from skilldeck.agents._session import SkillSession, file_text
from skilldeck.errors import SkilldeckError, shorten
from skilldeck.gateway._api import MAX_LOAD_IDS

__all__ = ["MAX_LOAD_IDS", "SkillTools", "session_of"]


def session_of(context: object) -> SkillSession:
    """The :class:`SkillSession` of a run: the context itself, or its ``skill_session`` attribute.

    Raises:
        UsageError: the run was started without a session in its context.
    """
    return SkillSession.of(context, how="Runner.run(..., context=SkillSession(service))")


class SkillTools:
    """Skill-first disclosure for an OpenAI Agents SDK agent (see the module docs).

    Args:
        labels: MCP server object name -> the upstream's label in the skilldeck host, for servers
            not named as their label (by default the server's ``name`` is its label).
    """

    def __init__(self, labels: Mapping[str, str] | None = None) -> None:
        self.labels = dict(labels or {})

    def label(self, server_name: str) -> str:
        """The host label of the MCP server object named ``server_name``."""
        return self.labels.get(server_name, server_name)

    # -- what the model sees -----------------------------------------------------------------------

    def tool_filter(self, context: ToolFilterContext, tool: MCPTool) -> bool:
        """The MCP servers' ``tool_filter``: shown only while active in the run's session."""
        session = session_of(context.run_context.context)
        return (self.label(context.server_name), tool.name) in session.active()

    def function_tools(self) -> list[FunctionTool]:
        """``find``, ``load_skill`` and ``read_skill_file``, reading the session from the run context."""

        @function_tool
        async def find(ctx: RunContextWrapper[Any], query: str) -> str:
            """Find the skills (and tools) that fit a task. Returns ranked cards with ids for load_skill, or an abstention.

            Args:
                query: the task in a sentence.
            """
            return json.dumps(await session_of(ctx.context).afind(query), ensure_ascii=False)

        @function_tool
        async def load_skill(ctx: RunContextWrapper[Any], ids: list[str]) -> str:
            """Load skills by card id (from find): returns their verified instructions; their tools become callable.

            Args:
                ids: card ids from find, e.g. ["jobs/job-search"].
            """
            if len(ids) > MAX_LOAD_IDS:
                return f"refused: at most {MAX_LOAD_IDS} ids per load_skill call (got {len(ids)}); load fewer"
            return _loaded_text(await session_of(ctx.context).load(ids))

        @function_tool
        async def read_skill_file(ctx: RunContextWrapper[Any], skill: str, path: str) -> str:
            """Read a supporting file of a loaded skill (a path its instructions mention).

            Args:
                skill: the loaded skill's id, e.g. "jobs/job-search".
                path: the file's path inside the skill, e.g. "references/FILTERS.md".
            """
            try:
                out = await session_of(ctx.context).read_skill_file(skill, path)
            except SkilldeckError as exc:
                return f"refused: {exc}"
            return file_text(out)

        return [find, load_skill, read_skill_file]

    # -- what may be sent --------------------------------------------------------------------------

    def gate(self, server_name: str | None = None) -> ToolInputGuardrail[Any]:
        """A tool input guardrail for one MCP server object: skilldeck's gate decides before the SDK sends.

        Args:
            server_name: the MCP server object's name; the guardrail is attached to it alone.
                When omitted, the tool's name alone identifies it among the active tools.
        """

        def skilldeck_gate(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
            session = session_of(data.context.context)
            name = data.context.tool_name
            qualified = f"{self.label(server_name)}/{name}" if server_name else _active_id(session, name)
            try:
                arguments = json.loads(data.context.tool_arguments or "{}")
            except json.JSONDecodeError:
                return ToolGuardrailFunctionOutput.reject_content(
                    f"refused: the arguments of {shorten(name)} are not JSON; nothing was sent"
                )
            if not isinstance(arguments, dict):
                return ToolGuardrailFunctionOutput.reject_content(
                    f"refused: the arguments of {shorten(name)} must be a JSON object; nothing was sent"
                )
            try:
                session.service.check_call(session.caller, session.client, qualified, arguments)
            except SkilldeckError as exc:
                return ToolGuardrailFunctionOutput.reject_content(f"refused: {exc}")
            return ToolGuardrailFunctionOutput.allow()

        return ToolInputGuardrail(guardrail_function=skilldeck_gate, name="skilldeck_gate")


def _active_id(session: SkillSession, tool: str) -> str:
    """``LABEL/TOOL`` of the one active tool named ``tool``; the bare name (which the gate refuses) otherwise."""
    matches = [f"{label}/{name}" for label, name in session.active() if name == tool]
    return matches[0] if len(matches) == 1 else tool


def _loaded_text(loaded: Mapping[str, Any]) -> str:
    """What ``load_skill`` tells the model: each skill's verified text, the tools now callable, what was refused."""
    parts = [str(skill["content"]) for skill in loaded.get("skills", [])]
    tools = [str(t["name"]).rpartition("/")[2] for t in loaded.get("tools", [])]
    parts.append("tools now available: " + (", ".join(tools) if tools else "none"))
    parts.extend(f"refused {r['id']}: {r['reason']}" for r in loaded.get("refused", []))
    return "\n\n".join(parts)
