"""What a question asks to do to data (read, write, delete), held against what a tool says it does. Pure.

Tools of one server are often named alike and described in the same few words: ``git_log`` and
``git_commit`` both speak of commits, ``read_file`` and ``write_file`` of files, ``read_graph`` and
``add_observations`` of the knowledge graph. What tells them apart for an everyday question is often
not a topic word but what the person wants done: *show* the last commits, *save* this text, *what
do you remember*. MCP tools say what they do to data in their annotations (``readOnlyHint``,
``destructiveHint``), so the ranker can hold the one against the other:

* :func:`question_intent`: the first word of the question that asks to read (``show``, ``list``,
  ``what``...), to write (``save``, ``create``, ``remember``...) or to delete (``remove``,
  ``forget``, ``discard``...), as written: a request says ``show``, and ``links`` or ``findings``
  are things, not requests (stemmed, they read as ``link`` and ``find``: measured, two questions
  lost); ``don't forget`` asks to remember. ``None`` when no such word comes (``git log``, ``add two numbers`` as arithmetic is
  ``add``: a write, which a read-only ``get-sum`` then weighs against only within its server).
* :func:`tool_effect`: ``read`` (``readOnlyHint: true``), ``destructive`` (``destructiveHint:
  true``: it overwrites or removes), ``additive`` (neither), or ``None`` when the tool gives no
  hint (most catalogs: the ranking is then as before).
* :func:`agreement`: +1 where they agree, -1 where they contradict, in between where partly (a
  destructive tool can serve a write: ``write_file`` overwrites).

The ranker adds ``RankConfig.intent_weight`` times the agreement to a card's own score, which orders
a server's cards and leaves the order of the servers to the fused views
(``bench/selection/everyday.py``: the first card right on 81% -> 85% and 77.5% -> 87.5% of the
everyday questions of its two catalogs; LiveMCPBench, whose tools carry almost no annotations,
unchanged).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Literal

from skilldeck.select._query import ARITHMETIC

__all__ = ["Effect", "Intent", "agreement", "question_intent", "tool_effect"]

Intent = Literal["read", "write", "delete"]
Effect = Literal["read", "additive", "destructive"]

_CUES: dict[Intent, str] = {
    "delete": "delete remove forget discard unstage erase drop clear wipe reset purge undo",
    "write": (
        "save store create add write record remember make set rename move edit replace update change commit "
        "stage link note keep put append insert modify"
    ),
    "read": (
        "show list what which who whom whose where when how get find look read display see view tell recall "
        "search is are was were check open print fetch retrieve dump compare"
    ),
}
_NEGATED_FORGET = re.compile(r"\b(?:don'?t|do not|never)\s+forget\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z']+")
MAX_WORDS = 64
"""Words of a question read for a cue: the cue of a request comes first (a long question's tail is not read)."""

_AGREEMENT: dict[tuple[Intent, Effect], float] = {
    ("read", "read"): 1.0,
    ("read", "additive"): -1.0,
    ("read", "destructive"): -1.0,
    ("write", "read"): -1.0,
    ("write", "additive"): 1.0,
    ("write", "destructive"): 0.5,
    ("delete", "read"): -1.0,
    ("delete", "additive"): -0.5,
    ("delete", "destructive"): 1.0,
}


@functools.lru_cache(maxsize=1)
def _cues() -> dict[str, Intent]:
    """Each cue word and the intent it signals."""
    return {word: intent for intent, words in _CUES.items() for word in words.split()}


def question_intent(question: str) -> Intent | None:
    """What ``question`` asks to do to data: the intent of its first cue word, ``None`` without one; a
    read when it asks for arithmetic (``add 42 and 58`` asks for a result, not to add to data:
    :data:`~skilldeck.select._query.ARITHMETIC`)."""
    if ARITHMETIC.search(question):
        return "read"
    text = _NEGATED_FORGET.sub("remember", question)
    cues = _cues()
    for word in _WORD.findall(text)[:MAX_WORDS]:
        intent = cues.get(word.strip("'").lower())
        if intent is not None:
            return intent
    return None


def tool_effect(tool: Mapping[str, Any] | None) -> Effect | None:
    """What an MCP Tool says it does to data (its annotations), ``None`` when it gives no hint."""
    annotations = tool.get("annotations") if isinstance(tool, Mapping) else None
    if not isinstance(annotations, Mapping):
        return None
    read_only = annotations.get("readOnlyHint")
    destructive = annotations.get("destructiveHint")
    if read_only is True:
        return "read"
    if destructive is True:
        return "destructive"
    if read_only is False or destructive is False:
        return "additive"
    return None


def agreement(intent: Intent | None, effect: Effect | None) -> float:
    """+1 when ``effect`` is what ``intent`` asks for, -1 when it contradicts it, 0 when either is unknown."""
    if intent is None or effect is None:
        return 0.0
    return _AGREEMENT[(intent, effect)]
