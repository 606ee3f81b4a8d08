"""``skilldeck serve --redis`` and ``skilldeck gateway --redis``: a Redis out of reach, a wrong URL or a short shared key is one clear line."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import anyio
import httpx2
import pytest
import redis.asyncio as aioredis
from mcp.client import Client
from mcp.shared.subscriptions import ResourcesListChanged, ToolsListChanged

from skilldeck.serving._redis_bus import encode_event

from ..conftest import EXAMPLES
from ..server.helpers import CLI, cli_env, start_gateway, start_serve, stop, wait_for_startup, write_skill
from .test_replicas import MODERN, _catalog_version, next_event


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _refusal(cmd: list[str], env: dict[str, str]) -> str:
    """The one line ``cmd`` prints on stderr as it exits with a failure (anything else fails the test)."""
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=cli_env(**env))
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if not line.startswith("warning:")]  # said at start
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


@pytest.mark.parametrize(
    ("settle", "says"),
    [
        (["--settle", "60.5"], "--settle takes 0 to 60 seconds, got 60.5"),
        (["--settle", "-0.1"], "--settle takes 0 to 60 seconds, got -0.1"),
        (["--settle", "nan"], "--settle takes 0 to 60 seconds, got nan"),
    ],
)
def test_serve_refuses_a_settle_window_out_of_bounds_before_reaching_redis(settle: list[str], says: str) -> None:
    port = _closed_port()
    redis = f"redis://127.0.0.1:{port}/0"
    line = _refusal([*CLI, "serve", str(EXAMPLES), "--http", "127.0.0.1:0", "--redis", redis, *settle], {})
    assert says in line, line


def test_serve_refuses_a_settle_window_without_redis() -> None:
    line = _refusal([*CLI, "serve", str(EXAMPLES), "--http", "127.0.0.1:0", "--settle", "60"], {})
    assert "--settle needs --redis" in line, line


@pytest.mark.anyio
async def test_an_edit_to_a_folder_two_replicas_watch_reaches_a_listener_at_once_and_after_both_have_it(
    replicas_bench: ModuleType, tmp_path: Path
) -> None:
    """Both replicas reload the edit and publish it; the listener's replica tells the first at once, gathers for
    ``--settle`` seconds and tells what came meanwhile once more: at most twice, never once per event, and the
    last after both replicas serve the edit. Counted, not timed: once both replicas serve the edit, a sentinel
    event is published (inside the window), and everything the listener hears before it is the edit's."""
    pack = tmp_path / "shared"
    shutil.copytree(EXAMPLES, pack)
    procs: list[subprocess.Popen[bytes]] = []
    with replicas_bench.running_redis(tmp_path) as redis:
        try:
            urls = []
            for index in range(2):
                log = tmp_path / f"serve{index}.log"
                cmd = [*CLI, "serve", str(pack), "--http", "127.0.0.1:0", "--watch", "--redis", redis.url]
                procs.append(start_serve([*cmd, "--settle", "3"], log))
                found = wait_for_startup(procs[-1], log, 60)
                assert not isinstance(found, str), found
                urls.append(found.group(2))
            with httpx2.Client(timeout=10) as http:
                before = {_catalog_version(http, url) for url in urls}
            async with (
                Client(urls[0], mode=MODERN, cache=None) as client,
                client.listen(resources_list_changed=True, tools_list_changed=True) as sub,
            ):
                write_skill(pack, "added-to-the-shared-folder")
                heard = [await next_event(sub, within=30)]  # at once: the first replica's
                with anyio.fail_after(30), httpx2.Client(timeout=10) as http:
                    while len(after := {_catalog_version(http, url) for url in urls}) != 1 or after == before:
                        await anyio.sleep(0.05)
                raw = aioredis.Redis.from_url(redis.url)
                try:
                    await raw.publish("skilldeck:skilldeck:events", encode_event(ToolsListChanged()))
                finally:
                    await raw.aclose()
                while not isinstance(heard[-1], ToolsListChanged):
                    heard.append(await next_event(sub, within=30))
        finally:
            for proc in procs:
                stop(proc)
    assert heard[-1] == ToolsListChanged(), heard
    assert heard[:-1] in ([ResourcesListChanged()], [ResourcesListChanged()] * 2), heard


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


def test_a_replica_says_its_name_and_redis_at_start_and_a_redis_outage_once_in_one_line(
    replicas_bench: ModuleType, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    with replicas_bench.running_redis(tmp_path) as redis:
        proc = start_serve(
            [*CLI, "serve", str(EXAMPLES), "--http", "127.0.0.1:0", "--redis", redis.url, "--name", "deck-a"],
            log,
        )
        try:
            found = wait_for_startup(proc, log, 60)
            assert not isinstance(found, str), found
            (start,) = [line for line in log.read_text().splitlines() if found.group(0) in line]
            assert start == f"{found.group(0)} (replica 'deck-a', Redis 127.0.0.1:{redis.port}/0)", start
            redis.kill()
            # the bus tries again every 0.5 s: once the loss is said, leave room for a dozen more attempts
            deadline = time.monotonic() + 60
            while "lost the Redis subscription" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(6)
            assert proc.poll() is None
        finally:
            stop(proc)
    text = log.read_text()
    lost = [line for line in text.splitlines() if "Redis" in line and "replica 'deck-a'" not in line]
    assert len(lost) == 1, text  # once per outage, not every attempt
    assert lost[0].startswith("warning: lost the Redis subscription ("), lost[0]
    assert lost[0].endswith("re-subscribing every 0.5s, said again once it is back"), lost[0]


def test_a_gateway_replica_says_its_name_and_redis_at_start(replicas_bench: ModuleType, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"deck": {"command": sys.executable, "args": [*CLI[1:], "serve", str(EXAMPLES)]}}})
    )
    log = tmp_path / "gateway.log"
    with replicas_bench.running_redis(tmp_path) as redis:
        proc, found = start_gateway(config, log, "--redis", redis.url, "--name", "gw-a")
        stop(proc)
    (start,) = [line for line in log.read_text().splitlines() if found.group(0) in line]
    assert start == f"{found.group(0)} (replica 'gw-a', Redis 127.0.0.1:{redis.port}/0)", start
