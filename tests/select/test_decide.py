"""Deciding: the right capability, abstention with reasons, several jobs, calibration, the log."""

from __future__ import annotations

import json
import math
from collections import Counter
from importlib import resources

import numpy as np
import pytest

from skilldeck.select import (
    Calibration,
    CardSet,
    DecisionLog,
    Selector,
    build_cards,
    default_calibration,
    parse_snapshot,
)
from skilldeck.select._decide import FEATURES

# a hand-set model for the tiny test catalog (the shipped one is fitted on LiveMCPBench's 527 tools)
SMALL = Calibration(weights={"idf_coverage": 8.0, "lexical": 1.0}, bias=-4.0, threshold=0.5, source="tests")


@pytest.mark.parametrize("semantic", [False, True])
def test_shipped_calibration_files_load_and_name_their_procedure(semantic: bool) -> None:
    cal = default_calibration(semantic)
    assert 0.0 < cal.threshold < 1.0
    assert set(cal.weights) <= set(FEATURES)
    assert ("semantic" in cal.weights) is semantic
    assert "half A" in cal.source
    assert "90%" in cal.source
    name = "calibration-semantic.json" if semantic else "calibration-lexical.json"
    raw = json.loads((resources.files("skilldeck.select") / name).read_text(encoding="utf-8"))
    assert Calibration.from_json(raw) == cal
    assert Calibration.from_json(cal.to_json()) == cal
    assert raw["metrics"]["heldout_half_B"]["n"] > 0


def test_confidence_is_a_logistic_of_the_features() -> None:
    cal = Calibration(weights={"lexical": 2.0}, bias=-1.0, threshold=0.5)
    assert cal.confidence({"lexical": 0.5}) == pytest.approx(0.5)
    assert cal.confidence({"lexical": 100.0}) == pytest.approx(1.0)
    assert cal.confidence({"lexical": 0.0, "unknown": 5.0}) < 0.5


def test_a_feature_a_question_lacks_reads_the_calibrations_default() -> None:
    cal = Calibration(weights={"lexical": 1.0, "implied_semantic": 4.0}, bias=-2.0, threshold=0.5,
                      defaults={"implied_semantic": 0.25})  # fmt: skip
    assert cal.confidence({"lexical": 1.0}) == pytest.approx(1 / (1 + math.exp(-(1.0 - 2.0 + 1.0))))
    assert cal.confidence({"lexical": 1.0, "implied_semantic": 0.0}) == pytest.approx(1 / (1 + math.exp(1.0)))
    assert Calibration.from_json(cal.to_json()) == cal
    assert Calibration.from_json(cal.to_json()).defaults == {"implied_semantic": 0.25}


def test_the_right_capability_is_chosen_with_its_tools(cardset: CardSet) -> None:
    decision = Selector(cardset, calibration=SMALL).decide("What's the weather forecast for Paris this weekend?")
    assert not decision.abstain
    assert decision.confidence >= 0.5
    assert [(c.server, c.name) for c in decision.chosen] == [("weather", "get_forecast")]
    assert decision.tools[0] == ("weather", "get_forecast")
    assert all(server == "weather" for server, _ in decision.tools)
    assert decision.reason.startswith("chose tool weather/get_forecast")
    assert decision.servers[0][0] == "weather"


def test_clearly_unrelated_questions_abstain_with_reasons(cardset: CardSet) -> None:
    for calibration in (SMALL, default_calibration(False)):
        decision = Selector(cardset, calibration=calibration).decide("Bake a sourdough loaf with rye and spelt")
        assert decision.abstain
        assert decision.chosen == []
        assert decision.tools == []
        assert decision.reason.startswith("abstained: nothing is close enough")
        assert "covers 0 of" in decision.reason  # says why
        assert "best candidates:" in decision.reason  # and what came closest
        assert decision.ranked  # the ranking is still there for whoever wants it


def test_a_multi_job_question_gets_several_capabilities(cardset: CardSet) -> None:
    question = "Get the latest stock price of Apple, then plot the prices as a bar chart and write it to the file /tmp/apple.md"
    decision = Selector(cardset, calibration=SMALL).decide(question)
    assert not decision.abstain
    assert {c.server for c in decision.chosen} == {"stocks", "charts", "files"}
    assert {server for server, _ in decision.tools} == {"stocks", "charts", "files"}
    assert "several jobs" in decision.reason
    assert [j["server"] for j in decision.jobs] == ["stocks", "charts", "files"]
    capped = Selector(cardset, calibration=SMALL, max_capabilities=2).decide(question)
    assert len(capped.chosen) == 2


