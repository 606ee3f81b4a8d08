"""Smaller host hazards found in review: strict refresh comparison, duplicate entries, damaged files."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilldeck.errors import SkilldeckError
from skilldeck.host import ApprovalStore, ConfigError, SkillChanged, VerificationError, parse_config

from .hostile import HostileServer, Skill, open_host


@pytest.mark.anyio
async def test_refresh_that_only_changes_true_to_1_is_still_a_change() -> None:
    skill = Skill("flags", extra="strict: true\n")
    server = HostileServer(skill)
    server.files[skill.uri] = server.files[skill.uri].replace(b"A test skill.", b"A test skill!")  # tampered
    changed = dict(skill.entry())
    changed["frontmatter"] = {**changed["frontmatter"], "strict": 1}
    server.got[skill.uri] = changed
    async with open_host(("s", server)) as host:
        with pytest.raises(SkillChanged) as info:
            await host.load(host.registry.resolve("flags"))
    assert info.value.current is not None
    assert info.value.current.frontmatter["strict"] == 1


@pytest.mark.anyio
async def test_an_unchanged_refresh_leaves_the_plain_failure() -> None:
    skill = Skill("plain")
    server = HostileServer(skill)
    server.files[skill.uri] = server.files[skill.uri].replace(b"A test skill.", b"A test skill!")
    async with open_host(("s", server)) as host:
        with pytest.raises(VerificationError) as info:
            await host.load(host.registry.resolve("plain"))
    assert not isinstance(info.value, SkillChanged)
    assert info.value.check == "digest"


@pytest.mark.anyio
async def test_the_same_uri_twice_in_one_listing_is_rejected_once() -> None:
    skill = Skill("twice")
    second = dict(skill.entry())
    second["frontmatter"] = {"name": "twice", "description": "Other words."}
    server = HostileServer(entries=[skill.entry(), second])
    server.files.update(skill.served())
    async with open_host(("s", server)) as host:
        (record,) = host.registry.skills
        assert record.description == "A test skill."
        report = host.report.servers["s"]
        assert report.skills == 1
        assert [r.reason for r in report.rejected] == ["listed twice in one listing; the first is kept"]


def test_damaged_approvals_file_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    path.write_text("{not json")
    with pytest.raises(SkilldeckError, match="delete it to start over"):
        ApprovalStore(path)
    path.write_text('{"version": 1}')
    with pytest.raises(SkilldeckError, match="damaged"):
        ApprovalStore(path)


def test_disabled_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match="'disabled' must be true or false"):
        parse_config({"mcpServers": {"x": {"command": "y", "disabled": "true"}}})
    assert parse_config({"mcpServers": {"x": {"command": "y", "disabled": True}}}) == []


@pytest.mark.anyio
async def test_a_server_that_stops_answering_while_listing_is_cut_off_at_its_timeout() -> None:
    import time

    import anyio

    from skilldeck.host import Host, InProcessServer, ServerSpec

    slow = HostileServer(Skill("slow"))

    async def stall(ctx: object, params: object) -> dict[str, object]:
        await anyio.sleep(60)
        return {}

    slow._list = stall  # type: ignore[method-assign, assignment]
    slow.server = type(slow.server)("slow", extensions=[slow], middleware=[slow._middleware])
    fine = HostileServer(Skill("fine"))
    started = time.monotonic()
    specs = [
        ServerSpec("slow", InProcessServer(slow.server), timeout=1),
        ServerSpec("fine", InProcessServer(fine.server)),
    ]
    async with Host(specs) as host:
        assert time.monotonic() - started < 10
        assert host.report.servers["slow"].error is not None
        assert "did not finish within 1s" in (host.report.servers["slow"].error or "")
        assert [r.name for r in host.registry.skills] == ["fine"]


def test_a_run_only_approval_is_content_bound_and_never_written(tmp_path: Path) -> None:
    from skilldeck.skill.manifest import entry_from_wire

    path = tmp_path / "approvals.json"
    store = ApprovalStore(path)
    entry = entry_from_wire(Skill("runonly").entry())
    store.approve("s", entry, allowed_tools=True, persist=False)
    assert store.allows_tools("s", entry)
    assert not path.exists()  # --yes approves for the run only
    assert not ApprovalStore(path).is_approved("s", entry)
    changed = entry_from_wire(Skill("runonly", {"new.md": b"n"}).entry())
    assert store.status("s", changed) == "changed"  # still bound to the content it was given for
    assert not store.is_approved("s", entry)
