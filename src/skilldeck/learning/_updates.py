"""Rankers take a new history on a thread of their own, the latest one each, never on a request's path.

Indexing a whole history takes time (20 past questions on each of 10,000 cards: 22 s on a heavily
loaded two-core machine, ``bench/selection/history_update.py``), reading one recorded use much less
(the cards that changed only), and the gateway has a change after every recorded use and a whole
history for every index it builds. :class:`HistoryUpdates` keeps, per selector, only the newest history
submitted (a whole one, and the cards changed since, merged) and hands it to
:meth:`~skilldeck.select.Selector.set_history` and :meth:`~skilldeck.select.Selector.update_history`
on one worker thread, so a ``call`` returns as soon as its use is recorded and a burst of uses costs
one update per selector, not one per use. Meanwhile each selector ranks with the history it has (a selector's
``set_history`` swaps a new index in whole, so a ranking under way never sees half of one).

A ranking that must not go without its history waits for its own selector's, a bounded time:
:meth:`HistoryUpdates.when_settled` has a callback called on the worker thread once it is in (the
gateway's ``find`` sets an event of its loop with it, so a flood of waiting finds holds no thread;
:meth:`HistoryUpdates.settled` blocks a thread on such a callback). So the first question after a restart is answered with
what was learned (a new index's whole history), and a question asked right after a successful call
with that call counted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from skilldeck.select import History, Selector

__all__ = ["HistoryUpdates"]

logger = logging.getLogger(__name__)


class HistoryUpdates:
    """The newest history per selector, handed over on one worker thread (see the module docs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[Selector, History | None, dict[str, Sequence[str]]]] = {}
        """Per selector: a whole history to take (or none), then the cards whose questions changed since."""
        self._reading: int | None = None
        """The selector the worker hands a history to now (by id)."""
        self._callbacks: dict[int, list[Callable[[], None]]] = {}
        """Per selector (by id): what to call once it holds every history submitted for it (:meth:`when_settled`)."""
        self._worker: threading.Thread | None = None
        self._idle = threading.Event()
        self._idle.set()

    def submit(self, selector: Selector, history: History) -> None:
        """Have ``selector`` rank with ``history`` soon (replacing any history still waiting for it)."""
        with self._lock:
            self._pending[id(selector)] = (selector, history, {})
            self._start()

    def submit_changes(self, selector: Selector, changes: History) -> None:
        """Have ``selector`` rank with the past questions of the cards in ``changes`` soon (by key; an
        empty list: none now), the others' as they were (:meth:`~skilldeck.select.Selector.update_history`)."""
        with self._lock:
            _, whole, waiting = self._pending.get(id(selector), (selector, None, {}))
            self._pending[id(selector)] = (selector, whole, {**waiting, **changes})
            self._start()

    def _start(self) -> None:
        self._idle.clear()
        if self._worker is None:
            self._worker = threading.Thread(target=self._run, name="skilldeck-history", daemon=True)
            self._worker.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every submitted history is in its selector; whether that happened within ``timeout``."""
        return self._idle.wait(timeout)

    def pending(self, selector: Selector) -> bool:
        """Whether a history submitted for ``selector`` is not in it yet."""
        with self._lock:
            return self._waits(id(selector))

    def settled(self, selector: Selector, timeout: float) -> bool:
        """Block until every history submitted for ``selector`` so far is in it (or failed to be indexed,
        which leaves the one it had); whether that happened within ``timeout`` seconds."""
        done = threading.Event()
        if not self.when_settled(selector, done.set):
            return True
        try:
            return done.wait(timeout)
        finally:
            self.forget(selector, done.set)

    def when_settled(self, selector: Selector, callback: Callable[[], None]) -> bool:
        """Have ``callback`` called, on the worker thread, once every history submitted for ``selector`` so
        far is in it (or failed to be indexed); ``False``, and never called, when none is waiting now.
        A waiter that gives up first takes its callback back with :meth:`forget`."""
        key = id(selector)
        with self._lock:
            if not self._waits(key):
                return False
            self._callbacks.setdefault(key, []).append(callback)
            return True

    def waiters(self, selector: Selector) -> int:
        """How many callbacks of :meth:`when_settled` wait for ``selector`` now."""
        with self._lock:
            return len(self._callbacks.get(id(selector), ()))

    def forget(self, selector: Selector, callback: Callable[[], None]) -> None:
        """Take back a callback of :meth:`when_settled` not called yet."""
        key = id(selector)
        with self._lock:
            waiting = self._callbacks.get(key, [])
            if callback in waiting:
                waiting.remove(callback)
            if not waiting:
                self._callbacks.pop(key, None)

    def _waits(self, key: int) -> bool:
        return key in self._pending or self._reading == key

    def _run(self) -> None:
        while True:
            with self._lock:
                finished, self._reading = self._reading, None
                done = (
                    self._callbacks.pop(finished, []) if finished is not None and finished not in self._pending else []
                )
                more = bool(self._pending)
                if more:
                    key, (selector, history, changes) = self._pending.popitem()
                    self._reading = key
                else:  # a submit from here on starts another worker
                    self._worker = None
                    self._idle.set()
            for call in done:
                try:
                    call()
                except Exception:  # a waiter's wake-up failing never stops the others'
                    logger.exception("a wait for a usage history could not be ended")
            if not more:
                return
            try:
                if history is not None:
                    selector.set_history(history)
                if changes:
                    selector.update_history(changes)
            except Exception:  # a history that cannot be indexed leaves the one in place
                logger.exception("a usage history could not be indexed; the ranker keeps the one it had")