def test_two_needs_one_server_answers_get_one_card_and_each_its_tool(cardset: CardSet) -> None:
    """Needs given apart, two of them answered by ``stocks``: one card a server (the first need's), and the
    second need's tool exposed too (before, only the first need's tools were, so with one tool a server the
    model could not fetch the dividends it asked for)."""
    needs = ["latest stock price of Apple", "dividends paid by AAPL", "write the report to the file /tmp/apple.md"]
    decision = Selector(cardset, calibration=SMALL, max_tools_per_server=1).decide(needs)
    assert not decision.abstain
    assert [(c.server, c.name) for c in decision.chosen] == [("stocks", "get_stock_price"), ("files", "write_file")]
    assert decision.tools == [("stocks", "get_stock_price"), ("stocks", "get_dividends"), ("files", "write_file")]
    capped = Selector(cardset, calibration=SMALL, max_tools_per_server=1, max_capabilities=1).decide(needs)
    assert [c.server for c in capped.chosen] == ["stocks"]  # a second server is past the cap, its tools too
    assert capped.tools == [("stocks", "get_stock_price"), ("stocks", "get_dividends")]


def test_tools_per_server_are_capped(cardset: CardSet) -> None:
    decision = Selector(cardset, calibration=SMALL, max_tools_per_server=1).decide(
        "stock price, company news and dividends for AAPL"
    )
    assert decision.tools == [(decision.chosen[0].server, decision.chosen[0].name)]


def test_a_chosen_skill_brings_exactly_its_tools(cardset: CardSet, skill_card) -> None:
    selector = Selector([skill_card, *cardset.cards], calibration=SMALL)
    decision = selector.decide("write my weekly portfolio report")
    assert decision.chosen[0] == skill_card
    assert decision.tools == [("stocks", "get_stock_price"), ("stocks", "get_dividends")]


def test_a_confidence_exactly_at_the_threshold_chooses_and_just_below_abstains(cardset: CardSet) -> None:
    """The threshold is the least confidence that chooses: at it exactly the capability is chosen; at the
    next float above the confidence the selector abstains, saying so."""
    question = "What's the weather forecast for Paris this weekend?"
    confidence = Selector(cardset, calibration=SMALL).decide(question).confidence
    assert 0.0 < confidence < 1.0
    at = Selector(cardset, calibration=SMALL, threshold=confidence).decide(question)
    assert not at.abstain, at.reason
    assert at.chosen[0].server == "weather"
    above = Selector(cardset, calibration=SMALL, threshold=math.nextafter(confidence, 1.0)).decide(question)
    assert above.abstain
    assert above.reason.startswith("abstained"), above.reason
    # the same boundary for the lexical model, which judges while an encoder's card vectors are not ready
    for threshold, abstains in ((confidence, False), (math.nextafter(confidence, 1.0), True)):
        lexical = Calibration(SMALL.weights, SMALL.bias, threshold=threshold, source="tests")
        judged = Selector(cardset, calibration=SMALL, threshold=0.0, lexical_calibration=lexical).decide(question)
        assert judged.abstain is abstains, (threshold, judged.reason)


def test_threshold_override_and_empty_catalog(cardset: CardSet) -> None:
    question = "weather forecast for Rome"
    assert Selector(cardset, calibration=SMALL, threshold=1.0).decide(question).abstain
    assert not Selector(cardset, calibration=SMALL, threshold=0.0).decide("rye sourdough").abstain
    empty = Selector([], calibration=SMALL).decide(question)
    assert empty.abstain
    assert empty.reason == "abstained: the catalog is empty"


def test_decisions_are_logged_in_memory_and_as_json_lines(cardset: CardSet, tmp_path) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path)
    selector = Selector(cardset, calibration=SMALL, log=log)
    selector.decide("What's the weather forecast for Paris?")
    selector.decide("Bake a sourdough loaf")
    assert [r["abstain"] for r in log.records] == [False, True]
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines == log.records
    first = lines[0]
    assert first["query"] == "What's the weather forecast for Paris?"
    assert first["chosen"][0]["name"] == "get_forecast"
    assert first["tools"][0] == {"server": "weather", "name": "get_forecast"}
    assert set(first["features"]) == {"lexical", "server_lexical", "idf_coverage", "terms"}
    assert len(first["ranked"]) == 5
    assert first["time"].endswith("Z")


def test_to_json_respects_depth(cardset: CardSet) -> None:
    decision = Selector(cardset, calibration=SMALL).decide("weather forecast")
    out = decision.to_json(depth=2)
    assert len(out["ranked"]) == 2
    assert len(out["servers"]) == 2
    assert out["ranked"][0] == {"server": "weather", "kind": "tool", "name": "get_forecast", "score": 1.0}


