"""One caller's oversized answer, or one that does not parse, fails that caller's call alone.

The answer to a request that passes the host's limit per message (or is not JSON) used to end the
upstream's session, which every client of the gateway shares, for good. Now the call that asked
fails with the reason and every other call, the same client's next one and another client's, goes on
over the same session. A real upstream over stdio (through the line guard) and over HTTP (uvicorn
on loopback), a real gateway, real SDK clients of both eras.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.host import Host, HttpServer, ServerSpec, StdioServer

from ..host.hostile_http import serving_in_thread
from .gateway_clients_support import Gateway, client

pytestmark = pytest.mark.anyio

LIMIT = 100_000
UPSTREAM = f"""\
from mcp.server.mcpserver import MCPServer

server = MCPServer("big")


@server.tool()
def big() -> str:
    \"\"\"An answer over the gateway's limit.\"\"\"
    return "x" * {3 * LIMIT}


@server.tool()
def small() -> str:
    \"\"\"A short answer.\"\"\"
    return "ok"
"""


@contextmanager
def upstream(kind: str, tmp_path: Path) -> Iterator[ServerSpec]:
    script = tmp_path / "big.py"
    script.write_text(UPSTREAM + ("\nserver.run()\n" if kind == "stdio" else ""))
    if kind == "stdio":
        yield ServerSpec("big", StdioServer(sys.executable, (str(script),)), timeout=30)
        return
    namespace: dict[str, Any] = {}
    exec(compile(script.read_text(), str(script), "exec"), namespace)  # the same server, served over HTTP
    server: MCPServer[Any] = namespace["server"]
    with serving_in_thread(server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")) as url:
        yield ServerSpec("big", HttpServer(url), timeout=30)


@pytest.mark.parametrize("kind", ["stdio", "http"])
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_an_oversized_answer_fails_that_call_alone(kind: str, era: str, tmp_path: Path) -> None:
    with upstream(kind, tmp_path) as spec:
        async with Host([spec], max_message_bytes=LIMIT) as host:
            service = GatewayService(host, encoder=None)
            server, middleware = create_gateway(service)
            gw = Gateway(host, service, server, middleware)
            async with client(gw, era) as first, client(gw, era) as second:
                await first.call_tool("load", {"ids": ["big/big", "big/small"]})
                await second.call_tool("load", {"ids": ["big/small"]})
                failed = await first.call_tool("call", {"tool": "big/big", "arguments": {}})
                assert failed.is_error, failed
                text = "".join(c.text for c in failed.content if c.type == "text")
                assert text.startswith("[big] big failed: response over 100000 bytes, the host's limit per message"), (
                    text
                )
                assert host.failures == {}, host.failures
                for c in (first, second):  # the same session serves both clients on
                    answered = await c.call_tool("call", {"tool": "big/small", "arguments": {}})
                    assert not answered.is_error, answered
                    assert "ok" in "".join(x.text for x in answered.content if x.type == "text")
