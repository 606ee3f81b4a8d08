"""What replicas share without Redis: the request-state key and name, the catalog version, and a clear legacy 404."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import InputRequiredResult

from skilldeck.server import create_server
from skilldeck.server._app import serve_http
from skilldeck.server._extension import CATALOG_VERSION_META, SkillsExtension
from skilldeck.serving._sessions import UNKNOWN_SESSION_MESSAGE

from ..server.helpers import POST_HEADERS, initialize_request, write_skill

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "replica-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
KEY = "k" * 40


@asynccontextmanager
async def serving(server: MCPServer[Any], ext: SkillsExtension) -> AsyncIterator[str]:
    async with anyio.create_task_group() as tg:
        ready: list[str] = []
        tg.start_soon(lambda: serve_http(server, ext, port=0, on_ready=ready.append))
        with anyio.fail_after(15):
            while not ready:
                await anyio.sleep(0.02)
        yield ready[0]
        tg.cancel_scope.cancel()


async def modern(http: httpx2.AsyncClient, url: str, method: str, params: dict[str, Any], name: str = "") -> Any:
    """One raw 2026-07-28 request; the JSON-RPC message answering it."""
    headers = {**POST_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": META}}
    reply = await http.post(url, json=body, headers=headers)
    text = reply.text
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def replica(pack: Path, **options: Any) -> tuple[MCPServer[Any], SkillsExtension]:
    """A skills server with a two-round tool: the first call asks for input, the retry answers from its state."""
    server, ext = create_server(pack, **options)

    async def two_rounds(ctx: Context) -> Any:
        if ctx.request_state is None:
            return InputRequiredResult(request_state="round-1 of two_rounds")
        return f"resumed from {ctx.request_state}"

    server.add_tool(two_rounds, name="two_rounds")
    return server, ext


async def test_request_state_sealed_by_one_replica_is_accepted_by_another(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    a, ext_a = replica(tmp_path, request_state_keys=[KEY])
    b, ext_b = replica(tmp_path, request_state_keys=[KEY])
    lone, ext_lone = replica(tmp_path)  # a process-local key, as before replicas
    async with (
        serving(a, ext_a) as url_a,
        serving(b, ext_b) as url_b,
        serving(lone, ext_lone) as url_lone,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        call = {"name": "two_rounds", "arguments": {}}
        first = (await modern(http, url_a, "tools/call", call, "two_rounds"))["result"]
        assert first["resultType"] == "input_required"
        sealed = first["requestState"]
        assert "round-1" not in sealed  # sealed, not readable by the client
        retry = {**call, "requestState": sealed}
        second = (await modern(http, url_b, "tools/call", retry, "two_rounds"))["result"]
        assert second["content"][0]["text"] == "resumed from round-1 of two_rounds"
        refused = await modern(http, url_lone, "tools/call", retry, "two_rounds")
        assert refused["error"]["message"] == "Invalid or expired requestState"


async def test_every_skills_list_page_carries_the_catalog_version(tmp_path: Path) -> None:
    for name in ("one", "two", "three"):
        write_skill(tmp_path / "pack", name)
    shutil.copytree(tmp_path / "pack", tmp_path / "copy")
    a, ext_a = create_server(tmp_path / "pack", page_size=1)
    b, ext_b = create_server(tmp_path / "copy", page_size=1)
    async with serving(a, ext_a) as url_a, serving(b, ext_b) as url_b, httpx2.AsyncClient(timeout=10) as http:
        versions = set()
        cursor: str | None = None
        for _ in range(3):
            page = (await modern(http, url_a, "skills/list", {"cursor": cursor} if cursor else {}))["result"]
            versions.add(page["_meta"][CATALOG_VERSION_META])
            cursor = page.get("nextCursor")
        assert cursor is None
        [version] = versions  # one version on every page
        assert version.startswith("sha256:")
        other = (await modern(http, url_b, "skills/list", {}))["result"]
        assert other["_meta"][CATALOG_VERSION_META] == version  # same catalog on another replica: same version
        (tmp_path / "copy" / "two" / "SKILL.md").write_text(
            "---\nname: two\ndescription: changed\n---\nA new body.\n", encoding="utf-8"
        )
        await ext_b.reload()
        changed = (await modern(http, url_b, "skills/list", {}))["result"]
        assert changed["_meta"][CATALOG_VERSION_META] != version  # a rollout in progress is visible


async def test_a_legacy_session_on_a_replica_that_does_not_hold_it_is_told_why(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    a, ext_a = create_server(tmp_path)
    b, ext_b = create_server(tmp_path)
    async with serving(a, ext_a) as url_a, serving(b, ext_b) as url_b, httpx2.AsyncClient(timeout=10) as http:
        opened = await http.post(url_a, json=initialize_request(), headers=POST_HEADERS)
        session = opened.headers["mcp-session-id"]
        headers = {**POST_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        held = await http.post(url_a, json=ping, headers=headers)
        assert held.status_code == 200
        with anyio.fail_after(5):  # answered at once, not left hanging
            elsewhere = await http.post(url_b, json=ping, headers=headers)
        assert elsewhere.status_code == 404
        message = elsewhere.json()["error"]["message"]
        assert message == UNKNOWN_SESSION_MESSAGE
        assert "Mcp-Session-Id" in message
        assert "initialize" in message
