"""What a stdio gateway learned, read by MCP Inspector's CLI (a third-party client) in a new gateway process.

A desktop client starts ``skilldeck gateway`` over stdio for each session: every session is a restart.
One session, through the Python SDK client, asks ``find``, loads the card and calls it; each Inspector
run (``--cli``, the gateway as its stdio command, the test's own ``$SKILLDECK_HOME``) is then a new
gateway process whose first ``find`` must already answer with what was learned: the very question with
its card first (``worked_before``), a question like it with the card it led to named
(``like_before``, ``like_before_card``), each result valid against ``find``'s advertised output schema,
in both protocol eras.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from ..learning.test_worked_before import LIKE, NEW
from .test_gateway_clients import check

pytestmark = [pytest.mark.thirdparty, pytest.mark.anyio]

UPSTREAM = Path(__file__).resolve().parents[1] / "learning" / "usage_upstream.py"


def gateway_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "skilldeck.cli", "gateway", "--config", str(config)]


async def test_inspector_reads_what_an_earlier_session_learned(
    run_npx: Any, inspector_cmd: list[str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"up": {"command": sys.executable, "args": [str(UPSTREAM)]}}}))
    env = {**os.environ, "SKILLDECK_HOME": str(home)}
    command = gateway_command(config)
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    with (tmp_path / "first.stderr").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="auto", cache=None) as c:
            found = check("find", (await c.call_tool("find", {"query": NEW})).structured_content)
            assert "worked_before" not in found, found
            assert not (await c.call_tool("load", {"ids": ["up/forecast"]})).is_error
            assert not (await c.call_tool("call", {"tool": "up/forecast", "arguments": {"city": "Paris"}})).is_error

    def find(era: str, query: str) -> tuple[dict[str, Any], str]:
        """One Inspector run: a new gateway process over stdio, whose first request is this find."""
        result = run_npx(
            *inspector_cmd, "-e", f"SKILLDECK_HOME={home}", "--protocol-era", era, "--format", "json",
            "--method", "tools/call", "--tool-name", "find", "--tool-args-json", json.dumps({"query": query}),
            "--", *command,
        )  # fmt: skip
        assert result.returncode == 0, result.describe()
        payload = json.loads(result.stdout)
        assert "error" not in payload, payload
        answer = payload["result"]
        return check("find", answer["structuredContent"]), answer["content"][0]["text"]

    for era in ("modern", "legacy"):
        again, text = find(era, NEW)
        assert again["worked_before"] == NEW, (era, again)
        assert again["cards"][0]["id"] == "up/forecast", (era, again)
        assert "up/forecast worked before for this question" in text, text
        like, text = find(era, LIKE)
        assert like["like_before"] == NEW, (era, like)
        assert like["like_before_card"] == "up/forecast", (era, like)
        assert f"({NEW!r} led to a successful call of up/forecast)" in text, text
