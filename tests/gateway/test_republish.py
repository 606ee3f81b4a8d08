"""Skills re-published: the gateway serves every upstream's skills under ``skill://LABEL/...``.

Two real upstream skills servers run in-process (the example pack as ``ex``, the tenant fixture
pack as ``tenant``); the gateway's host connects to them, and the official Python SDK client
talks to the gateway in both protocol eras. Digests are checked against the upstream's own
listing, reads are checked to be lazy (no byte fetched by listing), a tampered upstream file is
an error and never bytes, and an upstream change reaches the client.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import PromptsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import ServerNotification

from skilldeck.gateway import GatewayMiddleware, GatewayService, create_gateway
from skilldeck.gateway._app import follow_upstreams
from skilldeck.gateway._republish import RepublishedSkills
from skilldeck.host import Host
from skilldeck.host._config import InProcessServer, ServerSpec
from skilldeck.host._registry import SkillRecord
from skilldeck.host._wire import SkillsWire, declared_skills_settings
from skilldeck.server import Catalog, DynamicSkill, SkillsExtension, create_server
from skilldeck.server._remote import RemoteSkill
from skilldeck.serving._policy import parse_policy
from skilldeck.skill._frontmatter import parse_skill_md
from skilldeck.skill._manifest import build_entry, digest_of, entry_from_wire
from skilldeck.skill._pack import StaticSkill

from ..server.helpers import write_skill

REPO = Path(__file__).resolve().parents[2]
TENANT_PACK = REPO / "tests" / "server" / "fixtures" / "tenant-skills"
ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]

REFUNDS = "skill://ex/acme/billing/refunds/SKILL.md"
REFUNDS_POLICY = "skill://ex/acme/billing/refunds/policy.md"
FAQ = "skill://tenant/orders/references/faq.md"
ESCALATION = "skill://tenant/orders/escalation/SKILL.md"


@dataclass
class Gateway:
    server: MCPServer[Any]
    middleware: GatewayMiddleware
    service: GatewayService
    host: Host
    tenant: SkillsExtension
    tenant_pack: Path

    @property
    def skills(self) -> RepublishedSkills:
        assert self.middleware.skills is not None
        return self.middleware.skills


@asynccontextmanager
async def gateway(
    tmp_path: Path, *, policy: str | None = None, allow_dynamic: bool = False, dynamic: bool = False
) -> AsyncIterator[Gateway]:
    pack = tmp_path / "tenant-skills"
    shutil.copytree(TENANT_PACK, pack)
    ex, _ = create_server(REPO / "examples" / "skills")
    extras = [DynamicSkill("report", description="A report made per request.", body=lambda _: "Today: fine.")]
    tenant_server, tenant = create_server(pack, *(extras if dynamic else []))
    specs = [ServerSpec("ex", InProcessServer(ex)), ServerSpec("tenant", InProcessServer(tenant_server))]
    async with Host(specs, allow_dynamic=allow_dynamic, read_timeout=10) as host:
        service = GatewayService(host, policy=parse_policy_text(policy) if policy else None)
        server, middleware = create_gateway(service)
        yield Gateway(server, middleware, service, host, tenant, pack)


def parse_policy_text(text: str) -> Any:
    import yaml

    return parse_policy(yaml.safe_load(text))


@asynccontextmanager
async def connect(target: Any, mode: str, **kwargs: Any) -> AsyncIterator[SkillsWire]:
    async with Client(target, mode=mode, cache=None, **kwargs) as client:
        yield SkillsWire(client)


async def list_all(wire: SkillsWire) -> list[dict[str, Any]]:
    entries, cursor = [], None
    for _ in range(100):
        page = await wire.list_skills(cursor)
        entries.extend(page["skills"])
        cursor = page.get("nextCursor")
        if not cursor:
            return entries
    raise AssertionError("listing did not end")


def served_uri(label: str, upstream_uri: str) -> str:
    return upstream_uri.replace("skill://", f"skill://{label}/", 1)


def expected_entries(host: Host) -> dict[str, dict[str, Any]]:
    """Every upstream entry as the gateway must serve it: URIs under the label, all else unchanged."""
    out = {}
    for record in host.registry.skills:
        wire = record.entry.to_wire()
        wire["uri"] = served_uri(record.label, wire["uri"])
        wire["resources"] = [{**r, "uri": served_uri(record.label, r["uri"])} for r in wire["resources"]]
        out[wire["uri"]] = wire
    return out


def fetched(host: Host) -> int:
    return sum(host.loader(label).used_bytes for label in ("ex", "tenant"))


async def expect_error(code: int, call: Any) -> MCPError:
    with pytest.raises(MCPError) as info:
        await call
    assert info.value.error.code == code, info.value.error
    return info.value


# -- every method, both eras ------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_every_upstream_skill_is_served_under_its_label(tmp_path: Path, mode: str, version: str) -> None:
    async with gateway(tmp_path) as gw:
        gw.skills.extension.page_size = 5  # 12 skills: three pages
        async with connect(gw.server, mode) as wire:
            assert wire.client.protocol_version == version
            assert declared_skills_settings(wire.client) == {"directoryRead": True}
            tools = await wire.client.list_tools()
            assert [t.name for t in tools.tools] == ["find", "load", "read_skill_file", "call"]

            expected = expected_entries(gw.host)
            assert {r.label for r in gw.host.registry.skills} == {"ex", "tenant"}
            first = await wire.list_skills()
            assert len(first["skills"]) == 5
            assert first["nextCursor"]
            assert (first["ttlMs"], first["cacheScope"]) == (60_000, "public")
            listed = await list_all(wire)
            assert {e["uri"]: e for e in listed} == expected  # digests, sizes, frontmatter as upstream
            assert len(listed) == len(expected) == 12
            assert fetched(gw.host) == 0  # listing fetches nothing

            for entry in listed:
                got = await wire.get_skill(entry["uri"])
                assert got["skill"] == entry
            assert fetched(gw.host) == 0

            for uri in (REFUNDS, REFUNDS_POLICY, FAQ):
                data, mime = await wire.read_bytes(uri)
                resource = next(r for e in listed for r in e["resources"] if r["uri"] == uri)
                assert (len(data), digest_of(data)) == (resource["size"], resource["digest"])
                assert mime == "text/markdown"
            data, _ = await wire.read_bytes(REFUNDS)
            assert parse_skill_md(data.decode()).frontmatter == expected[REFUNDS]["frontmatter"]
            assert fetched(gw.host) > 0

            top = await wire.read_directory("skill://tenant")
            assert [c["uri"] for c in top["resources"]] == [
                "skill://tenant/orders",
                "skill://tenant/refund-audit",
                "skill://tenant/style-guide",
            ]
            orders = await wire.read_directory("skill://tenant/orders")
            assert {c["uri"] for c in orders["resources"]} == {
                "skill://tenant/orders/SKILL.md",
                "skill://tenant/orders/escalation",
                "skill://tenant/orders/references",
            }
            prefix = await wire.read_directory("skill://ex/acme")
            assert [c["uri"] for c in prefix["resources"]] == ["skill://ex/acme/billing"]

            resources, cursor = [], None
            for _ in range(50):
                page = await wire.client.list_resources(cursor=cursor)
                resources += [str(r.uri) for r in page.resources]
                cursor = page.next_cursor
                if not cursor:
                    break
            every_file = {r["uri"] for e in expected.values() for r in e["resources"]}
            assert set(resources) == every_file

            for call in (
                wire.get_skill("skill://ex/no-such-skill/SKILL.md"),
                wire.get_skill("skill://job-search/SKILL.md"),  # the upstream's own URI is not served here
                wire.read_bytes("skill://ex/job-search/no-such-file.md"),
                wire.read_directory("skill://ex/no-such-folder"),
                wire.list_skills("sd1.forged"),
            ):
                await expect_error(-32602, call)
            long_uri = "skill://ex/" + "a" * 100_000 + "/SKILL.md"
            error = await expect_error(-32602, wire.get_skill(long_uri))
            assert len(error.error.message) < 1_000


# -- verified before passed on ----------------------------------------------------------------------


def tampered(catalog: Catalog, skill_uri: str, rel: str, data: bytes) -> Catalog:
    """``catalog`` with one file's bytes replaced while its entry still lists the old digest."""
    static = []
    for entry in catalog.entries:
        skill = catalog.static_skill(entry.uri)
        assert skill is not None
        if entry.uri == skill_uri:
            skill = StaticSkill(skill.skill_path, skill.entry, {**skill.files, rel: data}, skill.origin)
        static.append(skill)
    return Catalog(static)


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_a_tampered_upstream_file_is_an_error_never_bytes(tmp_path: Path, mode: str, version: str) -> None:
    async with gateway(tmp_path) as gw, connect(gw.server, mode) as wire:
        catalog = gw.tenant.catalog
        gw.tenant.service.swap(tampered(catalog, "skill://orders/SKILL.md", "references/faq.md", b"send me money"))
        error = await expect_error(-32603, wire.read_bytes(FAQ))
        assert "mismatch" in error.error.message, error.error.message
        assert "send me money" not in str(error.error)
        # the rest of the skill (and the other upstream) is still served, verified
        data, _ = await wire.read_bytes("skill://tenant/orders/SKILL.md")
        assert data.startswith(b"---\nname: orders")
        data, _ = await wire.read_bytes(REFUNDS)
        assert b"name: refunds" in data


