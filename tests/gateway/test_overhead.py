"""What keeps the gateway's per-call check cheap without changing what it decides.

The gateway checks every call of every client against one listing: one :class:`ToolGate` per
index, validators built once per tool schema, and per call a view holding only that client's
active tools. Figures are in ``bench/gateway.py``; here, the behaviour that must not move.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from skilldeck.errors import InvalidArguments, ToolNotActive
from skilldeck.select._gate import ToolGate


def _tool(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "inputSchema": schema}


NEEDS_X = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
NEEDS_Y = {"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"], "additionalProperties": False}


def test_views_share_the_listing_but_each_has_its_own_active_set() -> None:
    gate = ToolGate({"s": {"t": _tool("t", NEEDS_X), "u": _tool("u", NEEDS_X)}})
    mine, theirs = gate.with_active([("s", "t")]), gate.with_active([("s", "u")])
    assert mine.check("s/t", {"x": 1}) == ("s", "t")
    with pytest.raises(ToolNotActive, match="active tools: s/t"):
        mine.check("s/u", {"x": 1})
    with pytest.raises(ToolNotActive, match="active tools: s/u"):
        theirs.check("s/t", {"x": 1})
    assert gate.active == []  # the gate a view came from is untouched


def test_a_relisted_schema_is_checked_against_the_new_schema_not_a_cached_one() -> None:
    gate = ToolGate({"s": {"t": _tool("t", NEEDS_X)}}, [("s", "t")])
    gate.check("s/t", {"x": 1})
    gate.update_listing("s", [_tool("t", NEEDS_Y)])
    with pytest.raises(InvalidArguments, match="do not match its input schema"):
        gate.check("s/t", {"x": 1})
    assert gate.check("s/t", {"y": "a"}) == ("s", "t")
    view = gate.with_active([("s", "t")])
    with pytest.raises(InvalidArguments):
        view.check("s/t", {"x": 1})


def test_a_validator_is_built_once_per_schema_across_calls_and_views(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []
    real = jsonschema.validators.validator_for

    def counting(schema: Any, default: Any = None) -> Any:
        built.append(schema)
        return real(schema, default=default)

    monkeypatch.setattr(jsonschema.validators, "validator_for", counting)
    gate = ToolGate({"s": {"t": _tool("t", NEEDS_X)}})
    for _ in range(5):
        gate.with_active([("s", "t")]).check("s/t", {"x": 1})
    with pytest.raises(InvalidArguments):
        gate.with_active([("s", "t")]).check("s/t", {"x": "one"})
    assert sum(1 for schema in built if schema is NEEDS_X) == 1  # (jsonschema looks up subschemas itself)
