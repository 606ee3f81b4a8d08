"""Change events scoped to the skills they concern, so a listener hears only what its caller may see.

A reload that changes skills ``a`` and ``b`` publishes list-changed events that name them
(:class:`ScopedResourcesListChanged`, :class:`ScopedToolsListChanged`: the SDK's events, so every
bus and listen stream carries them unchanged). :class:`ScopedBus` wraps the server's bus; a
``subscriptions/listen`` stream opened while :data:`LISTENING_CALLER` says who its caller is
subscribed through a filter that drops a scoped event when that caller may see none of the skills
it names. Both are judged when the event arrives, under the policy in force then: the caller (its
token, or a new policy's default identity) and what it may see, so a removed skill the caller
could see is still announced, and a stream opened before a policy applied is scoped by it. An event that names nothing (a policy change, a re-announce after a gap,
another server's event) reaches every listener, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Final

from mcp.server.subscriptions import ResourcesListChanged, ServerEvent, SubscriptionBus, ToolsListChanged

from skilldeck.serving._policy import Caller

__all__ = [
    "LISTENING_CALLER",
    "MAX_SCOPED_NAMES",
    "ScopedBus",
    "ScopedResourcesListChanged",
    "ScopedToolsListChanged",
    "event_names",
    "scoped_events",
    "with_names",
]

MAX_SCOPED_NAMES: Final = 64
"""More changed skills than this in one event and it names none: every listener is told."""

LISTENING_CALLER: ContextVar[Callable[[], Caller] | None] = ContextVar("skilldeck_listening_caller", default=None)
"""Who the ``subscriptions/listen`` request being served is for, under the policy in force when asked
(set by the skills middleware)."""


@dataclass(frozen=True)
class ScopedResourcesListChanged(ResourcesListChanged):
    """The resources list changed for the skills in ``names``."""

    names: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class ScopedToolsListChanged(ToolsListChanged):
    """The tools list may have changed for callers of the skills in ``names``."""

    names: frozenset[str] = field(default_factory=frozenset)


def with_names(event: ServerEvent, names: Iterable[str]) -> ServerEvent:
    """``event`` scoped to the skills ``names`` (a list-changed event; none or too many names: unscoped)."""
    named = frozenset(names)
    if not named or len(named) > MAX_SCOPED_NAMES:
        return event
    if isinstance(event, ResourcesListChanged):
        return ScopedResourcesListChanged(names=named)
    if isinstance(event, ToolsListChanged):
        return ScopedToolsListChanged(names=named)
    return event


def scoped_events(names: Iterable[str] | None, *, tools: bool) -> list[ServerEvent]:
    """The events announcing a change to the skills ``names`` (``None``: a change for everyone)."""
    events: list[ServerEvent] = [ResourcesListChanged(), *([ToolsListChanged()] if tools else [])]
    return events if names is None else [with_names(e, names) for e in events]


def event_names(event: ServerEvent) -> frozenset[str] | None:
    """The skills a scoped event concerns; ``None`` for an event that concerns everyone."""
    if isinstance(event, ScopedResourcesListChanged | ScopedToolsListChanged):
        return event.names
    return None


class ScopedBus:
    """A :class:`~mcp.server.subscriptions.SubscriptionBus` whose listeners hear only what their caller may see.

    Args:
        inner: the bus events travel on (in process, or Redis across replicas).
        visible: whether a caller may see a skill, by name, under the policy in force now.
    """

    def __init__(self, inner: SubscriptionBus, visible: Callable[[Caller, str], bool]) -> None:
        self.inner = inner
        self.visible = visible

    async def publish(self, event: ServerEvent) -> None:
        await self.inner.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        who = LISTENING_CALLER.get()
        if who is None:
            return self.inner.subscribe(listener)

        def scoped(event: ServerEvent) -> None:
            names = event_names(event)
            if names is None:
                listener(event)
                return
            caller = who()
            if any(self.visible(caller, name) for name in names):
                listener(event)

        return self.inner.subscribe(scoped)
