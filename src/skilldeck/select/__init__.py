"""Selection: cards, ranking, deciding (or abstaining), projection and the tool gate. Pure, no I/O.

Nothing here imports the MCP SDK; it takes catalog snapshots and returns plain data.
"""

from skilldeck.errors import SnapshotError
from skilldeck.select._cards import TOOLS_METADATA_KEY, Card, CardSet, build_cards, skill_tools
from skilldeck.select._decide import Calibration, Decision, DecisionLog, Selector, default_calibration
from skilldeck.select._gate import ToolGate
from skilldeck.select._history import History, Taught
from skilldeck.select._rank import Encoder, RankConfig, Ranker, Ranking, Scored, split_jobs
from skilldeck.select._snapshot import (
    CatalogSnapshot,
    ServerSnapshot,
    SkillSnapshot,
    load_snapshot,
    parse_snapshot,
)

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
