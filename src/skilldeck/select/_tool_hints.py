"""What a catalog's tools say about themselves beyond their text, read against each question. Pure.

Two hints, each from a tool's own MCP metadata: what it does to data (its annotations,
:mod:`skilldeck.select._intent`: a read-only tool agrees with a question that asks to read) and the
kind of value it needs (its input schema, :mod:`skilldeck.select._slots`: a clock time, a URL). The
ranker moves each card's own share of its score by how the question agrees with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from skilldeck.select._cards import Card
from skilldeck.select._config import RankConfig
from skilldeck.select._intent import Intent, agreement, question_intent, tool_effect
from skilldeck.select._slots import SlotKind, fit, names_action, question_slots, slot_kinds

__all__ = ["ToolHints"]


@dataclass(frozen=True)
class ToolHints:
    """The cards' hints, read once from the catalog; :meth:`apply` reads them against a question."""

    cards: Sequence[Card]
    config: RankConfig
    agreement: Mapping[Intent, np.ndarray] | None
    """Per intent a question may have, each card's agreement with it (``None``: no tool gives a hint)."""
    slots: Sequence[tuple[int, frozenset[SlotKind]]]
    """The cards whose tool needs a kind of value, by index: only they are read for each question, not the
    whole catalog."""

    @classmethod
    def of(
        cls, cards: Sequence[Card], schemas: Mapping[str, Mapping[str, Mapping[str, Any]]], config: RankConfig
    ) -> ToolHints:
        """The hints of ``cards`` (tools are looked up in ``schemas``: label -> tool name -> MCP tool)."""
        effects = [
            tool_effect(schemas.get(card.server, {}).get(card.name)) if card.kind == "tool" else None for card in cards
        ]
        intents: tuple[Intent, ...] = ("read", "write", "delete")
        agreements = (
            {
                intent: np.array([agreement(intent, effect) for effect in effects], dtype=np.float64)
                for intent in intents
            }
            if any(e is not None for e in effects) and config.intent_weight
            else None
        )
        slots: list[tuple[int, frozenset[SlotKind]]] = []
        if config.slot_weight:
            for i, card in enumerate(cards):
                needed = slot_kinds(schemas.get(card.server, {}).get(card.name)) if card.kind == "tool" else frozenset()
                if needed:
                    slots.append((i, needed))
        return cls(cards, config, agreements, slots)

    def apply(self, question: str, scores: np.ndarray, own_share: float) -> np.ndarray:
        """``scores`` with each card's own share moved by how its tool's annotations agree with what the
        question asks to do, and by whether the question gives the value its tool needs; as they are when
        no tool gives a hint."""
        if self.slots:
            given = question_slots(question)
            scores = scores.copy()
            for i, needed in self.slots:
                named = names_action(question, self.cards[i].name)
                scores[i] += own_share * self.config.slot_weight * fit(given, needed, names_action=named)
        if self.agreement is None:
            return scores
        intent = question_intent(question)
        if intent is None:
            return scores
        return scores + own_share * self.config.intent_weight * self.agreement[intent]
