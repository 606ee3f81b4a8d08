"""What each downstream client has loaded, and so may call. Pure.

Activation is kept per client: the stdio process, a legacy (2025-11-25) session, or on a
2026-07-28 connection the verified token's subject (or client id) plus an optional conversation id the client
sends in ``_meta["dev.skilldeck/conversation"]``. The key comes from outside, so the table is
bounded: at most ``max_clients`` activations are held, the least recently used one giving way.

Where the activations live is an :class:`ActivationStore`. By default there is none beyond this
process's :class:`ActivationTable`. Gateway replicas behind a load balancer (``skilldeck gateway
--redis``) share a store (:class:`~skilldeck.gateway._redis_store.RedisActivationStore`): what a
client loaded on one replica (skill ids with the digest of the verified ``SKILL.md``, and active
tools) is written there, and the replica that takes the client's next request reads it back into
its own table. A store holds ids and digests, never content: a replica serves a skill's bytes only
after it loaded and verified them itself.

An activation also follows the path a question takes, for the usage ledger
(:mod:`skilldeck.learning`): the last :data:`FINDS_KEPT` questions and the cards each was shown
(:meth:`Activation.found`), the cards loaded after a question that showed them and the tools each
activated (:meth:`Activation.loaded`), and, when a call of one of those tools succeeded, the
question and card it completes (:meth:`Activation.succeeded`, once per load). With a shared store
the path of a client whose activation is shared lives there instead (:meth:`ActivationStore.found`,
:meth:`~ActivationStore.loaded`, :meth:`~ActivationStore.succeeded`, with the same bounds), so a
client that finds through one replica, loads through a second and calls through a third teaches the
ledger once: the replica that sees the successful call takes the pending question out of the store,
and no other replica can take it again.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from skilldeck.serving._api import MAX_CONVERSATION_CHARS, client_key, per_connection

__all__ = [
    "FINDS_KEPT",
    "MAX_CONVERSATION_CHARS",
    "Activation",
    "ActivationStore",
    "ActivationTable",
    "SharedActivation",
    "best_question",
    "client_key",
    "credited",
    "per_connection",
]


FINDS_KEPT = 8
"""Questions an activation remembers (with the cards each was shown) for the usage ledger."""
PENDING_KEPT = 64
"""Loaded cards an activation follows until one of their tools is called (oldest forgotten first)."""


def credited(cards: Sequence[Mapping[str, Any]], abstained: bool, gap: float) -> list[str]:
    """The ids of a ``find`` answer's cards a later load and successful call may teach the ledger: none when
    it abstained; else those the ranking put forward, scoring within ``gap`` of the first card (the cards
    that tie with it and the best cards of servers close to it), never another server's filler shown only
    to fill the shortlist. In the order shown."""
    if abstained or not cards:
        return []
    top = max(float(c["score"]) for c in cards)
    return [str(c["id"]) for c in cards if top - float(c["score"]) <= gap + 1e-9]


def best_question(questions: Sequence[tuple[str, Sequence[str]]], card: str) -> str | None:
    """Of ``questions`` (oldest first, each with the cards it put forward, best first), the one that ranked
    ``card`` best; of those that ranked it equally, the newest; ``None`` when none put it forward."""
    best: tuple[int, str] | None = None
    for question, cards in reversed(questions):
        if card in cards:
            place = list(cards).index(card)
            if best is None or place < best[0]:
                best = (place, question)
    return None if best is None else best[1]


@dataclass
class Activation:
    """One client's loaded skills (id -> the loaded skill) and active tools (``(label, tool)``)."""

    skills: dict[str, Any] = field(default_factory=dict)
    tools: dict[tuple[str, str], None] = field(default_factory=dict)
    """Insertion-ordered set: injected tools are listed in the order they were loaded."""
    questions: deque[tuple[str, tuple[str, ...]]] = field(default_factory=lambda: deque(maxlen=FINDS_KEPT))
    """The last questions found, each with the ids of the cards its answer put forward (best first), newest last."""
    pending: OrderedDict[str, tuple[str, frozenset[tuple[str, str]]]] = field(default_factory=OrderedDict)
    """Card id -> the question that showed it before it was loaded, and the tools the load activated."""

    def found(self, question: str, cards: list[str]) -> None:
        """``find`` put ``cards`` forward for ``question``, best first (see :func:`credited`)."""
        self.questions.append((question, tuple(cards)))

    def loaded(self, card: str, tools: list[tuple[str, str]]) -> None:
        """``card`` was loaded, activating ``tools``: followed if a recent question put it forward, credited
        to the question that ranked it best (the newest of those that ranked it as well)."""
        question = best_question(self.questions, card)
        if question is None or not tools:
            return
        self.pending.pop(card, None)
        self.pending[card] = (question, frozenset(tools))
        while len(self.pending) > PENDING_KEPT:
            self.pending.popitem(last=False)

    def succeeded(self, tool: tuple[str, str]) -> list[tuple[str, str]]:
        """A call of ``tool`` succeeded: the ``(question, card)`` pairs it completes (each once)."""
        done = [(question, card) for card, (question, tools) in self.pending.items() if tool in tools]
        for _, card in done:
            del self.pending[card]
        return done

    def activate(self, tools: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Add ``tools``; returns those that were not active before."""
        added = [t for t in tools if t not in self.tools]
        for tool in added:
            self.tools[tool] = None
        return added

    def forget_tools(self, label: str, keep: set[str] | frozenset[str]) -> bool:
        """An upstream re-listed: its tools not in ``keep`` leave the active set. Returns whether any left."""
        gone = [t for t in self.tools if t[0] == label and t[1] not in keep]
        for tool in gone:
            del self.tools[tool]
        return bool(gone)


class ActivationTable:
    """Activations by client key, least recently used first out beyond ``max_clients``."""

    def __init__(self, max_clients: int = 4_096) -> None:
        if max_clients < 1:
            raise ValueError("max_clients must be at least 1")
        self.max_clients = max_clients
        self._table: OrderedDict[str, Activation] = OrderedDict()

    def __len__(self) -> int:
        return len(self._table)

    def get(self, key: str) -> Activation:
        """The activation for ``key``, created empty when new (evicting the least recently used)."""
        found = self._table.get(key)
        if found is not None:
            self._table.move_to_end(key)
            return found
        if len(self._table) >= self.max_clients:
            self._table.popitem(last=False)
        created = self._table[key] = Activation()
        return created

    def peek(self, key: str) -> Activation | None:
        """The activation for ``key`` if there is one (never created); using it counts as recent use."""
        found = self._table.get(key)
        if found is not None:
            self._table.move_to_end(key)
        return found

    def drop(self, key: str) -> None:
        self._table.pop(key, None)

    def values(self) -> list[Activation]:
        return list(self._table.values())


@dataclass(frozen=True)
class SharedActivation:
    """One client's activation as a shared store holds it: skill id -> ``SKILL.md`` digest, and active tools."""

    skills: dict[str, str] = field(default_factory=dict)
    tools: list[tuple[str, str]] = field(default_factory=list)


class ActivationStore(Protocol):
    """Where activations are shared between gateway replicas (none by default: the process's table alone)."""

    async def fetch(self, key: str) -> SharedActivation | None:
        """What ``key`` loaded on any replica (``None``: nothing, or it expired); counts as recent use."""
        ...

    async def add(self, key: str, skills: Mapping[str, str], tools: Sequence[tuple[str, str]]) -> None:
        """Record that ``key`` loaded ``skills`` (id -> digest) and activated ``tools``."""
        ...

    async def found(self, key: str, question: str, cards: Sequence[str]) -> None:
        """``find`` showed ``cards`` for ``question`` to ``key`` (the last :data:`FINDS_KEPT` are kept)."""
        ...

    async def loaded(self, key: str, cards: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        """``key`` loaded each card of ``cards``, activating its tools: followed (as :meth:`Activation.loaded`)
        when a kept question showed it (the last :data:`PENDING_KEPT` are followed)."""
        ...

    async def succeeded(self, key: str, tool: tuple[str, str]) -> list[tuple[str, str]]:
        """A call of ``tool`` by ``key`` succeeded: the ``(question, card)`` pairs it completes, taken
        out of the store at once (so each is returned once, to one replica)."""
        ...
