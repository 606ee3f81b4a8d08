"""The sans-I/O ``SkillService``: reload swaps, policy checks and tool-call decisions, with no SDK in sight."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilldeck.server._service import SkillService
from skilldeck.serving._policy import Caller, PolicyError, parse_policy
from skilldeck.skill._pack import DirectorySource

from .helpers import write_skill

HIDE_BETA = {
    "default_identity": {"subject": "me", "roles": ["user"]},
    "skills": {"beta": {"admit": {"roles": ["admin"]}}},
}


def test_checking_a_policy_leaves_the_one_in_force(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha")
    write_skill(tmp_path, "beta")
    in_force = parse_policy(HIDE_BETA)
    service = SkillService([DirectorySource(tmp_path)], policy=in_force)
    hidden = [e.name for e in service.view(in_force.default_identity).entries]
    with pytest.raises(PolicyError, match="nonexistent"):
        service.check_policy(parse_policy({"skills": {"nonexistent": {}}}), tool_names=[])
    service.check_policy(parse_policy({"skills": {"beta": {}}}), tool_names=[])  # passes, and is still not in force
    assert service.policy is in_force
    assert [e.name for e in service.view(in_force.default_identity).entries] == hidden == ["alpha"]


def test_a_reload_is_a_load_then_a_swap(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha")
    service = SkillService([DirectorySource(tmp_path)])
    write_skill(tmp_path, "beta")
    newer = service.load()
    assert len(service.catalog) == 1  # loaded, not yet served
    diff = service.swap(newer)
    assert diff.added == ("skill://beta/SKILL.md",)
    assert service.catalog is newer
    assert service.roots == [tmp_path]


def test_tool_calls_are_decided_and_audited_only_under_a_policy(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha")
    service = SkillService([DirectorySource(tmp_path)])
    assert service.admit_tool_call(Caller(), "anything")
    assert service.audit.records == []
    service.set_policy(parse_policy({"public_tools": ["ping"]}))
    assert service.admit_tool_call(Caller(), "ping")
    assert not service.admit_tool_call(Caller(), "x" * 10_000)
    assert [(r["tool"][:4], r["decision"]) for r in service.audit.records] == [("ping", "allowed"), ("xxxx", "refused")]
    assert len(service.audit.records[1]["tool"]) <= 200  # refused names are kept cut short
    assert service.cache_fields()["cacheScope"] == "private"
