"""The gateway's upstream calls: the :class:`~skilldeck.gateway._port.Upstreams` port over a connected host.

:class:`HostUpstreams` is the one place the gateway's decisions reach the upstream servers: what
they list and their verified loads and reads come from the :class:`~skilldeck.host.Host`, and a
call the gateway admitted is sent here, on the session that listed the tool, in one of three ways:

* plainly, for a 2025-11-25 caller (its upstream's sampling, elicitation and roots requests put to
  it while the call waits, see :mod:`skilldeck.gateway._relay`);
* a 2026-07-28 caller on a 2026-07-28 upstream: the upstream's ``input_required`` questions and
  ``requestState`` pass through, and the caller's retry continues the call;
* a 2026-07-28 caller on a 2025-11-25 upstream: the upstream call runs held open (parked) between
  the caller's rounds, its questions asked as ``input_required`` results.

The upstream's log messages and requests go to the call they belong to: the one the task serves,
else the only one waiting on that upstream; a ``roots/list`` is never guessed so, and when no call's
task asks it the gateway answers with roots of its own (none). Every result is stamped with the label of the upstream
that produced it (:data:`ORIGIN_META`), and its prose cannot forge an origin tag.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_REQUEST,
    LOG_LEVEL_META_KEY,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ErrorData,
    InputRequest,
    InputRequiredResult,
    InputResponse,
    ListRootsRequest,
    ListRootsResult,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    RequestParamsMeta,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skilldeck.ask import snapshot_from_host
from skilldeck.errors import GateRefused
from skilldeck.gateway._port import Progress, ToolCall, Unavailable, Upstreams, down, tool_id
from skilldeck.gateway._relay import (
    CALLING,
    CallRelay,
    LogSink,
    ParkedCall,
    ParkedCalls,
    Waiting,
    capability_error,
    parse_input_responses,
)
from skilldeck.host import Connected, Host, LoadedSkill, SkillRecord, ToolRecord
from skilldeck.host._api import on_behalf_of
from skilldeck.select import CatalogSnapshot
from skilldeck.serving._api import span
from skilldeck.skill._api import DESCRIPTIVE_KEYS, neutralise_in

__all__ = ["ORIGIN_META", "SERVER_INFO_META", "CallLog", "HostUpstreams", "host_under", "with_origin"]

logger = logging.getLogger(__name__)

SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
"""The base protocol's per-response stamp of the answering server (not part of a tool's result)."""
ORIGIN_META = "dev.skilldeck/server"
"""``_meta`` key of a proxied result naming the label of the upstream that produced it."""


class CallLog(Protocol):
    """Where each call's outcome is recorded (the gateway's decision log)."""

    def record(self, kind: str, client: str, **fields: Any) -> None: ...


def with_origin(item: dict[str, Any], label: str) -> dict[str, Any]:
    """``item`` stamped with the upstream that produced it, in place of that upstream's own response stamp.

    Every other ``_meta`` key passes through.
    """
    meta = {k: v for k, v in (item.get("_meta") or {}).items() if k != SERVER_INFO_META}
    return {**item, "_meta": {**meta, ORIGIN_META: label}}


def _neutralised(request: InputRequest) -> InputRequest:
    """``request`` with its prose passed through :func:`~skilldeck.skill._tags.neutralise_in`."""
    wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    cleaned = neutralise_in(wire)
    return request if cleaned is wire else type(request).model_validate(cleaned)


@dataclass
class _Sent:
    """An admitted call on its way upstream: the session it goes on, and the ``_meta`` it carries."""

    client: str
    label: str
    tool: str
    arguments: dict[str, Any]
    connected: Connected
    progress: Progress | None
    log: LogSink | None
    meta: RequestParamsMeta | None
    started: float = field(default_factory=time.perf_counter)
    """When the call was admitted (``time.perf_counter()``): its record says how long the upstream took."""

    @property
    def id(self) -> str:
        return tool_id(self.label, self.tool)


class HostUpstreams:
    """The :class:`~skilldeck.gateway._port.Upstreams` port over a connected host (see the module docs).

    Args:
        host: the upstream servers, connected.
        log: where each call's outcome is recorded.
    """

    def __init__(self, host: Host, log: CallLog) -> None:
        self.host = host
        self.log = log
        self.parked = ParkedCalls()
        """2025-11-25 upstream calls held open while their 2026-07-28 callers answer (bounded, with a TTL)."""
        self._in_flight: dict[str, list[Waiting]] = {}
        """Per upstream label, each proxied call now waiting on it (where its log messages and questions go)."""
        self._listening = False
        if host.server_requests:
            host.answer_server_requests(self._upstream_request)

    # -- what the upstreams list -------------------------------------------------------------------

    @property
    def failures(self) -> Mapping[str, Unavailable]:
        return self.host.failures

    @property
    def configured(self) -> Sequence[str]:
        return [spec.label for spec in self.host.specs]

    @property
    def connected(self) -> Collection[str]:
        return self.host.sessions.keys()

    def snapshot(self) -> CatalogSnapshot:
        return snapshot_from_host(self.host)

    @property
    def skills(self) -> Sequence[SkillRecord]:
        return self.host.skills

    def skill(self, label: str, uri: str) -> SkillRecord | None:
        return self.host.skill(label, uri)

    def skill_id(self, record: SkillRecord) -> str:
        return self.host.skill_id(record)

    def origin(self, label: str) -> str:
        spec = next((spec for spec in self.host.specs if spec.label == label), None)
        return spec.identity if spec is not None else f"label {label}"

    def tools(self, label: str | None = None) -> Sequence[ToolRecord]:
        return self.host.tools(label)

    def tool_names(self, label: str) -> frozenset[str]:
        return frozenset(t.name for t in self.host.tools(label))

    async def load(self, record: SkillRecord) -> LoadedSkill:
        with span("verify_skill", {"skilldeck.upstream": record.label, "skilldeck.skill": record.name}):
            return await self.host.load(record)  # fetched and checked against the listed digest

    def file_uri(self, loaded: LoadedSkill, path: str) -> str:
        return self.host.loader(loaded.label).listed(loaded, path)

    async def read(self, loaded: LoadedSkill, path: str) -> bytes:
        return await self.host.read(loaded, path)

    # -- calls -------------------------------------------------------------------------------------

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        """Send an admitted call on the session that listed the tool (see the module docs).

        Cancelling the awaiting task cancels the upstream call: the SDK client sends
        ``notifications/cancelled`` for it.
        """
        label, tool, log, relay = call.label, call.tool, call.log, call.relay
        connected = self.host.sessions.get(label) or await self._reconnected(label, tool)
        if connected is None:
            raise GateRefused(
                f"{down(self.failures, label) or repr(label) + ' is not connected'}; the call was not sent"
            )
        if log is not None and not self._listening:
            self.host.add_message_listener(self._upstream_message)
            self._listening = True
        meta = cast(RequestParamsMeta, {LOG_LEVEL_META_KEY: call.log_level}) if log and call.log_level else None
        sent = _Sent(call.client, label, tool, call.arguments, connected, call.progress, log, meta)
        if relay is None or not self.host.server_requests:
            return await self._plain(sent, None)
        with on_behalf_of(relay.capabilities):  # the upstream hears what the caller declared, not the host
            if not relay.modern:
                return await self._plain(sent, relay)
            if connected.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                return await self._parked_round(sent, relay)
            return await self._input_required_round(sent, relay)

    async def _reconnected(self, label: str, tool: str) -> Connected | None:
        """``label``'s new session once a reload that is connecting it again is done (waited for at most twice its
        timeout: the connection, then its listing), or None; refused if it no longer lists ``tool``."""
        switch = self.host.reconnecting.get(label)
        if switch is None:
            return None
        spec = next((spec for spec in self.host.specs if spec.label == label), None)
        with anyio.move_on_after(2 * spec.timeout if spec is not None else 0):
            await switch.wait()
        connected = self.host.sessions.get(label)
        if connected is not None and tool not in self.tool_names(label):
            raise GateRefused(f"{label!r} was reconnected and no longer lists {tool!r}; the call was not sent")
        return connected

    async def _plain(self, call: _Sent, relay: CallRelay | None) -> dict[str, Any]:
        """The call as one upstream request: the upstream's questions, if any, put to a 2025-11-25 caller
        while it waits (or refused, with no ``relay``)."""
        label, tool, connected = call.label, call.tool, call.connected
        waiting = Waiting(call.log, relay)
        try:
            with self._waiting(label, waiting), connected.call():
                result = await connected.client.call_tool(
                    tool, call.arguments, progress_callback=call.progress, meta=call.meta
                )
        except Exception as exc:  # the upstream failed or timed out: the model hears why
            return self._failed(call.client, label, tool, connected.explain(exc), call.started)
        return self._result(call.client, label, tool, result, call.started)

    @contextmanager
    def _waiting(self, label: str, waiting: Waiting) -> Iterator[None]:
        """While the body runs, ``waiting`` is the call this task serves on ``label`` (and is listed as waiting)."""
        calls = self._in_flight.setdefault(label, [])
        calls.append(waiting)
        token = CALLING.set((label, waiting))
        try:
            yield
        finally:
            CALLING.reset(token)
            calls.remove(waiting)
            if not calls:
                self._in_flight.pop(label, None)

    def _failed(self, client: str, label: str, tool: str, reason: str, started: float | None = None) -> dict[str, Any]:
        self.log.record("call", client, tool=tool_id(label, tool), error=reason, **_took(started))
        return {"content": [{"type": "text", "text": f"[{label}] {tool} failed: {reason}"}], "isError": True}

    def _result(self, client: str, label: str, tool: str, result: Any, started: float | None = None) -> dict[str, Any]:
        # The upstream's response stamp names the upstream; the gateway's answer is stamped with its own.
        payload = with_origin(result.model_dump(by_alias=True, mode="json", exclude_none=True), label)
        # What the upstream answered enters the caller's model context: it cannot forge an origin tag.
        for key, keys in (("content", DESCRIPTIVE_KEYS), ("structuredContent", None)):
            if key in payload:
                payload[key] = neutralise_in(payload[key], keys)
        self.log.record(
            "call", client, tool=tool_id(label, tool), isError=bool(payload.get("isError")), **_took(started)
        )
        return payload

    def _input_required(self, call: _Sent, requests: dict[str, Any], state: str | None) -> dict[str, Any]:
        self.log.record("call", call.client, tool=call.id, inputRequired=sorted(requests))
        result = InputRequiredResult(input_requests=requests or None, request_state=state)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _input_required_round(self, call: _Sent, relay: CallRelay) -> dict[str, Any]:
        """A 2026-07-28 caller on a 2026-07-28 upstream: its questions and ``requestState`` pass through."""
        responses = None if relay.input_responses is None else parse_input_responses(relay.input_responses)
        connected = call.connected
        try:
            with self._waiting(call.label, Waiting(call.log, relay)), connected.call():
                result = await connected.client.session.call_tool(
                    call.tool,
                    call.arguments,
                    progress_callback=call.progress,
                    meta=call.meta,
                    input_responses=responses,
                    request_state=relay.request_state,
                    allow_input_required=True,
                )
        except Exception as exc:
            if isinstance(exc, MCPError) and exc.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
                # the caller did not declare what the tool needs: its error as the upstream answered it (the
                # capabilities it requires; HTTP 400), as the caller would have had it directly
                self.log.record("call", call.client, tool=call.id, error=exc.error.message)
                raise
            return self._failed(call.client, call.label, call.tool, connected.explain(exc), call.started)
        if isinstance(result, InputRequiredResult):
            refused = capability_error(result.input_requests or {}, relay.capabilities)
            if refused is not None:
                self.log.record("call", call.client, tool=call.id, error=refused.error.message)
                raise refused
            return self._input_required(call, dict(result.input_requests or {}), result.request_state)
        return self._result(call.client, call.label, call.tool, result, call.started)

    async def _parked_round(self, call: _Sent, relay: CallRelay) -> dict[str, Any]:
        """A 2026-07-28 caller on a 2025-11-25 upstream: the upstream call runs held open between rounds."""
        if relay.request_state is not None:
            parked = self.parked.resume(relay.request_state, call.client, call.id)
            parked.answer(relay.input_responses)
        elif relay.input_responses:
            raise GateRefused("inputResponses without requestState answer nothing; call the tool again without them")
        else:
            parked = self.parked.new(call.client, call.id, relay.capabilities)
            self.host.start_soon(self._run_parked, parked, call)
        parked.progress, parked.log = call.progress, call.log
        try:
            questions = await parked.next_round()
        except BaseException:  # the caller gave up on this round: the upstream call is cancelled
            parked.scope.cancel()
            self.parked.drop(parked)
            raise
        finally:
            parked.progress = parked.log = None
        if questions:
            return self._input_required(call, questions, parked.token)
        self.parked.drop(parked)
        if parked.result is None:
            return self._failed(call.client, call.label, call.tool, "the call was cancelled")
        return parked.result

    async def _run_parked(self, parked: ParkedCall, call: _Sent) -> None:
        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if parked.progress is not None:
                await parked.progress(progress, total, message)

        async def log(params: LoggingMessageNotificationParams) -> None:
            if parked.log is not None:
                await parked.log(params)

        label, tool, connected = call.label, call.tool, call.connected
        try:
            with parked.scope, self._waiting(label, Waiting(log, parked=parked)), connected.call():
                try:
                    result = await connected.client.call_tool(
                        tool, call.arguments, progress_callback=progress, meta=call.meta
                    )
                    parked.result = self._result(parked.client, label, tool, result)
                except Exception as exc:
                    parked.result = self._failed(parked.client, label, tool, connected.explain(exc))
        finally:
            parked.finish()
            if parked.abandoned:
                self.parked.drop(parked)

    # -- what upstreams send while calls wait ------------------------------------------------------

    def _serving(self, label: str, *, guess: bool = True) -> Waiting | None:
        """The proxied call a message from ``label`` belongs to: the one this task serves, else (``guess``) the
        only one waiting."""
        current = CALLING.get()
        if current is not None and current[0] == label:
            return current[1]
        if not guess:
            return None
        waiting = self._in_flight.get(label) or []
        return waiting[0] if len(waiting) == 1 else None

    async def _upstream_message(self, label: str, message: Any) -> None:
        """A log message from ``label`` goes to the call it belongs to, when that can be told."""
        if not isinstance(message, LoggingMessageNotification):
            return
        waiting = self._serving(label)
        if waiting is not None and waiting.log is not None:
            await waiting.log(message.params)

    async def _upstream_request(self, label: str, request: InputRequest) -> InputResponse | ErrorData:
        """A sampling, elicitation or roots request from ``label``, put to the client whose call it serves.

        A ``roots/list`` nothing ties to a call is answered here, with the gateway's own roots (none): a
        server asks it on its own (after its handshake, on ``roots/list_changed``) and keeps the answer for
        the session, which every client shares, so the one call waiting then is no owner of it.
        """
        roots = isinstance(request, ListRootsRequest)
        waiting = self._serving(label, guess=not roots)
        if roots and waiting is None:
            logger.debug("[%s] roots/list tied to no call: answered with the gateway's own roots (none)", label)
            return ListRootsResult(roots=[])
        if waiting is not None:  # its messages reach the caller's model: they cannot forge an origin tag
            return await waiting.answer(_neutralised(request))
        several = len(self._in_flight.get(label) or []) > 1
        why = (
            "several proxied calls wait on this server, and a 2025-11-25 request cannot be tied to one of them"
            if several
            else "no proxied call is waiting on this server"
        )
        return ErrorData(code=INVALID_REQUEST, message=f"{request.method} refused by the gateway: {why}")


def host_under(upstreams: Upstreams) -> Host:
    """The host ``upstreams`` runs over, when it is :class:`HostUpstreams` (what a service given a host makes).

    Raises:
        TypeError: ``upstreams`` is another adapter: who needs the host is given it.
    """
    if not isinstance(upstreams, HostUpstreams):
        raise TypeError(f"{type(upstreams).__name__} runs over no host: give the host explicitly")
    return upstreams.host


def _took(started: float | None) -> dict[str, float]:
    """A call record's ``seconds`` (how long the upstream took, for metrics), when the start is known."""
    return {} if started is None else {"seconds": round(time.perf_counter() - started, 6)}
