"""Progressive injection: a server's catalog change reaches a connected skilldeck host while it runs.

The server is the context-aware fixture shop (``tests/server/fixtures``): skills under a policy,
real tools. The host connects (in-process, or over streamable HTTP with a bearer token), builds its
cards and a tool gate, and watches (``host.watch``). Then the server swaps its policy
(``extension.set_policy``) or reloads its skills (``extension.reload``); the change must arrive
as a notification — a ``subscriptions/listen`` event on 2026-07-28, a ``notifications/*/list_changed``
on 2025-11-25 — and the host's registry, its next selection and its gate must follow.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from skilldeck.ask import snapshot_from_host
from skilldeck.host import Host, HttpServer, InProcessServer, ServerSpec
from skilldeck.host._watch import CatalogChange, ChannelState, HostWatcher
from skilldeck.select._cards import Card, build_cards
from skilldeck.select._gate import ToolGate, ToolNotActive, ToolNotListed
from skilldeck.server import SkillsExtension, create_server, serve_http
from skilldeck.serving._policy import Policy, parse_policy

FIXTURES = Path(__file__).resolve().parents[1] / "server" / "fixtures"
PACK = FIXTURES / "tenant-skills"
POLICY = yaml.safe_load((FIXTURES / "tenant-policy.yaml").read_text())

ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
LABEL = "shop"
TOKEN = "tok-alice"
ALICE = AccessToken(
    token=TOKEN, client_id="host", scopes=[], subject="alice", claims={"tenant": "acme", "roles": ["user"]}
)


class OneTokenVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        return ALICE if token == TOKEN else None


def policy_v1() -> Policy:
    return parse_policy(POLICY)


def policy_v2() -> Policy:
    """Users lose ``issue_refund`` in ``orders`` and gain ``refund-audit`` (with ``audit_refunds``)."""
    doc = yaml.safe_load(yaml.safe_dump(POLICY))
    doc["skills"]["orders"]["routes"][1]["allow"] = ["lookup_order"]
    doc["skills"]["refund-audit"]["routes"].append({"when": {"roles": ["user"]}, "allow": "all"})
    return parse_policy(doc)


def build_shop(pack: Path = PACK, *, http: bool = False) -> tuple[MCPServer[Any], SkillsExtension, list[str]]:
    auth: dict[str, Any] = {}
    if http:
        auth = {
            "token_verifier": OneTokenVerifier(),
            "auth": AuthSettings(
                issuer_url="https://auth.example.test",
                resource_server_url="http://127.0.0.1/mcp",
                validate_token_resource=False,
            ),
        }
    server, ext = create_server(pack, policy=policy_v1(), **auth)
    ran: list[str] = []

    @server.tool()
    def lookup_order(order_id: str) -> str:
        ran.append("lookup_order")
        return "shipped"

    @server.tool()
    def issue_refund(order_id: str, amount: float) -> str:
        ran.append("issue_refund")
        return "refunded"

    @server.tool()
    def cancel_order(order_id: str) -> str:
        ran.append("cancel_order")
        return "cancelled"

    @server.tool()
    def audit_refunds() -> str:
        ran.append("audit_refunds")
        return "ok"

    @server.tool()
    def ping() -> str:
        return "pong"

    return server, ext, ran


@asynccontextmanager
async def shop_host(
    mode: str, transport: str, pack: Path = PACK
) -> AsyncIterator[tuple[Host, SkillsExtension, list[str]]]:
    server, ext, ran = build_shop(pack, http=transport == "http")
    if transport == "in-process":
        async with Host([ServerSpec(LABEL, InProcessServer(server))], mode=mode, read_timeout=10) as host:
            yield host, ext, ran
        return
    async with anyio.create_task_group() as tg:
        ready: list[str] = []
        tg.start_soon(lambda: serve_http(server, ext, port=0, on_ready=ready.append))
        with anyio.fail_after(10):
            while not ready:
                await anyio.sleep(0.02)
        spec = ServerSpec(LABEL, HttpServer(ready[0], headers={"Authorization": f"Bearer {TOKEN}"}))
        async with Host([spec], mode=mode, read_timeout=10) as host:
            yield host, ext, ran
        tg.cancel_scope.cancel()


def cards_by_name(host: Host) -> dict[str, Card]:
    return {c.name: c for c in build_cards(snapshot_from_host(host)).cards if c.kind == "skill"}


def gate_for(host: Host, card: Card) -> ToolGate:
    listed = {LABEL: {str(t.tool["name"]): dict(t.tool) for t in host.registry.tools(LABEL)}}
    return ToolGate(listed, active=card.tools)


async def wait_until_watched(host: Host, ext: SkillsExtension, watcher: HostWatcher, version: str) -> None:
    """The server knows the session it must notify: a listen stream (2026-07-28) or a legacy session."""
    assert watcher.channels == {LABEL: "listen" if version == "2026-07-28" else "notifications"}
    if version != "2026-07-28":
        with anyio.fail_after(5):
            while not ext.legacy_session_count:
                await anyio.sleep(0.02)


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["in-process", "http"])
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_policy_change_reaches_the_host_its_selection_and_its_gate(
    mode: str, version: str, transport: str
) -> None:
    async with shop_host(mode, transport) as (host, ext, ran):
        assert host.connections.connected[LABEL].protocol_version == version
        orders = cards_by_name(host)["orders"]
        assert set(orders.tools) == {(LABEL, "lookup_order"), (LABEL, "issue_refund")}
        assert "refund-audit" not in cards_by_name(host)
        gate = gate_for(host, orders)
        assert gate.check("issue_refund", {"order_id": "A-1", "amount": 5}) == (LABEL, "issue_refund")
        heard: list[CatalogChange] = []

        async with host.watch(gates=[gate], on_change=heard.append) as watcher:
            await wait_until_watched(host, ext, watcher, version)
            mark = len(watcher.changes)
            await ext.set_policy(policy_v2())
            with anyio.fail_after(10):
                change = await watcher.wait_for(lambda c: "issue_refund" in c.tools_removed, after=mark)

            assert change.label == LABEL
            assert change.reasons & {"tools", "resources"}
            assert change.error is None
            assert change in heard
            # The registry was re-indexed from the server's new answer...
            assert {t.name for t in host.registry.tools(LABEL)} == {"lookup_order", "audit_refunds", "ping"}
            uris = {r.entry.uri for r in host.registry.skills}
            assert "skill://refund-audit/SKILL.md" in uris
            # ...so the next selection sees the new catalog...
            cards = cards_by_name(host)
            assert cards["orders"].tools == ((LABEL, "lookup_order"),)
            assert cards["refund-audit"].tools == ((LABEL, "audit_refunds"),)
            # ...and the gate refuses the tool that disappeared, before anything is sent.
            assert gate.active == [(LABEL, "lookup_order")]
            with pytest.raises(ToolNotListed):
                gate.check("issue_refund", {"order_id": "A-1", "amount": 5})
            with pytest.raises(ToolNotActive):  # listed now, but not in the active skill's set
                gate.check("audit_refunds", {})
            assert gate.check("lookup_order", {"order_id": "A-1"}) == (LABEL, "lookup_order")
            gate.activate(cards["refund-audit"].tools)
            assert gate.check("audit_refunds", {}) == (LABEL, "audit_refunds")

            # The server enforces the same on its side, whatever a client sends.
            with pytest.raises(MCPError):
                await host.connections.connected[LABEL].client.call_tool(
                    "issue_refund", {"order_id": "A-1", "amount": 5}
                )
        assert "issue_refund" not in ran


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_skill_reload_reaches_the_host(tmp_path: Path, mode: str, version: str) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack)
    async with shop_host(mode, "in-process", pack) as (host, ext, _), host.watch() as watcher:
        await wait_until_watched(host, ext, watcher, version)
        assert "returns" not in cards_by_name(host)
        returns = pack / "returns"
        returns.mkdir()
        (returns / "SKILL.md").write_text(
            "---\nname: returns\ndescription: Take back goods a customer returns.\n"
            "metadata:\n  dev.skilldeck/tools: lookup_order\n---\n# Returns\n"
        )
        shutil.rmtree(pack / "style-guide")
        (pack / "orders" / "references" / "faq.md").write_text("# FAQ\n\nNew answers.\n")
        mark = len(watcher.changes)
        diff = await ext.reload()
        assert diff.added == ("skill://returns/SKILL.md",)
        with anyio.fail_after(10):
            change = await watcher.wait_for(lambda c: bool(c.skills_added), after=mark)
        assert change.skills_added == ("skill://returns/SKILL.md",)
        assert change.skills_removed == ("skill://style-guide/SKILL.md",)
        assert change.skills_changed == ("skill://orders/SKILL.md",)  # its manifest lists the new faq digest
        assert not change.tools_added
        assert not change.tools_removed
        cards = cards_by_name(host)
        assert cards["returns"].tools == ((LABEL, "lookup_order"),)
        assert "style-guide" not in cards
        record = host.registry.get(LABEL, "skill://orders/SKILL.md")
        assert record is not None
        loaded = await host.load(record)  # verified against the re-listed entry
        assert loaded.uri == "skill://orders/SKILL.md"
        assert "New answers." in (await host.read(loaded, "references/faq.md")).decode()


@pytest.mark.anyio
async def test_only_the_changed_server_is_relisted_and_failures_do_not_stop_the_watcher() -> None:
    shop, ext, _ = build_shop()
    other = MCPServer("other")

    @other.tool()
    def weather(city: str) -> str:
        return "sunny"

    specs = [ServerSpec(LABEL, InProcessServer(shop)), ServerSpec("other", InProcessServer(other))]
    calls: list[str] = []

    def flaky(change: CatalogChange) -> None:
        calls.append(change.label)
        raise RuntimeError("a broken callback must not stop the watcher")

    async with Host(specs, read_timeout=10) as host, host.watch(on_change=flaky) as watcher:
        assert watcher.channels[LABEL] == "listen"
        before = [t.tool for t in host.registry.tools("other")]
        await ext.set_policy(policy_v2())
        with anyio.fail_after(10):  # both events (resources, then tools) handled, in one re-list or two
            await watcher.wait_for(lambda c: "tools" in c.reasons)
        assert any("issue_refund" in c.tools_removed for c in watcher.changes)
        # A re-list on request with nothing new is an empty change; it still reaches the callback.
        mark = len(watcher.changes)
        watcher.request_refresh(LABEL)
        with anyio.fail_after(10):
            again = await watcher.wait_for(after=mark)
        assert not again
        assert again.reasons == frozenset({"requested"})
        assert {c.label for c in watcher.changes} == {LABEL}
        assert set(calls) == {LABEL}
        assert [t.tool for t in host.registry.tools("other")] == before
        assert host.report.servers[LABEL].tools == 3
        # A server that is gone is reported on its change, and the registry keeps what it had.
        host.connections.close("other")
        mark = len(watcher.changes)
        watcher.request_refresh("other")
        with anyio.fail_after(10):
            gone = await watcher.wait_for(after=mark)
        assert gone.error == "server 'other' is not connected"
        assert [t.tool for t in host.registry.tools("other")] == before


@pytest.mark.anyio
async def test_the_host_relists_one_server_itself_without_a_watcher() -> None:
    """Re-listing is the host's own method: the registry, the report and the change, with no watcher running."""
    shop, ext, _ = build_shop()
    async with Host([ServerSpec(LABEL, InProcessServer(shop))], read_timeout=10) as host:
        assert "issue_refund" in {t.name for t in host.registry.tools(LABEL)}
        await ext.set_policy(policy_v2())
        change = await host.relist(LABEL, ["requested"])
        assert change.reasons == frozenset({"requested"})
        assert change.tools_removed == ("issue_refund",)
        assert change.tools_added == ("audit_refunds",)
        assert change.error is None
        assert change.tools is not None
        assert {t["name"] for t in change.tools} == {"lookup_order", "audit_refunds", "ping"}
        assert {t.name for t in host.registry.tools(LABEL)} == {"lookup_order", "audit_refunds", "ping"}
        assert host.report.servers[LABEL].tools == 3
        assert not await host.relist(LABEL)  # nothing new: an empty change
        missing = await host.relist("nowhere")
        assert missing.error == "server 'nowhere' is not connected"


