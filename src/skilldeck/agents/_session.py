"""History B inside an agent loop: one conversation's find → load → call, for framework adapters.

A :class:`SkillSession` is what every framework adapter in :mod:`skilldeck.agents` builds on. It
is the gateway's loop without a downstream MCP connection: the same
:class:`~skilldeck.gateway._service.GatewayService` (ranking with abstention -- with the default
encoder, as ``skilldeck select``, unless built with ``encoder=None`` -- verified loading, the gate,
the policy, the decision log), one activation per session. An adapter turns its
methods into the framework's tools and :meth:`SkillSession.active_tools` into the tools the model
is shown on the next turn.

With a usage ledger on the service (``GatewayService(host, learning=Learner(store))``, see
:mod:`skilldeck.learning`), a question whose :meth:`SkillSession.find` showed a card that the session
then loaded and whose tool it called successfully is recorded for that card; :meth:`SkillSession.load`
reads in what other sessions or processes recorded meanwhile.

::

    async with Host(load_config("mcp.json")) as host:
        session = SkillSession(GatewayService(host))
        cards = session.find("file a refund for order 1234")
        loaded = await session.load([cards["cards"][0]["id"]])
        result = await session.call("billing/refund", {"order": "1234"})
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from skilldeck.errors import UsageError
from skilldeck.gateway import GatewayService
from skilldeck.gateway._api import client_key
from skilldeck.serving._api import Caller

__all__ = ["SkillSession", "file_text"]


def file_text(read: Mapping[str, Any]) -> str:
    """A ``read_skill_file`` result as a model reads it: the file's text, or a line saying it is binary."""
    return str(read.get("text") or f"(binary file {read['uri']}, {len(read.get('blob', ''))} base64 characters)")


class SkillSession:
    """One conversation's view of the upstream servers: what it found, loaded, and may call.

    Args:
        service: the gateway service over a connected host (shared by every session).
        caller: who the conversation acts for (the policy's default identity when omitted).
        name: a name for the session's activation (unique per session when omitted).
    """

    def __init__(self, service: GatewayService, *, caller: Caller | None = None, name: str | None = None) -> None:
        self.service = service
        policy = service.policy
        self.caller = caller or (policy.default_identity if policy is not None else Caller())
        self.client = client_key(
            "agent", self.caller.subject, name or uuid.uuid4().hex, client_id=self.caller.client_id
        )

    @staticmethod
    def of(context: object, *, how: str = "context=SkillSession(service)") -> SkillSession:
        """The session a framework's run context carries: the context itself, or its ``skill_session``.

        Raises:
            UsageError: there is none; the message shows ``how`` to pass one.
        """
        if isinstance(context, SkillSession):
            return context
        found = getattr(context, "skill_session", None)
        if isinstance(found, SkillSession):
            return found
        raise UsageError(
            f"the run has no SkillSession: pass {how} or a context object with a 'skill_session' attribute"
        )

    def find(self, query: str, limit: int | None = None, *, needs: list[str] | None = None) -> dict[str, Any]:
        """Ranked cards for ``query`` (or each of ``needs``; never a schema), or an abstention with its reason.

        With the ranking it has now: a history still being read (the first question after a start, one
        asked right after a successful call) is not counted; :meth:`afind` waits for it."""
        return self.service.find(self.caller, self.client, query, limit, needs=needs)

    async def afind(self, query: str, limit: int | None = None, *, needs: list[str] | None = None) -> dict[str, Any]:
        """:meth:`find` once this session's ranker has read what was learned from past uses (holding neither
        the event loop nor a thread, bounded: :meth:`~skilldeck.gateway.GatewayService.find_learned`), as the
        gateway's ``find`` does."""
        return await self.service.find_learned(self.caller, self.client, query, limit, needs=needs)

    async def load(self, ids: Iterable[str]) -> dict[str, Any]:
        """Load cards by id: verified skill text and the schemas of exactly the tools it names, now active."""
        return await self.service.load(self.caller, self.client, list(ids))

    async def read_skill_file(self, skill: str, path: str) -> dict[str, Any]:
        """A supporting file of a skill this session loaded, verified against the held entry."""
        return await self.service.read_skill_file(self.client, skill, path)

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Call an active tool (``LABEL/TOOL``) through the gate; the upstream result as it came.

        Raises:
            GateRefused: the tool is not listed, not active in this session, not routed to the
                caller, or the arguments do not match its schema; nothing was sent.
        """
        return await self.service.call(self.caller, self.client, tool, arguments)

    def active(self) -> list[tuple[str, str]]:
        """The ``(label, tool)`` pairs this session may call now (what it loaded, plus pinned tools)."""
        activation = self.service.activations.peek(self.client)
        loaded = list(activation.tools) if activation is not None else []
        return [*loaded, *(p for p in self.service.pinned if p not in loaded)]

    def active_tools(self) -> list[dict[str, Any]]:
        """The MCP ``Tool`` objects of :meth:`active`, named ``LABEL/TOOL``, schemas as the upstream listed them."""
        listed = {(t.label, t.name): t.tool for t in self.service.upstreams.tools()}
        tools = []
        for label, name in self.active():
            tool = listed.get((label, name))
            if tool is not None:
                tools.append({**dict(tool), "name": f"{label}/{name}"})
        return tools
