"""Solon AI remote skills ("talents"): one skill of the pack, answered the way Solon's client asks.

Solon AI's ``McpTalentClient`` (``McpSkillClient`` before Solon 4) turns one MCP endpoint into one
talent. It reads a hidden metadata resource (``talent://metadataMcp``, ``skill://metadataMcp``
before 4.0) and calls four hidden tools, each with one string argument ``promptJson`` (the
conversation's ``Prompt`` serialized with its ``attrs``): ``isSupportedMcp`` (``"true"`` or not),
``onAttachMcp`` (nothing), ``getInstructionMcp`` (the instruction text) and ``getToolsMcp`` (tool
routing in three states: ``""`` every listed tool, ``"[]"`` none, a JSON list those). The full wire
contract, with references to the Solon source it was derived from, is in
``docs/context-aware-skills.md``.

:func:`enable_talent` registers these on a skilldeck server for one skill. Every answer comes from
the policy for the caller the **verified token** names (the default identity without one):
admission, the rendered ``SKILL.md`` body, the routed tools. The prompt's ``attrs.tenant_id`` and
``attrs.user_role`` are hints that can only narrow: a tenant other than the token's makes the skill
unsupported, a role the token carries restricts the answer to that role, and a role it does not
carry is ignored. Solon filters tools only on the client; here ``tools/call`` of a tool the
caller's routes do not grant is refused by the extension's interceptor as always.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

from skilldeck.errors import TalentPromptError, UsageError
from skilldeck.server._audience import offered
from skilldeck.server._dynamic import SkillRequest
from skilldeck.server._extension import SkillsExtension
from skilldeck.serving._api import Caller
from skilldeck.skill import parse_skill_md

__all__ = [
    "HIDDEN_META",
    "MAX_PROMPT_JSON_CHARS",
    "MAX_PROMPT_JSON_DEPTH",
    "METADATA_URIS",
    "TALENT_TOOLS",
    "PromptHints",
    "TalentAnswer",
    "decide",
    "enable_talent",
    "parse_prompt_json",
    "routing_value",
]

METADATA_URIS = ("talent://metadataMcp", "skill://metadataMcp")
"""Solon 4 reads the first, Solon 3.9 the second; both serve the same JSON."""
TALENT_TOOLS = ("isSupportedMcp", "onAttachMcp", "getInstructionMcp", "getToolsMcp")
HIDDEN_META: dict[str, Any] = {"hide": 1}
"""Solon's client drops every listed tool whose ``_meta`` has a ``hide`` key from what the model sees."""

MAX_PROMPT_JSON_CHARS = 1_000_000
"""``promptJson`` carries the whole conversation; longer is refused before it is parsed."""
MAX_PROMPT_JSON_DEPTH = 32
"""Nesting a serialized ``Prompt`` never needs (it is about 5 deep); deeper is refused."""

_DESCRIPTION = "Solon AI talent protocol; not for the model."


@dataclass(frozen=True)
class PromptHints:
    """What skilldeck reads of a ``promptJson``: two ``attrs`` values, both hints that may only narrow."""

    tenant_id: str | None = None
    user_role: str | None = None


def _depth(value: object) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if level > MAX_PROMPT_JSON_DEPTH:
                break
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def parse_prompt_json(text: str) -> PromptHints:
    """The hints in a Solon ``promptJson`` (``{"@type": ..., "attrs": {...}, "messages": [...]}``).

    Only ``attrs.tenant_id`` and ``attrs.user_role`` are read, and only when they are strings or
    numbers; everything else (messages, class names) is ignored.

    Raises:
        TalentPromptError: longer than :data:`MAX_PROMPT_JSON_CHARS`, nested deeper than
            :data:`MAX_PROMPT_JSON_DEPTH`, not JSON, or not a JSON object.
    """
    if len(text) > MAX_PROMPT_JSON_CHARS:
        raise TalentPromptError(
            f"promptJson has {len(text)} characters, more than the {MAX_PROMPT_JSON_CHARS} accepted; "
            "send a shorter conversation"
        )
    try:
        data = json.loads(text) if text.strip() else {}
    except RecursionError:
        raise TalentPromptError(f"promptJson is nested deeper than {MAX_PROMPT_JSON_DEPTH} levels") from None
    except ValueError as exc:
        raise TalentPromptError(f"promptJson is not JSON ({exc}); send the Prompt as Solon serializes it") from None
    if _depth(data) > MAX_PROMPT_JSON_DEPTH:
        raise TalentPromptError(f"promptJson is nested deeper than {MAX_PROMPT_JSON_DEPTH} levels")
    if not isinstance(data, dict):
        raise TalentPromptError("promptJson must be a JSON object (a serialized Prompt)")
    attrs = data.get("attrs")
    attrs = attrs if isinstance(attrs, Mapping) else {}

    def text_of(key: str) -> str | None:
        value = attrs.get(key)
        return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None

    return PromptHints(tenant_id=text_of("tenant_id"), user_role=text_of("user_role"))


@dataclass(frozen=True)
class TalentAnswer:
    """What the talent endpoint tells one caller about its skill."""

    supported: bool
    routed: frozenset[str] | None
    """The skill's tools routed to the caller; ``None`` when no policy restricts tools."""
    render_as: Caller
    """The caller the instructions are rendered for (the token's, narrowed by a held role)."""


