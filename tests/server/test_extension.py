"""The Skills extension on a real SDK server, seen by real SDK clients in both protocol eras.

In-process sessions exercise every method and error; the transport tests repeat the core path
over streamable HTTP (uvicorn on loopback) and stdio (a ``skilldeck serve`` subprocess).
"""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types._v2026_07_28 as wire2026
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import ServerNotification
from mcp_types.methods import validate_server_result
from pydantic import BaseModel, ConfigDict

from skilldeck.host._wire import SkillsWire, declared_skills_settings
from skilldeck.server import DynamicSkill, SkillRequest, SkillsExtension, create_server, serve_http
from skilldeck.serving._policy import parse_policy
from skilldeck.skill._frontmatter import parse_skill_md
from skilldeck.skill._manifest import digest_of

from .helpers import write_skill

ERAS = ["auto", "legacy"]  # auto negotiates 2026-07-28 with our server


@asynccontextmanager
async def connect(target: Any, mode: str, **kwargs: Any) -> AsyncIterator[SkillsWire]:
    async with Client(target, mode=mode, cache=None, **kwargs) as client:
        yield SkillsWire(client)


@asynccontextmanager
async def running_http(server: MCPServer[Any], ext: SkillsExtension) -> AsyncIterator[str]:
    """Serve on a free loopback port for the duration of the block; yields the URL."""
    async with anyio.create_task_group() as tg:
        ready: list[str] = []
        tg.start_soon(lambda: serve_http(server, ext, port=0, on_ready=ready.append))
        with anyio.fail_after(10):
            while not ready:
                await anyio.sleep(0.02)
        yield ready[0]
        tg.cancel_scope.cancel()


async def list_all(wire: SkillsWire) -> list[dict[str, Any]]:
    entries, cursor = [], None
    for _ in range(100):
        page = await wire.list_skills(cursor)
        entries.extend(page["skills"])
        cursor = page.get("nextCursor")
        if not cursor:
            return entries
    raise AssertionError("listing did not end")


async def check_core_path(wire: SkillsWire, expected_version: str) -> None:
    """List, get and read every file of every listed skill, verifying digests, sizes and frontmatter."""
    assert wire.client.protocol_version == expected_version
    assert declared_skills_settings(wire.client) == {"directoryRead": True}
    caps = wire.client.server_capabilities
    assert caps.extensions == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
    if expected_version == "2025-11-25":  # mirrored for legacy clients that only read `experimental`
        assert caps.experimental == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
        assert caps.resources is not None
        assert caps.resources.list_changed is True
    assert wire.client.server_capabilities.resources is not None
    entries = await list_all(wire)
    assert len(entries) == 8
    for entry in entries:
        got = await wire.get_skill(entry["uri"])
        assert got["skill"] == entry
        assert got["resultType"] == "complete"
        for resource in entry["resources"]:
            data, mime = await wire.read_bytes(resource["uri"])
            assert len(data) == resource["size"]
            assert digest_of(data) == resource["digest"]
            if resource["uri"] == entry["uri"]:
                assert mime == "text/markdown"
                assert parse_skill_md(data.decode()).frontmatter == entry["frontmatter"]


