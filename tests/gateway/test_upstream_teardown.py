"""Every upstream process a stdio gateway started ends with it, children included, within 2 s.

The upstream here behaves like the Node servers that showed the leak: it keeps running when its
stdin closes, and it has started a child of its own, which also ignores SIGTERM. Only the host can
stop them; when its client closes the gateway, the whole tree must be gone within 2 s, every time.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from ..host.process_tree import Process, kill, still_running, tree, with_argument

pytestmark = pytest.mark.anyio

UPSTREAM = """\
import os, signal, sys, time

import anyio
from mcp.server.mcpserver import MCPServer

if os.fork() == 0:  # a helper it started, deaf to SIGTERM: only SIGKILL ends it
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.close(0)
    while True:
        time.sleep(60)

server = MCPServer("forking")


@server.tool()
def hello() -> str:
    return "hi"


anyio.run(server.run_stdio_async)
while True:  # like many Node servers: the end of stdin does not end it
    time.sleep(60)
"""


def gateway_config(tmp_path: Path) -> Path:
    script = tmp_path / "forking_upstream.py"
    script.write_text(UPSTREAM)
    config = tmp_path / "gateway.json"
    servers = {f"up{i}": {"command": sys.executable, "args": [str(script), f"up{i}"]} for i in range(2)}
    config.write_text(json.dumps({"mcpServers": servers}))
    return config


async def gateway_tree(config: Path, crash: bool = False) -> tuple[set[Process], float]:
    """Run a stdio gateway on ``config``, list its process tree, close its client (or first kill the gateway, as a
    crash would end it): (the tree, when closing began)."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "skilldeck.cli", "gateway", "--config", str(config)]
    )
    async with Client(params, cache=None) as client:
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} >= {"find", "call"}
        (gateway,) = with_argument(str(config))
        processes = tree(gateway)
        closing = time.monotonic()
        if crash:
            os.kill(gateway, signal.SIGKILL)
    return processes, closing


@pytest.mark.parametrize(("crash", "cycles"), [(False, 10), (True, 2)], ids=["client-closed", "gateway-killed"])
async def test_every_upstream_process_ends_with_a_stdio_gateway(tmp_path: Path, crash: bool, cycles: int) -> None:
    config = gateway_config(tmp_path)
    for cycle in range(cycles):
        processes, closing = await gateway_tree(config, crash)
        # the gateway, and per upstream: the guard, the server and the server's child
        assert len(processes) == 1 + 2 * 3, (cycle, processes)
        left = still_running(processes, within=max(0.0, closing + 2.0 - time.monotonic()))
        kill(left)
        assert not left, f"cycle {cycle}: {len(left)} processes outlived the gateway by 2 s"
