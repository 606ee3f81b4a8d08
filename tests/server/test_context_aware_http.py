"""Context-aware skills end to end: streamable HTTP on loopback, a real ``TokenVerifier``, real SDK clients.

Two identities come from bearer tokens the verifier maps to ``AccessToken``s: Alice, a regular
user of tenant ``acme`` (``roles: [user]``), and Bob, an administrator of tenant ``globex``
(``roles: [admin]``). The server is ``create_server(fixtures/tenant-skills, policy=..., token_verifier=...,
auth=AuthSettings(...))`` with real tools; ``cancel_order`` and ``audit_refunds`` are routed to
administrators only. Every check runs in both protocol eras (``auto`` negotiates 2026-07-28 with
this server, ``legacy`` is the 2025-11-25 handshake).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.caching import CacheConfig, InMemoryResponseCacheStore
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from skilldeck.host._wire import SkillsWire
from skilldeck.server import SkillsExtension, create_server, serve_http
from skilldeck.serving._policy import Policy, load_policy
from skilldeck.skill._frontmatter import parse_skill_md
from skilldeck.skill._manifest import digest_of

from .helpers import POST_HEADERS, initialize_request

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PACK = FIXTURES / "tenant-skills"
POLICY_FILE = FIXTURES / "tenant-policy.yaml"

ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]

ORDERS = "skill://orders/SKILL.md"
FAQ = "skill://orders/references/faq.md"
ESCALATION = "skill://orders/escalation/SKILL.md"
AUDIT = "skill://refund-audit/SKILL.md"
STYLE = "skill://style-guide/SKILL.md"
TOOLS_KEY = "dev.skilldeck/tools"

USER_A = "tok-alice-acme-user"
ADMIN_B = "tok-bob-globex-admin"
TOKENS = {
    USER_A: AccessToken(
        token=USER_A,
        client_id="support-app",
        scopes=["mcp"],
        subject="alice",
        claims={"iss": "https://auth.example.test", "tenant": "acme", "roles": ["user"]},
    ),
    ADMIN_B: AccessToken(
        token=ADMIN_B,
        client_id="support-app",
        scopes=["mcp"],
        subject="bob",
        claims={"iss": "https://auth.example.test", "tenant": "globex", "roles": ["admin"]},
    ),
}

# What a user might put in a request's `_meta` to claim more than the token grants.
FORGED_META = {
    "dev.skilldeck/roles": ["admin"],
    "dev.skilldeck/tenant": "globex",
    "roles": ["admin"],
    "tenant": "globex",
    "dev.skilldeck/locale": "de-CH",
}


class StaticTokenVerifier:
    """A real ``TokenVerifier``: known bearer tokens map to their ``AccessToken``, anything else is refused."""

    def __init__(self, tokens: dict[str, AccessToken]) -> None:
        self.tokens = tokens
        self.seen: list[str] = []

    async def verify_token(self, token: str) -> AccessToken | None:
        self.seen.append(token)
        return self.tokens.get(token)


@dataclass
class Shop:
    server: MCPServer[Any]
    ext: SkillsExtension
    verifier: StaticTokenVerifier
    calls: list[tuple[str, str]] = field(default_factory=list)


def build_shop(policy: Policy | None = None) -> Shop:
    verifier = StaticTokenVerifier(TOKENS)
    server, ext = create_server(
        PACK,
        policy=policy or load_policy(POLICY_FILE),
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url="https://auth.example.test",
            resource_server_url="http://127.0.0.1/mcp",
            validate_token_resource=False,
            required_scopes=None,
        ),
    )
    shop = Shop(server, ext, verifier)

    @server.tool()
    def lookup_order(order_id: str) -> str:
        """Find an order by id."""
        shop.calls.append(("lookup_order", order_id))
        return f"order {order_id}: shipped"

    @server.tool()
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund part or all of an order."""
        shop.calls.append(("issue_refund", order_id))
        return f"refunded {amount} on {order_id}"

    @server.tool()
    def cancel_order(order_id: str) -> str:
        """Cancel an order (administrators only)."""
        shop.calls.append(("cancel_order", order_id))
        return f"cancelled {order_id}"

    @server.tool()
    def audit_refunds() -> str:
        """List this month's refunds (administrators only)."""
        shop.calls.append(("audit_refunds", ""))
        return "no unusual refunds"

    @server.tool()
    def ping() -> str:
        """Public health check."""
        return "pong"

    @server.tool()
    def internal_debug() -> str:
        """Named by no skill and not public: nobody may list or call it."""
        shop.calls.append(("internal_debug", ""))
        return "debug"

    return shop


