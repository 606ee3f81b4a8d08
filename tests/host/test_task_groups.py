"""Connections and the watcher enter their task group through an exit stack: a failed or cancelled
``__aenter__`` unwinds the way ``__aexit__`` does, and leaves no task running."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from skilldeck.host import Host, InProcessServer, ServerSpec, StdioServer
from skilldeck.host._connect import Connections

SILENT = StdioServer(sys.executable, ("-c", "import time; time.sleep(60)"))
"""A stdio server that starts and never answers the handshake."""


def _task_names() -> list[str]:
    return sorted(t.name for t in anyio.get_running_tasks())


async def _settled(before: list[str]) -> list[str]:
    """The running tasks once those the SDK ends in the background (a subscription's driver) are gone."""
    with anyio.move_on_after(5):
        while _task_names() != before:
            await anyio.sleep(0.01)
    return _task_names()


@pytest.mark.anyio
async def test_connections_cancelled_while_entering_leave_no_task_and_no_open_log() -> None:
    before = _task_names()
    connections = Connections([ServerSpec("silent", SILENT, timeout=60)])
    with anyio.move_on_after(1) as scope:
        await connections.__aenter__()
    assert scope.cancelled_caught
    assert _task_names() == before
    assert all(log.closed for log in connections._stderr_files.values())
    assert list(connections._stderr_files) == ["silent"]


@pytest.mark.anyio
async def test_a_watcher_cancelled_while_entering_leaves_no_task_and_can_enter_again() -> None:
    server = MCPServer("plain")
    async with Host([ServerSpec("plain", InProcessServer(server))], read_timeout=10) as host:
        before = _task_names()
        watcher = host.watch()
        with anyio.CancelScope() as scope:
            scope.cancel()
            await watcher.__aenter__()
        assert scope.cancelled_caught
        assert _task_names() == before
        assert watcher._on_message not in host.connections._listeners
        async with watcher:  # the failed entry left nothing behind that refuses a second one
            assert _task_names() != before
        assert await _settled(before) == before


async def _fail_inside(host: Host, before: list[str]) -> None:
    try:
        async with host.watch():
            raise KeyError("k")
    except KeyError:  # the watcher's own task group does not wrap the body's error in a group
        assert await _settled(before) == before
    raise LookupError("the body's own")


@pytest.mark.anyio
async def test_an_error_in_the_body_comes_out_as_itself_and_the_tasks_end() -> None:
    server = MCPServer("plain")
    host = Host([ServerSpec("plain", InProcessServer(server))], read_timeout=10)
    with pytest.raises(LookupError, match="the body's own"):
        await _run(host)


async def _run(host: Host) -> None:
    async with host:
        await _fail_inside(host, _task_names())
