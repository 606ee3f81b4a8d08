"""The path a question takes in one activation (find → load → call), and its bounds at N and N + 1."""

from __future__ import annotations

from skilldeck.gateway._activation import FINDS_KEPT, PENDING_KEPT, Activation

FORECAST = ("up", "forecast")


def test_a_successful_call_completes_the_newest_question_that_showed_the_loaded_card() -> None:
    activation = Activation()
    activation.found("weather in Paris", ["up/forecast", "up/events"])
    activation.found("rain in Lyon", ["up/forecast"])
    activation.found("convert money", ["up/convert"])
    activation.loaded("up/forecast", [FORECAST])
    assert activation.succeeded(("up", "convert")) == []  # another card's tool
    assert activation.succeeded(FORECAST) == [("rain in Lyon", "up/forecast")]
    assert activation.succeeded(FORECAST) == []  # once per load


def test_a_load_of_a_card_no_question_showed_or_that_activated_nothing_is_not_followed() -> None:
    activation = Activation()
    activation.loaded("up/forecast", [FORECAST])  # no find before it
    activation.found("weather in Paris", ["up/forecast"])
    activation.loaded("up/forecast", [])  # a skill whose tools were all refused
    assert activation.succeeded(FORECAST) == []


def test_an_activation_remembers_its_last_finds_at_n_and_forgets_at_n_plus_one() -> None:
    kept, forgotten = Activation(), Activation()
    for activation, finds in ((kept, FINDS_KEPT), (forgotten, FINDS_KEPT + 1)):
        activation.found("weather in Paris", ["up/forecast"])
        for i in range(finds - 1):
            activation.found(f"other question {i}", ["up/convert"])
        activation.loaded("up/forecast", [FORECAST])
    assert kept.succeeded(FORECAST) == [("weather in Paris", "up/forecast")]
    assert forgotten.succeeded(FORECAST) == []


def test_an_activation_follows_its_last_loads_at_n_and_forgets_the_oldest_at_n_plus_one() -> None:
    for loads, followed in ((PENDING_KEPT, True), (PENDING_KEPT + 1, False)):
        activation = Activation()
        cards = [f"up/tool{i}" for i in range(loads)]
        activation.found("a question", cards)
        for i, card in enumerate(cards):
            activation.loaded(card, [("up", f"tool{i}")])
        assert bool(activation.succeeded(("up", "tool0"))) is followed
        assert activation.succeeded(("up", f"tool{loads - 1}")) == [("a question", f"up/tool{loads - 1}")]