@asynccontextmanager
async def serving(shop: Shop) -> AsyncIterator[str]:
    """``serve_http`` on a free loopback port for the block; yields the URL."""
    async with anyio.create_task_group() as tg:
        ready: list[str] = []
        tg.start_soon(lambda: serve_http(shop.server, shop.ext, port=0, on_ready=ready.append))
        with anyio.fail_after(10):
            while not ready:
                await anyio.sleep(0.02)
        yield ready[0]
        tg.cancel_scope.cancel()


@asynccontextmanager
async def connect(url: str, token: str, mode: str, **options: Any) -> AsyncIterator[Client]:
    """An SDK client sending ``Authorization: Bearer <token>`` on every request."""
    options.setdefault("cache", None)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, follow_redirects=False) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=10, **options) as client,
    ):
        yield client


async def listed_uris(wire: SkillsWire, meta: dict[str, Any] | None = None) -> list[str]:
    params: dict[str, Any] = {"_meta": meta} if meta else {}
    result = await wire.request("skills/list", params)
    assert "nextCursor" not in result
    return [e["uri"] for e in result["skills"]]


async def tool_names(client: Client, meta: dict[str, Any] | None = None) -> set[str]:
    return {t.name for t in (await client.list_tools(meta=meta)).tools}


async def check_entries_match_served_bytes(wire: SkillsWire) -> dict[str, dict[str, Any]]:
    """Every listed entry equals its skills/get, and every manifest digest and size is of the bytes served."""
    entries = {e["uri"]: e for e in (await wire.list_skills())["skills"]}
    for uri, entry in entries.items():
        assert (await wire.get_skill(uri))["skill"] == entry
        for resource in entry["resources"]:
            data, _ = await wire.read_bytes(resource["uri"])
            assert digest_of(data) == resource["digest"], resource["uri"]
            assert len(data) == resource["size"], resource["uri"]
        body, _ = await wire.read_bytes(uri)
        assert parse_skill_md(body.decode()).frontmatter == entry["frontmatter"]
    return entries


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


async def expect_invalid(call: Any, *args: Any) -> MCPError:
    with pytest.raises(MCPError) as info:
        await call(*args)
    assert info.value.error.code == -32602
    return info.value


