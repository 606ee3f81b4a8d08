"""Progressive injection on the host: hear a server's catalog change, re-index that server at once.

A server whose catalog changes — skills reloaded, or a policy swapped so the caller now sees other
skills and may call other tools — says so: on 2026-07-28 sessions as ``subscriptions/listen``
events (``ToolsListChanged``, ``ResourcesListChanged``), on 2025-11-25 sessions as
``notifications/tools/list_changed`` and ``notifications/resources/list_changed``.
:class:`HostWatcher` listens on every connected server in the way its session allows and, on each
change, has the host re-list that one server (``Host.relist``: ``tools/list`` and ``skills/list``,
under the host's listing caps and the server's timeout, swapped into the host's registry), then
hands the new tool listing to every registered tool gate (``update_listing``). From then on the host's next
selection (cards built from the registry) shows the new catalog, and a tool the server no longer
lists can no longer be called through a gate. Events arriving while a re-list runs are coalesced
into one more re-list; nothing is fetched but listings (skill content stays on demand)::

    async with Host(specs) as host, host.watch(gates=[gate], on_change=print) as watcher:
        ...  # host.registry and gate follow the servers from here on

A re-list that fails keeps what was registered before and reports the error on the change: the
server still enforces its own policy, and the next event tries again.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.client.subscriptions import (
    ListenNotSupportedError,
    PromptsListChanged,
    ResourcesListChanged,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skilldeck._awaitable import maybe_await
from skilldeck.host._connect import Connected, Connections, Unwinding, task_group
from skilldeck.host._faults import request_error

__all__ = ["CatalogChange", "ChannelState", "GateLike", "HostWatcher", "OnChange", "Relister"]

logger = logging.getLogger(__name__)

_NOTIFICATIONS = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
_MAX_RELISTENS = 3
"""Times a lost ``subscriptions/listen`` stream is reopened in a row before the watcher gives up on it."""


class ChannelState(StrEnum):
    """How the watcher hears one server's changes (``HostWatcher.channels``).

    The state says only what; why a channel ended is kept apart, in ``HostWatcher.channel_reasons``.
    """

    LISTEN = "listen"
    """A 2026-07-28 ``subscriptions/listen`` stream is open."""
    NOTIFICATIONS = "notifications"
    """2025-11-25 list-changed notifications (or a server without ``subscriptions/listen``)."""
    CLOSED = "closed"
    """The server ended the subscription, or is no longer connected."""
    LOST = "lost"
    """The stream dropped and could not be reopened."""
    UNAVAILABLE = "unavailable"
    """``subscriptions/listen`` failed; changes of this server are not heard."""


class GateLike(Protocol):
    """What the watcher needs of a tool gate (:class:`skilldeck.select._gate.ToolGate` is one)."""

    def update_listing(self, label: str, tools: Iterable[Mapping[str, Any]]) -> None: ...


@dataclass(frozen=True)
class CatalogChange:
    """One server re-listed after it reported a change: what differs from what was registered."""

    label: str
    reasons: frozenset[str]
    """What the server said changed (``tools``, ``resources``, ``prompts``), or why the watcher re-listed."""
    skills_added: tuple[str, ...] = ()
    skills_removed: tuple[str, ...] = ()
    skills_changed: tuple[str, ...] = ()
    """Skill URIs whose entry (frontmatter or manifest) differs."""
    tools_added: tuple[str, ...] = ()
    tools_removed: tuple[str, ...] = ()
    tools_changed: tuple[str, ...] = ()
    """Tool names whose definition (description, schema, ...) differs."""
    rejected: tuple[str, ...] = ()
    """Entries of the new listing that failed validation, with the reason."""
    error: str | None = None
    """Set when the server could not be (fully) re-listed; what could not be read was kept as it was."""
    tools: tuple[Mapping[str, Any], ...] | None = field(default=None, repr=False, compare=False)
    """The new ``tools/list`` (MCP ``Tool`` JSON), ``None`` when tools were not re-listed."""

    def __bool__(self) -> bool:
        return bool(
            self.skills_added
            or self.skills_removed
            or self.skills_changed
            or self.tools_added
            or self.tools_removed
            or self.tools_changed
        )


OnChange = Callable[[CatalogChange], Awaitable[None] | None]


class Relister(Protocol):
    """What the watcher needs of a host (:class:`skilldeck.host.Host` is one): its sessions, and a re-list."""

    @property
    def connections(self) -> Connections: ...

    async def relist(self, label: str, reasons: Iterable[str] = ()) -> CatalogChange: ...


class HostWatcher(Unwinding):
    """Follow the catalog changes of every server a :class:`Host` is connected to (``async with``).

    Args:
        host: an entered host (its servers connected); the watcher only listens and asks it to
            :meth:`~skilldeck.host.Host.relist` the server that changed.
        gates: tool gates to keep in step (``update_listing`` on every re-list of a server's tools).
        on_change: called (and awaited, if it returns an awaitable) with each :class:`CatalogChange`.

    Attributes:
        changes: every re-list so far, oldest first.
        channels: per label, how changes are heard (:class:`ChannelState`): ``listen`` (2026-07-28
            ``subscriptions/listen``), ``notifications`` (2025-11-25 list-changed notifications), or
            ``closed``/``lost``/``unavailable`` when neither is.
        channel_reasons: per label whose channel ended, why, in words.
    """

    def __init__(self, host: Relister, *, gates: Iterable[GateLike] = (), on_change: OnChange | None = None) -> None:
        self.host = host
        self.gates: list[GateLike] = list(gates)
        self.on_change = on_change
        self.changes: deque[CatalogChange] = deque(maxlen=256)
        self.change_count = 0
        """Changes seen since the start (``changes`` keeps the latest 256)."""
        self.channels: dict[str, ChannelState] = {}
        self.channel_reasons: dict[str, str] = {}
        self._pending: dict[str, set[str]] = {}
        # Events are made inside the event loop (anyio needs one running): see _events().
        self._wake: anyio.Event | None = None
        self._changed: anyio.Event | None = None
        self._tg: TaskGroup | None = None
        self._stack = AsyncExitStack()

    def _events(self) -> tuple[anyio.Event, anyio.Event]:
        if self._wake is None:
            self._wake = anyio.Event()
            if self._pending:
                self._wake.set()
        if self._changed is None:
            self._changed = anyio.Event()
        return self._wake, self._changed

    # -- public API ---------------------------------------------------------------------------------

    async def follow(self, label: str) -> None:
        """Listen for the changes of ``label`` too (a server connected after the watcher started)."""
        connected = self.host.connections.connected.get(label)
        if connected is None or self._tg is None:
            return
        if connected.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self._tg.start(self._listen, label, connected)
        else:
            self.channels[label] = ChannelState.NOTIFICATIONS

    def request_refresh(self, label: str, reason: str = "requested") -> None:
        """Re-list ``label`` as if it had reported a change."""
        self._mark(label, reason)

    async def wait_for(
        self, predicate: Callable[[CatalogChange], bool] | None = None, *, after: int = 0
    ) -> CatalogChange:
        """The first change numbered ``after`` or later (``watcher.change_count`` before acting) matching ``predicate``.

        Returns once that change is in the registry and the gates, and ``on_change`` has run.
        Wrap in ``anyio.fail_after`` to bound the wait.
        """
        while True:
            _, changed = self._events()
            kept = list(self.changes)
            first_kept = self.change_count - len(kept)
            for change in kept[max(0, after - first_kept) :]:
                if predicate is None or predicate(change):
                    return change
            after = self.change_count
            await changed.wait()

    async def __aenter__(self) -> HostWatcher:
        if self._tg is not None:
            raise RuntimeError("this HostWatcher is already running")
        self._events()
        async with AsyncExitStack() as stack:
            self.host.connections.add_message_listener(self._on_message)
            stack.callback(self.host.connections.remove_message_listener, self._on_message)
            self.host.connections.add_state_listener(self._on_state)
            stack.callback(self.host.connections.remove_state_listener, self._on_state)
            stack.callback(setattr, self, "_tg", None)
            self._tg = tg = await stack.enter_async_context(task_group())
            stack.callback(tg.cancel_scope.cancel)  # the worker and the listeners run until the watcher exits
            tg.start_soon(self._worker)
            async with anyio.create_task_group() as starting:  # subscribe everywhere at once
                for label, connected in list(self.host.connections.connected.items()):
                    if connected.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        starting.start_soon(tg.start, self._listen, label, connected)
                    else:
                        self.channels[label] = ChannelState.NOTIFICATIONS
            self._stack = stack.pop_all()
        return self

    # -- hearing changes ------------------------------------------------------------------------------

    def _mark(self, label: str, reason: str) -> None:
        self._pending.setdefault(label, set()).add(reason)
        if self._wake is not None:
            self._wake.set()

    def _on_state(self, label: str, up: bool) -> None:
        """A supervised server was lost, or is back: re-list it (what it offers may differ), and listen anew.

        A server back is re-listed with the reasons ``reconnected``, ``resources`` and ``prompts``
        (its catalog may have changed while it was away); one lost with ``down`` (nothing is read
        from it, but the change reaches ``on_change``).
        """
        if not up:
            self.channels[label] = ChannelState.CLOSED
            self.channel_reasons[label] = "the server is not connected"
            self._mark(label, "down")
            return
        connected = self.host.connections.connected.get(label)
        if connected is not None and self._tg is not None:
            if connected.protocol_version in MODERN_PROTOCOL_VERSIONS:
                self._tg.start_soon(self._listen, label, connected)
            else:
                self.channels[label] = ChannelState.NOTIFICATIONS
                self.channel_reasons.pop(label, None)
        for reason in ("reconnected", "resources", "prompts"):
            self._mark(label, reason)

    def _on_message(self, label: str, message: Any) -> None:
        """Legacy sessions: list-changed notifications arrive through the session's message handler.

        Only noted here; the re-list runs in the watcher's own task (a request sent from inside the
        session's receive loop could never get its answer).
        """
        reason = _NOTIFICATIONS.get(getattr(message, "method", None) or "")
        if reason is not None:
            self._mark(label, reason)

    async def _listen(
        self, label: str, connected: Connected, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """2026-07-28 sessions: hold a ``subscriptions/listen`` stream open; reopen it if it drops."""
        started = False

        def settle(state: ChannelState, reason: str | None = None) -> None:
            nonlocal started
            if self.host.connections.connected.get(label) in (None, connected):  # not a session since replaced
                self.channels[label] = state
                if reason is None:
                    self.channel_reasons.pop(label, None)
                else:
                    self.channel_reasons[label] = reason
            if not started:
                started = True
                task_status.started()

        lost = 0
        try:
            while self.host.connections.connected.get(label) is connected:  # not once it is lost or replaced
                try:
                    async with connected.client.listen(
                        tools_list_changed=True, resources_list_changed=True, prompts_list_changed=True
                    ) as sub:
                        resumed = started
                        settle(ChannelState.LISTEN)
                        if resumed:  # events may have been missed while the stream was down
                            self._mark(label, "resubscribed")
                        lost = 0
                        async for event in sub:
                            if isinstance(event, ToolsListChanged):
                                self._mark(label, "tools")
                            elif isinstance(event, ResourcesListChanged):
                                self._mark(label, "resources")
                            elif isinstance(event, PromptsListChanged):
                                self._mark(label, "prompts")
                    settle(ChannelState.CLOSED, "the server ended the subscription")
                    return
                except ListenNotSupportedError:
                    settle(ChannelState.NOTIFICATIONS)
                    return
                except SubscriptionLost as exc:
                    lost += 1
                    if lost > _MAX_RELISTENS:
                        settle(ChannelState.LOST, str(exc))
                        return
                    await anyio.sleep(0.05 * 2**lost)
                except Exception as exc:
                    settle(ChannelState.UNAVAILABLE, request_error(exc))
                    return
            settle(ChannelState.CLOSED, "the server is no longer connected")
        finally:
            if not started:
                task_status.started()

    # -- applying them -----------------------------------------------------------------------------------

    async def _worker(self) -> None:
        while True:
            wake, _ = self._events()
            await wake.wait()
            self._wake = anyio.Event()
            batch, self._pending = self._pending, {}
            async with anyio.create_task_group() as tg:  # servers in parallel, each one at a time
                for label, reasons in batch.items():
                    tg.start_soon(self._apply, label, frozenset(reasons))

    async def _apply(self, label: str, reasons: frozenset[str]) -> None:
        try:
            change = await self.host.relist(label, reasons)
        except Exception as exc:  # never let one server's trouble stop the watcher
            logger.warning("re-listing %r failed: %s", label, exc, exc_info=True)
            change = CatalogChange(label, reasons, error=request_error(exc))
        if change.tools is not None:
            for gate in list(self.gates):
                gate.update_listing(label, change.tools)
        self.changes.append(change)
        self.change_count += 1
        if self.on_change is not None:
            try:
                await maybe_await(self.on_change(change))
            except Exception:
                logger.exception("on_change failed for a change of %r", label)
        _, changed = self._events()
        self._changed = anyio.Event()
        changed.set()