def _server(label: str, description: str, *tools: tuple[str, str]) -> dict[str, object]:
    return {
        "label": label,
        "description": description,
        "tools": [{"name": n, "description": d, "inputSchema": {"type": "object"}} for n, d in tools],
    }


def _billing_and_forex() -> list[dict[str, object]]:
    """'billing' holds every word of "convert currency amount" over three tools; 'forex' has the one tool for it."""
    return [
        _server(
            "billing",
            "Billing: totals, currencies and conversions",
            ("list_currencies", "List supported currencies"),
            ("sum_total", "Total amount of an order"),
            ("convert_units", "Convert units of measure"),
        ),
        _server("forex", "Foreign exchange", ("convert_currency", "Convert from one currency to another currency")),
    ]


def test_confidence_and_reason_are_those_of_the_chosen_card() -> None:
    # 'billing' holds every word of the question, spread over three tools, so its server document
    # scores best; 'forex' has the one tool that does the job, and that tool is ranked first. The
    # decision chooses the forex tool, so its confidence and reason must be about forex too.
    catalog = {
        "servers": [
            *_billing_and_forex(),
            _server("weather", "Weather forecasts", ("get_forecast", "Get the weather forecast for a city")),
        ]
    }
    cards = build_cards(parse_snapshot(catalog))
    selector = Selector(cards)
    question = "convert currency amount"
    ranking = selector.ranker.rank(question)
    assert ranking.scored[0].card.server == "forex"  # the top card ...
    server_scores = selector.ranker.index.servers.scores(selector.ranker.query_terms(question))
    assert selector.ranker.server_labels[int(server_scores.argmax())] == "billing"  # ... is not on the top server
    decision = selector.decide(question)
    assert [(c.server, c.name) for c in decision.chosen] == [("forex", "convert_currency")]
    assert "2 of 3 question terms in forex: 'convert', 'currency'" in decision.reason
    assert "billing" not in decision.reason
    assert decision.features["lexical"] == pytest.approx(math.log1p(ranking.scored[0].lexical))
    assert decision.features["server_lexical"] == pytest.approx(
        math.log1p(float(server_scores[selector.ranker.server_labels.index("forex")]))
    )
    assert decision.confidence == pytest.approx(selector.calibration.confidence(decision.features))
    assert f"confidence {decision.confidence:.2f}" in decision.reason


def test_an_abstention_names_the_server_of_the_best_candidate() -> None:
    catalog = {
        "servers": [
            *_billing_and_forex(),
        ]
    }
    decision = Selector(build_cards(parse_snapshot(catalog)), threshold=1.0).decide("convert currency amount")
    assert decision.abstain
    assert "the best server, forex, covers 2 of 3" in decision.reason
    assert "best candidates: forex/convert_currency" in decision.reason


def test_calibration_cross_validation_never_splits_a_task(load_bench, monkeypatch: pytest.MonkeyPatch) -> None:
    # a task's in-scope question and its out-of-scope twin must fall in the same fold, or the model
    # is scored on the twin of a question it was fitted on
    calibrate = load_bench("selection/calibrate.py")
    groups = [f"task-{i}" for i in range(37)] * 2
    x = np.random.default_rng(0).standard_normal((74, 3))  # every row distinct: rows identify themselves
    y = np.array([1.0] * 37 + [0.0] * 37)
    trained_per_fold: list[Counter[str]] = []
    real = calibrate.fit_logistic

    def spy(xs: np.ndarray, ys: np.ndarray, **kw: float) -> tuple[np.ndarray, float]:
        rows = {tuple(r) for r in xs}
        trained_per_fold.append(Counter(g for g, r in zip(groups, x, strict=True) if tuple(r) in rows))
        return real(xs, ys, **kw)

    monkeypatch.setattr(calibrate, "fit_logistic", spy)
    out = calibrate.grouped_cv(x, y, groups, l2=10.0)
    assert len(trained_per_fold) == 5
    for trained in trained_per_fold:
        assert 0 < len(trained) < 37  # some tasks held out, some fitted
        assert set(trained.values()) == {2}  # both rows of a task, or neither
    assert out.shape == (74,)
    assert calibrate.choose_l2(x, y, groups) in calibrate.L2_GRID