# -- what each identity sees -----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_each_identity_sees_exactly_what_the_policy_says(mode: str, version: str) -> None:
    shop = build_shop()
    async with serving(shop) as url:
        async with connect(url, USER_A, mode) as alice:
            assert alice.protocol_version == version
            wire = SkillsWire(alice)
            # Admission: the admin-only nested skill and the skill whose tools are all denied are absent;
            # the instruction-only style guide is there.
            assert await listed_uris(wire) == [ORDERS, STYLE]
            entries = await check_entries_match_served_bytes(wire)
            orders = entries[ORDERS]
            assert [r["uri"] for r in orders["resources"]] == [ORDERS, FAQ]  # the nested skill's files too
            assert orders["frontmatter"]["metadata"][TOOLS_KEY] == "lookup_order issue_refund"
            body = (await wire.read_bytes(ORDERS))[0].decode()
            assert "# Orders for acme" in body
            assert "refunds up to 100." in body
            assert "help@acme.test" in body
            assert "globex" not in body
            assert "help@acme.test" in (await wire.read_bytes(FAQ))[0].decode()
            assert "# Style guide for Acme" in (await wire.read_bytes(STYLE))[0].decode()
            for hidden in (ESCALATION, AUDIT):
                await expect_invalid(wire.get_skill, hidden)
                await expect_invalid(wire.read_bytes, hidden)
            for folder in ("skill://orders/escalation", "skill://refund-audit"):
                await expect_invalid(wire.read_directory, folder)
            children = (await wire.read_directory("skill://orders"))["resources"]
            assert [c["name"] for c in children] == ["SKILL.md", "references"]
            resources = {str(r.uri) for r in (await alice.list_resources()).resources}
            assert resources == {ORDERS, FAQ, STYLE}
            # Tool routing: only what the user's routes grant, plus the public tool.
            assert await tool_names(alice) == {"lookup_order", "issue_refund", "ping"}

        async with connect(url, ADMIN_B, mode) as bob:
            wire = SkillsWire(bob)
            assert await listed_uris(wire) == [ORDERS, ESCALATION, AUDIT, STYLE]
            entries = await check_entries_match_served_bytes(wire)
            assert ESCALATION in {r["uri"] for r in entries[ORDERS]["resources"]}
            assert entries[ORDERS]["frontmatter"]["metadata"][TOOLS_KEY] == "lookup_order issue_refund cancel_order"
            assert entries[AUDIT]["frontmatter"]["metadata"][TOOLS_KEY] == "audit_refunds"
            body = (await wire.read_bytes(ORDERS))[0].decode()
            assert "# Orders for globex" in body
            assert "refunds up to 5000." in body
            assert "desk@globex.test" in body
            assert "# Style guide for Globex" in (await wire.read_bytes(STYLE))[0].decode()
            assert "desk@globex.test" in (await wire.read_bytes(ESCALATION))[0].decode()
            assert await tool_names(bob) == {"lookup_order", "issue_refund", "cancel_order", "audit_refunds", "ping"}
            # Same URI, different variant: Bob's orders entry has digests of his own bytes.
            assert entries[ORDERS]["resources"][0]["digest"] != orders["resources"][0]["digest"]
    # The tokens were really verified, on every request.
    assert {USER_A, ADMIN_B} <= set(shop.verifier.seen)
    assert shop.calls == []


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_admin_tool_is_refused_to_a_user_not_run_and_audited(mode: str, version: str) -> None:
    shop = build_shop()
    async with serving(shop) as url:
        async with connect(url, USER_A, mode) as alice:
            assert alice.protocol_version == version
            assert "cancel_order" not in await tool_names(alice)
            for meta in (None, FORGED_META):
                error = await expect_invalid(alice.call_tool, "cancel_order", {"order_id": "A-1"}, None, None)
                assert "cancel_order" in error.error.message
                with pytest.raises(MCPError) as info:
                    await alice.call_tool("cancel_order", {"order_id": "A-2"}, meta=meta)
                assert info.value.error.code == -32602
            # Tools no route grants are refused to everybody, and so is a made-up name.
            await expect_invalid(alice.call_tool, "internal_debug", {}, None, None)
            await expect_invalid(alice.call_tool, "audit_refunds", {}, None, None)
            # What the user may call runs normally.
            result = await alice.call_tool("lookup_order", {"order_id": "A-3"})
            assert not result.is_error
        assert shop.calls == [("lookup_order", "A-3")]  # nothing refused ever ran
        refused = [r for r in shop.ext.audit.refused() if r["subject"] == "alice"]
        assert [r["tool"] for r in refused] == [
            "cancel_order",
            "cancel_order",
            "cancel_order",
            "cancel_order",
            "internal_debug",
            "audit_refunds",
        ]
        for record in refused:
            assert record["tenant"] == "acme"
            assert record["roles"] == ["user"]  # the token's roles, not the forged `_meta`
            assert record["authenticated"] is True
            assert record["client_id"] == "support-app"
            assert record["reason"] == "not granted by any admitted skill"
        allowed = [r for r in shop.ext.audit.records if r["decision"] == "allowed"]
        assert [(r["subject"], r["tool"]) for r in allowed] == [("alice", "lookup_order")]

        async with connect(url, ADMIN_B, mode) as bob:
            assert not (await bob.call_tool("cancel_order", {"order_id": "B-1"})).is_error
            await expect_invalid(bob.call_tool, "internal_debug", {}, None, None)
        assert shop.calls[-1] == ("cancel_order", "B-1")
        assert ("internal_debug", "") not in shop.calls
        assert shop.ext.audit.records[-2]["subject"] == "bob"
        assert shop.ext.audit.records[-2]["decision"] == "allowed"


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_meta_hints_never_widen_permissions(mode: str, version: str) -> None:
    shop = build_shop()
    async with serving(shop) as url, connect(url, USER_A, mode) as alice:
        assert alice.protocol_version == version
        wire = SkillsWire(alice)
        assert await listed_uris(wire, FORGED_META) == [ORDERS, STYLE]
        assert await tool_names(alice, FORGED_META) == {"lookup_order", "issue_refund", "ping"}
        await expect_invalid(wire.request, "skills/get", {"uri": ESCALATION, "_meta": FORGED_META})
        with pytest.raises(MCPError) as hidden:
            await alice.read_resource(ESCALATION, meta=FORGED_META)
        assert hidden.value.error.code == -32602, hidden.value.error  # as for a skill that is not there
        # The `_meta` did arrive: the locale hint (presentation only) changed the wording...
        style = await alice.read_resource(STYLE, meta=FORGED_META)
        text = style.contents[0].text  # type: ignore[union-attr]
        assert "Locale: de-CH." in text
        # ...while the tenant and the routes stayed the token's.
        assert "# Style guide for Acme" in text
        orders = (await alice.read_resource(ORDERS, meta=FORGED_META)).contents[0].text  # type: ignore[union-attr]
        assert parse_skill_md(orders).frontmatter["metadata"][TOOLS_KEY] == "lookup_order issue_refund"
        assert "help@acme.test" in orders
    assert all(r["roles"] == ["user"] and r["tenant"] == "acme" for r in shop.ext.audit.records)


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_tools_list_varies_by_the_token_on_each_request(mode: str, version: str) -> None:
    """2026-07-28: a tools/list result may vary with the authorization on the request (and is then private).

    The same connection re-lists after its bearer token changes: on 2026-07-28 the answer follows the
    new token; a 2025-11-25 session belongs to the principal that opened it and refuses another one.
    """
    shop = build_shop()
    async with (
        serving(shop) as url,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {USER_A}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None, read_timeout_seconds=10) as client,
    ):
        assert client.protocol_version == version
        first = await client.list_tools()
        assert {t.name for t in first.tools} == {"lookup_order", "issue_refund", "ping"}
        http.headers["Authorization"] = f"Bearer {ADMIN_B}"
        if version == "2026-07-28":
            assert first.cache_scope == "private"
            assert await tool_names(client) == {"lookup_order", "issue_refund", "cancel_order", "audit_refunds", "ping"}
            assert await listed_uris(SkillsWire(client)) == [ORDERS, ESCALATION, AUDIT, STYLE]
        else:
            with pytest.raises(MCPError, match="Session not found"):
                await client.list_tools()


