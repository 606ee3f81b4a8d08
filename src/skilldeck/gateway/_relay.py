"""What an upstream asks while serving a proxied call, relayed to the client that made the call.

An upstream serving a ``call`` (or a pinned or injected tool) may ask its client for a sampled
message (``sampling/createMessage``), for input from the user (``elicitation/create``) or for its
roots (``roots/list``). The gateway is that client (the host declares the three capabilities
upstream), and it hands each question to the downstream client whose call is being served, never
to another, then hands the answer back.

Which call a question belongs to:

* a 2026-07-28 upstream asks inside its ``tools/call`` result (``input_required``); the SDK driver
  (or the gateway, below) answers it in the task of that very call, where :data:`CALLING` names it;
* a 2025-11-25 upstream sends a request on its session while the call waits. The protocol does not
  tie it to a request, and the session is shared by every downstream client; it goes to the one
  call waiting on that upstream when exactly one is, and is refused when several are (it cannot
  be told whose it is, so it is given to none), or when none is. A ``roots/list`` is not given so:
  a server asks it on its own (after its handshake, on ``roots/list_changed``) and keeps the answer
  for the session, so the one call waiting then is no owner of it; unless it arrives in the task of
  a call (in-process, on the call's own HTTP response stream), the gateway answers it with its own
  roots, none.

How the downstream client is asked:

* 2025-11-25: a request on its session, related to its ``tools/call`` (:func:`legacy_asker`);
* 2026-07-28: its ``tools/call`` ends with ``input_required`` carrying the questions, and its retry
  carries the answers. A 2026-07-28 upstream's questions and ``requestState`` pass through
  unchanged (the upstream checks its own state); a 2025-11-25 upstream's call is held open between
  rounds (:class:`ParkedCall`, named by an unguessable token bound to the client and the tool).
  Every ``requestState`` the gateway hands out is sealed by the SDK's request-state boundary.

When a 2025-11-25 upstream withdraws a question (``notifications/cancelled`` for its request, e.g.
on its own timeout), the SDK cancels the task that relays it, and the withdrawal goes on: a
2025-11-25 caller is sent ``notifications/cancelled`` for the request the gateway sent it (by the
SDK, on the stream of its call), and its callback is cancelled; a 2026-07-28 caller of a held call
is not given the question in a later round, and an answer its retry carries for it is dropped (the
protocol cannot take back an ``input_required`` already sent). A 2026-07-28 upstream asks inside
its result and has no request to withdraw.

A client that did not declare the capability a question needs is never asked. A 2025-11-25
upstream's request gets an error response (``INVALID_REQUEST``, as the SDK's own client answers
without the capability), and the upstream decides what its call does without the answer (the
caller hears its result). A 2026-07-28 upstream's ``input_required`` for it ends the caller's
``tools/call`` with ``MISSING_REQUIRED_CLIENT_CAPABILITY`` naming what is required, as that upstream
answers a client that did not declare it. (A 2026-07-28 upstream is told on each proxied request what
its caller declared, see :mod:`skilldeck.host._on_behalf`, so it mostly does not ask: it answers
``-32021`` itself, which reaches a 2026-07-28 caller as it came.)

A 2026-07-28 retry whose ``inputResponses`` is not an object (``null`` included), or holds an answer
that is no valid result, is refused as the protocol refuses malformed params: ``-32602``, HTTP 400
(:func:`checked_input_responses`).
"""

from __future__ import annotations

import logging
import secrets
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    REQUEST_TIMEOUT,
    CancelledNotification,
    CancelledNotificationParams,
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitationCapability,
    ElicitRequest,
    ElicitResult,
    ErrorData,
    FormElicitationCapability,
    InputRequest,
    InputResponse,
    InputResponses,
    ListRootsResult,
    LoggingLevel,
    LoggingMessageNotificationParams,
    MissingRequiredClientCapabilityErrorData,
    RootsCapability,
    SamplingCapability,
    SamplingToolsCapability,
    UrlElicitationCapability,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, TypeAdapter, ValidationError

