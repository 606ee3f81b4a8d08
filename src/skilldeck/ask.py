"""The way a question travels: discovery → cards → decision → verified load → projection → gate → call.

:func:`ask` wires the host (connections, registry, verified loading) to selection (cards,
ranking, abstention, History A/B projection, the tool gate). It fetches nothing but what the
chosen skill needs: the ``SKILL.md`` of that one skill, and — only when asked — one tool call,
sent on the same session that listed the tool.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skilldeck.errors import GateRefused
from skilldeck.host import Host, LoadedSkill
from skilldeck.select import (
    CardSet,
    CatalogSnapshot,
    Decision,
    DecisionLog,
    Encoder,
    Selector,
    ServerSnapshot,
    SkillSnapshot,
    ToolGate,
    build_cards,
    skill_tools,
)
from skilldeck.select._api import Payload, Render, history_a, history_b, token_summary

__all__ = ["AskResult", "ask", "call_tool", "snapshot_from_host"]


@dataclass
class AskResult:
    question: str
    decision: Decision
    cards: CardSet
    loaded: LoadedSkill | None
    tools: list[tuple[str, str]]
    history_a: Payload
    history_b: Payload
    gate: ToolGate
    call: dict[str, Any] | None = None

    @property
    def token_summary(self) -> str:
        """History A against History B in one line, saying what B holds (see :func:`token_summary`)."""
        return token_summary(
            self.history_a, self.history_b, abstained=self.decision.abstain, skill=self.loaded is not None
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "decision": self.decision.to_json(),
            "skill": None
            if self.loaded is None
            else {
                "server": self.loaded.label,
                "uri": self.loaded.uri,
                "verified": self.loaded.verified,
                "content": self.loaded.tagged(),
            },
            "exposedTools": [{"server": s, "name": n} for s, n in self.tools],
            "tokens": {
                "historyA": self.history_a.tokens,
                "historyB": self.history_b.tokens,
                "summary": self.token_summary,
            },
            "historyB": self.history_b.to_json(),
            "call": self.call,
        }


MAX_SERVER_DESCRIPTION = 1_000
"""Characters of an upstream's own description kept for ranking (it is one field among its tools')."""


def _self_description(host: Host, label: str) -> str:
    connected = host.sessions.get(label)
    info = connected.client.server_info if connected is not None else None
    return " ".join((info.description or "").split())[:MAX_SERVER_DESCRIPTION] if info is not None else ""


def snapshot_from_host(host: Host, bodies: Mapping[tuple[str, str], str] | None = None) -> CatalogSnapshot:
    """The host's registry as a catalog snapshot (skill bodies only where already loaded).

    A server's description is the one it gives of itself (``serverInfo.description``), which the
    ranking reads as it reads a snapshot's (the server's document and its label view)."""
    bodies = bodies or {}
    servers = []
    for label in host.labels:
        skills = tuple(SkillSnapshot(r.entry, bodies.get(r.key)) for r in host.skills if r.label == label)
        tools = tuple(dict(t.tool) for t in host.tools(label))
        servers.append(
            ServerSnapshot(label=label, description=_self_description(host, label), tools=tools, skills=skills)
        )
    return CatalogSnapshot(tuple(servers))


async def call_tool(host: Host, gate: ToolGate, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Send a tool call through the gate, on the session that listed the tool.

    Raises:
        GateRefused: not listed, not active, or invalid arguments (nothing sent).
    """
    label, tool = gate.check(name, arguments)
    connected = host.sessions.get(label)
    if connected is None:
        failure = host.failures.get(label)
        raise GateRefused(
            f"{label!r} is no longer connected"
            + (f" ({failure.reason})" if failure else "")
            + "; the call was not sent"
        )
    result = await connected.client.call_tool(tool, dict(arguments or {}))
    payload = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {"server": label, "tool": tool, "arguments": dict(arguments or {}), "result": payload}


async def ask(
    host: Host,
    question: str,
    *,
    encoder: Encoder | None = None,
    render: Render = "openai",
    shortlist: int = 10,
    threshold: float | None = None,
    log: DecisionLog | None = None,
    call: tuple[str, Mapping[str, Any] | None] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> AskResult:
    """Answer ``question`` with the capability it needs, or abstain.

    With an ``encoder``, card vectors are kept by content in ``cache_dir`` (nothing is written
    when it is ``None``)."""
    cards = build_cards(snapshot_from_host(host))
    selector = Selector(cards, encoder=encoder, threshold=threshold, log=log, cache_dir=cache_dir)
    decision = selector.decide(question)
    shown = [s.card for s in decision.ranked[:shortlist]]
    loaded: LoadedSkill | None = None
    tools: list[tuple[str, str]] = list(decision.tools)
    skill_text: str | None = None
    if not decision.abstain and decision.chosen and decision.chosen[0].kind == "skill":
        card = decision.chosen[0]
        record = host.skill(card.server, card.uri or "")
        if record is not None:
            loaded = await host.load(record)
            skill_text = loaded.tagged()
            if not card.tools:  # no metadata: tools quoted in the verified body
                server_tools = {label: [n for n in cards.tools.get(label, {})] for label in cards.tools}
                found, _ = skill_tools(card.server, record.entry.frontmatter, loaded.body, server_tools)
                tools = [*found, *(t for t in tools if t not in found)]
    gate = ToolGate(cards.tools, tools if not decision.abstain else [])
    result = AskResult(
        question=question,
        decision=decision,
        cards=cards,
        loaded=loaded,
        tools=tools if not decision.abstain else [],
        history_a=history_a(cards, render),
        history_b=history_b(cards, shown, tools if not decision.abstain else [], render, skill_text=skill_text),
        gate=gate,
    )
    if call is not None:
        name, arguments = call
        result.call = await call_tool(host, gate, name, arguments)
    return result
