"""What a question asks to do to data, against what a tool's annotations say it does (``_intent``)."""

from __future__ import annotations

from typing import Any

import pytest

from skilldeck.select import Ranker, build_cards, parse_snapshot
from skilldeck.select._config import RankConfig
from skilldeck.select._intent import MAX_WORDS, agreement, question_intent, tool_effect


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("show the last 5 commits", "read"),
        ("what do you remember about Alice", "read"),  # the first cue wins: "what", not "remember"
        ("remember that Alice likes tea", "write"),
        ("save this text to todo.txt", "write"),
        ("forget everything you know about Bob", "delete"),
        ("don't forget I'm allergic to peanuts", "write"),  # not a request to forget
        ("Do not forget the meeting", "write"),
        ("DISCARD the staged changes", "delete"),
        ("add 42 and 58", "read"),  # arithmetic asks for a result, not to add to data
        ("what is 17 plus 25", "read"),
        ("add 2 files to the commit", "write"),
        ("git log", None),
        ("give me some resource links", None),  # "links" is a thing, not a request to link
        ("synthesize the findings", None),  # nor "findings" one to find
        ("", None),
    ],
)
def test_question_intent_is_the_first_cue_word(question: str, intent: str | None) -> None:
    assert question_intent(question) == intent


def test_only_the_first_max_words_words_are_read() -> None:
    filler = "lorem " * (MAX_WORDS - 1)
    assert question_intent(filler + "show it") == "read"  # the cue is word 64
    assert question_intent(filler + "ipsum show it") is None  # word 65


@pytest.mark.parametrize(
    ("annotations", "effect"),
    [
        ({"readOnlyHint": True}, "read"),
        ({"readOnlyHint": True, "destructiveHint": True}, "read"),  # read-only wins: the spec ignores the rest
        ({"readOnlyHint": False, "destructiveHint": True}, "destructive"),
        ({"destructiveHint": True}, "destructive"),
        ({"readOnlyHint": False, "destructiveHint": False}, "additive"),
        ({"readOnlyHint": False}, "additive"),
        ({"idempotentHint": True}, None),  # says nothing of reading or writing
        ({}, None),
        (None, None),
        ("read-only", None),  # not an object: ignored
    ],
)
def test_tool_effect_reads_the_annotations(annotations: Any, effect: str | None) -> None:
    assert tool_effect({"name": "t", "annotations": annotations}) == effect
    assert tool_effect(None) is None


def test_agreement() -> None:
    assert agreement("read", "read") == 1.0
    assert agreement("read", "destructive") == -1.0
    assert agreement("write", "additive") == 1.0
    assert agreement("write", "destructive") == 0.5  # write_file overwrites: it serves a write
    assert agreement("delete", "destructive") == 1.0
    assert agreement("delete", "read") == -1.0
    assert agreement(None, "read") == agreement("read", None) == 0.0


def _catalog(annotated: bool) -> Any:
    def tool(name: str, description: str, read_only: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name, "description": description, "inputSchema": {"type": "object"}}
        if annotated:
            out["annotations"] = {"readOnlyHint": read_only, "destructiveHint": False}
        return out

    return build_cards(
        parse_snapshot(
            {
                "servers": [
                    {
                        "label": "vcs",
                        "tools": [
                            tool("alpha", "Commits of the repository", read_only=False),
                            tool("beta", "Commits of the repository", read_only=True),
                        ],
                    },
                    {"label": "other", "tools": [tool("weather", "Weather forecast for a city", read_only=True)]},
                ]
            }
        )
    )


def _first(cards: Any, question: str, weight: float | None = None) -> str:
    config = RankConfig() if weight is None else RankConfig(intent_weight=weight)
    ranker = Ranker(cards.cards, schemas=cards.tools, config=config)
    return ranker.rank(question).scored[0].card.name


def test_a_server_s_cards_are_ordered_by_what_the_question_asks_to_do() -> None:
    cards = _catalog(annotated=True)
    assert _first(cards, "show the repository commits") == "beta"  # read-only
    assert _first(cards, "record the repository commits") == "alpha"  # writes
    # without the view the two tie on words: the same card comes first for both questions
    assert _first(cards, "show the repository commits", weight=0.0) == _first(
        cards, "record the repository commits", weight=0.0
    )


def test_tools_without_annotations_rank_as_before() -> None:
    cards = _catalog(annotated=False)
    ranker = Ranker(cards.cards, schemas=cards.tools)
    plain = Ranker(cards.cards, schemas=cards.tools, config=RankConfig(intent_weight=0.0))
    for question in ("show the repository commits", "record the repository commits", "delete the weather"):
        assert [(s.card.name, s.score) for s in ranker.rank(question).scored] == [
            (s.card.name, s.score) for s in plain.rank(question).scored
        ]