@pytest.mark.anyio
@pytest.mark.parametrize("drain", [0.0, 30.0])
async def test_a_relist_under_way_when_its_server_is_removed_writes_nothing_back(drain: float) -> None:
    """A reload removes a server (draining its calls or not) while the watcher re-lists it: the listing,
    of a session that is gone, is dropped; before, the removed server's tools came back into the registry."""
    hold, reached, go = [False], anyio.Event(), anyio.Event()

    async def held(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/list" and hold[0]:
            reached.set()
            await go.wait()
        return await call_next(ctx)

    server: MCPServer[Any] = MCPServer("held", middleware=[held])

    @server.tool()
    def ping() -> str:
        return "pong"

    async with Host([ServerSpec("held", InProcessServer(server))], read_timeout=10) as host:
        assert [t.name for t in host.registry.tools("held")] == ["ping"]
        hold[0] = True
        changes: list[CatalogChange] = []

        async def relist() -> None:
            changes.append(await host.relist("held", ["changed"]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(relist)
            with anyio.fail_after(10):  # a guard: the listing reaches the server at once
                await reached.wait()
            host.remove_server("held", drain=drain)
            go.set()
        (change,) = changes
        assert change.error == "server 'held' was removed or reconnected while it was listed"
        assert list(host.registry.tools("held")) == []
        assert "held" not in host.connections.connected


@pytest.mark.anyio
async def test_a_channel_state_is_an_enum_and_its_reason_is_kept_apart() -> None:
    other = MCPServer("other")

    @other.tool()
    def weather(city: str) -> str:
        return "sunny"

    async with Host([ServerSpec("other", InProcessServer(other))], read_timeout=10) as host, host.watch() as watcher:
        assert watcher.channels == {"other": ChannelState.LISTEN}
        assert watcher.channel_reasons == {}
        host.connections.close("other")
        with anyio.fail_after(10):
            while watcher.channels["other"] is ChannelState.LISTEN:
                await anyio.sleep(0.02)
        assert watcher.channels["other"] is ChannelState.CLOSED
        assert watcher.channel_reasons == {"other": "the server is no longer connected"}