from skilldeck.errors import GateRefused

if TYPE_CHECKING:  # the service imports this module and knows no server SDK: only annotations name it
    from mcp.server.context import ServerRequestContext

    from skilldeck.host import Host

logger = logging.getLogger(__name__)

__all__ = [
    "CALLING",
    "LOG_LEVELS",
    "MAX_INPUT_RESPONSES",
    "MAX_PARKED_CALLS",
    "PARKED_TTL_SECONDS",
    "Ask",
    "CallRelay",
    "LogSink",
    "ParkedCall",
    "ParkedCalls",
    "Waiting",
    "call_relay",
    "capability_error",
    "checked_input_responses",
    "forward_log_level",
    "legacy_asker",
    "missing_capability",
    "parse_answer",
    "parse_input_responses",
]

MAX_INPUT_RESPONSES = 32
"""Answers one retried ``tools/call`` may carry (``inputResponses`` entries)."""
MAX_PARKED_CALLS = 256
"""2025-11-25 upstream calls held open at once while their 2026-07-28 callers answer a question."""
PARKED_TTL_SECONDS = 300.0
"""How long a held call waits for its caller's next round before the upstream is told no answer came."""
WITHDRAW_WITHIN = 2.0
"""Seconds the notice withdrawing a question from a caller whose call ended may take to send."""

_INPUT_RESPONSES: TypeAdapter[InputResponses] = TypeAdapter(InputResponses)

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The protocol's log levels, most verbose first."""

Ask = Callable[[InputRequest], Awaitable[InputResponse | ErrorData]]
"""Puts one upstream question to the calling client; the answer, or an error to give the upstream."""
LogSink = Callable[[LoggingMessageNotificationParams], Awaitable[None]]


@dataclass(eq=False)
class CallRelay:
    """One proxied call's way back to the client that made it (built per request by the gateway server)."""

    capabilities: ClientCapabilities | None = None
    """What the calling client declared (sampling, elicitation, roots)."""
    ask: Ask | None = None
    """For a 2025-11-25 client: asks it mid-call. ``None`` for a 2026-07-28 client (asked by ``input_required``)."""
    modern: bool = False
    """The client speaks 2026-07-28: questions end its ``tools/call`` with ``input_required``."""
    input_responses: dict[str, Any] | None = None
    """The answers a 2026-07-28 client's retry carries (raw, checked where used)."""
    request_state: str | None = None
    """The ``requestState`` a 2026-07-28 client's retry echoes."""


@dataclass(eq=False)
class Waiting:
    """A proxied call waiting on an upstream: where its log messages and questions go."""

    log: LogSink | None = None
    relay: CallRelay | None = None
    parked: ParkedCall | None = None

    async def answer(self, request: InputRequest) -> InputResponse | ErrorData:
        if self.parked is not None:
            return await self.parked.ask(request)
        relay = self.relay
        if relay is None or relay.ask is None:
            return _refusal(request, "the client that made this call cannot be asked (its session has no way back)")
        missing = missing_capability(request, relay.capabilities)
        if missing is not None:
            return _refusal(request, f"the client that made this call did not declare the {missing[0]} capability")
        return await relay.ask(request)


CALLING: ContextVar[tuple[str, Waiting] | None] = ContextVar("skilldeck_gateway_calling", default=None)
"""The upstream label and the proxied call the current task is serving (set around the upstream call)."""


def _refusal(request: InputRequest, why: str) -> ErrorData:
    return ErrorData(code=INVALID_REQUEST, message=f"{request.method} refused: {why}")


