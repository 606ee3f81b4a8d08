"""Identity is (label, uri): name collisions are surfaced, nothing shadows, and no skill reads across origins."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilldeck.errors import SkilldeckError
from skilldeck.host import (
    AmbiguousName,
    ConfigError,
    CrossOriginRead,
    Host,
    InProcessServer,
    Registry,
    ServerSpec,
    SkillRecord,
    UnknownSkill,
    VerificationError,
)
from skilldeck.skill._manifest import entry_from_wire

from .hostile import HostileServer, Skill, open_host, sha256, skill_md, write_local_skill

# -- collisions -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_two_skills_of_one_name_inside_one_server() -> None:
    east = Skill("east/refunds", {"policy.md": b"east policy"}, description="East refunds.")
    west = Skill("west/refunds", {"policy.md": b"west policy"}, description="West refunds.")
    server = HostileServer(east, west)
    async with open_host(("acme", server)) as host:
        registry = host.registry
        (collision,) = registry.collisions()
        assert collision.name == "refunds"
        assert collision.scope == "within-server"
        assert {r.entry.uri for r in collision.records} == {east.uri, west.uri}
        assert "within-server" in str(collision)
        with pytest.raises(AmbiguousName) as info:
            registry.resolve("refunds")
        assert info.value.candidates == ["acme/east/refunds", "acme/west/refunds"]
        assert "acme/east/refunds" in str(info.value)
        assert registry.qualified_names() == ["acme/east/refunds", "acme/west/refunds"]
        assert registry.resolve("acme/east/refunds").entry.uri == east.uri
        assert registry.resolve("acme/west/refunds").entry.uri == west.uri
        assert registry.resolve(f"acme:{west.uri}").entry.uri == west.uri
        assert registry.resolve(east.uri).entry.uri == east.uri  # a URI only one skill has
        with pytest.raises(UnknownSkill):
            registry.resolve("acme/refunds")
        loaded_east = await host.load(registry.resolve("acme/east/refunds"))
        loaded_west = await host.load(registry.resolve("acme/west/refunds"))
        assert await host.read(loaded_east, "policy.md") == b"east policy"
        assert await host.read(loaded_west, "policy.md") == b"west policy"
        assert loaded_east.entry.description == "East refunds."


@pytest.mark.anyio
async def test_same_skill_on_two_servers() -> None:
    a = Skill("refunds", {"policy.md": b"A policy"}, description="A refunds.")
    b = Skill("refunds", {"policy.md": b"B policy"}, description="B refunds.")
    sa, sb = HostileServer(a), HostileServer(b)
    async with open_host(("alpha", sa), ("beta", sb)) as host:
        registry = host.registry
        (collision,) = registry.collisions()
        assert collision.scope == "across-origins"
        assert {r.label for r in collision.records} == {"alpha", "beta"}
        with pytest.raises(AmbiguousName) as info:
            registry.resolve("refunds")
        assert info.value.candidates == ["alpha/refunds", "beta/refunds"]
        with pytest.raises(AmbiguousName):  # the same URI on two servers is two skills: a bare URI is ambiguous
            registry.resolve(a.uri)
        assert registry.get("alpha", a.uri) is not registry.get("beta", b.uri)
        assert registry.resolve("alpha:skill://refunds/SKILL.md").label == "alpha"
        loaded_b = await host.load(registry.resolve("beta/refunds"))
        assert loaded_b.label == "beta"
        assert await host.read(loaded_b, "policy.md") == b"B policy"
        loaded_a = await host.load(registry.resolve("alpha/refunds"))
        assert await host.read(loaded_a, "policy.md") == b"A policy"
    assert sa.reads() == [a.uri, a.file_uri("policy.md")]
    assert sb.reads() == [b.uri, b.file_uri("policy.md")]


@pytest.mark.anyio
async def test_server_skill_and_local_skill_of_one_name(tmp_path: Path) -> None:
    write_local_skill(tmp_path, "refunds", description="My own refunds.", extra="allowed-tools: Read\n")
    remote = Skill("refunds", description="Remote refunds.")
    server = HostileServer(remote)
    async with open_host(("acme", server), local=[tmp_path]) as host:
        registry = host.registry
        (collision,) = registry.collisions()
        assert collision.scope == "across-origins"
        assert {(r.label, r.origin) for r in collision.records} == {("acme", "mcp"), ("local", "local")}
        with pytest.raises(AmbiguousName) as info:
            registry.resolve("refunds")
        assert info.value.candidates == ["acme/refunds", "local/refunds"]
        local = await host.load(registry.resolve("local/refunds"))
        assert local.origin == "local"
        assert local.entry.description == "My own refunds."
        assert 'origin="local"' in local.tagged()
        mcp = await host.load(registry.resolve("acme/refunds"))
        assert mcp.origin == "mcp"
        assert mcp.entry.description == "Remote refunds."
        assert host.report.servers["local"].skills == 1
    assert server.reads() == [remote.uri]


@pytest.mark.anyio
async def test_a_server_labelled_local_does_not_shadow_local_skills(tmp_path: Path) -> None:
    write_local_skill(tmp_path, "refunds", description="My own refunds.")
    server = HostileServer(Skill("refunds", description="Remote refunds."))
    try:
        async with Host([ServerSpec("local", InProcessServer(server.server))], local=[tmp_path]) as host:
            records = [r for r in host.registry.skills if r.name == "refunds"]
            assert {r.origin for r in records} == {"local", "mcp"}
            assert len(host.registry.collisions()) == 1
    except ConfigError:
        pass  # refusing the reserved label is a fine fix too


@pytest.mark.anyio
async def test_three_way_collision_and_unknown_names(tmp_path: Path) -> None:
    write_local_skill(tmp_path, "tools/refunds")
    s1 = HostileServer(Skill("x/refunds"), Skill("y/refunds"), Skill("solo"))
    s2 = HostileServer(Skill("refunds"))
    async with open_host(("one", s1), ("two", s2), local=[tmp_path]) as host:
        registry = host.registry
        (collision,) = registry.collisions()
        assert collision.scope == "across-origins"
        assert len(collision.records) == 4
        with pytest.raises(AmbiguousName) as info:
            registry.resolve("refunds")
        assert info.value.candidates == ["local/refunds", "one/x/refunds", "one/y/refunds", "two/refunds"]
        for qualified in info.value.candidates:
            assert registry.qualified_name(registry.resolve(qualified)) == qualified
        assert registry.resolve("solo").label == "one"
        with pytest.raises(UnknownSkill, match="known: "):
            registry.resolve("nope")
        assert len(registry.qualified_names()) == len(set(registry.qualified_names())) == 5


def test_qualified_names_stay_unique_across_uri_schemes() -> None:
    registry = Registry()
    for uri in ["skill://x/refunds/SKILL.md", "SKILL://x/refunds/SKILL.md"]:
        md = skill_md("refunds")
        raw = {
            "uri": uri,
            "frontmatter": {"name": "refunds", "description": "A test skill."},
            "resources": [{"uri": uri, "digest": sha256(md), "size": len(md)}],
        }
        registry.add_listing("a", [raw])
    names = registry.qualified_names()
    assert len(names) == len(set(names)), names
    for record in registry.skills:
        assert registry.resolve(registry.qualified_name(record)) is record


def test_registry_refresh_replaces_one_identity_and_remove_server_forgets_it() -> None:
    registry = Registry()
    v1 = entry_from_wire(Skill("refunds").entry())
    v2 = entry_from_wire(Skill("refunds", {"new.md": b"n"}).entry())
    registry.add(SkillRecord("a", v1))
    registry.add(SkillRecord("b", v1))
    registry.add(SkillRecord("a", v2))
    assert registry.get("a", v1.uri).entry is v2  # type: ignore[union-attr]
    assert registry.get("b", v1.uri).entry is v1  # type: ignore[union-attr]
    registry.set_tools("a", [{"name": "t", "inputSchema": {"type": "object"}}])
    registry.remove_server("a")
    assert registry.labels == ["b"]
    assert registry.tools("a") == []


# -- cross-origin reads --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_skill_never_reads_another_server() -> None:
    mine = Skill("refunds", {"policy.md": b"mine"})
    theirs = Skill("other", {"secret.md": b"EVIL theirs"})
    same_uri = Skill("refunds", {"policy.md": b"EVIL same uri elsewhere"})
    sa = HostileServer(mine)
    sb = HostileServer(theirs, same_uri)
    async with open_host(("a", sa), ("b", sb)) as host:
        loaded = await host.load(host.registry.resolve("a/refunds"))
        for reference in [
            "skill://other/secret.md",
            "skill://other/SKILL.md",
            "skill://refundsX/policy.md",  # shares a string prefix with the root
            "skill://refunds",
            "https://evil.example/refunds/policy.md",
            "file:///etc/passwd",
        ]:
            with pytest.raises(CrossOriginRead):
                await host.read(loaded, reference)
        with pytest.raises(CrossOriginRead):
            await host.read(loaded, "policy.md", via="b")
        with pytest.raises(CrossOriginRead):
            await host.read(loaded, mine.file_uri("policy.md"), via="b")
        with pytest.raises(CrossOriginRead):  # b's loader refuses a skill loaded from a
            await host.loader("b").read(loaded, "policy.md")
        with pytest.raises(VerificationError):  # a relative climb is not a read anywhere
            await host.read(loaded, "../other/secret.md")
        assert await host.read(loaded, "policy.md", via="a") == b"mine"
    assert sb.reads() == []
    assert "skills/get" not in sb.methods_called()
    assert sa.reads() == [mine.uri, mine.file_uri("policy.md")]


@pytest.mark.anyio
async def test_failed_verification_refreshes_only_on_the_skills_own_server() -> None:
    mine = Skill("refunds", {"policy.md": b"mine"})
    sa = HostileServer(mine)
    sa.files[mine.file_uri("policy.md")] = b"EVIL"
    sb = HostileServer(Skill("refunds", {"policy.md": b"mine"}))
    async with open_host(("a", sa), ("b", sb)) as host:
        loaded = await host.load(host.registry.resolve("a/refunds"))
        with pytest.raises(VerificationError):
            await host.read(loaded, "policy.md")
    assert sa.gets() == [mine.uri]
    assert set(sb.methods_called()) <= {"skills/list", "tools/list"}
    assert sb.reads() == []


@pytest.mark.anyio
async def test_unreachable_server_is_reported_and_others_load() -> None:
    class Boom:
        pass

    good = HostileServer(Skill("refunds"))
    specs = [
        ServerSpec("good", InProcessServer(good.server), timeout=10),
        ServerSpec("gone", InProcessServer(Boom()), timeout=10),
    ]
    async with Host(specs) as host:
        assert "gone" in host.failures
        assert host.failures["gone"].label == "gone"
        assert [r.label for r in host.registry.skills] == ["good"]
        with pytest.raises(SkilldeckError, match="not connected"):
            host.index("gone")


def test_duplicate_labels_are_refused() -> None:
    server = HostileServer()
    with pytest.raises(ConfigError, match="repeated: twin"):
        Host([ServerSpec("twin", InProcessServer(server.server)), ServerSpec("twin", InProcessServer(server.server))])


def test_qualified_names_track_additions_and_removals() -> None:
    from skilldeck.host._registry import SkillRecord

    def entry(path: str) -> dict[str, object]:
        uri = f"skill://{path}/SKILL.md"
        name = path.rsplit("/", 1)[-1]
        return {"uri": uri, "frontmatter": {"name": name, "description": "d"}, "resources": "dynamic"}

    registry = Registry()
    registry.add_listing("a", [entry("x/refunds"), entry("y/refunds")])
    assert registry.qualified_names() == ["a/x/refunds", "a/y/refunds"]
    registry.add(SkillRecord("a", entry_from_wire(entry("y/refunds"))))  # a refresh does not double-count
    assert registry.qualified_names() == ["a/x/refunds", "a/y/refunds"]
    registry.remove_server("a")
    registry.add_listing("a", [entry("x/refunds")])
    assert registry.qualified_names() == ["a/refunds"]