@pytest.fixture
def examples_server(examples_dir: Path) -> tuple[MCPServer[Any], SkillsExtension]:
    return create_server(examples_dir, page_size=3)


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_in_process_core_path_both_eras(examples_server: Any, mode: str, version: str) -> None:
    server, _ = examples_server
    async with connect(server, mode) as wire:
        await check_core_path(wire, version)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_listing_pages_and_cache_hints(examples_server: Any, mode: str) -> None:
    server, _ = examples_server
    async with connect(server, mode) as wire:
        first = await wire.list_skills()
        assert len(first["skills"]) == 3
        assert first["nextCursor"]
        assert first["ttlMs"] == 60_000
        assert first["cacheScope"] == "public"
        assert first["resultType"] == "complete"
        with pytest.raises(MCPError) as bad:
            await wire.list_skills("forged")
        assert bad.value.error.code == -32602
        assert "cursor" in bad.value.error.message


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_get_answers_unlisted_and_refuses_unknown(tmp_path: Path, mode: str) -> None:
    write_skill(tmp_path, "listed")
    server, _ = create_server(tmp_path, page_size=1)
    async with connect(server, mode) as wire:
        assert (await wire.get_skill("skill://listed/SKILL.md"))["skill"]["frontmatter"]["name"] == "listed"
        for uri in ["skill://missing/SKILL.md", "skill://listed/", "skill://listed", "file:///etc/passwd"]:
            with pytest.raises(MCPError) as info:
                await wire.get_skill(uri)
            assert info.value.error.code == -32602
            assert uri in info.value.error.message


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_directory_reads(examples_server: Any, mode: str) -> None:
    server, _ = examples_server
    async with connect(server, mode) as wire:
        children = (await wire.read_directory("skill://pdf-forms/templates"))["resources"]
        by_name = {c["name"]: c for c in children}
        assert by_name["regional"] == {
            "uri": "skill://pdf-forms/templates/regional",
            "name": "regional",
            "mimeType": "inode/directory",
        }
        assert by_name["invoice.md"]["mimeType"] == "text/markdown"
        prefix = (await wire.read_directory("skill://acme/billing"))["resources"]
        assert [c["uri"] for c in prefix] == ["skill://acme/billing/refunds"]
        for uri, fragment in [
            ("skill://pdf-forms/SKILL.md", "is not a directory resource"),
            ("skill://pdf-forms/templates/", "No directory"),
            ("skill://nowhere", "No directory"),
        ]:
            with pytest.raises(MCPError) as info:
                await wire.read_directory(uri)
            assert info.value.error.code == -32602
            assert fragment in info.value.error.message


@pytest.mark.anyio
async def test_directory_pagination(tmp_path: Path) -> None:
    write_skill(tmp_path, "wide", files={f"f{i:02}.md": "x" for i in range(7)})
    server, _ = create_server(tmp_path, directory_page_size=3)
    async with connect(server, "auto") as wire:
        names, cursor = [], None
        while True:
            page = await wire.read_directory("skill://wide", cursor)
            names += [c["name"] for c in page["resources"]]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        assert names == ["SKILL.md"] + [f"f{i:02}.md" for i in range(7)]


# The Skills extension's 2026-07-28 results, built from the base schema's own wire types (mcp_types
# has none for extension methods). Like the TypeScript SDK's SkillsClient, every one of them is a
# CacheableResult (`resultType`, `ttlMs`, `cacheScope` required); lists are PaginatedResults too.
class _SkillResource2026(BaseModel):
    model_config = ConfigDict(extra="forbid")
    uri: str
    digest: str
    size: int


class _Skill2026(BaseModel):
    model_config = ConfigDict(extra="forbid")
    uri: str
    frontmatter: dict[str, Any]
    resources: list[_SkillResource2026] | Literal["dynamic"]


class ListSkillsResult2026(wire2026.PaginatedResult, wire2026.CacheableResult):
    model_config = ConfigDict(extra="forbid")
    skills: list[_Skill2026]


class GetSkillResult2026(wire2026.CacheableResult):
    model_config = ConfigDict(extra="forbid")
    skill: _Skill2026


class ReadResourceDirectoryResult2026(wire2026.PaginatedResult, wire2026.CacheableResult):
    model_config = ConfigDict(extra="forbid")
    resources: list[wire2026.Resource]


def assert_2026_shape(model: type[BaseModel], result: dict[str, Any]) -> None:
    model.model_validate(result, by_alias=True, by_name=False)
    assert result["resultType"] == "complete", result


