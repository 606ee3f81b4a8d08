"""Selection: cards, ranking, deciding (or abstaining), projection and the tool gate. Pure, no I/O.

Nothing here imports the MCP SDK; it takes catalog snapshots and returns plain data.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skilldeck.errors import SnapshotError
    from skilldeck.select._cards import TOOLS_METADATA_KEY, Card, CardSet, build_cards, skill_tools
    from skilldeck.select._decide import Calibration, Decision, DecisionLog, Selector, default_calibration
    from skilldeck.select._gate import ToolGate
    from skilldeck.select._history import History
    from skilldeck.select._rank import Encoder, RankConfig, Ranker, Ranking, Scored, split_jobs
    from skilldeck.select._snapshot import (
        CatalogSnapshot,
        ServerSnapshot,
        SkillSnapshot,
        load_snapshot,
        parse_snapshot,
    )
    from skilldeck.select._taught import Taught

_HOMES = {
    "SnapshotError": "skilldeck.errors",
    **dict.fromkeys(["TOOLS_METADATA_KEY", "Card", "CardSet", "build_cards", "skill_tools"], "skilldeck.select._cards"),
    **dict.fromkeys(
        ["Calibration", "Decision", "DecisionLog", "Selector", "default_calibration"], "skilldeck.select._decide"
    ),
    "ToolGate": "skilldeck.select._gate",
    "History": "skilldeck.select._history",
    **dict.fromkeys(["Encoder", "RankConfig", "Ranker", "Ranking", "Scored", "split_jobs"], "skilldeck.select._rank"),
    **dict.fromkeys(
        ["CatalogSnapshot", "ServerSnapshot", "SkillSnapshot", "load_snapshot", "parse_snapshot"],
        "skilldeck.select._snapshot",
    ),
    "Taught": "skilldeck.select._taught",
}
"""Where each public name lives. A name is imported when first asked for, so that what needs only a card or
a snapshot (a server, the learning ledger, the CLI starting) does not load the ranking and numpy with it."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'skilldeck.select' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "TOOLS_METADATA_KEY",
    "Calibration",
    "Card",
    "CardSet",
    "CatalogSnapshot",
    "Decision",
    "DecisionLog",
    "Encoder",
    "History",
    "RankConfig",
    "Ranker",
    "Ranking",
    "Scored",
    "Selector",
    "ServerSnapshot",
    "SkillSnapshot",
    "SnapshotError",
    "Taught",
    "ToolGate",
    "build_cards",
    "default_calibration",
    "load_snapshot",
    "parse_snapshot",
    "skill_tools",
    "split_jobs",
]
