"""``skilldeck serve --redis`` and ``skilldeck gateway --redis``: a Redis out of reach, a wrong URL or a short shared key is one clear line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import EXAMPLES
from ..server.helpers import CLI, cli_env


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _refusal(cmd: list[str], env: dict[str, str]) -> str:
    """The one line ``cmd`` prints on stderr as it exits with a failure (anything else fails the test)."""
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=cli_env(**env))
    assert result.returncode != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("redis", "env", "says"),
    [
        ("redis://127.0.0.1:{port}/0", {}, "cannot reach Redis at redis://127.0.0.1:{port}/0"),
        ("http://127.0.0.1:{port}/", {}, "--redis takes a redis://HOST:PORT/DB"),
        ("redis://127.0.0.1:{port}/0", {"SKILLDECK_STATE_KEY": "short"}, "SKILLDECK_STATE_KEY must hold at least 32"),
    ],
)
def test_serve_with_redis_refuses_in_one_line(redis: str, env: dict[str, str], says: str) -> None:
    port = _closed_port()
    line = _refusal([*CLI, "serve", str(EXAMPLES), "--http", "127.0.0.1:0", "--redis", redis.format(port=port)], env)
    assert says.format(port=port) in line


@pytest.mark.parametrize("env", [{}, {"SKILLDECK_STATE_KEY": "k" * 32}])
def test_gateway_with_redis_out_of_reach_refuses_in_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    """Without Redis the gateway stops before connecting any upstream (for the shared key, or the activations)."""
    port = _closed_port()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"deck": {"command": sys.executable, "args": ["-c", "pass"]}}}))
    line = _refusal(
        [*CLI, "gateway", "--config", str(config), "--http", "127.0.0.1:0", "--redis", f"redis://127.0.0.1:{port}/0"],
        env,
    )
    assert f"cannot reach Redis at redis://127.0.0.1:{port}/0" in line
