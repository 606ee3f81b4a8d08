"""Whether a question gives a value a tool's required argument needs (``_slots``)."""

from __future__ import annotations

from typing import Any

import pytest

from skilldeck.select import Ranker, build_cards, parse_snapshot
from skilldeck.select._config import RankConfig
from skilldeck.select._slots import MAX_CHARS, fit, names_action, question_slots, slot_kinds


def _tool(name: str, description: str, required: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": required, "required": list(required)},
    }


CONVERT = _tool(
    "convert_time",
    "Convert time between timezones",
    {
        "source_timezone": {"type": "string", "description": "Source IANA timezone name"},
        "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
        "target_timezone": {"type": "string", "description": "Target IANA timezone name"},
    },
)
CURRENT = _tool(
    "get_current_time",
    "Get current time in a specific timezones",
    {"timezone": {"type": "string", "description": "IANA timezone name (e.g. 'Asia/Tokyo')"}},
)
FETCH = _tool("fetch", "Fetches a URL from the internet", {"url": {"type": "string", "format": "uri"}})


@pytest.mark.parametrize(
    ("tool", "kinds"),
    [
        (CONVERT, {"clock"}),  # by its description (HH:MM, 24-hour)
        (CURRENT, set()),
        (FETCH, {"url"}),  # by its format
        (_tool("at", "Run at", {"when": {"type": "string", "format": "time"}}), {"clock"}),
        (_tool("open", "Open", {"link": {"type": "string", "description": "the URL to open"}}), {"url"}),
        # an optional argument, or one that is not a string, needs nothing of the question
        (
            {**FETCH, "inputSchema": {"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}}},
            set(),
        ),
        (
            {
                "name": "get",
                "inputSchema": {
                    "type": "object",
                    "properties": {"q": {"type": "string"}, "url": {"type": "string", "format": "uri"}},
                    "required": ["q"],
                },
            },
            set(),
        ),
        (_tool("wait", "Wait", {"time": {"type": "integer", "description": "seconds, 24-hour"}}), set()),
        ({"name": "broken", "inputSchema": {"properties": [], "required": "url"}}, set()),
        (None, set()),
    ],
)
def test_slot_kinds_read_required_string_arguments(tool: Any, kinds: set[str]) -> None:
    assert slot_kinds(tool) == kinds


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("what time is it in Tokyo", set()),
        ("if it's 9:00 in Berlin what time is it in Singapore", {"clock"}),
        ("if I call at 10am London time, what time is it in Denver", {"clock"}),
        ("at 6 p.m. in Paris", {"clock"}),
        ("the meeting is at noon", {"clock"}),
        ("read https://example.org/a", {"url"}),
        ("what does python.org say", {"url"}),
        ("version 2.10 of the API", set()),  # a version is not a clock time
        ("9:00 at www.example.com", {"clock", "url"}),
    ],
)
def test_question_slots_are_values_of_a_shape(question: str, kinds: set[str]) -> None:
    assert question_slots(question) == kinds


def test_only_the_first_max_chars_are_read() -> None:
    filler = "x" * (MAX_CHARS - 5)
    assert question_slots(filler + " 9:00") == {"clock"}  # ends at character MAX_CHARS
    assert question_slots(filler + "  9:00") == set()  # one past it


def test_fit() -> None:
    clock, url = frozenset({"clock"}), frozenset({"url"})
    assert fit(clock, clock) == 1.0
    assert fit(url, url) == 1.0
    assert fit(frozenset(), clock) == -1.0  # a time to convert is never implied
    assert fit(frozenset(), clock, names_action=True) == 0.0  # "timezone conversion"
    assert fit(frozenset(), url) == 0.0  # a URL is often left for later
    assert fit(clock, frozenset()) == 0.0


def test_names_action_by_the_first_five_letters() -> None:
    assert names_action("timezone conversion", "convert_time")
    assert names_action("Converting 9am", "convert-time")
    assert not names_action("what time is it", "convert_time")  # "time" is under five letters
    assert not names_action("conv", "convert_time")
    assert not names_action("anything", "ls")


def _time_catalog() -> Any:
    """Two tools of one server whose words tie (the ranking's other views cannot tell them apart): one
    needs a clock time, the other nothing."""
    same = "Time in timezones"
    at = _tool("time_at", same, {"clock": {"type": "string", "description": "HH:MM"}})
    now = _tool("time_now", same, {"zone": {"type": "string", "description": "IANA name"}})
    return build_cards(parse_snapshot({"servers": [{"label": "time", "tools": [at, now]}]}))


def _first(question: str, weight: float | None = None) -> str:
    cards = _time_catalog()
    config = RankConfig() if weight is None else RankConfig(slot_weight=weight)
    return Ranker(cards.cards, schemas=cards.tools, config=config).rank(question).scored[0].card.name


def test_a_clock_time_given_or_not_orders_a_server_s_cards() -> None:
    assert _first("time in Tokyo") == "time_now"
    assert _first("if it's 9:00 in Berlin, the time in Tokyo") == "time_at"
    assert _first("timezone at 10am") == "time_at"
    # without the view the two questions give the same first card
    assert _first("time in Tokyo", 0.0) == _first("if it's 9:00 in Berlin, the time in Tokyo", 0.0)


def test_tools_needing_no_value_rank_as_before() -> None:
    cards = build_cards(parse_snapshot({"servers": [{"label": "t", "tools": [CURRENT, FETCH]}]}))
    with_view = Ranker(cards.cards, schemas=cards.tools)
    without = Ranker(cards.cards, schemas=cards.tools, config=RankConfig(slot_weight=0.0))
    for question in ("what time is it", "get the weather"):  # no URL given: the fetch card is not moved
        assert [(s.card.name, s.score) for s in with_view.rank(question).scored] == [
            (s.card.name, s.score) for s in without.rank(question).scored
        ]