class LyingSource:
    """A remote source whose fetch returns other bytes than its entry lists (a broken adapter, say)."""

    def __init__(self, lie: bool) -> None:
        self.lie = lie
        files = {"SKILL.md": b"---\nname: notes\ndescription: Notes.\n---\n# Notes\n", "a.md": b"real"}
        self.files = files
        self.entry = build_entry("far/notes", parse_skill_md(files["SKILL.md"].decode()).frontmatter, files)

    async def fetch(self, uri: str) -> bytes:
        rel = uri.rsplit("/", 1)[-1]
        return b"fake" if self.lie and rel == "a.md" else self.files[rel]

    def remote_skills(self) -> list[RemoteSkill]:
        return [RemoteSkill("far/notes", self.entry, self.fetch, origin="test")]


@pytest.mark.anyio
@pytest.mark.parametrize("lie", [False, True])
async def test_the_server_checks_remote_bytes_against_the_entry_itself(lie: bool) -> None:
    source = LyingSource(lie)
    ext = SkillsExtension(source)
    server: MCPServer[Any] = MCPServer("t", extensions=[ext], middleware=[ext.middleware])
    async with connect(server, "auto") as wire:
        assert [e["uri"] for e in await list_all(wire)] == ["skill://far/notes/SKILL.md"]
        if lie:
            error = await expect_error(-32603, wire.read_bytes("skill://far/notes/a.md"))
            assert "the entry lists 4 bytes" in error.error.message
        else:
            assert (await wire.read_bytes("skill://far/notes/a.md"))[0] == b"real"
        await expect_error(-32602, wire.read_bytes("skill://far/notes/b.md"))


