"""Approvals bound to content: persisted across restarts, revoked on change, never persisted for dynamic skills."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skilldeck.errors import SkilldeckError
from skilldeck.host import ApprovalRequest, ApprovalStore, NotApproved
from skilldeck.skill._manifest import SkillEntry, entry_from_wire

from .hostile import HostileServer, Skill, open_host, skill_md, write_local_skill

TOOLS = "allowed-tools: Read Bash(git:*)\n"


def _entry(skill: Skill) -> SkillEntry:
    return entry_from_wire(skill.entry())


def _dynamic_entry(path: str = "reports/daily") -> SkillEntry:
    name = path.rsplit("/", 1)[-1]
    return entry_from_wire(
        {"uri": f"skill://{path}/SKILL.md", "frontmatter": {"name": name, "description": "d"}, "resources": "dynamic"}
    )


# -- the store ------------------------------------------------------------------------------------------


def test_approval_survives_a_restart_while_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "state" / "approvals.json"
    entry = _entry(Skill("refunds", {"policy.md": b"30 days"}))
    ApprovalStore(path).approve("acme", entry)
    reopened = ApprovalStore(path)
    assert reopened.status("acme", entry) == "approved"
    assert reopened.is_approved("acme", entry)
    # the binding is the {uri: digest} set, not the order the server listed it in
    raw = entry.to_wire()
    raw["resources"].reverse()
    assert reopened.status("acme", entry_from_wire(raw)) == "approved"
    saved = json.loads(path.read_text())
    (record,) = saved["approvals"].values()
    assert record["label"] == "acme"
    assert record["resources"] == {r.uri: r.digest for r in entry.resources}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "change",
    ["one digest", "file added", "file removed", "skill md"],
)
def test_approval_is_revoked_when_the_content_set_changes(tmp_path: Path, change: str) -> None:
    path = tmp_path / "approvals.json"
    old = Skill("refunds", {"policy.md": b"30 days", "rates.csv": b"a,b"})
    ApprovalStore(path).approve("acme", _entry(old))
    new = Skill("refunds", {"policy.md": b"30 days", "rates.csv": b"a,b"})
    if change == "one digest":
        new.files["policy.md"] = b"90 days"
    elif change == "file added":
        new.files["extra.md"] = b"x"
    elif change == "file removed":
        del new.files["rates.csv"]
    else:
        new.files["SKILL.md"] = skill_md("refunds", body="# changed body")
    store = ApprovalStore(path)
    assert store.status("acme", _entry(new)) == "changed"
    assert store.status("acme", _entry(new)) == "none"  # revoked, not merely suspended
    assert ApprovalStore(path).status("acme", _entry(old)) == "none"  # and the revocation was persisted


def test_approval_is_bound_to_the_label(tmp_path: Path) -> None:
    store = ApprovalStore(tmp_path / "approvals.json")
    entry = _entry(Skill("refunds"))
    store.approve("alpha", entry)
    assert store.status("beta", entry) == "none"  # the same URI and bytes on another server are another skill


def test_dynamic_approvals_live_for_the_session_only(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    store = ApprovalStore(path)
    dynamic = _dynamic_entry()
    store.approve("gen", dynamic, allowed_tools=True)
    assert store.status("gen", dynamic) == "approved"
    assert store.allows_tools("gen", dynamic)
    assert not path.exists() or dynamic.uri not in path.read_text()
    reopened = ApprovalStore(path)
    assert reopened.status("gen", dynamic) == "none"
    assert not reopened.allows_tools("gen", dynamic)
    store.approve("acme", _entry(Skill("refunds")))  # a later save must not write the dynamic one either
    assert dynamic.uri not in path.read_text()
    assert ApprovalStore(path).status("gen", dynamic) == "none"


def test_a_persisted_approval_does_not_cover_a_skill_that_turned_dynamic(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    static = _entry(Skill("reports/daily"))
    ApprovalStore(path).approve("gen", static)
    store = ApprovalStore(path)
    dynamic = _dynamic_entry()
    assert dynamic.uri == static.uri
    assert store.status("gen", dynamic) == "changed"


def test_remove_server_drops_its_approvals_only(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    store = ApprovalStore(path)
    entry = _entry(Skill("refunds"))
    store.approve("alpha", entry)
    store.approve("beta", entry)
    store.approve("alpha", _dynamic_entry())
    store.remove_server("alpha")
    assert store.status("alpha", entry) == "none"
    assert store.status("alpha", _dynamic_entry()) == "none"
    assert ApprovalStore(path).status("beta", entry) == "approved"


def test_dynamic_tool_grant_is_dropped_with_its_server() -> None:
    store = ApprovalStore()
    dynamic = _dynamic_entry()
    store.approve("gen", dynamic, allowed_tools=True)
    store.remove_server("gen")
    store.approve("gen", dynamic)  # approved again, without the grant
    assert not store.allows_tools("gen", dynamic)


def test_reapproving_without_the_grant_withdraws_it() -> None:
    store = ApprovalStore()
    static = _entry(Skill("refunds", extra=TOOLS))
    store.approve("acme", static, allowed_tools=True)
    store.approve("acme", static)
    assert not store.allows_tools("acme", static)  # static: the latest approval decides
    dynamic = _dynamic_entry()
    store.approve("gen", dynamic, allowed_tools=True)
    store.approve("gen", dynamic)
    assert not store.allows_tools("gen", dynamic)


# -- through the host -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_required_approval_is_asked_once_then_persisted_and_asked_again_after_a_change(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    skill = Skill("refunds", {"policy.md": b"30 days"}, extra=TOOLS)
    server = HostileServer(skill)
    asked: list[ApprovalRequest] = []

    def decline(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    async with open_host(
        ("acme", server), approvals=ApprovalStore(path), approver=decline, require_approval=True
    ) as host:
        with pytest.raises(NotApproved):
            await host.load(host.registry.resolve("refunds"))
    assert server.reads() == []  # nothing fetched for a declined skill
    (request,) = asked
    assert request.label == "acme"
    assert request.entry.uri == skill.uri
    assert request.allowed_tools == "Read Bash(git:*)"
    assert request.changed is False

    async def accept(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    async with open_host(
        ("acme", server), approvals=ApprovalStore(path), approver=accept, require_approval=True
    ) as host:
        loaded = await host.load(host.registry.resolve("refunds"))
        assert host.allowed_tools(loaded) == []  # approving the skill is not granting its tools
    assert len(asked) == 2

    async with open_host(
        ("acme", server), approvals=ApprovalStore(path), approver=accept, require_approval=True
    ) as host:
        await host.load(host.registry.resolve("refunds"))
    assert len(asked) == 2  # the restart kept the approval

    changed = Skill("refunds", {"policy.md": b"EVIL 0 days"}, extra=TOOLS)
    server.entries = [changed.entry()]
    server.files = changed.served()
    server.calls.clear()
    async with open_host(
        ("acme", server), approvals=ApprovalStore(path), approver=decline, require_approval=True
    ) as host:
        with pytest.raises(NotApproved):
            await host.load(host.registry.resolve("refunds"))
    assert asked[-1].changed is True
    assert server.reads() == []
    assert ApprovalStore(path).status("acme", _entry(changed)) == "none"


@pytest.mark.anyio
async def test_without_an_approver_required_approval_refuses() -> None:
    server = HostileServer(Skill("refunds"))
    async with open_host(("acme", server), require_approval=True) as host:
        with pytest.raises(NotApproved):
            await host.load(host.registry.resolve("refunds"))
    assert server.reads() == []


@pytest.mark.anyio
async def test_mcp_allowed_tools_ignored_unless_explicitly_granted(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    skill = Skill("refunds", extra=TOOLS)
    server = HostileServer(skill)
    async with open_host(("acme", server), approvals=ApprovalStore(path)) as host:
        record = host.registry.resolve("refunds")
        loaded = await host.load(record)
        assert loaded.entry.frontmatter["allowed-tools"] == "Read Bash(git:*)"
        assert host.allowed_tools(loaded) == []
        await host.approve(record)
        assert host.allowed_tools(loaded) == []
        await host.approve(record, allowed_tools=True)
        assert host.allowed_tools(loaded) == ["Read", "Bash(git:*)"]
    async with open_host(("acme", server), approvals=ApprovalStore(path)) as host:
        loaded = await host.load(host.registry.resolve("refunds"))
        assert host.allowed_tools(loaded) == ["Read", "Bash(git:*)"]  # the grant persisted with the content
    rotated = Skill("refunds", {"new.md": b"n"}, extra=TOOLS)
    server.entries = [rotated.entry()]
    server.files = rotated.served()
    async with open_host(("acme", server), approvals=ApprovalStore(path)) as host:
        loaded = await host.load(host.registry.resolve("refunds"))
        assert host.allowed_tools(loaded) == []  # new content: the grant is void


@pytest.mark.anyio
async def test_grant_on_one_server_does_not_apply_to_the_same_skill_elsewhere() -> None:
    a, b = Skill("refunds", extra=TOOLS), Skill("refunds", extra=TOOLS)
    async with open_host(("alpha", HostileServer(a)), ("beta", HostileServer(b))) as host:
        await host.approve(host.registry.resolve("alpha/refunds"), allowed_tools=True)
        loaded_a = await host.load(host.registry.resolve("alpha/refunds"))
        loaded_b = await host.load(host.registry.resolve("beta/refunds"))
        assert host.allowed_tools(loaded_a) == ["Read", "Bash(git:*)"]
        assert host.allowed_tools(loaded_b) == []


@pytest.mark.anyio
async def test_local_skill_allowed_tools_apply(tmp_path: Path) -> None:
    write_local_skill(tmp_path / "skills", "refunds", extra=TOOLS)
    write_local_skill(tmp_path / "skills", "plain")
    async with open_host(local=[tmp_path / "skills"], require_approval=True) as host:
        loaded = await host.load(host.registry.resolve("local/refunds"))  # local skills are not gated
        assert loaded.origin == "local"
        assert loaded.verified
        assert host.allowed_tools(loaded) == ["Read", "Bash(git:*)"]
        assert host.allowed_tools(await host.load(host.registry.resolve("plain"))) == []


@pytest.mark.anyio
async def test_dynamic_approval_through_the_host_is_not_persisted(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    uri = "skill://reports/daily/SKILL.md"
    entry = {"uri": uri, "frontmatter": {"name": "daily", "description": "d"}, "resources": "dynamic"}
    server = HostileServer(entries=[entry])
    server.files[uri] = skill_md("daily", "d")
    asked: list[ApprovalRequest] = []

    def accept(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    kwargs = {"approver": accept, "require_approval": True, "allow_dynamic": True}
    async with open_host(("gen", server), approvals=ApprovalStore(path), **kwargs) as host:
        loaded = await host.load(host.registry.resolve("daily"))
        assert loaded.verified is False
        await host.load(host.registry.resolve("daily"))
    assert len(asked) == 1  # approved for the session
    async with open_host(("gen", server), approvals=ApprovalStore(path), **kwargs) as host:
        await host.load(host.registry.resolve("daily"))
    assert len(asked) == 2  # a new session asks again
    assert not path.exists() or uri not in path.read_text()


@pytest.mark.anyio
async def test_skill_changed_voids_the_approval_of_the_old_content(tmp_path: Path) -> None:
    from skilldeck.host import SkillChanged

    path = tmp_path / "approvals.json"
    skill = Skill("refunds", {"policy.md": b"30 days"}, extra=TOOLS)
    server = HostileServer(skill)
    newer = Skill("refunds", {"policy.md": b"EVIL 0 days"}, extra=TOOLS)
    async with open_host(("acme", server), approvals=ApprovalStore(path)) as host:
        record = host.registry.resolve("refunds")
        await host.approve(record, allowed_tools=True)
        loaded = await host.load(record)
        server.files = newer.served()
        server.got[skill.uri] = newer.entry()
        with pytest.raises(SkillChanged) as info:
            await host.read(loaded, "policy.md")
        assert host.approvals.status("acme", info.value.current) == "changed"
        assert host.allowed_tools(loaded) == []  # the grant went with the approval
    assert ApprovalStore(path).status("acme", _entry(skill)) == "none"


def test_damaged_approvals_file_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    path.write_text("{not json")
    with pytest.raises(SkilldeckError, match="delete it to start over"):
        ApprovalStore(path)
    path.write_text('{"version": 1}')
    with pytest.raises(SkilldeckError, match="damaged"):
        ApprovalStore(path)


def test_a_run_only_approval_is_content_bound_and_never_written(tmp_path: Path) -> None:
    from skilldeck.skill._manifest import entry_from_wire

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