def test_a_sample_weight_of_two_fits_as_the_row_written_twice(load_bench) -> None:
    # the weighted likelihood the twin-weight variant fits must be the one of duplicated rows, not a rescaling
    calibrate = load_bench("selection/calibrate.py")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 3))
    y = (x[:, 0] + 0.8 * rng.standard_normal(40) > 0).astype(float)
    weight = np.where(y == 0, 2.0, 1.0)
    twice = y == 0
    x2, y2 = np.vstack([x, x[twice]]), np.concatenate([y, y[twice]])
    # (almost) no penalty: the maximum-likelihood fit does not depend on how the rows are standardised
    w_dup, b_dup = calibrate.fit_logistic(x2, y2, l2=1e-6)
    w_weighted, b_weighted = calibrate.fit_logistic(x, y, l2=1e-6, sample_weight=weight)
    assert np.allclose(w_weighted, w_dup, atol=1e-4)
    assert b_weighted == pytest.approx(b_dup, abs=1e-4)
    plain, _ = calibrate.fit_logistic(x, y, l2=1e-6)
    assert not np.allclose(w_weighted, plain, atol=1e-3)  # the weight changes the fit


def test_the_l2_can_be_chosen_for_false_accepts_and_an_unknown_objective_is_refused(load_bench) -> None:
    calibrate = load_bench("selection/calibrate.py")
    rng = np.random.default_rng(2)
    groups = [f"task-{i}" for i in range(30)] * 2
    x = rng.standard_normal((60, 4))
    y = np.array([1.0] * 30 + [0.0] * 30)
    x[:30, 0] += 1.5
    assert calibrate.choose_l2(x, y, groups, objective="false_accept") in calibrate.L2_GRID
    p = calibrate.grouped_cv(x, y, groups, l2=10.0)
    assert calibrate.false_accepts(p, y) == pytest.approx(
        float(np.mean(p[30:] >= calibrate.threshold_keeping(p[:30], 0.9)))
    )
    with pytest.raises(ValueError, match="auroc or false_accept"):
        calibrate.choose_l2(x, y, groups, objective="fa")


def test_backward_selection_drops_a_column_of_noise_and_keeps_the_signal(load_bench) -> None:
    calibrate = load_bench("selection/calibrate.py")
    rng = np.random.default_rng(3)
    groups = [f"task-{i}" for i in range(60)] * 2
    y = np.array([1.0] * 60 + [0.0] * 60)
    signal = y * 2.0 + rng.standard_normal(120)
    x = np.column_stack([signal, rng.standard_normal(120), rng.standard_normal(120), signal + rng.standard_normal(120)])
    kept = calibrate.backward_selection(x, y, groups, minimum=1)
    assert 0 in kept or 3 in kept
    assert len(kept) < 4


def test_learned_view_weights_favour_the_view_that_finds_the_gold_server(load_bench) -> None:
    views = load_bench("selection/view_weights.py")
    rng = np.random.default_rng(4)
    tasks = []
    for i in range(30):
        z = rng.standard_normal((12, 3))
        gold = int(rng.integers(12))
        z[gold, 0] += 2.5  # view 0 finds the gold server; views 1 and 2 are noise
        tasks.append(views.TaskViews(f"t{i}", z, (np.array([gold]),), np.array([gold])))
    weak = views.fit(tasks, 0.3)
    assert weak[0] > weak[1] + 0.5
    assert weak[0] > weak[2] + 0.5
    assert np.allclose(views.fit(tasks, 1e6), 1.0, atol=1e-3)  # a strong pull keeps the equal weights
    assert views.reciprocal_rank(tasks, weak) > views.reciprocal_rank(tasks, np.array([0.0, 1.0, 1.0]))
    assert views.choose_l2(tasks) in views.L2_GRID


def test_an_explicit_threshold_judges_each_extra_job_of_a_question_too(cardset: CardSet) -> None:
    """``--threshold`` moves the bar for every job of a multi-job question, not only for the first: the
    file job (confidence about 0.71 under SMALL) is added above a bar of 0.6 and left out below one of 0.9,
    whatever the calibration's own threshold (0.5 for SMALL, 0.8 for STRICT)."""
    question = "Get the latest stock price of Apple, then plot the prices as a bar chart and write it to the file /tmp/apple.md"
    strict = Calibration(weights=SMALL.weights, bias=SMALL.bias, threshold=0.8, source="tests")
    for calibration in (SMALL, strict):
        for threshold, added in ((0.6, True), (0.9, False)):
            decision = Selector(cardset, calibration=calibration, threshold=threshold).decide(question)
            assert not decision.abstain
            job = next(j for j in decision.jobs if j["server"] == "files")
            assert 0.6 < job["confidence"] < 0.9, job
            assert job["added"] is added, (calibration.threshold, threshold, job)
            assert ("files" in {c.server for c in decision.chosen}) is added
            assert ("files/" in decision.reason) is added, decision.reason
