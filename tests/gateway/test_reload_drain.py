"""A reload that connects an upstream again, from the outside: the real ``skilldeck gateway`` process, ``SIGHUP``,
a real client calling through it.

The upstream is a stdio server whose ``work`` tool runs until the test releases it (a file appears), and
answers with the program's version, so the test tells which program ran each call. Calls in flight when its
entry changes finish on the old program and come back with their results; a call made while the new program
is being connected waits for it; a call that outlasts ``--shutdown-timeout`` fails saying it may have run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client

from ..server.helpers import start_gateway, stop
from .test_gateway_config import reloaded, wait_for_log

pytestmark = pytest.mark.anyio

SLOW = """
import pathlib, sys, time
import anyio
from mcp.server.mcpserver import MCPServer

version, release, start = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
while not start.exists():  # the test says when this program may come up
    time.sleep(0.02)
server = MCPServer("slow")


@server.tool()
async def work(n: int) -> str:
    \"\"\"Works on n until released.\"\"\"
    (release.parent / f"started-{version}-{n}").touch()
    while not release.exists():
        await anyio.sleep(0.02)
    return f"{version}:{n}"


@server.prompt()
async def brief(n: str) -> str:
    \"\"\"A brief on n, written until released.\"\"\"
    (release.parent / f"started-{version}-prompt{n}").touch()
    while not release.exists():
        await anyio.sleep(0.02)
    return f"{version}:prompt{n}"


server.run()
"""
IN_FLIGHT = 20
WAIT = 60.0


def write_config(path: Path, version: str, release: Path, start: Path) -> Path:
    entry = {"command": sys.executable, "args": ["-c", SLOW, version, str(release), str(start)]}
    path.write_text(json.dumps({"mcpServers": {"slow": entry}}))
    return path


async def started(folder: Path, version: str, count: int) -> None:
    """Wait until ``count`` calls have started on ``version`` (a failure guard bounds it, nothing is timed)."""
    with anyio.fail_after(WAIT):
        while len(await anyio.to_thread.run_sync(lambda: list(folder.glob(f"started-{version}-*")))) < count:
            await anyio.sleep(0.02)


async def called(client: Client, n: int) -> str:
    """What calling ``slow/work`` for ``n`` through the gateway answered: its text, after ``error: `` if it failed."""
    result = await client.call_tool("call", {"tool": "slow/work", "arguments": {"n": n}})
    text = " ".join(getattr(part, "text", "") for part in result.content)
    return ("error: " if result.is_error else "") + text


async def test_calls_in_flight_finish_on_the_old_program_and_a_call_during_the_switch_waits(tmp_path: Path) -> None:
    """20 calls running on v1 when its entry changes: all 20 come back with v1's results (before: 20 times
    "Connection closed", though each had run); a call made while v2 is being connected is answered by v2
    (before: refused, "no server lists a tool named 'work'")."""
    release, up_v1, up_v2 = tmp_path / "release", tmp_path / "up-v1", tmp_path / "up-v2"
    up_v1.touch()
    config = write_config(tmp_path / "mcp.json", "v1", release, up_v1)
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--shutdown-timeout", "120")
    try:
        async with Client(match["url"], cache=None) as client:
            loaded = await client.call_tool("load", {"ids": ["slow/work"]})
            assert not loaded.is_error, loaded
            results: dict[int, str] = {}

            async def call(n: int) -> None:
                results[n] = await called(client, n)

            async with anyio.create_task_group() as tg:
                for n in range(IN_FLIGHT):
                    tg.start_soon(call, n)
                await started(tmp_path, "v1", IN_FLIGHT)
                await switched(proc, log, (config, release, up_v2), lambda: tg.start_soon(call, 99))  # v2 not up
        assert {n: results[n] for n in range(IN_FLIGHT)} == {n: f"v1:{n}" for n in range(IN_FLIGHT)}, results
        assert results[99] == "v2:99", results
    finally:
        stop(proc)


def reloaded_soon(proc: subprocess.Popen[bytes]) -> None:
    """SIGHUP, without waiting for the reload to end (it waits for the new program, which the test lets up)."""
    proc.send_signal(signal.SIGHUP)


async def switched(
    proc: subprocess.Popen[bytes],
    log: Path,
    v2: tuple[Path, Path, Path],
    meanwhile: Callable[[], None] = lambda: None,
) -> None:
    """Switch the entry to v2 (``v2``: the config, the release and v2's start files): write it, SIGHUP, wait
    for "its entry changed", do ``meanwhile`` (v2 not up yet), let v2 up, wait for the reload's end, then
    release the calls held on v1."""
    config, release, up_v2 = v2
    write_config(config, "v2", release, up_v2)
    before = await anyio.Path(log).read_text()
    await anyio.to_thread.run_sync(reloaded_soon, proc)
    await anyio.to_thread.run_sync(
        lambda: wait_for_log(log, lambda t: "[slow] its entry changed" in t[len(before) :], "the switch")
    )
    meanwhile()
    up_v2.touch()
    await anyio.to_thread.run_sync(lambda: wait_for_log(log, lambda t: "reloaded: 1 of 1" in t, "reload"))
    release.touch()


async def test_a_call_that_outlasts_the_shutdown_timeout_fails_saying_it_may_have_run(tmp_path: Path) -> None:
    """``--shutdown-timeout 2``: a call still running on the old program 2 s after its entry changed is cut,
    and its error says it may have run; the reload itself is not held up."""
    release, up = tmp_path / "release", tmp_path / "up"
    up.touch()
    config = write_config(tmp_path / "mcp.json", "v1", release, up)
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--shutdown-timeout", "2")
    try:
        async with Client(match["url"], cache=None) as client:
            assert not (await client.call_tool("load", {"ids": ["slow/work"]})).is_error
            said: list[str] = []

            async def call() -> None:
                said.append(await called(client, 1))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await started(tmp_path, "v1", 1)
                write_config(config, "v2", release, up)
                await anyio.to_thread.run_sync(lambda: reloaded(proc, log, 1))
        (text,) = said
        assert text.startswith("error: "), text
        assert "did not finish within 2s (--shutdown-timeout); it may have run" in text, text
    finally:
        stop(proc)


async def test_a_forwarded_prompt_in_flight_finishes_on_the_old_program(tmp_path: Path) -> None:
    """A ``prompts/get`` forwarded to v1 when its entry changes is drained like a tool call: it comes back with
    v1's text (before: "Connection closed"), and the reload goes on to v2."""
    release, up_v1, up_v2 = tmp_path / "release", tmp_path / "up-v1", tmp_path / "up-v2"
    up_v1.touch()
    config = write_config(tmp_path / "mcp.json", "v1", release, up_v1)
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--shutdown-timeout", "120")
    try:
        async with Client(match["url"], cache=None) as client:
            said: list[str] = []

            async def brief() -> None:
                prompt = await client.get_prompt("slow__brief", {"n": "7"})
                said.extend(getattr(m.content, "text", "") for m in prompt.messages)

            async with anyio.create_task_group() as tg:
                tg.start_soon(brief)
                await started(tmp_path, "v1", 1)
                await switched(proc, log, (config, release, up_v2))
            assert said == ["v1:prompt7"], said
            again = await client.get_prompt("slow__brief", {"n": "8"})
            assert [getattr(m.content, "text", "") for m in again.messages] == ["v2:prompt8"]
    finally:
        stop(proc)
