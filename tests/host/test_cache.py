"""The host's content cache: re-hashed on every use, keyed by (label, uri) on disk, removed with its server."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilldeck.errors import SkilldeckError
from skilldeck.host import ApprovalStore, ContentCache, VerificationError
from skilldeck.skill._manifest import entry_from_wire

from .hostile import HostileServer, Skill, open_host, sha256


def _skill() -> Skill:
    return Skill("acme/refunds", {"policy.md": b"Refund within 30 days.\n"})


@pytest.mark.anyio
async def test_cache_hit_sends_no_read_and_is_rehashed(tmp_path: Path) -> None:
    skill = _skill()
    server = HostileServer(skill)
    cache = ContentCache(tmp_path / "cache")
    async with open_host(("acme", server), cache=cache) as host:
        first = await host.load(host.registry.resolve("refunds"))
        await host.read(first, "policy.md")
    assert cache.path_for("acme", skill.uri).read_bytes() == skill.files["SKILL.md"]
    assert cache.path_for("acme", skill.file_uri("policy.md")).read_bytes() == skill.files["policy.md"]
    server.calls.clear()
    async with open_host(("acme", server), cache=cache) as host:  # a restart: the cache is reused
        again = await host.load(host.registry.resolve("refunds"))
        assert await host.read(again, "policy.md") == skill.files["policy.md"]
        assert again.text == skill.files["SKILL.md"].decode()
        assert host.loader("acme").used_bytes == 0
    assert server.reads() == []


@pytest.mark.anyio
async def test_altered_cached_skill_md_is_refetched_never_returned(tmp_path: Path) -> None:
    skill = _skill()
    server = HostileServer(skill)
    cache = ContentCache(tmp_path / "cache")
    async with open_host(("acme", server), cache=cache) as host:
        await host.load(host.registry.resolve("refunds"))
        path = cache.path_for("acme", skill.uri)
        path.write_bytes(skill.files["SKILL.md"].replace(b"A test skill.", b"EVIL on disk."))
        loaded = await host.load(host.registry.resolve("refunds"))
        assert "EVIL" not in loaded.text
        assert loaded.text == skill.files["SKILL.md"].decode()
        assert path.read_bytes() == skill.files["SKILL.md"]  # the cache holds verified bytes again
    assert server.reads() == [skill.uri, skill.uri]


@pytest.mark.anyio
async def test_altered_cached_supporting_file_is_refetched(tmp_path: Path) -> None:
    skill = _skill()
    server = HostileServer(skill)
    cache = ContentCache(tmp_path / "cache")
    policy = skill.file_uri("policy.md")
    async with open_host(("acme", server), cache=cache) as host:
        loaded = await host.load(host.registry.resolve("refunds"))
        await host.read(loaded, "policy.md")
        cache.path_for("acme", policy).write_bytes(b"EVIL policy, same length..\n")
        fresh = await host.load(host.registry.resolve("refunds"))
        assert await host.read(fresh, "policy.md") == skill.files["policy.md"]
    assert server.reads() == [skill.uri, policy, policy]


@pytest.mark.anyio
async def test_altered_cache_and_tampering_server_together_are_refused(tmp_path: Path) -> None:
    skill = _skill()
    server = HostileServer(skill)
    cache = ContentCache(tmp_path / "cache")
    async with open_host(("acme", server), cache=cache) as host:
        await host.load(host.registry.resolve("refunds"))
        evil = skill.files["SKILL.md"].replace(b"A test skill.", b"EVIL skill!!!")
        cache.path_for("acme", skill.uri).write_bytes(evil)
        server.files[skill.uri] = evil
        with pytest.raises(VerificationError) as info:
            await host.load(host.registry.resolve("refunds"))
        assert info.value.check == "digest"
        assert not cache.path_for("acme", skill.uri).exists()  # the altered copy is gone, not re-used


@pytest.mark.anyio
async def test_cache_is_checked_against_the_current_entry_not_the_old_one(tmp_path: Path) -> None:
    """A cached v1 file is not served for a v2 entry, even though it was verified once."""
    skill = _skill()
    server = HostileServer(skill)
    cache = ContentCache(tmp_path / "cache")
    async with open_host(("acme", server), cache=cache) as host:
        await host.load(host.registry.resolve("refunds"))
        v2 = Skill("acme/refunds", {"policy.md": b"v2"}, description="Version two.")
        server.entries = [v2.entry()]
        server.files = v2.served()
        await host.refresh()
        loaded = await host.load(host.registry.resolve("refunds"))
        assert loaded.entry.description == "Version two."
    assert server.reads() == [skill.uri, skill.uri]


@pytest.mark.anyio
async def test_same_uri_on_two_servers_has_two_cache_paths(tmp_path: Path) -> None:
    a = Skill("refunds", description="A refunds.")
    b = Skill("refunds", description="B refunds.")
    cache = ContentCache(tmp_path / "cache")
    async with open_host(("alpha", HostileServer(a)), ("beta", HostileServer(b)), cache=cache) as host:
        await host.load(host.registry.resolve("alpha/refunds"))
        await host.load(host.registry.resolve("beta/refunds"))
    pa, pb = cache.path_for("alpha", a.uri), cache.path_for("beta", b.uri)
    assert pa != pb
    assert pa.read_bytes() == a.files["SKILL.md"]
    assert pb.read_bytes() == b.files["SKILL.md"]
    assert cache.origin_of(pa) == ("alpha", a.uri)
    assert cache.origin_of(pb) == ("beta", b.uri)
    assert cache.labels() == ["alpha", "beta"]
    assert cache.origin_of(tmp_path / "elsewhere" / "x") is None
    assert cache.origin_of(tmp_path / "cache" / "alpha") is None
    # beta's bytes are never a hit for alpha, even with the same URI and a digest lookup
    assert cache.get("alpha", b.uri, sha256(b.files["SKILL.md"])) is None


def test_cache_paths_encode_label_and_uri_and_cannot_escape_the_root(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path / "cache")
    for label, uri in [
        ("..", "skill://x/SKILL.md"),
        (".", "skill://../../etc/passwd"),
        ("a%2Fb", "skill://x/../../SKILL.md"),
        ("a", "../../../../escape"),
        ("a", ".."),
        ("weird label", "skill://x/a b#c?d/SKILL.md"),
    ]:
        path = cache.path_for(label, uri)
        assert path.parent.parent == cache.root, (label, uri, path)
        cache.put(label, uri, b"data")
        assert path.resolve().is_relative_to(cache.root.resolve())
        assert cache.origin_of(path) == (label, uri), (label, uri)
        assert cache.get(label, uri, sha256(b"data")) == b"data"
    assert cache.path_for("a", "skill://x/SKILL.md") != cache.path_for("a%2Fb", "skill://x/SKILL.md")


def test_origin_of_recovers_long_uris(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path / "cache")
    uri = "skill://" + "/".join(f"level-{i}" for i in range(20)) + "/deep/SKILL.md"
    cache.put("acme", uri, b"data")
    assert cache.get("acme", uri, sha256(b"data")) == b"data"  # storing and lookup do work
    assert cache.origin_of(cache.path_for("acme", uri)) in {("acme", uri), None}


@pytest.mark.anyio
async def test_remove_server_deletes_its_cache_approvals_and_records_only(tmp_path: Path) -> None:
    a, b = _skill(), _skill()
    cache = ContentCache(tmp_path / "cache")
    approvals = ApprovalStore(tmp_path / "approvals.json")
    sa, sb = HostileServer(a), HostileServer(b)
    async with open_host(("alpha", sa), ("beta", sb), cache=cache, approvals=approvals) as host:
        for label in ("alpha", "beta"):
            record = host.registry.resolve(f"{label}/refunds")
            await host.approve(record)
            await host.load(record)
        host.remove_server("alpha")
        assert not (cache.root / "alpha").exists()
        assert cache.path_for("beta", b.uri).exists()
        assert cache.labels() == ["beta"]
        assert [r.label for r in host.registry.skills] == ["beta"]
        beta_entry = host.registry.resolve("beta/refunds").entry
    reopened = ApprovalStore(tmp_path / "approvals.json")
    assert reopened.status("alpha", entry_from_wire(a.entry())) == "none"
    assert reopened.status("beta", beta_entry) == "approved"


@pytest.mark.anyio
async def test_removed_server_stays_removed(tmp_path: Path) -> None:
    skill = _skill()
    server = HostileServer(skill)
    cache = ContentCache(tmp_path / "cache")
    async with open_host(("gone", server), cache=cache) as host:
        loaded = await host.load(host.registry.resolve("refunds"))
        host.remove_server("gone")
        reads = len(server.reads())
        with pytest.raises(SkilldeckError, match="server 'gone' was removed"):
            await host.read(loaded, "policy.md")
        assert len(server.reads()) == reads
        assert not (cache.root / "gone").exists()
        await host.refresh()
        assert host.registry.skills == []


def test_verified_bytes_hold_up_to_their_bounds_the_least_recently_used_going_first() -> None:
    from skilldeck.host._cache import VerifiedBytes

    held = VerifiedBytes(max_bytes=10, max_file_bytes=4)
    held.put("a", "d4", b"4444")  # exactly the largest file held
    held.put("a", "d5", b"55555")  # one byte over: not held
    assert held.get("a", "d4", 4) == b"4444"
    assert held.get("a", "d5", 5) is None
    assert held.get("b", "d4", 4) is None  # another server's listing of the same digest: its own read
    assert held.get("a", "d4", 3) is None  # the size its entry lists must match too
    held.put("a", "x3", b"333")
    held.put("a", "y3", b"333")  # 10 bytes: exactly the bound
    assert held.held_bytes == 10
    assert held.get("a", "d4", 4) == b"4444"  # now the most recently used
    held.put("b", "z1", b"1")  # 11: the least recently used (x3) goes
    assert held.held_bytes == 8
    assert held.get("a", "x3", 3) is None
    assert held.get("a", "y3", 3) == b"333"
    held.remove_server("a")
    assert held.held_bytes == 1
    assert held.get("b", "z1", 1) == b"1"
