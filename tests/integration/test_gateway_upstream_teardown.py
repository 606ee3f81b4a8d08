"""server-everything's whole process tree (npx, npm and node) ends within 2 s of a stdio gateway's client closing.

The reference server keeps running when its stdin closes, so the gateway's guard must stop it: before
it did, the tree stayed alive 50-60 s in 3 of 6 cycles. Ten cycles in a row, every process gone in 2 s.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ..host.process_tree import kill, stdio_gateway_tree, still_running

pytestmark = [pytest.mark.thirdparty, pytest.mark.anyio]

NPM_ENV = {"npm_config_yes": "true", "npm_config_loglevel": "error", "npm_config_update_notifier": "false"}


async def test_server_everythings_process_tree_ends_with_a_stdio_gateway(
    tmp_path: Path, npx: str, npm_server_specs: dict[str, str]
) -> None:
    config = tmp_path / "gateway.json"
    everything = {"command": npx, "args": ["-y", npm_server_specs["everything"]], "env": NPM_ENV}
    config.write_text(json.dumps({"mcpServers": {"everything": everything}}))
    for cycle in range(10):
        processes, closing = await stdio_gateway_tree(config)
        assert len(processes) >= 3, (cycle, processes)  # the gateway, the guard, and npx's tree
        left = still_running(processes, within=max(0.0, closing + 2.0 - time.monotonic()))
        kill(left)
        assert not left, f"cycle {cycle}: {len(left)} of {len(processes)} processes outlived the gateway by 2 s"
