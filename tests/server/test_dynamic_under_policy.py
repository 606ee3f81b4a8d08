"""Dynamic skills under a policy: admission and tool metadata apply to them as to static skills.

Two dynamic skills join the tenant fixture pack: ``reports/daily-report`` (with a data file in a
sub-folder) is admitted to administrators only, and ``live/live-orders`` names two tools in
``metadata["dev.skilldeck/tools"]``, routed ``lookup_order`` to users and both to administrators.
A caller who is not admitted must not see a dynamic skill in any method (``skills/list``,
``skills/get``, ``resources/read`` of its files, ``resources/directory/read`` of its folders and of
the prefix folder above it), and nothing is rendered for them. The tools metadata of a dynamic skill
is narrowed per caller, in its entry and in the ``SKILL.md`` it renders alike (hosts compare the two).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from mcp.server.auth.settings import AuthSettings
from mcp.shared.exceptions import MCPError

from skilldeck.errors import NotServedError
from skilldeck.host._wire import SkillsWire
from skilldeck.server import DynamicSkill, SkillRequest, create_server
from skilldeck.server._audience import catalog_for
from skilldeck.server._catalog import Catalog
from skilldeck.serving._policy import Caller, Policy, parse_policy
from skilldeck.skill._frontmatter import parse_skill_md
from skilldeck.skill._pack import DirectorySource

from .test_context_aware_http import ADMIN_B, TOKENS, USER_A, Shop, StaticTokenVerifier, connect, serving

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PACK = FIXTURES / "tenant-skills"
POLICY_FILE = FIXTURES / "tenant-policy.yaml"
TOOLS_KEY = "dev.skilldeck/tools"

REPORT = "skill://reports/daily-report/SKILL.md"
REPORT_DATA = "skill://reports/daily-report/data/today.csv"
REPORT_FOLDERS = ("skill://reports/daily-report", "skill://reports/daily-report/data", "skill://reports")
LIVE = "skill://live/live-orders/SKILL.md"
ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]

USER = Caller(subject="alice", tenant="acme", roles=frozenset({"user"}), authenticated=True)
ADMIN = Caller(subject="bob", tenant="globex", roles=frozenset({"admin"}), authenticated=True)


class Rendered:
    """Counts what the dynamic skills render, so a test can tell that nothing was generated."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def report(self, request: SkillRequest) -> str:
        self.calls.append("daily-report")
        return "# Today's figures (administrators only)\n"

    def report_files(self, request: SkillRequest) -> dict[str, str]:
        self.calls.append("daily-report files")
        return {"data/today.csv": "refunds,42\n"}

    def live(self, request: SkillRequest) -> str:
        self.calls.append("live-orders")
        return "# Live orders\n"


def dynamic_skills(rendered: Rendered) -> list[DynamicSkill]:
    return [
        DynamicSkill(
            "reports/daily-report",
            description="Today's refund figures for administrators.",
            body=rendered.report,
            files=rendered.report_files,
        ),
        DynamicSkill(
            "live/live-orders",
            description="Orders placed in the last hour.",
            body=rendered.live,
            frontmatter={"metadata": {TOOLS_KEY: "lookup_order cancel_order", "owner": "ops"}},
        ),
    ]


def policy() -> Policy:
    document = yaml.safe_load(POLICY_FILE.read_text())
    document["skills"]["daily-report"] = {"admit": {"roles": ["admin"]}}
    document["skills"]["live-orders"] = {
        "tools": ["lookup_order", "cancel_order"],
        "routes": [
            {"when": {"roles": ["admin"]}, "allow": "all"},
            {"when": {"roles": ["user"]}, "allow": ["lookup_order"]},
        ],
    }
    return parse_policy(document)


def build(rendered: Rendered) -> Shop:
    verifier = StaticTokenVerifier(TOKENS)
    server, ext = create_server(
        PACK,
        *dynamic_skills(rendered),
        policy=policy(),
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url="https://auth.example.test",
            resource_server_url="http://127.0.0.1/mcp",
            validate_token_resource=False,
            required_scopes=None,
        ),
    )
    for name in ("lookup_order", "issue_refund", "cancel_order", "audit_refunds", "ping"):
        server.add_tool(lambda: "ok", name=name, description=f"{name} (a stub the policy check needs)")
    return Shop(server, ext, verifier)


async def expect_invalid(call: Any, *args: Any) -> None:
    with pytest.raises(MCPError) as info:
        await call(*args)
    assert info.value.error.code == -32602, info.value.error


async def check_not_admitted(wire: SkillsWire) -> None:
    """Every method answers as if the administrators' report did not exist."""
    listed = [e["uri"] for e in (await wire.list_skills())["skills"]]
    assert REPORT not in listed
    assert LIVE in listed
    await expect_invalid(wire.get_skill, REPORT)
    for uri in (REPORT, REPORT_DATA):
        await expect_invalid(wire.read_bytes, uri)
    for folder in REPORT_FOLDERS:
        await expect_invalid(wire.read_directory, folder)
    resources = {str(r.uri) for r in (await wire.client.list_resources()).resources}
    assert not [uri for uri in resources if "daily-report" in uri]


