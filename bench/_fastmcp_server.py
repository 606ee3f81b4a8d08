"""Serve a skill pack with FastMCP's skills provider over streamable HTTP (benchmark helper).

Run by ``bench/server_throughput.py`` with the interpreter of ``bench/.venv-fastmcp`` (FastMCP is
not a skilldeck dependency)::

    bench/.venv-fastmcp/bin/python bench/_fastmcp_server.py examples/skills 127.0.0.1 8765

``fastmcp.skills.provider.SkillsDirectoryProvider`` is the FastMCP 4.2 provider that serves every
SKILL.md folder as ``skill://`` resources and registers FastMCP's ``SkillsExtension``
(``skills/list``, ``skills/get``; 2026-07-28 sessions only). The resource-only
``fastmcp.server.providers.skills.SkillsDirectoryProvider`` is deprecated in 4.2 and not used.
Everything else is FastMCP's default HTTP app (SSE responses on legacy sessions, stateful
sessions, no JSON-response mode), the same defaults ``skilldeck serve --http`` uses.
"""

from __future__ import annotations

import asyncio
import sys


def main() -> None:
    root, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    from fastmcp import FastMCP
    from fastmcp.skills.provider import SkillsDirectoryProvider

    server = FastMCP("fastmcp-skills", providers=[SkillsDirectoryProvider(root)])
    asyncio.run(server.run_http_async(show_banner=False, host=host, port=port, log_level="warning"))


if __name__ == "__main__":
    main()
