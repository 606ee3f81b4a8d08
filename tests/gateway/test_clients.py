"""The official Python SDK client drives the gateway, in both protocol eras: in-process, over HTTP, over stdio.

Over HTTP and stdio the gateway is the real CLI process (``skilldeck gateway --config FILE``) in
front of real upstream processes (the demo's ``jobs`` server and ``skilldeck serve examples/skills``
over stdio). In-process the upstreams are real ``MCPServer`` instances, including one that adds and
removes a tool mid-session and says so (the gateway re-indexes, tells legacy clients, and its gate
follows), and the host also starts a dead upstream (no such command) and a hung one (never answers
``initialize``): ``find`` and ``call`` report them while the others keep working.

Every meta-tool result is checked against the schema of its ``structuredContent``
(``META_OUTPUT_SCHEMAS``; not listed, to keep ``tools/list`` small).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged

from skilldeck.gateway import META_TOOLS, GatewayService, create_gateway
from skilldeck.host import Host, InProcessServer, ServerSpec, StdioServer

from ..server.helpers import REPO, cli_env, start_gateway, stop
from .gateway_clients_support import (
    check_structured,
    client,
    files_upstream,
    jobs_upstream,
    open_gateway,
    refusal,
    tool_calls,
)

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]
META_NAMES = [t["name"] for t in META_TOOLS]
EXAMPLES = REPO / "examples" / "skills"
# The demo's jobs server (a skill naming search_jobs, and the tools search_jobs and get_job) over stdio.
JOBS_STDIO = "from skilldeck.demo._servers import jobs_server; jobs_server().run()"


# -- in-process --------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_every_meta_tool_in_process(era: str) -> None:
    jobs, files = jobs_upstream(), files_upstream()
    notified: list[Any] = []

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            notified.append(message)

    async with open_gateway({"jobs": jobs, "files": files}) as gw, client(gw, era, message_handler=on_message) as c:
        assert c.server_capabilities.tools is not None
        assert c.server_capabilities.tools.list_changed is True
        listed = await c.list_tools()
        assert [t.name for t in listed.tools] == META_NAMES
        for tool in listed.tools:
            assert tool.output_schema is None, tool  # the front door lists no result schemas

        found = check_structured(
            "find", await c.call_tool("find", {"query": "find job openings in a city", "limit": 3})
        )
        assert found["abstain"] is False, found
        assert found["cards"][0]["id"] in ("jobs/job-search", "jobs/search_jobs"), found
        assert len(found["cards"]) <= 3
        assert all("inputSchema" not in card for card in found["cards"]), found

        loaded = check_structured("load", await c.call_tool("load", {"ids": ["jobs/job-search", "files/read_file"]}))
        assert [s["id"] for s in loaded["skills"]] == ["jobs/job-search"]
        assert loaded["skills"][0]["verified"] is True
        assert 'origin="mcp" server="jobs"' in loaded["skills"][0]["content"]
        assert [t["name"] for t in loaded["tools"]] == ["jobs/search_jobs", "files/read_file"]
        assert loaded["tools"][0]["inputSchema"]["required"] == ["query"]

        read = check_structured(
            "read_skill_file", await c.call_tool("read_skill_file", {"skill": "jobs/job-search", "path": "SKILL.md"})
        )
        assert read["uri"] == "skill://job-search/SKILL.md"
        assert "name: job-search" in read["text"]

        called = await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python", "limit": 2}})
        assert not called.is_error, called
        assert called.structured_content == {"result": "found 2 jobs for python"}
        assert [p["arguments"] for p in tool_calls(jobs)] == [{"query": "python", "limit": 2}]

        after = [t.name for t in (await c.list_tools()).tools]
        if era == "legacy":  # progressive injection, announced
            assert after == [*META_NAMES, "jobs__search_jobs", "files__read_file"], after
            injected = {t.name: t for t in (await c.list_tools()).tools}["jobs__search_jobs"]
            assert injected.input_schema == loaded["tools"][0]["inputSchema"]
            with anyio.fail_after(10):
                while not notified:
                    await anyio.sleep(0.01)
            result = await c.call_tool("files__read_file", {"path": "notes.txt"})
            assert not result.is_error, result
            assert [p["name"] for p in tool_calls(files)] == ["read_file"]
        else:  # 2026-07-28: the list never varies per connection, and nothing is announced
            assert after == META_NAMES, after
            assert notified == []


async def test_upstream_list_changed_mid_session_is_followed() -> None:
    bus = InMemorySubscriptionBus()
    changing: MCPServer[Any] = MCPServer("changing", log_level="WARNING", subscriptions=bus)

    def fresh_tool(text: str) -> str:
        """Echo text back, freshly added."""
        return f"fresh: {text}"

    @changing.tool()
    async def old_tool(text: str) -> str:
        """Echo text back, the old way."""
        return f"old: {text}"

    @changing.tool()
    async def rotate() -> str:
        """Replace old_tool with fresh_tool."""
        changing.remove_tool("old_tool")
        changing.add_tool(fresh_tool)
        await bus.publish(ToolsListChanged())
        return "rotated"

    notified: list[Any] = []

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            notified.append(message)

    async with (
        open_gateway({"changing": changing, "jobs": jobs_upstream()}, watch=True) as gw,
        client(gw, "legacy", message_handler=on_message) as legacy,
        client(gw, "modern") as modern,
    ):
        assert gw.watcher is not None
        for c in (legacy, modern):
            loaded = check_structured(
                "load", await c.call_tool("load", {"ids": ["changing/old_tool", "changing/rotate"]})
            )
            assert len(loaded["tools"]) == 2, loaded
            assert not (await c.call_tool("call", {"tool": "changing/old_tool", "arguments": {"text": "a"}})).is_error
        before = gw.watcher.change_count
        assert not (await legacy.call_tool("changing__rotate", {})).is_error
        with anyio.fail_after(10):
            await gw.watcher.wait_for(lambda ch: ch.label == "changing", after=before)
            while not notified:
                await anyio.sleep(0.01)
        names = [t.name for t in (await legacy.list_tools()).tools]
        assert "changing__old_tool" not in names, names
        assert "changing__rotate" in names, names
        for c in (legacy, modern):  # the removed tool can no longer be called, by either name
            refusal(
                await c.call_tool("call", {"tool": "changing/old_tool", "arguments": {"text": "a"}}),
                "never listed a tool named 'old_tool'",
            )
            refusal(await c.call_tool("changing__old_tool", {"text": "a"}), "never listed a tool named 'old_tool'")
            found = check_structured(
                "find", await c.call_tool("find", {"query": "echo text back freshly", "limit": 10})
            )
            assert "changing/fresh_tool" in [card["id"] for card in found["cards"]], found
            check_structured("load", await c.call_tool("load", {"ids": ["changing/fresh_tool"]}))
            result = await c.call_tool("call", {"tool": "changing/fresh_tool", "arguments": {"text": "b"}})
            assert not result.is_error, result
            assert result.structured_content == {"result": "fresh: b"}


async def test_dead_and_hung_upstreams_are_reported_while_the_others_work(tmp_path: Path) -> None:
    hung = "import sys, time; sys.stdin.readline(); time.sleep(600)"  # reads initialize, never answers
    specs = [
        ServerSpec("jobs", InProcessServer(jobs_upstream().server), timeout=10),
        ServerSpec("dead", StdioServer("skilldeck-test-no-such-command", ("--stdio",)), timeout=10),
        ServerSpec("hung", StdioServer(sys.executable, ("-c", hung)), timeout=2),
    ]
    async with Host(specs) as host:
        service = GatewayService(host, pinned=[("dead", "anything")], encoder=None)
        server, _ = create_gateway(service)
        async with Client(server, mode="legacy", cache=None) as c:
            found = check_structured("find", await c.call_tool("find", {"query": "find job openings"}))
            unavailable = {u["server"]: u["reason"] for u in found["unavailable"]}
            assert set(unavailable) == {"dead", "hung"}, found
            assert "command not found" in unavailable["dead"], unavailable
            assert "timed out" in unavailable["hung"], unavailable
            assert found["cards"], found
            text = (await c.call_tool("find", {"query": "find job openings"})).content[0]
            assert "server dead is unavailable" in getattr(text, "text", ""), text
            refusal(await c.call_tool("call", {"tool": "dead/anything", "arguments": {}}), "'dead' is down")
            check_structured("load", await c.call_tool("load", {"ids": ["jobs/job-search"]}))
            result = await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "go"}})
            assert not result.is_error, result


# -- the CLI process: over HTTP and over stdio ---------------------------------------------------------


def gateway_config(tmp_path: Path) -> Path:
    config = {
        "mcpServers": {
            "jobs": {"command": sys.executable, "args": ["-c", JOBS_STDIO]},
            "deck": {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(EXAMPLES)]},
        }
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def http_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``skilldeck gateway --config FILE --http 127.0.0.1:0`` as a process; yields its URL from the startup line."""
    tmp = tmp_path_factory.mktemp("gateway-http")
    log_path = tmp / "gateway.log"
    proc, match = start_gateway(gateway_config(tmp), log_path, "--pin", "jobs/get_job")
    try:
        assert match["up"] == match["total"] == "2", match.group(0)
        yield match["url"]
    finally:
        stop(proc)


