"""A small catalog (a user's own few servers) is judged by the model fitted on small catalogs, with a floor."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from skilldeck.select import CardSet, Selector, build_cards, parse_snapshot
from skilldeck.select._config import SMALL_CATALOG_SERVERS
from skilldeck.select._decide import Calibration, default_calibration

from .test_fusion import CountingEncoder


def catalog(servers: int) -> CardSet:
    return build_cards(
        parse_snapshot(
            {
                "servers": [
                    {
                        "label": f"s{i}",
                        "tools": [{"name": f"tool_{i}", "description": f"Does thing number {i}", "inputSchema": {}}],
                    }
                    for i in range(servers)
                ]
            }
        )
    )


def test_the_shipped_small_model_has_a_floor_under_its_threshold() -> None:
    small = default_calibration(True, small=True)
    large = default_calibration(True)
    assert "calibrate_small.py" in small.source, small.source
    assert "calibrate_small.py" not in large.source
    assert small.floor is not None
    assert large.floor is not None
    assert 0.0 < small.floor < small.threshold < 1.0
    assert large.floor < large.threshold
    assert default_calibration(False, small=True) == default_calibration(False)  # no small lexical model


@pytest.mark.parametrize(("servers", "small"), [(SMALL_CATALOG_SERVERS, True), (SMALL_CATALOG_SERVERS + 1, False)])
def test_a_catalog_of_at_most_small_catalog_servers_is_judged_by_the_small_model(servers: int, small: bool) -> None:
    selector = Selector(catalog(servers), encoder=CountingEncoder())
    assert selector.calibration == default_calibration(True, small=small)
    assert selector.threshold == selector.calibration.threshold
    # asked not to, or without an encoder, the small model is never used
    assert Selector(catalog(servers), encoder=CountingEncoder(), small_calibration=False).calibration == (
        default_calibration(True)
    )
    assert Selector(catalog(servers)).calibration == default_calibration(False)


def test_the_floor_is_the_judging_model_s_unless_a_threshold_is_given() -> None:
    selector = Selector(catalog(3), encoder=CountingEncoder())
    assert selector.ranker.wait(30)
    decision = selector.decide("does thing number 1")
    assert decision.ranker == "semantic"
    assert selector.floor_for(decision) == default_calibration(True, small=True).floor
    given = Selector(catalog(3), encoder=CountingEncoder(), threshold=0.5)
    assert given.floor_for(given.decide("does thing number 1")) is None  # the operator's threshold stands alone


def test_a_calibration_keeps_its_floor_through_json() -> None:
    cal = Calibration(weights={"lexical": 1.0}, bias=-1.0, threshold=0.6, floor=0.4)
    assert Calibration.from_json(json.loads(json.dumps(cal.to_json()))) == cal
    without = replace(cal, floor=None)
    assert "floor" not in without.to_json()
    assert Calibration.from_json(without.to_json()).floor is None
    assert math.isclose(cal.confidence({"lexical": 1.0}), 0.5)