def missing_capability(
    request: InputRequest, capabilities: ClientCapabilities | None
) -> tuple[str, ClientCapabilities] | None:
    """``(name, required capabilities)`` when ``capabilities`` do not cover ``request``, else ``None``.

    A bare ``elicitation: {}`` counts as form support (the only shape before modes existed).
    """
    if isinstance(request, ElicitRequest):
        elicitation = capabilities.elicitation if capabilities is not None else None
        if request.params.mode == "url":
            if elicitation is not None and elicitation.url is not None:
                return None
            return "url elicitation", ClientCapabilities(
                elicitation=ElicitationCapability(url=UrlElicitationCapability())
            )
        if elicitation is not None and (elicitation.form is not None or elicitation.url is None):
            return None
        return "form elicitation", ClientCapabilities(
            elicitation=ElicitationCapability(form=FormElicitationCapability())
        )
    if isinstance(request, CreateMessageRequest):
        sampling = capabilities.sampling if capabilities is not None else None
        tools = bool(request.params.tools) or request.params.tool_choice is not None
        if sampling is not None and (not tools or sampling.tools is not None):
            return None
        name = "sampling.tools" if tools else "sampling"
        return name, ClientCapabilities(sampling=SamplingCapability(tools=SamplingToolsCapability() if tools else None))
    if capabilities is not None and capabilities.roots is not None:
        return None
    return "roots", ClientCapabilities(roots=RootsCapability())


def capability_error(requests: Mapping[str, InputRequest], capabilities: ClientCapabilities | None) -> MCPError | None:
    """The 2026-07-28 error for questions the client did not declare the capability of, or ``None``."""
    for request in requests.values():
        missing = missing_capability(request, capabilities)
        if missing is not None:
            name, required = missing
            data = MissingRequiredClientCapabilityErrorData(required_capabilities=required)
            return MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"the upstream tool needs the {name} capability, which this request did not declare",
                data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
            )
    return None


def _answer_type(request: InputRequest) -> type[BaseModel]:
    if isinstance(request, CreateMessageRequest):
        wants_tools = bool(request.params.tools) or request.params.tool_choice is not None
        return CreateMessageResultWithTools if wants_tools else CreateMessageResult
    if isinstance(request, ElicitRequest):
        return ElicitResult
    return ListRootsResult


def legacy_asker(ctx: ServerRequestContext[Any, Any]) -> Ask:
    """Asks a 2025-11-25 client on its session, related to the ``tools/call`` that ``ctx`` serves."""
    session = ctx.session

    async def ask(request: InputRequest) -> InputResponse | ErrorData:
        # The question goes on the stream of the call it serves, under an id of our own: when the caller
        # cancels that call its stream is closed, and the SDK's own notice withdrawing the question goes
        # there and is lost; ours goes on the session's GET stream, which is still open. (The SDK's
        # `send_request` mints its ids itself, so its related channel is used directly: a private name of the
        # SDK, see docs/sdk-workarounds.md#relay.)
        outbound = session._request_outbound
        question_id = f"relay-{secrets.token_hex(8)}"
        wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            raw = await outbound.send_raw_request(wire["method"], wire.get("params"), {"request_id": question_id})
        except MCPError as exc:  # the client's own refusal goes to the upstream as it came
            return exc.error
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(WITHDRAW_WITHIN):
                await session.send_notification(
                    CancelledNotification(
                        params=CancelledNotificationParams(request_id=question_id, reason="the call it served ended")
                    )
                )
            raise
        try:
            return parse_answer(request, raw)
        except GateRefused:
            return ErrorData(code=INVALID_PARAMS, message=f"the client's answer to {request.method} is not valid")

    return ask


def call_relay(ctx: ServerRequestContext[Any, Any]) -> CallRelay:
    """The relay for the proxied call ``ctx`` serves; a retry's ``inputResponses`` are bounded here (a
    :class:`~skilldeck.errors.GateRefused` when over).

    A retry's ``requestState`` reaches the gateway already verified: the SDK's request-state boundary
    seals every ``requestState`` the gateway hands out (bound to the method, tool, arguments and
    server, with an expiry) and answers a forged or altered one with ``-32602`` before any handler runs.
    """
    capabilities = ctx.session.client_capabilities
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return CallRelay(capabilities=capabilities, ask=legacy_asker(ctx))
    params: Any = ctx.params if isinstance(ctx.params, dict) else {}
    responses = checked_input_responses(params)
    state = params.get("requestState")
    if state is not None and not isinstance(state, str):  # pragma: no cover - the SDK's boundary rejects it first
        raise GateRefused("requestState must be the string an input_required result gave")
    return CallRelay(capabilities=capabilities, modern=True, input_responses=responses, request_state=state)