def decide(ext: SkillsExtension, skill: str, caller: Caller, hints: PromptHints) -> TalentAnswer:
    """Admission and routing of ``skill`` for ``caller`` (from the token), narrowed by ``hints``.

    A hint never widens: a tenant other than the token's answers "not supported"; a role the
    token carries restricts admission and routing to what both the full caller and that role get;
    a role the token does not carry is ignored.
    """
    policy = ext.service.policy
    if hints.tenant_id is not None and hints.tenant_id != caller.tenant:
        return TalentAnswer(False, frozenset(), caller)
    narrowed = caller
    if hints.user_role is not None and hints.user_role in caller.roles:
        narrowed = replace(caller, roles=frozenset({hints.user_role}))
    served = any(e.name == skill for e in ext.catalog.entries)
    if policy is None:
        return TalentAnswer(served, None if served else frozenset(), narrowed)
    supported = served and offered(policy, skill, caller) and offered(policy, skill, narrowed)
    rule = policy.skill(skill)
    if not supported or rule is None:
        return TalentAnswer(supported, frozenset(), narrowed)
    return TalentAnswer(True, rule.route(caller) & rule.route(narrowed), narrowed)


def routing_value(answer: TalentAnswer, listed: frozenset[str] | None) -> str:
    """``getToolsMcp``'s three states: ``""`` (every tool the caller lists), ``"[]"`` (none), or a JSON list.

    ``listed`` is what the caller's ``tools/list`` shows apart from the hidden talent tools
    (``None``: no policy, everything). ``""`` is answered only when the routed tools cover all of
    it, since Solon's client reads ``""`` as "every tool of the endpoint".
    """
    if not answer.supported:
        return "[]"
    if answer.routed is None or (listed is not None and listed <= answer.routed):
        return ""
    return json.dumps(sorted(answer.routed))


def enable_talent(server: MCPServer[Any], ext: SkillsExtension, skill: str) -> None:
    """Answer Solon's talent protocol on ``server`` for ``skill`` (a name in ``ext``'s catalog).

    Registers the metadata resource under both URIs and the four tools, all with
    ``_meta: {"hide": 1}``; the tools are callable by every caller (they answer from the
    caller's token), every other tool stays as the policy routes it.

    Raises:
        UsageError: ``skill`` is not served by ``ext``.
    """
    entry = next((e for e in ext.catalog.entries if e.name == skill), None)
    if entry is None:
        names = ", ".join(sorted(e.name for e in ext.catalog.entries)) or "none"
        raise UsageError(f"--solon-talent {skill!r}: no such skill is served (served: {names})")
    metadata = json.dumps({"name": skill, "description": entry.description, "sensitive": False}, ensure_ascii=False)

    def read_metadata(uri: str) -> str:
        # per caller, like the four tools: one the policy does not admit to the skill learns nothing
        # of it, not even that it is there (its answer is a resource that does not exist)
        if not decide(ext, skill, ext.service.caller(get_access_token()), PromptHints()).supported:
            raise ResourceNotFoundError(f"Unknown resource: {uri}")
        return metadata

    for uri in METADATA_URIS:  # listed under a name that does not give the skill away
        server.resource(uri, name="talent metadata", mime_type="application/json", meta=HIDDEN_META)(
            partial(read_metadata, uri)
        )
    ext.service.protocol_tools = ext.service.protocol_tools | frozenset(TALENT_TOOLS)

    def hints(prompt_json: str) -> PromptHints:
        try:
            return parse_prompt_json(prompt_json)
        except TalentPromptError as exc:  # an is_error result the client reads; Solon's reads it as "not supported"
            raise ToolError(str(exc)) from None

    def answer(prompt_json: str) -> tuple[Caller, TalentAnswer]:
        caller = ext.service.caller(get_access_token())
        return caller, decide(ext, skill, caller, hints(prompt_json))

    def isSupportedMcp(promptJson: str) -> str:  # Solon's names
        return "true" if answer(promptJson)[1].supported else "false"

    def onAttachMcp(promptJson: str) -> str:
        hints(promptJson)  # bounded like the others; nothing to prepare
        return ""

    async def getInstructionMcp(promptJson: str, ctx: Context) -> str:
        _, decided = answer(promptJson)
        if not decided.supported:
            return ""
        view = ext.service.view(decided.render_as)
        found = next((e for e in view.entries if e.name == skill), None)
        if found is None:
            return ""
        request = SkillRequest(protocol_version=ctx.protocol_version or "", meta={})
        file = await ext.service.read_file(found.uri, request, view)
        return "" if file is None else parse_skill_md(file.data.decode("utf-8")).body.strip()

    def getToolsMcp(promptJson: str) -> str:
        caller, decided = answer(promptJson)
        allowed = ext.service.tools_for(caller)
        listed = None if allowed is None else allowed - frozenset(TALENT_TOOLS)
        return routing_value(decided, listed)

    for fn in (isSupportedMcp, onAttachMcp, getInstructionMcp, getToolsMcp):
        server.add_tool(fn, description=_DESCRIPTION, meta=HIDDEN_META, structured_output=False)
