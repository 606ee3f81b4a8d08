"""The entry ``clients connect`` writes starts the gateway as a desktop client starts it: the real
``skilldeck`` process connects a Claude Desktop file in a temporary home, and the entry it wrote is
run under ``env -i PATH=/usr/bin:/bin HOME=...`` (no virtual environment on the PATH, nothing
else inherited), then driven by the SDK's client: ``tools/list`` answers the four meta-tools, and
``find`` reaches the upstream the connect moved behind it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client import Client

from skilldeck.cli._clients import skilldeck_command
from skilldeck.gateway import META_TOOLS

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]


async def test_the_written_entry_starts_with_a_minimal_environment_and_answers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / ".config" / "Claude" / "claude_desktop_config.json"
    config.parent.mkdir(parents=True)
    command = skilldeck_command()
    skills = {"command": command[0], "args": [*command[1:], "serve", str(REPO / "examples" / "skills")]}
    config.write_text(json.dumps({"mcpServers": {"skills": skills}}, indent=2))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CLAUDE_", "CODEX_"))}
    environ.update(HOME=str(home), SKILLDECK_HOME=str(tmp_path / "state"), COLUMNS="400")
    done = await anyio.run_process(
        [*command, "clients", "connect", "claude-desktop"], env=environ, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    entry = json.loads(config.read_text())["mcpServers"]["skilldeck"]
    assert entry["command"] == command[0]  # the skilldeck it was run with, by its absolute path
    assert os.path.isabs(entry["command"])
    assert entry["args"][-3:] == ["gateway", "--config", str(home / ".config" / "skilldeck" / "upstreams.json")]

    # the entry exactly as written, under the environment a desktop client gives it
    bare = ["-i", "PATH=/usr/bin:/bin", f"HOME={home}", entry["command"], *entry["args"]]
    params = StdioServerParameters(command="/usr/bin/env", args=bare, cwd="/")
    async with Client(params, cache=None) as client:
        tools = await client.list_tools()
        assert sorted(t.name for t in tools.tools) == sorted(t["name"] for t in META_TOOLS)
        found = await client.call_tool("find", {"query": "find senior Java roles in Costa Rica"})
        assert not found.is_error, found
        servers = {card["server"] for card in (found.structured_content or {}).get("cards", [])}
        assert servers == {"skills"}, found.structured_content