@pytest.mark.anyio
@pytest.mark.parametrize("policy", [None, "admit-all"])
async def test_every_modern_reply_validates_against_the_2026_result_schemas(
    examples_dir: Path, policy: str | None
) -> None:
    """skills/list, skills/get, resources/read and resources/directory/read (skill root, sub-folder,
    prefix folder, dynamic skill) on a 2026-07-28 session: each reply is a valid 2026-07-28 result."""
    daily = DynamicSkill(
        "reports/daily", description="Today's report", body=lambda _: "# Daily\n", files=lambda _: {"data/a.json": "{}"}
    )
    rules = parse_policy({"default_identity": {"subject": "s", "tenant": "acme"}, "skills": {"pdf-forms": {}}})
    server, _ = create_server(examples_dir, daily, page_size=3, policy=rules if policy else None)
    async with connect(server, "auto") as wire:
        assert wire.client.protocol_version == "2026-07-28"
        entries, cursor = [], None
        while True:
            page = await wire.list_skills(cursor)
            assert_2026_shape(ListSkillsResult2026, page)
            entries += page["skills"]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        assert len(entries) == 9
        for entry in entries:
            assert_2026_shape(GetSkillResult2026, await wire.get_skill(entry["uri"]))
            files = [r["uri"] for r in entry["resources"]] if entry["resources"] != "dynamic" else [entry["uri"]]
            for uri in files:
                validate_server_result(
                    "resources/read", "2026-07-28", await wire.request("resources/read", {"uri": uri})
                )
        for folder in ["skill://pdf-forms", "skill://pdf-forms/templates", "skill://acme", "skill://reports/daily"]:
            listing = await wire.read_directory(folder)
            assert_2026_shape(ReadResourceDirectoryResult2026, listing)
            assert listing["resources"], folder
            assert listing["ttlMs"] == 60_000
            assert listing["cacheScope"] == ("private" if policy else "public")


