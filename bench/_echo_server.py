"""A one-tool upstream for ``bench/gateway.py``: ``echo(text)`` over streamable HTTP (benchmark helper).

Run by the benchmark with the project's interpreter::

    .venv/bin/python bench/_echo_server.py 127.0.0.1 8765

It is an ``MCPServer`` served by ``skilldeck.serving._runner.run_http``, the same HTTP stack the gateway
uses, so the direct and the proxied calls differ only by the gateway's hop.
"""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import MCPServer

from skilldeck.serving._runner import run_http


def echo_server() -> MCPServer:  # type: ignore[type-arg]
    server: MCPServer = MCPServer("echo", log_level="WARNING")  # type: ignore[type-arg]

    @server.tool()
    def echo(text: str) -> str:
        """Return ``text`` unchanged."""
        return text

    return server


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    anyio.run(lambda: run_http(echo_server(), host=host, port=port))


if __name__ == "__main__":
    main()