async def drive(c: Client, era: str) -> None:
    """Every meta-tool, through a real connection (``era`` decides what tools/list must show)."""
    assert [t.name for t in (await c.list_tools()).tools] == [*META_NAMES, "jobs__get_job"]
    found = check_structured("find", await c.call_tool("find", {"query": "fill in a PDF form"}))
    assert any(card["id"] == "deck/pdf-forms" for card in found["cards"]), found
    loaded = check_structured("load", await c.call_tool("load", {"ids": ["deck/pdf-forms", "jobs/job-search"]}))
    assert [s["id"] for s in loaded["skills"]] == ["deck/pdf-forms", "jobs/job-search"], loaded
    assert all(s["verified"] for s in loaded["skills"]), loaded
    assert [t["name"] for t in loaded["tools"]] == ["jobs/search_jobs"], loaded
    read = check_structured(
        "read_skill_file",
        await c.call_tool("read_skill_file", {"skill": "deck/pdf-forms", "path": "templates/invoice.md"}),
    )
    assert read["text"].count((EXAMPLES / "pdf-forms" / "templates" / "invoice.md").read_text()) == 1, read
    result = await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "engineer", "limit": 1}})
    assert not result.is_error, result
    assert "JOB-" in json.dumps(result.structured_content), result
    pinned = await c.call_tool("jobs__get_job", {"job_id": "JOB-1005"})
    assert not pinned.is_error, pinned
    refusal(await c.call_tool("call", {"tool": "jobs/nope", "arguments": {}}), "never listed a tool named 'nope'")
    listed = [t.name for t in (await c.list_tools()).tools]
    if era == "legacy":
        assert listed == [*META_NAMES, "jobs__get_job", "jobs__search_jobs"], listed
    else:
        assert listed == [*META_NAMES, "jobs__get_job"], listed


