"""Discovery against hostile listings: endless paging, repeated cursors, oversized and malformed entries."""

from __future__ import annotations

from typing import Any

import pytest

from skilldeck.host import ListingLimits, Registry

from .hostile import HostileServer, Skill, open_host, sha256

MIB = 1024 * 1024


def _entry(path: str, **overrides: Any) -> dict[str, Any]:
    entry = Skill(path).entry()
    entry.update(overrides)
    return entry


# -- paging -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_listing_that_pages_forever_stops_at_the_page_cap_and_keeps_what_was_read() -> None:
    server = HostileServer()
    pages: list[str | None] = []

    def forever(cursor: str | None) -> dict[str, Any]:
        pages.append(cursor)
        n = len(pages)
        return {"skills": [Skill(f"p{n}/s{n}").entry()], "nextCursor": f"cursor-{n}"}

    server.pager = forever
    async with open_host(("endless", server), limits=ListingLimits(max_pages=5)) as host:
        report = host.report.servers["endless"]
        assert len(pages) == 5  # exactly the cap, then the host stopped asking
        assert pages == [None, "cursor-1", "cursor-2", "cursor-3", "cursor-4"]
        assert any("5 pages" in note and "stopped" in note for note in report.notes), report.notes
        assert sorted(r.name for r in host.registry.skills) == [f"s{n}" for n in range(1, 6)]
        assert report.skills == 5
        assert server.reads() == []


@pytest.mark.anyio
async def test_listing_that_repeats_its_cursor_stops_and_keeps_entries() -> None:
    server = HostileServer()
    pages: list[str | None] = []

    def loop(cursor: str | None) -> dict[str, Any]:
        pages.append(cursor)
        n = len(pages)
        return {"skills": [Skill(f"loop/s{n}").entry()], "nextCursor": "same"}

    server.pager = loop
    async with open_host(("loop", server), limits=ListingLimits(max_pages=50)) as host:
        report = host.report.servers["loop"]
        assert pages == [None, "same"]
        assert any("repeated a cursor" in note for note in report.notes), report.notes
        assert sorted(r.name for r in host.registry.skills) == ["s1", "s2"]


@pytest.mark.anyio
async def test_listing_that_cycles_cursors_is_stopped() -> None:
    server = HostileServer()
    pages: list[str | None] = []

    def cycle(cursor: str | None) -> dict[str, Any]:
        pages.append(cursor)
        return {"skills": [], "nextCursor": {None: "a", "a": "b", "b": "a"}[cursor]}

    server.pager = cycle
    async with open_host(("cycle", server)) as host:
        assert pages == [None, "a", "b"]
        assert any("repeated a cursor" in n for n in host.report.servers["cycle"].notes)


@pytest.mark.anyio
async def test_listing_over_the_entry_cap_is_truncated_and_reported() -> None:
    server = HostileServer(entries=[_entry(f"many/s{i}") for i in range(7)])
    async with open_host(("many", server), limits=ListingLimits(max_entries=3)) as host:
        report = host.report.servers["many"]
        assert len(host.registry.skills) == 3
        assert any("cap of 3 entries" in note for note in report.notes), report.notes


@pytest.mark.anyio
async def test_listing_error_is_a_note_and_other_servers_go_on() -> None:
    broken = HostileServer()

    def fail(cursor: str | None) -> dict[str, Any]:
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=-32603, message="listing exploded")

    broken.pager = fail
    fine = HostileServer(Skill("ok/fine"))
    async with open_host(("broken", broken), ("fine", fine)) as host:
        assert any("skills/list failed: listing exploded" in n for n in host.report.servers["broken"].notes)
        assert [r.name for r in host.registry.skills] == ["fine"]


@pytest.mark.anyio
async def test_server_without_the_extension_is_never_sent_skills_list() -> None:
    from mcp.server.mcpserver import MCPServer

    seen: list[str] = []

    async def record(ctx: Any, call_next: Any) -> Any:
        seen.append(ctx.method)
        return await call_next(ctx)

    plain: MCPServer[Any] = MCPServer("plain", middleware=[record])

    @plain.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    from skilldeck.host import Host, InProcessServer, ServerSpec

    async with Host([ServerSpec("plain", InProcessServer(plain))]) as host:
        report = host.report.servers["plain"]
        assert report.skills_declared is False
        assert report.tools == 1
        assert [t.name for t in host.registry.tools("plain")] == ["add"]
    assert "skills/list" not in seen
    assert "resources/read" not in seen


# -- limits and malformed entries -----------------------------------------------------------------------


