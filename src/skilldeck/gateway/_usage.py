"""The gateway's usage recording: successful uses go into the usage ledger, and each ranker reads its audience's.

:class:`UsageRecorder` is the learning half of a :class:`~skilldeck.gateway._service.GatewayService`
(see the service's module docs for what is recorded, and when): it records a question whose ``find``,
load and successful call completed (on this replica, or on the path replicas share), reads in an
audience's past questions when the ledger changed elsewhere, and hands every ranker of that audience
its new history (on a thread of its own, :class:`~skilldeck.learning._updates.HistoryUpdates`). A
ledger that cannot be reached never fails a request: it is logged.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from skilldeck.gateway._activation import ActivationStore, ActivationTable, credited
from skilldeck.gateway._indexes import AudienceIndex, AudienceIndexes
from skilldeck.gateway._ledger_view import LedgerView
from skilldeck.gateway._port import Upstreams
from skilldeck.gateway._shortlist import FILLER_GAP
from skilldeck.gateway._upstreams import CallLog
from skilldeck.learning import Learner
from skilldeck.learning._api import ANONYMOUS, CardRef, HistoryUpdates, history_by_key, normalise_question
from skilldeck.select import Card, Taught, build_cards
from skilldeck.serving._api import Caller

__all__ = ["HISTORY_UNREAD", "HISTORY_WAIT", "RecordingService", "UsageRecorder"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

HISTORY_WAIT = 10.0
"""Seconds a ``find`` waits at most for its ranker to read the history given to it: a ledger read from the
vectors kept beside it takes milliseconds (one use read into 10,000 trusted cards: 14 ms,
``bench/selection/learning.py --history-update``), a whole history of 10,000 cards x 20 questions
encoded anew some seconds; past this bound the question is answered without it, and says so."""

HISTORY_UNREAD = " (what was learned from past uses is still being read: this answer does not count it yet)"
"""What a ``find`` answered without its history (past :data:`HISTORY_WAIT`) adds to its reason."""


class RecordingService(Protocol):
    """What the usage recording reads of the gateway service."""

    @property
    def learning(self) -> Learner | None: ...

    @property
    def anonymous(self) -> str: ...

    @property
    def upstreams(self) -> Upstreams: ...

    @property
    def indexes(self) -> AudienceIndexes: ...

    @property
    def activations(self) -> ActivationTable: ...

    @property
    def shared(self) -> ActivationStore | None: ...

    @property
    def log(self) -> CallLog: ...

    def shares(self, client: str) -> bool:
        """Whether ``client``'s activation is shared with other replicas."""
        ...


