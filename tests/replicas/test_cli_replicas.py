"""``skilldeck serve --redis``: a Redis out of reach, a wrong URL or a short shared key is one clear line."""

from __future__ import annotations

import socket
import subprocess

import pytest

from ..conftest import EXAMPLES
from ..server.helpers import CLI, cli_env


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
    result = subprocess.run(
        [*CLI, "serve", str(EXAMPLES), "--http", "127.0.0.1:0", "--redis", redis.format(port=port)],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(**env),
    )
    assert result.returncode != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert says.format(port=port) in lines[0]