async def check_live_orders(wire: SkillsWire, tools: str) -> None:
    """The entry and the rendered SKILL.md name the same, routed, tools."""
    entry = (await wire.get_skill(LIVE))["skill"]
    assert entry["resources"] == "dynamic"
    assert entry["frontmatter"]["metadata"] == {TOOLS_KEY: tools, "owner": "ops"}
    body, _ = await wire.read_bytes(LIVE)
    assert parse_skill_md(body.decode()).frontmatter == entry["frontmatter"]


# -- the catalog one caller sees ---------------------------------------------------------------------------


def test_catalog_for_admits_dynamic_skills_like_static_ones() -> None:
    rendered = Rendered()
    loaded = DirectorySource(PACK).load()
    base = Catalog(loaded.skills, dynamic_skills(rendered), loaded.problems)
    user = catalog_for(base, policy(), USER)
    assert REPORT not in {e.uri for e in user.entries}
    with pytest.raises(NotServedError):
        user.get(REPORT)
    assert user.dynamic_skill_for(REPORT) is None
    assert user.dynamic_skill_for(REPORT_DATA) is None
    for folder in REPORT_FOLDERS:
        assert user.dynamic_root(folder) is None
        assert not user.is_directory(folder)
    assert [d.name for d in user.dynamic_skills] == ["live-orders"]

    admin = catalog_for(base, policy(), ADMIN)
    assert {REPORT, LIVE} <= {e.uri for e in admin.entries}
    found = admin.dynamic_skill_for(REPORT_DATA)
    assert found is not None
    assert found[1] == "data/today.csv"
    assert rendered.calls == []  # deciding who sees what renders nothing


def test_catalog_for_narrows_a_dynamic_skills_tool_metadata_per_caller() -> None:
    loaded = DirectorySource(PACK).load()
    base = Catalog(loaded.skills, dynamic_skills(Rendered()), loaded.problems)
    assert base.get(LIVE).frontmatter["metadata"][TOOLS_KEY] == "lookup_order cancel_order"
    user = catalog_for(base, policy(), USER)
    assert user.get(LIVE).frontmatter == {
        "name": "live-orders",
        "description": "Orders placed in the last hour.",
        "metadata": {TOOLS_KEY: "lookup_order", "owner": "ops"},
    }
    assert user.get(LIVE).is_dynamic
    admin = catalog_for(base, policy(), ADMIN)
    assert admin.get(LIVE).frontmatter["metadata"][TOOLS_KEY] == "lookup_order cancel_order"
    # A caller no route matches gets no tools, and the skill is hidden (its tools are all denied).
    stranger = catalog_for(base, policy(), Caller(tenant="initech", authenticated=True))
    assert LIVE not in {e.uri for e in stranger.entries}
    assert base.get(LIVE).frontmatter["metadata"][TOOLS_KEY] == "lookup_order cancel_order"  # base untouched


# -- in process (the policy's default identity: an acme user) --------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_in_process_default_identity_never_sees_a_dynamic_skill_it_is_not_admitted_to(
    mode: str, version: str
) -> None:
    rendered = Rendered()
    shop = build(rendered)
    async with Client(shop.server, mode=mode, cache=None) as client:
        assert client.protocol_version == version
        wire = SkillsWire(client)
        await check_not_admitted(wire)
        await check_live_orders(wire, "lookup_order")
    assert "daily-report" not in rendered.calls
    assert "daily-report files" not in rendered.calls


# -- over streamable HTTP, the caller from the verified token ------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_http_dynamic_skills_follow_the_token(mode: str, version: str) -> None:
    rendered = Rendered()
    shop = build(rendered)
    async with serving(shop) as url:
        async with connect(url, USER_A, mode) as alice:
            assert alice.protocol_version == version
            wire = SkillsWire(alice)
            await check_not_admitted(wire)
            await check_live_orders(wire, "lookup_order")
        assert "daily-report" not in rendered.calls
        assert "daily-report files" not in rendered.calls

        async with connect(url, ADMIN_B, mode) as bob:
            wire = SkillsWire(bob)
            listed = [e["uri"] for e in (await wire.list_skills())["skills"]]
            assert {REPORT, LIVE} <= set(listed)
            assert (await wire.get_skill(REPORT))["skill"]["resources"] == "dynamic"
            assert (await wire.read_bytes(REPORT_DATA))[0] == b"refunds,42\n"
            assert "administrators only" in (await wire.read_bytes(REPORT))[0].decode()
            children = (await wire.read_directory("skill://reports/daily-report"))["resources"]
            assert [c["name"] for c in children] == ["SKILL.md", "data"]
            assert [c["name"] for c in (await wire.read_directory("skill://reports"))["resources"]] == ["daily-report"]
            await check_live_orders(wire, "lookup_order cancel_order")