@pytest.mark.anyio
async def test_per_caller_skill_content_is_private_to_caches() -> None:
    shop = build_shop()
    store = InMemoryResponseCacheStore()
    async with serving(shop) as url:

        def shared(partition: str) -> CacheConfig:
            return CacheConfig(store=store, partition=partition, target_id=url, share_public=True)

        async with connect(url, ADMIN_B, "auto", cache=shared("bob")) as bob:
            admin_text = (await bob.read_resource(ORDERS)).contents[0].text  # type: ignore[union-attr]
            assert "desk@globex.test" in admin_text
            listing = await SkillsWire(bob).list_skills()
        async with connect(url, USER_A, "auto", cache=shared("alice")) as alice:
            user_text = (await alice.read_resource(ORDERS)).contents[0].text  # type: ignore[union-attr]
        # Alice must get her own variant, not Bob's cached one (today she gets Bob's).
        assert "help@acme.test" in user_text
        assert "cancel_order" not in parse_skill_md(user_text).frontmatter["metadata"][TOOLS_KEY]
        assert listing["cacheScope"] == "private"


@pytest.mark.anyio
async def test_no_token_or_an_unknown_token_is_401() -> None:
    shop = build_shop()
    async with serving(shop) as url, httpx2.AsyncClient() as http:
        for extra in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic YWxpY2U6cHc="}):
            response = await http.post(url, json=initialize_request(), headers={**POST_HEADERS, **extra})
            assert response.status_code == 401, (extra, response.text)
            assert response.headers.get("www-authenticate", "").startswith("Bearer")
        for mode in ("auto", "legacy"):
            with pytest.raises(BaseException) as info:  # noqa: PT011 - the SDK wraps it in task-group exceptions
                async with Client(url, mode=mode, cache=None, read_timeout_seconds=5):
                    pass
            assert any(isinstance(e, MCPError) for e in leaves(info.value)), info.value
    assert shop.calls == []


# -- no token at all: stdio and in-process use the policy's default identity ----------------------------------

STDIO_POLICY = """\
default_identity: {subject: desk, tenant: globex, roles: [user]}
skills:
  escalation:
    admit: {roles: [admin]}
  style-guide:
    instruction_only: true
    variables:
      - when: {tenants: [globex]}
        set: {brand: Globex}
"""


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_stdio_answers_for_the_default_identity(tmp_path: Path, mode: str, version: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(STDIO_POLICY)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "skilldeck.cli", "serve", str(PACK), "--policy", str(policy)]
    )
    async with Client(params, mode=mode, cache=None, read_timeout_seconds=20) as client:
        assert client.protocol_version == version
        wire = SkillsWire(client)
        # `orders` and `refund-audit` have no rule in this policy: served to everyone, exactly as written.
        assert await listed_uris(wire, FORGED_META) == [ORDERS, AUDIT, STYLE]
        await check_entries_match_served_bytes(wire)
        assert "# Style guide for Globex" in (await wire.read_bytes(STYLE))[0].decode()
        assert "# Orders for {{ tenant }}" in (await wire.read_bytes(ORDERS))[0].decode()
        await expect_invalid(wire.get_skill, ESCALATION)


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_in_process_answers_for_the_default_identity(mode: str, version: str) -> None:
    shop = build_shop()  # default identity of the fixture policy: acme, roles [user]
    async with Client(shop.server, mode=mode, cache=None) as client:
        assert client.protocol_version == version
        assert await listed_uris(SkillsWire(client)) == [ORDERS, STYLE]
        assert await tool_names(client) == {"lookup_order", "issue_refund", "ping"}
        await expect_invalid(client.call_tool, "cancel_order", {"order_id": "L-1"}, None, None)
    assert shop.calls == []
    (record,) = shop.ext.audit.refused()
    assert record["subject"] == "local"
    assert record["authenticated"] is False
