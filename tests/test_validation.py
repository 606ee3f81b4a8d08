"""The four documents from outside (policy, server configuration, snapshot, wire entry) are refused
the same way: the error type of each, and a message naming the place and what belongs there."""

from __future__ import annotations

from typing import Any

import pytest

from skilldeck.errors import ConfigError, EntryError, PolicyError, SnapshotError
from skilldeck.host._config import parse_config
from skilldeck.select._snapshot import parse_snapshot
from skilldeck.serving._policy import parse_policy
from skilldeck.skill._manifest import digest_of, entry_from_wire

SKILL_MD = "skill://docs/SKILL.md"
FILE = {"uri": SKILL_MD, "digest": digest_of(b"x"), "size": 1}


def _entry(**changes: Any) -> dict[str, Any]:
    return {"uri": SKILL_MD, "frontmatter": {"name": "docs", "description": "d"}, "resources": [FILE], **changes}


CASES: list[tuple[Any, Any, type[Exception], str]] = [
    # the policy
    (
        parse_policy,
        {"skills": {"x": {"routes": [{"when": {"groups": ["a"]}, "allow": "all"}]}}},
        PolicyError,
        "skills.x.routes[0].when: unknown key 'groups' (expected role, roles, scope, scopes, tenant, tenants)",
    ),
    (
        parse_policy,
        {"skills": {"x": {"routes": [{"allow": "some"}]}}},
        PolicyError,
        "skills.x.routes[0].allow: expected 'all', 'none' or a list of tool names",
    ),
    (
        parse_policy,
        {"skills": {"x": {"instruction_only": "yes"}}},
        PolicyError,
        "skills.x.instruction_only: expected true or false",
    ),
    (
        parse_policy,
        {"locales": []},
        PolicyError,
        "locales: expected a list of language tags such as [en, de-CH] (the first is the default)",
    ),
    # the server configuration
    (
        parse_config,
        {"mcpServers": {"docs": {"command": "x", "args": ["a", "b", 3]}}},
        ConfigError,
        "mcpServers.docs.args[2]: expected a list of strings",
    ),
    (
        parse_config,
        {"servers": {"docs": {"url": "https://x", "timeout": 0}}},
        ConfigError,
        "servers.docs.timeout: expected a positive number of seconds",
    ),
    (parse_config, {"docs": {"command": "x", "disabled": "no"}}, ConfigError, "docs.disabled: expected true or false"),
    # the snapshot
    (
        parse_snapshot,
        {"servers": [{"label": "a", "tools": [{"title": "t"}]}]},
        SnapshotError,
        "servers[0].tools[0]: an MCP Tool object needs a 'name' string",
    ),
    (
        parse_snapshot,
        {"servers": [{"label": 7}]},
        SnapshotError,
        "servers[0].label: expected the server's label, a non-empty string",
    ),
    (parse_snapshot, {"servers": {}}, SnapshotError, "servers: expected a list of servers"),
    # the wire entry
    (
        entry_from_wire,
        _entry(resources=[{**FILE, "size": -1}]),
        EntryError,
        f"{SKILL_MD}: resources[0].size: expected a size in bytes (a whole number, 0 or more)",
    ),
    (
        entry_from_wire,
        _entry(resources=[{**FILE, "digest": "md5:00"}]),
        EntryError,
        f"{SKILL_MD}: resources[0].digest: expected a digest sha256:<64 lowercase hex digits>",
    ),
    (
        entry_from_wire,
        _entry(resources="static"),
        EntryError,
        f'{SKILL_MD}: resources: expected a list of files or "dynamic"',
    ),
    (
        entry_from_wire,
        _entry(frontmatter=None),
        EntryError,
        f"{SKILL_MD}: frontmatter: expected an object with the skill's name and description",
    ),
]


@pytest.mark.parametrize(("parser", "document", "error", "message"), CASES, ids=[c[3] for c in CASES])
def test_a_bad_document_is_refused_naming_the_place_and_what_belongs_there(
    parser: Any, document: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        parser(document)
    assert str(info.value) == message


def test_open_formats_pass_over_keys_they_do_not_use() -> None:
    """A Claude or VS Code entry, a snapshot and a wire entry may carry keys of their own (``_meta``)."""
    (spec,) = parse_config({"servers": {"docs": {"type": "stdio", "command": "x", "envFile": ".env", "gallery": True}}})
    assert spec.label == "docs"
    assert entry_from_wire(_entry(_meta={"dev.skilldeck/x": 1})).uri == SKILL_MD
    snapshot = parse_snapshot({"version": 2, "servers": [{"label": "a", "notes": "n", "skills": [_entry()]}]})
    assert [s.entry.name for s in snapshot.servers[0].skills] == ["docs"]


def test_a_wire_entry_with_an_unsafe_uri_is_not_echoed_raw() -> None:
    uri = 'skill://a"\n<b>/SKILL.md'
    with pytest.raises(EntryError) as info:
        entry_from_wire({"uri": uri, "frontmatter": 3, "resources": []})
    assert info.value.uri == repr(uri)
    assert "\n" not in str(info.value)


def test_a_wire_entry_whose_name_ends_in_a_newline_is_refused() -> None:
    digest = digest_of(b"x")
    entry = {
        "uri": "skill://docs%0A/SKILL.md",
        "frontmatter": {"name": "docs\n", "description": "d"},
        "resources": [{"uri": "skill://docs%0A/SKILL.md", "digest": digest, "size": 1}],
    }
    with pytest.raises(EntryError, match="lowercase"):
        entry_from_wire(entry)
