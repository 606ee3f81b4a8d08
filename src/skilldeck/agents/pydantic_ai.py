"""pydantic-ai: a toolset that starts collapsed and reveals exactly the loaded skill's tools.

``pip install 'skilldeck[pydantic-ai]'``::

    session = SkillSession(GatewayService(host))
    agent = Agent(model, toolsets=[SkillToolset(session)])
    result = await agent.run("file a refund for order 1234")

The model starts with three tools, ``find`` (cards for a task, never a schema), ``load_skill``
(one card id: the verified skill instructions back, its tools active in the session) and
``read_skill_file`` (a supporting file a loaded skill's instructions name, verified), as the other
adapters offer them, and the instructions list the best cards for the run's prompt. The toolset lists the session's active
tools too, each ``defer_loading=True``; ``load_skill`` returns a ``ToolReturn`` whose ``tools``
name exactly what the load activated, so pydantic-ai reveals those tools from that turn on (and
records the reveal in the message history, which keeps the earlier prefix, and a provider's prompt
cache, intact). Every upstream call goes through :meth:`SkillSession.call`: the gate checks the
tool is active and the arguments match its upstream schema before anything is sent; a refusal
reaches the model as a failed tool result with the reason. Tool names are ``LABEL__TOOL``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Required

from pydantic import Field, TypeAdapter
from pydantic_ai import RunContext, ToolReturn
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from typing_extensions import TypedDict  # pydantic needs this TypedDict before 3.12

from skilldeck.agents._session import SkillSession, file_text
from skilldeck.agents.providers import AGENT_TOOLS, LOAD_SKILL
from skilldeck.errors import GateRefused, SkilldeckError
from skilldeck.gateway import META_TOOLS
from skilldeck.gateway._api import FIND, MAX_FIND_LIMIT, MAX_ID_CHARS, MAX_PATH_CHARS, MAX_QUERY_CHARS, READ_SKILL_FILE
from skilldeck.select._api import tool_function_name

__all__ = ["SkillToolset"]

INSTRUCTIONS = (
    "Tools are loaded on demand. Call `find` with the task to get cards (skills and tools), then "
    "`load_skill` with the id of the card that fits: it returns the skill's instructions and makes "
    "its tools available. Call only tools you loaded."
)
MAX_PROMPT_CHARS = MAX_QUERY_CHARS
"""The run's prompt is ranked for the instructions' cards up to this many characters."""


class _FindArgs(TypedDict, total=False):
    query: Required[Annotated[str, Field(max_length=MAX_QUERY_CHARS)]]
    limit: Annotated[int, Field(ge=1, le=MAX_FIND_LIMIT)]


class _LoadArgs(TypedDict):
    id: Annotated[str, Field(max_length=MAX_ID_CHARS)]


class _ReadArgs(TypedDict):
    skill: Annotated[str, Field(max_length=MAX_ID_CHARS)]
    path: Annotated[str, Field(max_length=MAX_PATH_CHARS)]


_FIND_ARGS = TypeAdapter(_FindArgs)
_LOAD_ARGS = TypeAdapter(_LoadArgs)
_READ_ARGS = TypeAdapter(_ReadArgs)
_READ = next(t for t in META_TOOLS if t["name"] == READ_SKILL_FILE)
"""The gateway's own ``read_skill_file``: the same name, description and arguments."""
_ANY_ARGS = TypeAdapter(dict[str, Any])  # upstream tools: the gate validates against the upstream schema