class UsageRecorder:
    """What one gateway service records in its usage ledger, and what its rankers read of it (see the module docs)."""

    def __init__(self, service: RecordingService) -> None:
        self.service = service
        self.generation = 0
        """Raised by every re-index: each ledger audience is pruned of vanished cards once per generation."""
        self._pruned: dict[str, int] = {}
        self.history_updates = HistoryUpdates()
        """Where rankers take each new history: on a thread of its own, never on a request's path."""
        self.history_wait = HISTORY_WAIT
        """Seconds a ``find`` waits for its ranker to read the history given to it (:meth:`history_read`)."""

    @property
    def learning(self) -> Learner | None:
        """The service's usage ledger (``None``: nothing is learned)."""
        return self.service.learning

    def ledger_view(self) -> LedgerView:
        """The usage ledger's cards as this gateway's configuration sees them (see :mod:`~skilldeck.gateway._ledger_view`)."""
        snapshot = self.service.upstreams.snapshot()
        labels = [*(server.label for server in snapshot.servers), *self.service.upstreams.failures]
        origins = {label: self.service.upstreams.origin(label) for label in labels}
        listed = [self.service.indexes.card_id(card) for card in build_cards(snapshot).cards]
        return LedgerView(origins, listed, self.service.upstreams.failures)

    def _questions(self, audience: str, view: LedgerView | None = None) -> dict[str, Taught]:
        """The audience's past questions by the card ids this gateway shows."""
        assert self.learning is not None
        return (view or self.ledger_view()).questions(self.learning.questions(audience))

    def _history(self, audience: str, ids: Mapping[str, Card]) -> dict[str, list[str]] | None:
        """The audience's past questions by card key, for the cards of ``ids``; ``None`` without a ledger."""
        if self.learning is None:
            return None
        return history_by_key(self._questions(audience), {i: card.key for i, card in ids.items()})

    def give_history(self, index: AudienceIndex, *, fresh: bool = False) -> None:
        """Have the index's ranker read its audience's past questions (indexed on a thread: see :attr:`history_updates`).

        ``fresh``: the ranker was just built (it has no history yet, so an empty one is not handed over)."""
        history = self._history(index.ledger_audience, index.ids)
        if history is not None and (history or not fresh):
            self.history_updates.submit(index.selector, history)

    def _history_changed(self, audience: str, cards: Iterable[CardRef] | None = None) -> None:
        """The audience's past questions changed (of ``cards`` only, when known): its rankers read them."""
        view = self.ledger_view() if cards is not None and self.learning is not None else None
        moved = {here for ref in cards or () if view is not None and (here := view.here(ref)) is not None}
        questions = self._questions(audience, view) if moved else {}
        for index in self.service.indexes.values():
            if index.ledger_audience != audience:
                continue
            if cards is None or self.learning is None:
                self.give_history(index)
                continue
            changes = {index.ids[card].key: questions.get(card, Taught()) for card in moved if card in index.ids}
            if changes:
                self.history_updates.submit_changes(index.selector, changes)

    async def history_read(self, caller: Caller) -> bool:
        """Wait, at most :attr:`history_wait` seconds and holding no thread, until the ranker of ``caller``'s
        index has read the history given to it (a new index's whole history, the use just recorded);
        whether it has. So the first ``find`` after a restart is answered with what was learned."""
        if self.learning is None:
            return True
        selector = self.service.indexes.index_for(caller).selector
        read = anyio.Event()
        token = anyio.lowlevel.current_token()

        def wake() -> None:  # on the history worker's thread
            with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody waits any more
                anyio.from_thread.run_sync(read.set, token=token)

        if not self.history_updates.when_settled(selector, wake):
            return True
        try:
            with anyio.move_on_after(self.history_wait):
                await read.wait()
                return True
        finally:  # timed out, or the request cancelled: nothing is left behind for the worker to call
            self.history_updates.forget(selector, wake)
        logger.warning(
            "a find waited %.0f s for its ranker to read the usage history and was answered without it",
            self.history_wait,
        )
        return False

    def history_settled(self, timeout: float | None = None) -> bool:
        """Block until every ranker reads the newest history it was given; whether it did within ``timeout``.
        Not on the event loop while a ``find`` waits there (:meth:`history_read`): the worker wakes it through the loop."""
        return self.history_updates.wait(timeout)

    async def refresh_history(self, caller: Caller) -> None:
        """Read in the caller's audience of the usage ledger if it changed elsewhere (another replica,
        ``skilldeck history --clear``), and, once per catalog, adopt the uses recorded before origins were
        kept and drop the uses of this gateway's cards gone since (never another gateway's: see
        :mod:`~skilldeck.gateway._ledger_view`)."""
        if self.learning is None:
            return
        audience = self.service.indexes.ledger_audience(caller)
        try:
            changed = await self.learning.refresh(audience)
            if self._pruned.get(audience) != self.generation:
                self._pruned[audience] = self.generation
                view = self.ledger_view()
                changed |= await self.learning.adopt(audience, view.adopted)
                changed |= await self.learning.prune(audience, view.is_listed)
        except Exception as exc:  # learning never fails a request
            self.learning.failed("read", exc)
            return
        if changed:
            self._history_changed(audience)

    async def learn(self, caller: Caller, client: str, tool: tuple[str, str]) -> None:
        """A call of ``tool`` succeeded: record the questions whose find and load it completes."""
        if self.learning is None:
            return
        if self.service.shares(client):  # taken out of the shared path: no other replica records it again
            assert self.service.shared is not None
            done = await self.on_path(self.service.shared.succeeded(client, tool)) or []
        else:
            activation = self.service.activations.peek(client)
            done = activation.succeeded(tool) if activation is not None else []
        audience = self.service.indexes.ledger_audience(caller)
        who = caller.subject or caller.client_id or ""
        if not caller.authenticated and self.service.anonymous != "trusted":
            if self.service.anonymous == "off":
                for _, card in done:
                    self.service.log.record("learned", client, card=card, recorded=False, why="anonymous")
                return
            who = ANONYMOUS  # however many clients: one caller, never trusted
        for question, card in done:
            alone = self.learning.callers(audience) <= 1
            try:
                change = await self.learning.record(
                    audience, question, card, who, self.service.upstreams.origin(card.partition("/")[0])
                )
            except Exception as exc:  # learning never fails a call
                self.learning.failed("write", exc)
                return
            self.service.log.record("learned", client, card=card, recorded=bool(change))
            if change and alone != (self.learning.callers(audience) <= 1):  # every card's trust moved
                self._history_changed(audience)
            elif change:  # only the cards whose questions moved are read again
                self._history_changed(audience, {u.ref for u in (*change.written, *change.removed)})

    async def share_found(self, client: str, query: str, result: Mapping[str, Any]) -> None:
        """After ``find`` answered ``result`` for ``query``: keep the question and the cards it showed
        on the client's shared path, when its activation is shared with other replicas (else ``find``
        kept them in this process). Never fails: a store that cannot be reached is logged."""
        if self.learning is None or not self.service.shares(client):
            return
        assert self.service.shared is not None
        question = normalise_question(query, self.learning.limits)
        put_forward = credited(result.get("cards", ()), bool(result.get("abstain")), FILLER_GAP)
        await self.on_path(self.service.shared.found(client, question, put_forward))

    async def on_path(self, step: Awaitable[_T]) -> _T | None:
        """``step`` on a client's shared path; ``None`` (logged) when the store cannot be reached."""
        try:
            return await step
        except Exception as exc:  # learning never fails a request
            logger.warning("the usage ledger's shared path cannot be reached: %s", exc)
            return None