# -- upstream changes -------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_an_upstream_change_is_served_and_told_to_clients(tmp_path: Path, mode: str, version: str) -> None:
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification) and message.method == "notifications/resources/list_changed":
            heard.set()

    async with gateway(tmp_path) as gw:
        follow = follow_upstreams(gw.service, gw.middleware)
        async with gw.host.watch(on_change=follow), connect(gw.server, mode, message_handler=on_message) as wire:
            old_faq, _ = await wire.read_bytes(FAQ)
            assert gw.skills.held == 1

            async def change_upstream() -> None:
                write_skill(gw.tenant_pack, "returns", "Handle product returns.", {"labels.md": "print a label"})
                (gw.tenant_pack / "orders" / "references" / "faq.md").write_text("New answers.\n")
                assert await gw.tenant.reload()

            if version == "2026-07-28":
                async with wire.client.listen(resources_list_changed=True) as events:
                    await change_upstream()
                    with anyio.fail_after(10):
                        event = await events.__anext__()
                    assert type(event).__name__ == "ResourcesListChanged"
            else:
                await wire.list_skills()  # the session is remembered once it has spoken
                await change_upstream()
                with anyio.fail_after(10):
                    await heard.wait()

            listed = {e["uri"]: e for e in await list_all(wire)}
            assert "skill://tenant/returns/SKILL.md" in listed
            assert listed == expected_entries(gw.host)
            data, _ = await wire.read_bytes("skill://tenant/returns/labels.md")
            assert data == b"print a label"
            new_faq, _ = await wire.read_bytes(FAQ)
            assert new_faq == b"New answers.\n" != old_faq
            orders = listed["skill://tenant/orders/SKILL.md"]
            assert digest_of(new_faq) in {r["digest"] for r in orders["resources"]}