def checked_input_responses(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A 2026-07-28 ``tools/call``'s ``inputResponses`` (``None`` when it carries none), checked as the protocol
    checks a request's params: before anything else is decided about the call.

    Raises:
        MCPError: ``INVALID_PARAMS`` (HTTP 400) when ``inputResponses`` is present but is not an object
            (``null`` included), or holds an answer that is no valid result of any input request.
        GateRefused: more than :data:`MAX_INPUT_RESPONSES` answers (the gateway's own bound; a tool result
            saying so, counted before any answer is parsed).
    """
    if "inputResponses" not in params:
        return None
    responses = params["inputResponses"]
    if not isinstance(responses, dict):
        raise MCPError(
            code=INVALID_PARAMS,
            message="inputResponses must be an object mapping each input request's key to its answer; "
            "leave it out on a first call",
        )
    if len(responses) > MAX_INPUT_RESPONSES:
        raise GateRefused(f"inputResponses must be an object of at most {MAX_INPUT_RESPONSES} answers")
    parse_input_responses(responses)
    return responses


def parse_input_responses(responses: Mapping[str, Any]) -> InputResponses:
    """``inputResponses`` as the protocol's typed answers.

    Raises:
        MCPError: ``INVALID_PARAMS``, naming the first answer that is no valid result of any input request.
    """
    try:
        return _INPUT_RESPONSES.validate_python(responses, by_name=False)
    except ValidationError as exc:
        where = next((error["loc"][0] for error in exc.errors() if error["loc"]), "?")
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"inputResponses[{where!r}] is not a valid answer (a sampling, elicitation or roots result); "
            "send the result the input request asked for",
        ) from None


def parse_answer(request: InputRequest, raw: Any) -> InputResponse:
    """A client's raw answer to ``request``, checked against the result type that request expects."""
    try:
        return _answer_type(request).model_validate(raw, by_name=False)  # type: ignore[return-value]
    except ValidationError:
        raise GateRefused(f"the answer to {request.method} is not a valid result for it; nothing was sent") from None


@dataclass(eq=False)
class ParkedCall:
    """A 2025-11-25 upstream's call held open while its 2026-07-28 caller answers the upstream's questions."""

    token: str
    client: str
    tool: str
    ttl: float = PARKED_TTL_SECONDS
    progress: ProgressFnT | None = None
    """The current round's progress channel (``None`` between rounds: progress then is dropped)."""
    log: LogSink | None = None
    """The current round's log channel."""
    capabilities: ClientCapabilities | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    result: dict[str, Any] | None = None
    done: bool = False
    abandoned: bool = False
    """The caller did not come back within the TTL: the upstream was told, and the call is forgotten."""
    _questions: dict[str, tuple[InputRequest, anyio.Event]] = field(default_factory=dict)
    _answers: dict[str, InputResponse | ErrorData] = field(default_factory=dict)
    _changed: anyio.Event = field(default_factory=anyio.Event)
    _count: int = 0
    _handed: set[str] = field(default_factory=set)

    async def ask(self, request: InputRequest) -> InputResponse | ErrorData:
        """The upstream's question: held until the caller's next round answers it (or the TTL passes)."""
        missing = missing_capability(request, self.capabilities)
        if missing is not None:  # refused to the upstream, which decides what its call does without it
            return _refusal(request, f"the client that made this call did not declare the {missing[0]} capability")
        self._count += 1
        key = f"q{self._count}"
        answered = anyio.Event()
        self._questions[key] = (request, answered)
        self._changed.set()
        try:
            with anyio.move_on_after(self.ttl):
                await answered.wait()
        finally:
            # Also when the upstream withdrew the question (cancelled its request, e.g. on its own
            # timeout): it is not handed out any more, and an answer to it is dropped.
            self._questions.pop(key, None)
            answer = self._answers.pop(key, None)
        if answer is not None:
            return answer
        self.abandoned = True
        return ErrorData(
            code=REQUEST_TIMEOUT, message=f"the client did not answer {request.method} within {self.ttl:g}s"
        )

    def finish(self) -> None:
        self.done = True
        self._changed.set()

    async def next_round(self) -> dict[str, InputRequest] | None:
        """Wait until the call ends (``None``) or asks questions still unanswered (them, by key)."""
        while True:
            pending = {key: request for key, (request, answered) in self._questions.items() if not answered.is_set()}
            if pending or self.done:
                self._handed = set(pending)
                return pending or None
            self._changed = anyio.Event()
            await self._changed.wait()

    def answer(self, responses: Mapping[str, Any] | None) -> None:
        """Hand the retry's answers to the questions the last round gave out; each needs one.

        A question the upstream asked after that round went out is given out in the next round; one
        it withdrew meanwhile needs no answer (an answer to it is dropped).
        """
        given = {key: self._questions[key] for key in sorted(self._handed) if key in self._questions}
        unanswered = [key for key in given if key not in (responses or {})]
        if unanswered:
            raise GateRefused(f"the retry carries no answer to {', '.join(unanswered)}; answer every input request")
        parsed = {key: parse_answer(request, (responses or {})[key]) for key, (request, _) in given.items()}
        for key, answer in parsed.items():
            self._answers[key] = answer
            given[key][1].set()
        self._handed = set()


class ParkedCalls:
    """Held calls by token (bounded; the least recently used first out, its upstream call cancelled)."""

    def __init__(self, limit: int = MAX_PARKED_CALLS, ttl: float = PARKED_TTL_SECONDS) -> None:
        self.limit = limit
        self.ttl = ttl
        """Seconds a held call waits for its caller's next round (then the upstream hears no answer came)."""
        self._calls: OrderedDict[str, ParkedCall] = OrderedDict()

    def new(self, client: str, tool: str, capabilities: ClientCapabilities | None) -> ParkedCall:
        while len(self._calls) >= self.limit:
            _, oldest = self._calls.popitem(last=False)
            oldest.scope.cancel()
        parked = ParkedCall(secrets.token_urlsafe(24), client, tool, ttl=self.ttl, capabilities=capabilities)
        self._calls[parked.token] = parked
        return parked

    def resume(self, token: str, client: str, tool: str) -> ParkedCall:
        parked = self._calls.get(token)
        if parked is None or parked.client != client or parked.tool != tool or (parked.done and parked.abandoned):
            raise GateRefused(
                "requestState names no call of yours waiting for input (it ended, expired, or is another call's); "
                "call the tool again without it"
            )
        self._calls.move_to_end(token)
        return parked

    def drop(self, parked: ParkedCall) -> None:
        self._calls.pop(parked.token, None)

    def __len__(self) -> int:
        return len(self._calls)


async def forward_log_level(host: Host, level: str) -> None:
    """Ask every connected 2025-11-25 upstream that declared ``logging`` to log at ``level`` and above.

    2026-07-28 upstreams have no ``logging/setLevel``: each proxied call carries its caller's level.
    An upstream that refuses is left as it is (its messages are still filtered per client).
    """
    for label, connected in list(host.sessions.items()):
        capabilities = connected.client.server_capabilities
        if (
            connected.protocol_version in MODERN_PROTOCOL_VERSIONS
            or capabilities is None
            or capabilities.logging is None
        ):
            continue
        try:
            # Deprecated in 2026-07-28 (this upstream speaks 2025-11-25): the SDK warns when the method is
            # called, so only the call is inside the filter, not the await (the filters are process-wide).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                pending = connected.client.session.set_logging_level(cast(LoggingLevel, level))
            await pending
        except Exception as exc:
            logger.debug("%r did not take logging/setLevel %s: %s", label, level, exc)