HOSTILE_URIS = [
    "skill://pdf-forms/../../../etc/passwd",
    "skill://pdf-forms/%2e%2e/%2e%2e/etc/passwd",
    "skill://pdf-forms/%2E%2E%2Fsecret.txt",
    "skill://pdf-forms/templates/..%5C..%5Csecret.txt",
    "skill://pdf-forms\\..\\secret.txt",
    "skill:///etc/passwd",
    "skill://leaky/secret.txt",
    "skill://leaky/outdir/secret.txt",
    "file:///etc/passwd",
    "file://{root}/outside/secret.txt",
    "{root}/outside/secret.txt",
    "http://127.0.0.1:1/secret",
    "skill://pdf-forms/templates",  # a directory is not a file
    "skill://pdf-forms/nope.md",
    "SKILL://pdf-forms/SKILL.md",
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_hostile_reads_answer_invalid_params_and_leak_nothing(tmp_path: Path, mode: str) -> None:
    import os

    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET")
    root = tmp_path / "skills"
    leaky = write_skill(root, "leaky")
    os.symlink(secret, leaky / "secret.txt")
    os.symlink(secret.parent, leaky / "outdir")
    write_skill(root, "pdf-forms", files={"templates/a.md": "a"})
    server, _ = create_server(root)
    async with connect(server, mode) as wire:
        for raw in HOSTILE_URIS:
            uri = raw.format(root=tmp_path)
            with pytest.raises(MCPError) as info:
                await wire.read_bytes(uri)
            assert info.value.error.code == -32602, uri
            assert "TOP SECRET" not in str(info.value.error)
            for directory in [uri, uri.rsplit("/", 1)[0]]:
                if directory.startswith("skill://") and directory.count("/") > 2:
                    try:
                        listed = await wire.read_directory(directory)
                    except MCPError as exc:
                        assert exc.error.code == -32602
                    else:
                        assert all("secret" not in c["uri"] for c in listed["resources"]), directory


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_text_and_blob_contents_are_the_digested_bytes(examples_server: Any, mode: str) -> None:
    server, ext = examples_server
    async with connect(server, mode) as wire:
        result = await wire.client.read_resource("skill://pdf-forms/assets/blank-form.pdf")
        (content,) = result.contents
        assert content.mime_type == "application/pdf"
        raw = base64.b64decode(content.blob)  # type: ignore[union-attr]
        assert raw == ext.catalog.static_file("skill://pdf-forms/assets/blank-form.pdf").data  # type: ignore[union-attr]
        text = await wire.client.read_resource("skill://code-review/scripts/diffstat.py")
        assert text.contents[0].mime_type == "text/x-python"
        assert hasattr(text.contents[0], "text")


@pytest.mark.anyio
async def test_non_utf8_text_file_is_served_as_blob(tmp_path: Path) -> None:
    write_skill(tmp_path, "latin", files={"notes.txt": "caf\xe9".encode("latin-1")})
    server, _ = create_server(tmp_path)
    async with connect(server, "auto") as wire:
        data, mime = await wire.read_bytes("skill://latin/notes.txt")
        assert data == b"caf\xe9"
        assert mime == "text/plain"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_resources_list_carries_skill_md_metadata_and_user_resources(examples_dir: Path, mode: str) -> None:
    server, _ = create_server(examples_dir)

    @server.resource("note://hello", name="hello")
    def hello() -> str:
        return "hi"

    async with connect(server, mode) as wire:
        listed = {str(r.uri): r for r in (await wire.client.list_resources()).resources}
        assert "note://hello" in listed
        skill_md = listed["skill://job-search/SKILL.md"]
        assert skill_md.name == "job-search"
        assert skill_md.mime_type == "text/markdown"
        assert skill_md.description
        assert skill_md.description.startswith("Find")
        assert "skill://pdf-forms/templates/regional/eu-invoice.md" in listed
        assert (await wire.client.read_resource("note://hello")).contents[0].text == "hi"  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_dynamic_skill_rendered_per_request(mode: str) -> None:
    calls: list[SkillRequest] = []

    def body(request: SkillRequest) -> str:
        calls.append(request)
        return f"# Daily\nrendered for {request.protocol_version}\n"

    async def files(request: SkillRequest) -> dict[str, str | bytes]:
        return {"data/today.json": '{"ok": true}', "data/raw.bin": b"\x00\x01"}

    daily = DynamicSkill(
        "reports/daily", description="Today's report", body=body, files=files, frontmatter={"license": "MIT"}
    )
    server, _ = create_server(daily)
    async with connect(server, mode) as wire:
        (entry,) = (await wire.list_skills())["skills"]
        assert entry == {
            "uri": "skill://reports/daily/SKILL.md",
            "frontmatter": {"name": "daily", "description": "Today's report", "license": "MIT"},
            "resources": "dynamic",
        }
        data, _ = await wire.read_bytes(entry["uri"])
        parsed = parse_skill_md(data.decode())
        assert parsed.frontmatter == entry["frontmatter"]
        assert wire.client.protocol_version in parsed.body
        listing = (await wire.read_directory("skill://reports/daily"))["resources"]
        assert {c["name"] for c in listing} == {"SKILL.md", "data"}
        inner = (await wire.read_directory("skill://reports/daily/data"))["resources"]
        assert {c["name"] for c in inner} == {"today.json", "raw.bin"}
        assert (await wire.read_bytes("skill://reports/daily/data/raw.bin"))[0] == b"\x00\x01"
        with pytest.raises(MCPError) as info:
            await wire.read_directory("skill://reports/daily/SKILL.md")
        assert info.value.error.code == -32602
        assert (await wire.read_directory("skill://reports"))["resources"][0]["uri"] == "skill://reports/daily"
    assert len(calls) >= 2


@pytest.mark.anyio
async def test_extension_without_middleware_says_how_to_fix() -> None:
    ext = SkillsExtension(DynamicSkill("x", description="d", body=lambda r: ""))
    server: MCPServer[Any] = MCPServer("bare", extensions=[ext])
    async with connect(server, "auto") as wire:
        with pytest.raises(MCPError) as info:
            await wire.list_skills()
        assert "middleware=[skills.middleware]" in info.value.error.message


# -- reload and change notifications -----------------------------------------------------------------


@pytest.mark.anyio
async def test_reload_diff_and_modern_listen_event(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    server, ext = create_server(tmp_path)
    async with connect(server, "auto") as wire:
        assert [e["uri"] for e in await list_all(wire)] == ["skill://one/SKILL.md"]
        async with wire.client.listen(resources_list_changed=True) as sub:
            write_skill(tmp_path, "two")
            diff = await ext.reload()
            assert diff.added == ("skill://two/SKILL.md",)
            assert not diff.removed
            assert not diff.changed
            with anyio.fail_after(5):
                event = await sub.__anext__()
            assert type(event).__name__ == "ResourcesListChanged"
        assert [e["uri"] for e in await list_all(wire)] == ["skill://one/SKILL.md", "skill://two/SKILL.md"]
        assert not await ext.reload()  # nothing changed: empty diff


@pytest.mark.anyio
async def test_reload_notifies_legacy_session_over_http(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    server, ext = create_server(tmp_path)
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification) and message.method == "notifications/resources/list_changed":
            got.set()

    async with running_http(server, ext) as url, connect(url, "legacy", message_handler=on_message) as wire:
        await check_listed(wire, ["skill://one/SKILL.md"])
        (tmp_path / "one" / "extra.md").write_text("new")
        diff = await ext.reload()
        assert diff.changed == ("skill://one/SKILL.md",)
        with anyio.fail_after(5):
            await got.wait()
        entry = (await wire.get_skill("skill://one/SKILL.md"))["skill"]
        assert "skill://one/extra.md" in {r["uri"] for r in entry["resources"]}


async def check_listed(wire: SkillsWire, uris: list[str]) -> None:
    assert [e["uri"] for e in await list_all(wire)] == uris


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_http_core_path_both_eras(examples_dir: Path, mode: str, version: str) -> None:
    server, ext = create_server(examples_dir, page_size=3)
    async with running_http(server, ext) as url, connect(url, mode) as wire:
        await check_core_path(wire, version)


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_stdio_core_path_both_eras(examples_dir: Path, mode: str, version: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "skilldeck.cli", "serve", str(examples_dir), "--page-size", "3"]
    )
    async with connect(params, mode) as wire:
        await check_core_path(wire, version)


@pytest.mark.anyio
async def test_stdio_watch_reload_notifies_legacy_client(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification) and message.method == "notifications/resources/list_changed":
            got.set()

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "skilldeck.cli", "serve", str(tmp_path), "--watch"]
    )
    async with connect(params, "legacy", message_handler=on_message) as wire:
        await check_listed(wire, ["skill://one/SKILL.md"])
        await anyio.sleep(0.5)  # let the watcher start
        write_skill(tmp_path, "two")
        with anyio.fail_after(15):
            await got.wait()
        await check_listed(wire, ["skill://one/SKILL.md", "skill://two/SKILL.md"])


