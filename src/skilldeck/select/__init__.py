"""Selection: cards, ranking, deciding (or abstaining), projection and the tool gate. Pure, no I/O.

Nothing here imports the MCP SDK; it takes catalog snapshots and returns plain data.

Its modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.select`` beyond its public names: its face to them.
- ``_bert``: A BERT encoder's forward pass in numpy: all-MiniLM-L6-v2's sentence vectors without
  onnxruntime.
- ``_bm25f``: BM25F: the index over weighted bags of terms, a catalog's card and server indexes, and the
  shipped background document frequencies.
- ``_card_vectors``: The catalog's semantic vectors: each card's, each server's centroid and each server
  label's.
- ``_cards``: Cards: the short, model-facing description of every skill and tool.
- ``_config``: The ranker's weights (:class:`RankConfig`).
- ``_decide``: Deciding: choose capabilities for a question, or abstain with reasons.
- ``_encoders``: Semantic encoders for the selector, loadable by name.
- ``_gate``: The tool gate: the only way a model's tool call reaches a server.
- ``_history``: A usage history read by the ranker: each card's past questions, indexed on their own.
- ``_history_view``: What a card's past questions add to a ranking: the history view beside the five fused
  views.
- ``_intent``: What a question asks to do to data (read, write, delete), held against what a tool says it
  does.
- ``_needs``: Each need a question implies, ranked on its own and remembered, and the place it is given.
- ``_neighbours``: The trusted past questions nearest a question: what lets history take the first place.
- ``_onnx_weights``: The weights of an ONNX model file, read without ``onnx`` or ``onnxruntime``.
- ``_project``: Projection: what the model is shown.
- ``_query``: Reading a question: the words its file paths imply, its jobs, and the needs it implies.
- ``_rank``: Ranking cards for a question: lexical BM25F always, semantic embeddings when installed.
- ``_results``: What a ranking produces: scored cards, what each query unit found, how far the card vectors
  are.
- ``_slots``: Whether a question gives a value a tool needs: a clock time for a tool that converts one, a
  URL for a tool that fetches one.
- ``_snapshot``: Catalog snapshots: what ``skilldeck snapshot`` writes and ``skilldeck select`` reads.
- ``_steps``: The ranker's replaceable steps (:class:`RankSteps`) and what a step is given.
- ``_taught``: A card's past questions and whether they are trusted: what the learning ledger hands
  selection.
- ``_tool_hints``: What a catalog's tools say about themselves beyond their text, read against each
  question.
- ``_text``: Text for the ranker: index terms (:func:`tokens`) and what is indexed and encoded for a card or
  a server.
- ``_units``: What a query unit found, told about one card and its server: the features the decision
  reads.
- ``_vectors``: Card vectors cached by content, so a restart or a re-list re-encodes only what changed.
- ``_wordpiece``: BERT WordPiece tokenisation for all-MiniLM-L6-v2, in plain Python over the shipped
  vocabulary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

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


__getattr__ = lazy_names("skilldeck.select", _HOMES, keep=globals())


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
