"""FastMCP's proxy in front of one MCP server over streamable HTTP (benchmark helper).

Run by ``bench/gateway.py`` with the interpreter of ``bench/.venv-fastmcp`` (FastMCP is not a
skilldeck dependency)::

    bench/.venv-fastmcp/bin/python bench/_fastmcp_proxy.py fresh UPSTREAM_URL 127.0.0.1 8766
    bench/.venv-fastmcp/bin/python bench/_fastmcp_proxy.py reused UPSTREAM_URL 127.0.0.1 8767

- ``fresh``: ``fastmcp.server.create_proxy(UPSTREAM_URL)``, the documented default: a new backend
  client (and session) per request, speaking the era the front request negotiated.
- ``reused``: ``create_proxy(client)`` with a ``fastmcp.Client(UPSTREAM_URL)`` connected once
  before serving (its default ``mode="auto"``: 2026-07-28 with this upstream). FastMCP reuses that
  one session for every request (its opt-in for connected clients).

Everything else is FastMCP's default HTTP app (``run_http_async``, stateful sessions, SSE responses
on 2025-11-25 sessions). ``listening`` is printed when the port is bound by uvicorn.
"""

from __future__ import annotations

import asyncio
import sys


async def serve(kind: str, url: str, host: str, port: int) -> None:
    from fastmcp import Client
    from fastmcp.server import create_proxy

    if kind == "fresh":
        await create_proxy(url, name="fastmcp-proxy").run_http_async(
            show_banner=False, host=host, port=port, log_level="warning"
        )
        return
    if kind != "reused":
        raise SystemExit(f"unknown kind {kind!r}: fresh or reused")
    async with Client(url) as client:
        await create_proxy(client, name="fastmcp-proxy").run_http_async(
            show_banner=False, host=host, port=port, log_level="warning"
        )


def main() -> None:
    kind, url, host, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    asyncio.run(serve(kind, url, host, port))


if __name__ == "__main__":
    main()