@pytest.mark.anyio
async def test_closed_legacy_sessions_are_forgotten(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    server, ext = create_server(tmp_path)
    async with running_http(server, ext) as url:
        for _ in range(5):
            async with connect(url, "legacy") as wire:
                await wire.list_skills()
                assert ext.legacy_session_count >= 1
        with anyio.fail_after(5):
            while ext.legacy_session_count:
                await anyio.sleep(0.05)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_resources_list_pages_skill_files_after_the_servers_own(examples_dir: Path, mode: str) -> None:
    server, ext = create_server(examples_dir, directory_page_size=5)

    @server.resource("note://hello", name="hello")
    def hello() -> str:
        return "hi"

    async with connect(server, mode) as wire:
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            result = await wire.client.list_resources(cursor=cursor)
            pages += 1
            assert len(result.resources) <= 6  # the server's own one, then at most 5 skill files a page
            seen += [str(r.uri) for r in result.resources]
            cursor = result.next_cursor
            if not cursor:
                break
        assert seen[0] == "note://hello"
        files = {f.uri for f in ext.catalog.files}
        assert set(seen[1:]) == files
        assert len(seen) == len(set(seen))
        assert pages == 1 + (len(files) - 1) // 5
        with pytest.raises(MCPError) as info:
            await wire.client.list_resources(cursor="skilldeck-files:!!forged!!")
        assert info.value.error.code == -32602


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


# Cursors no skilldeck server handed out: valid base64 of something else, the bare base64 of a key
# (no format tag), our tag before a non-URI, and a huge one.
FOREIGN_CURSORS = [
    _b64("foreign"),
    _b64("skill://job-search/SKILL.md"),
    "sd1." + _b64("page=2"),
    "sd1." + "A" * 100_000,
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_foreign_cursors_answer_invalid_params_on_every_paged_method(examples_dir: Path, mode: str) -> None:
    server, _ = create_server(examples_dir, page_size=2, directory_page_size=2)
    async with connect(server, mode) as wire:
        issued = (await wire.list_skills())["nextCursor"]
        assert (await wire.list_skills(issued))["skills"]  # ours still work
        for cursor in FOREIGN_CURSORS:
            calls = [
                lambda c=cursor: wire.list_skills(c),
                lambda c=cursor: wire.read_directory("skill://pdf-forms", c),
                lambda c=cursor: wire.client.list_resources(cursor="skilldeck-files:" + c),
            ]
            for call in calls:
                with pytest.raises(MCPError) as info:
                    await call()
                assert info.value.error.code == -32602, cursor[:40]
                assert "nextCursor exactly as received" in info.value.error.message
                assert len(info.value.error.message) < 200


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_long_uris_are_echoed_cut_to_200_characters(examples_dir: Path, mode: str) -> None:
    from skilldeck.serving._policy import Policy

    server, ext = create_server(examples_dir, policy=Policy())
    long_skill = "skill://" + "a" * 100_000 + "/SKILL.md"
    async with connect(server, mode) as wire:
        calls = [
            lambda: wire.get_skill(long_skill),
            lambda: wire.client.read_resource(long_skill),
            lambda: wire.client.read_resource("note://" + "b" * 100_000),
            lambda: wire.read_directory(long_skill.removesuffix("/SKILL.md")),
            lambda: wire.read_directory("skill://pdf-forms/SKILL.md" + "/x" * 50_000),
            lambda: wire.client.call_tool("t" * 100_000, {}),
        ]
        for call in calls:
            with pytest.raises(MCPError) as info:
                await call()
            error = info.value.error
            assert error.code == -32602
            assert len(error.message) < 300, error.message[:80]
            assert "\u2026" in error.message
            if isinstance(error.data, dict) and "uri" in error.data:
                assert len(error.data["uri"]) == 200
                assert error.data["uri"].endswith("\u2026")
    assert len(ext.audit.refused()[-1]["tool"]) == 200  # kept as short in the audit log


@pytest.mark.anyio
async def test_a_kept_reply_is_served_only_in_the_era_it_was_built_for(examples_dir: Path) -> None:
    """The server keeps each skills/list page it built; a page shaped for one protocol version (2026-07-28
    names the server in ``_meta``, 2025-11-25 does not) never answers the other."""
    server, _ = create_server(examples_dir, page_size=3)
    server_info = "io.modelcontextprotocol/serverInfo"
    for mode in ["legacy", "auto", "legacy", "auto"]:  # each era asks after the other's page was kept
        async with connect(server, mode) as wire:
            first = await wire.request("skills/list", {})
            second = await wire.request("skills/list", {"cursor": first["nextCursor"]})
            for page in (first, second):
                assert (server_info in page["_meta"]) is (mode == "auto"), (mode, page["_meta"])