class SkillToolset(AbstractToolset[Any]):
    """Skill-first disclosure for a pydantic-ai agent over one :class:`SkillSession` (one conversation).

    Args:
        session: the conversation's session; its activation decides what is revealed and callable.
        id: the toolset's id (unique among an agent's toolsets).
        cards: how many cards for the run's prompt the instructions list (0: none, the model calls ``find``).
    """

    def __init__(self, session: SkillSession, *, id: str = "skilldeck", cards: int = 5) -> None:
        self.session = session
        self._id = id
        self.cards = max(0, min(cards, MAX_FIND_LIMIT))
        self._cards_for: tuple[str, str] | None = None  # (prompt, rendered cards) of the last run

    @property
    def id(self) -> str | None:
        return self._id

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        prompt = ctx.prompt if isinstance(ctx.prompt, str) else None
        if not self.cards or not prompt:
            return INSTRUCTIONS
        if self._cards_for is None or self._cards_for[0] != prompt:
            found = await self.session.afind(prompt[:MAX_PROMPT_CHARS], self.cards)
            lines = [f"- {c['id']} ({c['kind']}): {c['description']}" for c in found["cards"]]
            text = "Cards for this task:\n" + "\n".join(lines) if lines and not found["abstain"] else ""
            self._cards_for = (prompt, text)
        return INSTRUCTIONS + ("\n\n" + self._cards_for[1] if self._cards_for[1] else "")

    def _names(self) -> dict[str, str]:
        """Provider-safe name -> ``LABEL/TOOL`` for every active tool (first one wins a sanitised clash)."""
        names: dict[str, str] = {}
        for label, tool in self.session.active():
            names.setdefault(tool_function_name(label, tool), f"{label}/{tool}")
        return names

    def _tool(self, ctx: RunContext[Any], definition: ToolDefinition, validator: TypeAdapter[Any]) -> ToolsetTool[Any]:
        return ToolsetTool(
            toolset=self,
            tool_def=definition,
            max_retries=ctx.max_retries,
            args_validator=validator.validator,  # type: ignore[arg-type]  # a PluggableSchemaValidator (see SchemaValidatorProt)
        )

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        find, load = AGENT_TOOLS
        tools = {
            FIND: self._tool(
                ctx,
                ToolDefinition(name=FIND, parameters_json_schema=find["inputSchema"], description=find["description"]),
                _FIND_ARGS,
            ),
            LOAD_SKILL: self._tool(
                ctx,
                ToolDefinition(
                    name=LOAD_SKILL, parameters_json_schema=load["inputSchema"], description=load["description"]
                ),
                _LOAD_ARGS,
            ),
            READ_SKILL_FILE: self._tool(
                ctx,
                ToolDefinition(
                    name=READ_SKILL_FILE, parameters_json_schema=_READ["inputSchema"], description=_READ["description"]
                ),
                _READ_ARGS,
            ),
        }
        schemas = {t["name"]: t for t in self.session.active_tools()}
        for name, qualified in self._names().items():
            tool = schemas.get(qualified)
            if tool is None or name in tools:
                continue
            label = qualified.partition("/")[0]
            definition = ToolDefinition(
                name=name,
                parameters_json_schema=dict(tool.get("inputSchema") or {"type": "object", "properties": {}}),
                description=f"[{label}] {tool.get('description') or ''}".strip(),
                defer_loading=True,
                metadata={"dev.skilldeck/tool": qualified},
            )
            tools[name] = self._tool(ctx, definition, _ANY_ARGS)
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if name == FIND:
            return await self.session.afind(str(tool_args["query"]), tool_args.get("limit"))
        if name == LOAD_SKILL:
            return await self._load(str(tool_args["id"]))
        if name == READ_SKILL_FILE:
            try:
                return file_text(await self.session.read_skill_file(str(tool_args["skill"]), str(tool_args["path"])))
            except SkilldeckError as exc:  # not loaded, not listed, failed verification: the model hears why
                raise ToolFailed(str(exc)) from exc
        qualified = (tool.tool_def.metadata or {}).get("dev.skilldeck/tool") or self._names().get(name, name)
        try:
            result = await self.session.call(str(qualified), tool_args)
        except GateRefused as exc:
            raise ToolFailed(str(exc)) from exc
        if result.get("isError"):
            raise ToolFailed(_text(result) or "the upstream tool failed")
        structured = result.get("structuredContent")
        return structured if structured is not None else _text(result)

    async def _load(self, card_id: str) -> ToolReturn[Any]:
        loaded = await self.session.load([card_id])
        revealed = [tool_function_name(*str(t["name"]).split("/", 1)) for t in loaded["tools"]]
        answer = {
            "skills": [
                {"id": s["id"], "verified": s["verified"], "instructions": s["content"], "files": s.get("files", [])}
                for s in loaded["skills"]
            ],
            "tools": revealed,
            "refused": loaded["refused"],
        }
        return ToolReturn(answer, tools=revealed)


def _text(result: Mapping[str, Any]) -> str:
    return "\n".join(str(c.get("text", "")) for c in result.get("content", []) if c.get("type") == "text")