# -- policy -----------------------------------------------------------------------------------------

POLICY = """\
default_identity: {subject: local, roles: [user]}
skills:
  tenant/escalation:
    admit: {roles: [admin]}
"""


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_a_skill_the_policy_does_not_admit_is_neither_seen_nor_read(
    tmp_path: Path, mode: str, version: str
) -> None:
    async with gateway(tmp_path, policy=POLICY) as gw, connect(gw.server, mode) as wire:
        page = await wire.list_skills()
        assert page["cacheScope"] == "private"  # answers depend on the caller
        listed = {e["uri"]: e for e in await list_all(wire)}
        assert ESCALATION not in listed
        assert len(listed) == 11
        orders = listed["skill://tenant/orders/SKILL.md"]
        assert not [r for r in orders["resources"] if "/escalation/" in r["uri"]]  # not readable through orders
        await expect_error(-32602, wire.get_skill(ESCALATION))
        await expect_error(-32602, wire.read_bytes(ESCALATION))
        children = await wire.read_directory("skill://tenant/orders")
        assert "skill://tenant/orders/escalation" not in {c["uri"] for c in children["resources"]}
        data, _ = await wire.read_bytes(FAQ)  # what is admitted still reads
        assert data

        gw.service.policy = None  # the gateway's policy in force is the one applied, request by request
        assert ESCALATION in {e["uri"] for e in await list_all(wire)}
        data, _ = await wire.read_bytes(ESCALATION)
        assert b"name: escalation" in data


# -- dynamic skills, unsafe paths, bounds -----------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("allow_dynamic", [False, True])
async def test_dynamic_upstream_skills_only_with_the_hosts_opt_in(tmp_path: Path, allow_dynamic: bool) -> None:
    async with gateway(tmp_path, allow_dynamic=allow_dynamic, dynamic=True) as gw, connect(gw.server, "auto") as wire:
        listed = {e["uri"]: e for e in await list_all(wire)}
        uri = "skill://tenant/report/SKILL.md"
        if not allow_dynamic:
            assert uri not in listed
            await expect_error(-32602, wire.read_bytes(uri))
            return
        assert listed[uri]["resources"] == "dynamic"
        data, _ = await wire.read_bytes(uri)
        assert parse_skill_md(data.decode()).body.strip() == "Today: fine."
        await expect_error(-32602, wire.read_directory("skill://tenant/report"))


def test_upstream_paths_that_would_leave_their_place_are_not_republished() -> None:
    def record(uri: str, name: str) -> SkillRecord:
        raw = {"uri": uri, "frontmatter": {"name": name, "description": "d"}, "resources": "dynamic"}
        return SkillRecord("up", entry_from_wire(raw))

    assert RepublishedSkills._served(record("skill://a/%2e%2e/x/SKILL.md", "x")) is None
    assert RepublishedSkills._served(record("skill://a//x/SKILL.md", "x")) is None
    assert RepublishedSkills._served(record("repo://a/x/SKILL.md", "x")) is None
    served = RepublishedSkills._served(record("skill://a%20b/x/SKILL.md", "x"))
    assert served is not None
    path, entry, upstream = served
    assert (path, entry.uri) == ("up/a b/x", "skill://up/a%20b/x/SKILL.md")
    assert upstream("skill://up/a%20b/x/more.md") == "skill://a%20b/x/more.md"
    listed = entry_from_wire(
        {
            "uri": "skill://a/x/SKILL.md",
            "frontmatter": {"name": "x", "description": "d"},
            "resources": [
                {"uri": "skill://a/x/SKILL.md", "digest": "sha256:" + "0" * 64, "size": 1},
                {"uri": "skill://a/x/%2e%2e/y.md", "digest": "sha256:" + "0" * 64, "size": 1},
            ],
        }
    )
    assert RepublishedSkills._served(SkillRecord("up", listed)) is None


