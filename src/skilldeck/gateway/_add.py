"""The ``add`` meta-tool on the wire: a person asked through MCP elicitation (form mode), in both eras.

``add`` takes a catalog card's id. Before anyone is asked, the card is checked
(:meth:`~skilldeck.gateway._discovery.Discovery.card`: it exists at that version, the policy lets
this caller add it, something here can run it). Then the person is asked with the form of
:func:`~skilldeck.catalog._consent.consent_form` (what will run, exactly, and what it needs):

* a 2025-11-25 client gets an ``elicitation/create`` request on the stream of its ``tools/call``
  (:func:`~skilldeck.gateway._relay.legacy_asker`), and the call waits for the answer (at most
  :data:`CONSENT_SECONDS`);
* a 2026-07-28 client's ``tools/call`` ends with ``input_required`` carrying the form under
  ``consent``, and a ``requestState`` (sealed by the SDK) naming a pending consent held here: bound
  to the client and the card, good once, for :data:`CONSENT_SECONDS`, at most
  :data:`MAX_PENDING` at once. Its retry carries the answer.

A client that did not declare form elicitation is not asked: ``add`` is refused, naming the
terminal command a person can run instead. Only an ``accept`` adds
(:func:`~skilldeck.catalog._consent.decide`); then the server is started and kept
(:meth:`~skilldeck.gateway._discovery.Discovery.add`). Every outcome is one ``add`` record in the
decision log, with names only: a value the person gave is never logged.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, ErrorData, InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skilldeck.catalog import Launch, cli_command, consent_form, decide
from skilldeck.errors import AddRefused, GateRefused, shorten
from skilldeck.gateway._discovery import Discovery
from skilldeck.gateway._meta import AddArguments
from skilldeck.gateway._relay import call_relay, legacy_asker, missing_capability, parse_answer
from skilldeck.serving._api import RequestIdentity

__all__ = ["CONSENT_KEY", "CONSENT_SECONDS", "MAX_PENDING", "AddTool", "PendingConsents"]

CONSENT_KEY = "consent"
"""The key of the form in a 2026-07-28 ``input_required`` result (and of its answer in the retry)."""
CONSENT_SECONDS = 600.0
"""How long a person has to answer the form."""
MAX_PENDING = 256
"""2026-07-28 consents awaited at once (the oldest is forgotten first)."""


@dataclass(frozen=True)
class _Pending:
    client: str
    card: str
    launch: Launch
    expires: float


class PendingConsents:
    """Consents a 2026-07-28 client was asked for, by the token its ``requestState`` carries (see the module docs)."""

    def __init__(
        self, limit: int = MAX_PENDING, ttl: float = CONSENT_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.ttl = ttl
        self._clock = clock
        self._held: OrderedDict[str, _Pending] = OrderedDict()

    def __len__(self) -> int:
        return len(self._held)

    def new(self, client: str, card: str, launch: Launch) -> str:
        while len(self._held) >= self.limit:
            self._held.popitem(last=False)
        token = secrets.token_urlsafe(24)
        self._held[token] = _Pending(client, card, launch, self._clock() + self.ttl)
        return token

    def take(self, token: str, client: str, card: str) -> Launch:
        """The launch the consent ``token`` asked about, once; refused when it is not this client's and card's.

        Raises:
            AddRefused: ``declined`` -- no such consent awaited (answered already, expired, forgotten, or
                another client's or card's); nothing was added.
        """
        pending = self._held.get(token)
        if pending is None or pending.client != client or pending.card != card or pending.expires < self._clock():
            raise AddRefused(
                "requestState names no consent of yours awaited for this card (answered already, expired, or "
                "another's); call add again without it; nothing was added",
                code="declined",
            )
        del self._held[token]
        return pending.launch


def _form(launch: Launch) -> ElicitRequest:
    message, schema = consent_form(launch)
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


class AddTool:
    """Answers ``add`` for one gateway (see the module docs)."""

    def __init__(self, discovery: Discovery) -> None:
        self.discovery = discovery
        self.pending = PendingConsents()

    async def __call__(self, ctx: Any, who: RequestIdentity, args: AddArguments) -> dict[str, Any]:
        """The ``structuredContent`` of an accepted add, or an ``input_required`` result (2026-07-28).

        Raises:
            AddRefused: nothing was added (the message says why and what a person can do instead).
        """
        log = self.discovery.service.log
        try:
            return await self._add(ctx, who, args.id)
        except AddRefused as refused:
            log.record("add", who.client, id=shorten(args.id), refused=str(refused), reason=refused.code)
            raise

    async def _add(self, ctx: Any, who: RequestIdentity, card: str) -> dict[str, Any]:
        discovery = self.discovery
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            relay = call_relay(ctx)
            if relay.request_state is None:
                if relay.input_responses:
                    raise GateRefused("inputResponses without requestState answer nothing; call add again without them")
                launch = discovery.card(who.caller, card)
                self._can_ask(ctx, launch)
                token = self.pending.new(who.client, card, launch)
                result = InputRequiredResult(input_requests={CONSENT_KEY: _form(launch)}, request_state=token)
                discovery.service.log.record("add", who.client, id=shorten(card), asked=True)
                return result.model_dump(by_alias=True, mode="json", exclude_none=True)
            asked = self.pending.take(relay.request_state, who.client, card)
            launch = discovery.card(who.caller, card)  # checked again: the policy or the catalog may have changed
            if launch.command_line() != asked.command_line():
                raise AddRefused(
                    f"what {card} would run changed since the person was asked; call add again; nothing was added",
                    code="declined",
                )
            raw = (relay.input_responses or {}).get(CONSENT_KEY)
            if raw is None:
                raise AddRefused(f"the retry carries no answer to {CONSENT_KEY!r}; nothing was added", code="declined")
            answer = parse_answer(_form(launch), raw)
        else:
            launch = discovery.card(who.caller, card)
            self._can_ask(ctx, launch)
            answered: ElicitResult | ErrorData | None = None
            with anyio.move_on_after(CONSENT_SECONDS):
                answered = await legacy_asker(ctx)(_form(launch))  # type: ignore[assignment]
            if answered is None:
                raise AddRefused(f"no answer within {CONSENT_SECONDS:g} s; nothing was added", code="declined")
            if isinstance(answered, ErrorData):
                raise AddRefused(
                    f"the client did not ask the person ({shorten(answered.message, 200)}); nothing was added "
                    f"(a person can add it from a terminal: {cli_command(launch.entry)})",
                    code="no_elicitation",
                )
            answer = answered
        assert isinstance(answer, ElicitResult)
        values = decide(launch, answer.action, _content(answer))
        return await discovery.add(launch, values, client=who.client)

    @staticmethod
    def _can_ask(ctx: Any, launch: Launch) -> None:
        if missing_capability(_form(launch), ctx.session.client_capabilities) is not None:
            raise AddRefused(
                f"your client cannot ask a person (it declared no form elicitation), so nothing was added; "
                f"a person can add it from a terminal: {cli_command(launch.entry)}",
                code="no_elicitation",
            )


def _content(answer: ElicitResult) -> Mapping[str, Any] | None:
    content = answer.content
    return dict(content) if isinstance(content, Mapping) else None
