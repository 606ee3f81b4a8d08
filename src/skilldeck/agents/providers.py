"""History B on the providers' own tool search: every tool deferred, skilldeck answering the search.

Anthropic's Messages API and OpenAI's Responses API can hold tool definitions back from the model
(``defer_loading: true``) and load them when a search names them. The tools array then stays the
same on every turn, so the provider's prompt cache survives a load; only the search's answer, at
the end of the conversation, adds the loaded schemas. Here that search is skilldeck's: the model
calls ``find`` for cards, then ``load_skill`` with a card id, and the answer names exactly the
tools the verified skill activated in the :class:`~skilldeck.agents._session.SkillSession`:

* **Anthropic** — :func:`anthropic_tools` is ``find`` and ``load_skill`` plus every tool the caller
  may load, each ``defer_loading: true``; :func:`anthropic_load_result` answers a ``load_skill``
  ``tool_use`` with a ``tool_result`` of ``tool_reference`` blocks (the API expands them into the
  deferred definitions) followed by the skill's instructions as text.
* **OpenAI Responses** — :func:`openai_tools` is the ``find`` function, a client-executed
  ``tool_search`` whose arguments are ``load_skill``'s, and one ``namespace`` per server holding
  its tools, each ``defer_loading: true``; :func:`openai_load_output` answers a
  ``tool_search_call`` with a ``tool_search_output`` naming the loaded tools by namespace, then
  the skill's instructions as a user message.

Calls the model makes come back by their provider names; :func:`tool_id` maps them to
``LABEL/TOOL`` for :meth:`SkillSession.call`, which gates them (a deferred tool the model was
never given is refused there, nothing sent). Pure functions: no SDK import, no I/O; the shapes
are the SDKs' request types (``anthropic.types.ToolParam``, ``ToolResultBlockParam``;
``openai.types.responses.NamespaceToolParam``, ``ToolSearchToolParam``, ...).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal, cast

from skilldeck.agents._session import SkillSession
from skilldeck.errors import GateRefused
from skilldeck.gateway import META_TOOLS
from skilldeck.gateway._api import FIND, MAX_ID_CHARS
from skilldeck.select._api import render_tools, tool_function_name

__all__ = [
    "AGENT_TOOLS",
    "LOAD_SKILL",
    "anthropic_load_result",
    "anthropic_tools",
    "arguments",
    "catalog_tools",
    "openai_load_output",
    "openai_tools",
    "tool_id",
]

LOAD_SKILL: Final = "load_skill"

_FIND = next(t for t in META_TOOLS if t["name"] == FIND)
AGENT_TOOLS: Final[tuple[dict[str, Any], ...]] = (
    {"name": FIND, "description": _FIND["description"], "inputSchema": _FIND["inputSchema"]},
    {
        "name": LOAD_SKILL,
        "description": (
            "Load one card returned by `find`, by id (LABEL/NAME). A skill returns its verified "
            "instructions, and the tools it uses become available to you from then on; a tool id "
            "makes that one tool available. Call only tools you loaded."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"id": {"type": "string", "maxLength": MAX_ID_CHARS, "description": "A card id from find"}},
            "required": ["id"],
            "additionalProperties": False,
        },
    },
)
"""The two tools every adapter shows the model from the first turn, as MCP ``Tool`` objects."""


def catalog_tools(session: SkillSession) -> list[tuple[str, Mapping[str, Any]]]:
    """Every ``(label, MCP Tool)`` the session's caller may load (the policy's view), in listing order."""
    cards = session.service.index_for(session.caller).cards
    return [(label, tool) for label, tools in cards.tools.items() for tool in tools.values()]


def tool_id(session: SkillSession, name: str, namespace: str | None = None) -> str | None:
    """``LABEL/TOOL`` for a tool the model called by its provider name (``namespace`` for OpenAI's), or ``None``."""
    for label, tool in catalog_tools(session):
        tool_name = str(tool["name"])
        if namespace is None and tool_function_name(label, tool_name) == name:
            return f"{label}/{tool_name}"
        if namespace is not None and _namespace(label) == namespace and _function(tool_name) == name:
            return f"{label}/{tool_name}"
    return None


def _namespace(label: str) -> str:
    return tool_function_name("", label, qualify=False)


def _function(tool: str) -> str:
    return tool_function_name("", tool, qualify=False)


def _loaded_pairs(loaded: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label, tool)`` of what a :meth:`SkillSession.load` result activated."""
    pairs = []
    for tool in loaded.get("tools", []):
        label, _, name = str(tool["name"]).partition("/")
        pairs.append((label, name))
    return pairs


def _instructions(loaded: Mapping[str, Any]) -> str:
    """The loaded skills' verified, origin-tagged text, and any refusals, for the model to read."""
    parts = [str(skill["content"]) for skill in loaded.get("skills", [])]
    parts += [f"not loaded: {r['id']}: {r['reason']}" for r in loaded.get("refused", [])]
    return "\n\n".join(parts)


def _rendered(
    tools: list[tuple[str, Mapping[str, Any]]], render: Literal["openai", "anthropic"], *, qualify: bool = True
) -> list[dict[str, Any]]:
    """:func:`~skilldeck.select._project.render_tools` for an API (a list there; only ``"text"`` renders a str)."""
    return cast(list[dict[str, Any]], render_tools(tools, render, qualify=qualify))


# -- Anthropic Messages ----------------------------------------------------------------------------


def anthropic_tools(session: SkillSession) -> list[dict[str, Any]]:
    """``tools`` for ``messages.create``: ``find`` and ``load_skill``, then every loadable tool deferred.

    The list depends only on the catalog (not on what is loaded), so it is byte-identical on every
    turn of a conversation and the prompt cache holds.
    """
    meta = _rendered([("", t) for t in AGENT_TOOLS], "anthropic", qualify=False)
    deferred = _rendered(catalog_tools(session), "anthropic")
    for tool in meta:
        tool["description"] = tool["description"].removeprefix("[] ")
    return [*meta, *({**t, "defer_loading": True} for t in deferred)]


def anthropic_load_result(tool_use_id: str, loaded: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The user-message content answering a ``load_skill`` ``tool_use``: ``tool_reference`` blocks, then the skill.

    ``loaded`` is what :meth:`SkillSession.load` returned; exactly its tools are referenced.
    """
    references = [
        {"type": "tool_reference", "tool_name": tool_function_name(label, name)}
        for label, name in _loaded_pairs(loaded)
    ]
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
    if references:
        result["content"] = references
    else:  # nothing activated: say why, as text (a tool_result of zero references is not an answer)
        result["content"] = [{"type": "text", "text": _instructions(loaded) or "nothing was loaded"}]
        result["is_error"] = True
        return [result]
    text = _instructions(loaded)
    return [result, *([{"type": "text", "text": text}] if text else [])]


# -- OpenAI Responses ------------------------------------------------------------------------------


def _responses_function(label: str, tool: Mapping[str, Any], *, deferred: bool) -> dict[str, Any]:
    function = dict(_rendered([(label, tool)], "openai", qualify=False)[0]["function"])
    out: dict[str, Any] = {"type": "function", **function, "name": _function(str(tool["name"]))}
    if deferred:
        out["defer_loading"] = True
    return out


def _namespaces(tools: list[tuple[str, Mapping[str, Any]]], *, deferred: bool) -> list[dict[str, Any]]:
    by_label: dict[str, list[dict[str, Any]]] = {}
    for label, tool in tools:
        by_label.setdefault(label, []).append(_responses_function(label, tool, deferred=deferred))
    return [
        {
            "type": "namespace",
            "name": _namespace(label),
            "description": f"Tools of the MCP server '{label}'",
            "tools": functions,
        }
        for label, functions in by_label.items()
    ]


def openai_tools(session: SkillSession) -> list[dict[str, Any]]:
    """``tools`` for ``responses.create``: ``find``, a client ``tool_search`` (``load_skill``), deferred namespaces.

    Like :func:`anthropic_tools`, the same on every turn: loading adds nothing here.
    """
    find, load = AGENT_TOOLS
    return [
        {
            "type": "function",
            "name": FIND,
            "description": find["description"],
            "parameters": find["inputSchema"],
            "strict": False,
        },
        {
            "type": "tool_search",
            "execution": "client",
            "description": load["description"],
            "parameters": load["inputSchema"],
        },
        *_namespaces(catalog_tools(session), deferred=True),
    ]


def openai_load_output(call_id: str, loaded: Mapping[str, Any], session: SkillSession) -> list[dict[str, Any]]:
    """Input items answering a client ``tool_search_call``: a ``tool_search_output`` with the loaded tools, then the skill."""
    wanted = set(_loaded_pairs(loaded))
    tools = [(label, tool) for label, tool in catalog_tools(session) if (label, str(tool["name"])) in wanted]
    items: list[dict[str, Any]] = [
        {
            "type": "tool_search_output",
            "call_id": call_id,
            "execution": "client",
            "status": "completed",
            "tools": _namespaces(tools, deferred=False),
        }
    ]
    text = _instructions(loaded)
    if text:
        items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    return items


def arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """A provider call's arguments as a dict (OpenAI sends a JSON string, Anthropic an object)."""
    if raw is None:
        return {}
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = None
    if not isinstance(value, Mapping):
        raise GateRefused("the call's arguments are not a JSON object; send the tool's arguments as an object")
    return dict(value)
