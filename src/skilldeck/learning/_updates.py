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

:meth:`HistoryUpdates.settled` lets a ranking that must not go without its history wait for it, a
bounded time: the gateway's ``find`` waits for its selector's (a new index's whole history after a
restart, the use its caller just made), so the first question after a restart is answered with what
was learned, and a question asked right after a successful call with that call counted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from skilldeck.select import History, Selector

__all__ = ["HistoryUpdates"]

logger = logging.getLogger(__name__)


class HistoryUpdates:
    """The newest history per selector, handed over on one worker thread (see the module docs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        """Notified each time the worker has handed a selector its history."""
        self._pending: dict[int, tuple[Selector, History | None, dict[str, Sequence[str]]]] = {}
        """Per selector: a whole history to take (or none), then the cards whose questions changed since."""
        self._reading: int | None = None
        """The selector the worker hands a history to now (by id)."""
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
        key = id(selector)
        with self._changed:
            return self._changed.wait_for(lambda: not self._waits(key), timeout)

    def _waits(self, key: int) -> bool:
        return key in self._pending or self._reading == key

    def _run(self) -> None:
        while True:
            with self._lock:
                self._reading = None
                self._changed.notify_all()
                if not self._pending:
                    self._worker = None
                    self._idle.set()
                    return
                key, (selector, history, changes) = self._pending.popitem()
                self._reading = key
            try:
                if history is not None:
                    selector.set_history(history)
                if changes:
                    selector.update_history(changes)
            except Exception:  # a history that cannot be indexed leaves the one in place
                logger.exception("a usage history could not be indexed; the ranker keeps the one it had")
