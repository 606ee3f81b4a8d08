"""Per-client activation: bounded by client count, keys from outside never grow without limit."""

from __future__ import annotations

import jsonschema
import pytest

from skilldeck.gateway._activation import MAX_CONVERSATION_CHARS, ActivationTable, client_key, per_connection
from skilldeck.gateway._meta import META_OUTPUT_SCHEMAS, META_TOOLS


def test_the_table_keeps_at_most_max_clients_and_drops_the_least_recently_used() -> None:
    table = ActivationTable(max_clients=3)
    for key in ("a", "b", "c"):
        table.get(key).activate([("docs", key)])
    table.get("a")  # used again: "b" is now the oldest
    table.get("d")
    assert len(table) == 3
    assert table.peek("b") is None
    kept = table.peek("a")
    assert kept is not None
    assert list(kept.tools) == [("docs", "a")]


def test_ten_thousand_clients_cost_only_max_clients_entries() -> None:
    table = ActivationTable(max_clients=100)
    for i in range(10_000):
        table.get(f"client-{i}").activate([("x", "t")])
    assert len(table) == 100


def test_a_table_needs_room_for_one_client() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ActivationTable(max_clients=0)


def test_activate_reports_only_new_tools_and_forget_drops_what_an_upstream_no_longer_lists() -> None:
    table = ActivationTable()
    activation = table.get("k")
    assert activation.activate([("a", "x"), ("a", "y")]) == [("a", "x"), ("a", "y")]
    assert activation.activate([("a", "x"), ("b", "z")]) == [("b", "z")]
    assert activation.forget_tools("a", {"y"}) is True
    assert list(activation.tools) == [("a", "y"), ("b", "z")]
    assert activation.forget_tools("a", {"y"}) is False


def test_a_conversation_id_separates_keys_only_when_short_and_printable() -> None:
    base = client_key("http", "alice")
    assert client_key("http", "alice", "conv-1") != base
    assert client_key("http", "alice", "x" * (MAX_CONVERSATION_CHARS + 1)) == base
    assert client_key("http", "alice", "a\nb") == base
    assert client_key("http", "alice", 42) == base
    assert client_key("http", None) == '["http","anonymous"]'


def test_no_value_can_make_two_clients_share_a_key() -> None:
    """The key was parts joined with ``|``: a token with ``sub="alice|c1"`` used alice's conversation ``c1``,
    and every token without a ``sub`` shared one activation."""
    assert client_key("http", "alice|c1") != client_key("http", "alice", "c1")
    assert client_key("http", "alice") != client_key("http", None, client_id="alice")
    assert client_key("http", None, client_id="app-1") != client_key("http", None, client_id="app-2")
    assert client_key("http", None, token="tok-1") != client_key("http", None, token="tok-2")
    assert client_key("http", None, token="tok-1") == client_key("http", None, token="tok-1")  # the same token: its own
    assert client_key("http", None, token="tok-1") != client_key("http", None)
    assert "tok-1" not in client_key("http", None, token="tok-1")  # a digest, not the bearer token
    assert client_key("http", "alice", client_id="app-1") == client_key("http", "alice", client_id="app-2")
    assert client_key("session:1", "a", "b") != client_key("session:1", "a\u0022,\u0022b")


def test_only_a_legacy_connections_key_is_per_connection() -> None:
    assert per_connection(client_key("session:7", "alice"))
    assert not per_connection(client_key("http", "session:7"))
    assert not per_connection(client_key("http", None, "session:7"))
    assert not per_connection(client_key("agent", None, client_id="session:7"))


@pytest.mark.parametrize("tool", META_TOOLS, ids=lambda t: t["name"])
def test_every_meta_tool_schema_is_a_valid_json_schema_with_bounded_strings(tool: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
    if tool["name"] in META_OUTPUT_SCHEMAS:
        jsonschema.Draft202012Validator.check_schema(META_OUTPUT_SCHEMAS[tool["name"]])
    strings = [p for p in tool["inputSchema"]["properties"].values() if p.get("type") == "string"]
    assert all("maxLength" in p for p in strings), tool["name"]
    assert tool["inputSchema"]["additionalProperties"] is False