@pytest.mark.anyio
async def test_verified_skills_held_between_reads_are_bounded(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        skills = RepublishedSkills(gw.service, gw.host, max_held=2)
        server: MCPServer[Any] = MCPServer("t", extensions=[skills.extension], middleware=[skills.middleware])
        async with connect(server, "auto") as wire:
            for entry in (await list_all(wire))[:5]:
                await wire.read_bytes(entry["uri"])
                assert skills.held <= 2
            assert skills.held == 2
            before = fetched(gw.host)
            await wire.read_bytes(entry["uri"])  # the last one is held: its SKILL.md is not fetched again
            assert fetched(gw.host) == before


def test_remote_skill_key_defaults_to_its_name() -> None:
    files = {"SKILL.md": b"---\nname: x\ndescription: d\n---\n"}
    entry = build_entry("l/x", {"name": "x", "description": "d"}, files)

    async def fetch(uri: str) -> bytes:
        return files["SKILL.md"]

    skill = RemoteSkill("l/x", entry, fetch)
    assert skill.policy_key == "x"
    assert replace(skill, key="l/x").policy_key == "l/x"


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_one_client_reading_a_file_in_a_loop_spends_no_one_elses_budget(mode: str, version: str) -> None:
    """Verified bytes are kept by digest and repeats are served from them: the upstream is asked once. Before,
    every read fetched the file again under the upstream's budget, shared by every client, so one client reading
    a small file in a loop got every client refused every file of that upstream for the rest of the window."""
    ex, _ = create_server(REPO / "examples" / "skills")
    size = (REPO / "examples" / "skills" / "acme" / "billing" / "refunds" / "policy.md").stat().st_size
    skill_md = (REPO / "examples" / "skills" / "acme" / "billing" / "refunds" / "SKILL.md").stat().st_size
    budget = skill_md + 3 * size  # room for the skill and three reads of the file: not for fifty
    async with Host([ServerSpec("ex", InProcessServer(ex))], budget_bytes=budget, budget_window=600) as host:
        server, _ = create_gateway(GatewayService(host))
        async with connect(server, mode) as looping, connect(server, mode) as other:
            for _ in range(50):
                assert len((await looping.read_bytes(REFUNDS_POLICY))[0]) == size
            assert len((await other.read_bytes(REFUNDS_POLICY))[0]) == size
            assert len((await other.read_bytes(REFUNDS))[0]) == skill_md
        assert host.loader("ex").used_bytes == skill_md + size  # each fetched once


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_one_upstream_change_is_one_resources_list_changed(tmp_path: Path, mode: str, version: str) -> None:
    """Re-published skills and forwarded resources both change with one upstream edit: clients hear it once."""
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification):
            heard.append(message.method)

    async with gateway(tmp_path) as gw:
        followed = anyio.Event()
        follow = follow_upstreams(gw.service, gw.middleware, lambda change: followed.set())
        async with gw.host.watch(on_change=follow), connect(gw.server, mode, message_handler=on_message) as wire:
            await wire.list_skills()  # a legacy session is remembered once it has spoken
            if version == "2026-07-28":
                async with wire.client.listen(resources_list_changed=True, prompts_list_changed=True) as events:
                    write_skill(gw.tenant_pack, "returns", "Handle product returns.")
                    assert await gw.tenant.reload()
                    with anyio.fail_after(20):
                        await followed.wait()
                    await gw.middleware.subscriptions.publish(PromptsListChanged())  # the end marker
                    kinds = []
                    with anyio.fail_after(20):
                        async for event in events:
                            kinds.append(type(event).__name__)
                            if kinds[-1] == "PromptsListChanged":
                                break
                assert kinds == ["ResourcesListChanged", "PromptsListChanged"], kinds
            else:
                write_skill(gw.tenant_pack, "returns", "Handle product returns.")
                assert await gw.tenant.reload()
                with anyio.fail_after(20):
                    await followed.wait()
                await wire.list_skills()  # answered after every notification sent before it
                await anyio.sleep(0.5)
                assert heard.count("notifications/resources/list_changed") == 1, heard
