"""Every upstream process a stdio gateway started ends with it, children included, within 2 s.

The upstream here behaves like the Node servers that showed the leak: it keeps running when its
stdin closes, and it has started a child of its own, which also ignores SIGTERM. Only the host can
stop them; when its client closes the gateway, the whole tree must be gone within 2 s, every time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from ..host.process_tree import kill, stdio_gateway_tree, still_running

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


@pytest.mark.parametrize(("crash", "cycles"), [(False, 10), (True, 2)], ids=["client-closed", "gateway-killed"])
async def test_every_upstream_process_ends_with_a_stdio_gateway(tmp_path: Path, crash: bool, cycles: int) -> None:
    config = gateway_config(tmp_path)
    for cycle in range(cycles):
        processes, closing = await stdio_gateway_tree(config, crash)
        # the gateway, and per upstream: the guard, the server and the server's child
        assert len(processes) == 1 + 2 * 3, (cycle, processes)
        left = still_running(processes, within=max(0.0, closing + 2.0 - time.monotonic()))
        kill(left)
        assert not left, f"cycle {cycle}: {len(left)} processes outlived the gateway by 2 s"