def _hostile_entries() -> list[tuple[str, Any]]:
    """Each bad entry, with a fragment its rejection reason must contain."""
    too_many = Skill("bad/too-many").entry()
    too_many["resources"] += [_file(f"skill://bad/too-many/f{i}") for i in range(512)]
    assert len(too_many["resources"]) == 513
    too_big = Skill("bad/too-big").entry()
    too_big["resources"].append(_file("skill://bad/too-big/blob.bin", 16 * MIB + 1 - too_big["resources"][0]["size"]))
    no_skill_md = Skill("bad/no-skill-md", {"other.md": b"o"}).entry()
    no_skill_md["resources"] = no_skill_md["resources"][1:]
    duplicate = Skill("bad/duplicate", {"a.md": b"a"}).entry()
    duplicate["resources"].append(dict(duplicate["resources"][1]))
    outside = Skill("bad/outside").entry()
    outside["resources"].append(_file("skill://bad/elsewhere/secret.txt"))
    prefix = Skill("bad/pre").entry()
    prefix["resources"].append(_file("skill://bad/prefix/x.md"))
    other_server = Skill("bad/scheme").entry()
    other_server["resources"].append(_file("https://evil.example/bad/scheme/x.md"))
    dotdot = Skill("bad/dotdot").entry()
    dotdot["resources"].append(_file("skill://bad/dotdot/../secret.txt"))
    upper_hex = Skill("bad/upper-hex").entry()
    upper_hex["resources"][0]["digest"] = "sha256:" + "A" * 64
    md5 = Skill("bad/md5-digest").entry()
    md5["resources"][0]["digest"] = "md5:d41d8cd98f00b204e9800998ecf8427e"
    short = Skill("bad/short-digest").entry()
    short["resources"][0]["digest"] = short["resources"][0]["digest"][:-1]
    neg = Skill("bad/neg-size").entry()
    neg["resources"][0]["size"] = -1
    bool_size = Skill("bad/bool-size").entry()
    bool_size["resources"][0]["size"] = True
    str_size = Skill("bad/str-size").entry()
    str_size["resources"][0]["size"] = "10"
    missing = {k: v for k, v in _entry("bad/no-resources").items() if k != "resources"}
    not_a_list = 'a list of files or "dynamic"'
    return [
        ("over the limit of 512", too_many),
        ("over the limit of 16777216", too_big),
        ("does not list the skill's own SKILL.md", no_skill_md),
        ("listed twice", duplicate),
        ("outside the skill", outside),
        ("outside the skill skill://bad/pre", prefix),
        ("outside the skill", other_server),
        ("dot segments", dotdot),
        ("resources[0].digest: expected a digest sha256:", upper_hex),
        ("resources[0].digest: expected a digest sha256:", md5),
        ("resources[0].digest: expected a digest sha256:", short),
        ("resources[0].size: expected a size in bytes", neg),
        ("resources[0].size: expected a size in bytes", bool_size),
        ("resources[0].size: expected a size in bytes", str_size),
        (not_a_list, missing),
        (not_a_list, _entry("bad/static", resources="static")),
        (not_a_list, _entry("bad/mapping", resources={"uri": "x"})),
        (not_a_list, _entry("bad/none", resources=None)),
        (
            "resources[0]: expected an object {uri, digest, size}",
            _entry("bad/items", resources=["skill://bad/items/SKILL.md"]),
        ),
        ("does not end in /SKILL.md", _entry("bad/readme", uri="skill://bad/readme/README.md")),
        ("does not end in /SKILL.md", _entry("bad/lower", uri="skill://bad/lower/skill.md")),
        ("is not the skill name", _entry("bad/mismatch", uri="skill://bad/other-name/SKILL.md")),
        ("frontmatter: expected an object", _entry("bad/nofm", frontmatter=None)),
        ("description is missing", _entry("bad/nodesc", frontmatter={"name": "nodesc"})),
        ("lowercase letters", _entry("bad/Upper", frontmatter={"name": "Upper", "description": "d"})),
        ("'uri' is required", {"frontmatter": {"name": "x", "description": "d"}, "resources": []}),
        ("expected an object {uri, frontmatter, resources}", "skill://bad/string/SKILL.md"),
    ]


def _file(uri: str, size: int = 0) -> dict[str, Any]:
    return {"uri": uri, "digest": sha256(b""), "size": size}


@pytest.mark.anyio
async def test_entries_over_limits_or_malformed_are_rejected_with_reasons_and_good_ones_kept() -> None:
    bad = _hostile_entries()
    good = [Skill("good/alpha"), Skill("good/beta", {"ref.md": b"r"})]
    at_limit = Skill("good/at-limit").entry()
    at_limit["resources"] += [_file(f"skill://good/at-limit/f{i}") for i in range(511)]
    exactly_16 = Skill("good/exactly16").entry()
    exactly_16["resources"].append(_file("skill://good/exactly16/b.bin", 16 * MIB - exactly_16["resources"][0]["size"]))
    entries = [good[0].entry(), *(raw for _, raw in bad), good[1].entry(), at_limit, exactly_16]
    server = HostileServer(entries=entries)
    async with open_host(("evil", server)) as host:
        report = host.report.servers["evil"]
        assert sorted(r.name for r in host.registry.skills) == ["alpha", "at-limit", "beta", "exactly16"]
        assert report.skills == 4
        assert len(report.rejected) == len(bad)
        reasons = [str(r) for r in report.rejected]
        for (fragment, raw), rejection in zip(bad, report.rejected, strict=True):
            assert fragment in rejection.reason, (fragment, rejection)
            assert rejection.label == "evil"
            if isinstance(raw, dict) and isinstance(raw.get("uri"), str):
                assert rejection.uri == raw["uri"]
                assert raw["uri"] in str(rejection)
        assert all(r.startswith("[evil] ") for r in reasons)
        assert host.registry.rejections == report.rejected
    assert server.reads() == []


def test_registry_add_listing_reports_and_registers_independently() -> None:
    registry = Registry()
    refused = registry.add_listing("a", [Skill("x/ok").entry(), {"uri": 3}, None])
    assert [r.reason for r in refused] == [
        "uri: expected the skill's SKILL.md URI",
        "expected an object {uri, frontmatter, resources}",
    ]
    assert [r.name for r in registry.skills] == ["ok"]
    assert registry.labels == ["a"]


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
