"""Each audience's index of the catalog: the cards a caller may see, their ranker, and the gate their tools pass.

:class:`AudienceIndexes` holds, for one :class:`~skilldeck.gateway._service.GatewayService`, an
:class:`AudienceIndex` per audience the policy tells apart and set of upstreams down (the least recently
used out first, past :data:`MAX_SELECTORS`), built on first use from what the service's
:class:`~skilldeck.gateway._port.Upstreams` list and rebuilt after a re-listing or a new policy. Under a
policy it also answers what a caller may load and call, and why something is hidden from it. It reads
the service's policy, encoder and upstreams as they stand (a reload swaps the policy).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from skilldeck.errors import GateRefused
from skilldeck.gateway._port import Upstreams, tool_id
from skilldeck.select import Card, CardSet, Encoder, Selector, ToolGate, build_cards
from skilldeck.select._api import VectorCache, history_a
from skilldeck.server._api import allowed_tools
from skilldeck.serving._api import Caller, Policy

__all__ = ["MAX_SELECTORS", "AudienceIndex", "AudienceIndexes", "IndexedService"]

MAX_SELECTORS = 32
"""Rankers kept at once, one per audience a policy tells apart (each indexes that audience's cards)."""


@dataclass
class AudienceIndex:
    """What one registry generation offers one audience: its cards, ranker and History A size."""

    cards: CardSet
    selector: Selector
    ids: dict[str, Card]
    history_a_tokens: int | None = None
    gate: ToolGate | None = None
    """The listing's gate (validators built once per schema); each call checks a view with the client's tools."""
    allowed: frozenset[str] | None = None
    """Under a policy, the tool ids this audience may load and call (computed once per index, not per call)."""
    ledger_audience: str = ""
    """The usage ledger's audience whose past questions this index ranks with."""
    listing: Mapping[str, Mapping[str, Any]] | None = None
    """Under a policy, every tool the upstreams list, hidden ones included: what a refusal is resolved against."""
    listing_gate: ToolGate | None = None
    """A gate over :attr:`listing`, built at the first refused call (it only names the tool a call meant)."""


class GivesHistory(Protocol):
    """Where a new index takes its audience's past questions (the service's usage recording)."""

    def give_history(self, index: AudienceIndex, *, fresh: bool = False) -> None:
        """Have the index's ranker read its audience's past questions."""
        ...


class IndexedService(Protocol):
    """What the indexes read of the gateway service, as it stands (a reload swaps its policy)."""

    @property
    def policy(self) -> Policy | None: ...

    @property
    def upstreams(self) -> Upstreams: ...

    @property
    def encoder(self) -> Encoder | None: ...

    @property
    def threshold(self) -> float | None: ...

    @property
    def vectors(self) -> VectorCache: ...

    @property
    def usage(self) -> GivesHistory: ...


class AudienceIndexes:
    """The indexes of one gateway service, per audience (see the module docs)."""

    def __init__(self, service: IndexedService) -> None:
        self.service = service
        self._indexes: OrderedDict[Any, AudienceIndex] = OrderedDict()

    def __len__(self) -> int:
        return len(self._indexes)

    def values(self) -> Iterator[AudienceIndex]:
        """The indexes held now."""
        return iter(list(self._indexes.values()))

    def clear(self) -> None:
        """The catalog or the policy changed: every index is rebuilt on next use."""
        for index in self._indexes.values():
            index.selector.ranker.close()  # stop encoding vectors for a catalog that changed
        self._indexes.clear()

    def _audience(self, caller: Caller) -> Any:
        return None if self.service.policy is None else caller.audience

    def ledger_audience(self, caller: Caller) -> str:
        """The usage ledger's audience of ``caller``: the policy's tenant (``""`` for none, and without a policy)."""
        return "" if self.service.policy is None else caller.tenant or ""

    def _key(self, caller: Caller) -> Any:
        """What an index is cached under: the caller's audience and the upstreams down at the time."""
        return self._audience(caller), frozenset(self.service.upstreams.failures)

    def index_for(self, caller: Caller) -> AudienceIndex:
        """The cards ``caller`` may see, ranked by a selector built for them (cached per audience).

        The cards of an upstream that is down are left out (so they never rank above one that can be
        used); its tools stay in the gate's listing, so loading or calling one is refused with why.
        """
        key = self._key(caller)
        found = self._indexes.get(key)
        if found is not None:
            self._indexes.move_to_end(key)
            return found
        cards = build_cards(self.service.upstreams.snapshot())
        down = key[1]
        if down:
            cards = CardSet([c for c in cards.cards if c.server not in down], cards.tools, cards.not_offered)
        listing = None
        if self.service.policy is not None:
            listing = cards.tools
            cards = self._admitted_cards(cards, caller)
        ids: dict[str, Card] = {}
        for card in cards.cards:
            ids.setdefault(self.card_id(card), card)
        # with an encoder, card vectors not in the cache are encoded on a thread of their own: `find`
        # answers lexically (and says so) meanwhile, rather than the event loop waiting for the catalog
        selector = Selector(
            cards,
            encoder=self.service.encoder,
            threshold=self.service.threshold,
            background=True,
            cache=self.service.vectors,
        )
        index = AudienceIndex(cards, selector, ids, ledger_audience=self.ledger_audience(caller), listing=listing)
        self.service.usage.give_history(index, fresh=True)
        if len(self._indexes) >= MAX_SELECTORS:
            self._indexes.popitem(last=False)[1].selector.ranker.close()
        self._indexes[key] = index
        return index

    def index_progress(self) -> tuple[int, int, int]:
        """The selection indexes held, and their card vectors encoded of those they need (for metrics)."""
        indexes = list(self._indexes.values())
        states = [index.selector.ranker.indexing for index in indexes]
        return len(indexes), sum(s.done for s in states), sum(s.total for s in states)

    def card_id(self, card: Card) -> str:
        if card.kind == "skill":
            record = self.service.upstreams.skill(card.server, card.uri or "")
            if record is not None:
                return self.service.upstreams.skill_id(record)
        return tool_id(card.server, card.name)

    def tools_for(self, caller: Caller) -> frozenset[str] | None:
        """Tool ids ``caller`` may load and call; ``None`` when no policy restricts them."""
        if self.service.policy is None:
            return None
        index = self._indexes.get(self._key(caller))
        if index is not None and index.allowed is not None:
            return index.allowed
        ids = [self.service.upstreams.skill_id(r) for r in self.service.upstreams.skills]
        public = {
            tool_id(label, t)
            for label in self.service.policy.public_labels
            for t in self.service.upstreams.tool_names(label)
        }
        allowed = allowed_tools(self.service.policy, ids, caller) | public
        if index is not None:  # the audience's index is dropped with it on reindex
            index.allowed = allowed
        return allowed

    def hidden_from(self, caller: Caller) -> tuple[int, int]:
        """How many tools and skills the upstreams list that the policy hides from ``caller`` (none without one)."""
        if self.service.policy is None:
            return 0, 0
        allowed = self.tools_for(caller) or frozenset()
        listed = {tool_id(s.label, str(t["name"])) for s in self.service.upstreams.snapshot().servers for t in s.tools}
        skills = [self.service.upstreams.skill_id(r) for r in self.service.upstreams.skills]
        return len(listed - allowed), sum(not self._admits_skill(caller, i) for i in skills)

    def hidden(self, caller: Caller, index: AudienceIndex, card_id: str) -> str | None:
        """Why the policy hides ``card_id`` (a skill or tool the upstreams list) from ``caller``, else ``None``."""
        if self.service.policy is None:
            return None
        if any(self.service.upstreams.skill_id(r) == card_id for r in self.service.upstreams.skills):
            return None if self._admits_skill(caller, card_id) else "its rule's admit: does not include you"
        label, _, name = card_id.partition("/")
        if (
            index.listing is not None
            and name in index.listing.get(label, {})
            and card_id not in (self.tools_for(caller) or ())
        ):
            return "no rule of a skill admitted to you routes it to you, and public_tools does not list it"
        return None

    def _admits_skill(self, caller: Caller, skill_id: str) -> bool:
        if self.service.policy is None:
            return True
        rule = self.service.policy.rule_for(skill_id)
        return rule is None or rule.admits(caller)

    def _admitted_cards(self, cards: CardSet, caller: Caller) -> CardSet:
        allowed = self.tools_for(caller) or frozenset()
        kept = []
        for card in cards.cards:
            if card.kind == "skill":
                if self._admits_skill(caller, self.card_id(card)):
                    kept.append(card)
            elif tool_id(card.server, card.name) in allowed:
                kept.append(card)
        tools = {
            label: {name: tool for name, tool in listed.items() if tool_id(label, name) in allowed}
            for label, listed in cards.tools.items()
        }
        return CardSet(kept, tools, cards.not_offered)

    def history_a_tokens(self, caller: Caller) -> int:
        """Tokens of every tool schema this caller could be shown (History A), counted once per index."""
        index = self.index_for(caller)
        if index.history_a_tokens is None:
            index.history_a_tokens = history_a(index.cards).tokens
        return index.history_a_tokens

    def hidden_tool(self, caller: Caller, index: AudienceIndex, name: str) -> str | None:
        """``LABEL/TOOL`` when ``name`` is an upstream tool the policy hides from ``caller``, else ``None``.

        The caller's gate lists only what the policy routes to it, so such a call is refused there as
        not listed, and the caller is told no more than that (a hidden tool is not disclosed); the
        audit still records it as what it is, a policy decision.
        """
        allowed = self.tools_for(caller)
        if allowed is None or index.listing is None:
            return None
        if index.listing_gate is None:
            index.listing_gate = ToolGate(index.listing)
        try:
            label, tool = index.listing_gate.resolve(name)
        except GateRefused:
            return None
        if tool not in index.listing.get(label, {}) or tool_id(label, tool) in allowed:
            return None
        return tool_id(label, tool)