@pytest.mark.parametrize("era", ERAS)
async def test_python_client_over_http_through_the_cli(http_gateway: str, era: str) -> None:
    meta = {"dev.skilldeck/conversation": f"http-{era}"}
    async with Client(http_gateway, mode="auto" if era == "modern" else "legacy", cache=None) as c:
        assert c.protocol_version == ("2026-07-28" if era == "modern" else "2025-11-25")
        if era == "modern":  # keep this test's activation apart from other anonymous callers
            await drive(_WithMeta(c, meta), era)  # type: ignore[arg-type]
        else:
            await drive(c, era)


class _WithMeta:
    """A client whose tool calls all carry ``meta`` (a conversation id)."""

    def __init__(self, c: Client, meta: dict[str, Any]) -> None:
        self._c, self._meta = c, meta

    async def list_tools(self) -> Any:
        return await self._c.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self._c.call_tool(name, arguments, meta=self._meta)


@pytest.mark.parametrize("era", ERAS)
async def test_python_client_over_stdio_as_a_desktop_client_starts_it(tmp_path: Path, era: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skilldeck.cli", "gateway", "--config", str(gateway_config(tmp_path)), "--pin", "jobs/get_job"],
        env=cli_env(),
        cwd=str(REPO),
    )
    async with Client(params, mode="auto" if era == "modern" else "legacy", cache=None) as c:
        await drive(c, era)


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_proxied_result_is_stamped_by_the_gateway_and_names_its_origin(era: str) -> None:
    from .gateway_clients_support import client, jobs_upstream, open_gateway

    async with open_gateway({"jobs": jobs_upstream()}) as gw, client(gw, era) as c:
        await c.call_tool("load", {"ids": ["jobs/job-search"]})
        result = await c.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}})
        assert not result.is_error, result
        meta = result.meta or {}
        assert meta.get("dev.skilldeck/server") == "jobs", meta
        stamp = meta.get("io.modelcontextprotocol/serverInfo")
        assert stamp is None or stamp.get("name") == "skilldeck-gateway", meta


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_find_takes_the_task_split_into_needs_and_gives_each_its_cards(era: str) -> None:
    from mcp.client import Client

    from skilldeck.demo._servers import demo_servers
    from skilldeck.gateway import GatewayService, create_gateway
    from skilldeck.host import Host, InProcessServer, ServerSpec

    specs = [ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()]
    async with Host(specs) as host:
        server, _ = create_gateway(GatewayService(host, encoder=None))
        async with Client(server, mode="auto" if era == "modern" else "legacy", cache=None) as c:
            needs = ["find senior Java roles in Costa Rica", "open an issue in the tracker for the hiring team"]
            split = await c.call_tool("find", {"query": " and ".join(needs), "needs": needs, "limit": 10})
            assert not split.is_error, split
            servers = {card["server"] for card in (split.structured_content or {})["cards"]}
            assert {"jobs", "tracker"} <= servers, split.structured_content
            for bad in ([], ["ok", ""], ["x" * 2_001], ["n"] * 9, "not a list"):
                refused = await c.call_tool("find", {"query": "jobs", "needs": bad})
                assert refused.is_error, bad
                assert "needs must be a list" in refused.content[0].text  # type: ignore[union-attr]
