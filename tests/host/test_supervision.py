"""The connection supervisor on its own: which lost servers it starts again, and what it tells.

Two real stdio servers that each count their starts in a file: one exits as soon as it starts (so
it is retried on the backoff schedule, and its count goes up), the other writes a line that is not
JSON-RPC (so the host gives up on it for what it sent, and it must never be started again).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest

from skilldeck.host import ServerSpec, StdioServer
from skilldeck.host._backoff import Backoff
from skilldeck.host._connect import Connections, Failure

pytestmark = pytest.mark.anyio

FAST = Backoff(first=0.1, cap=0.2, jitter=0.0)
COUNTED = "import sys; open(sys.argv[1], 'a').write('x')\n"
EXITS = COUNTED + "sys.exit(2)"
GARBLED = COUNTED + "sys.stdout.write('this is not json\\n'); sys.stdout.flush(); sys.stdin.read()"


def starts(path: Path) -> int:
    return len(path.read_text()) if path.exists() else 0


async def test_a_server_that_exits_is_retried_and_one_given_up_on_for_what_it_sent_is_not(tmp_path: Path) -> None:
    exits, garbled = tmp_path / "exits", tmp_path / "garbled"
    specs = [
        ServerSpec("exits", StdioServer(sys.executable, ("-c", EXITS, str(exits))), timeout=30),
        ServerSpec("garbled", StdioServer(sys.executable, ("-c", GARBLED, str(garbled))), timeout=30),
    ]
    states: list[tuple[str, bool]] = []
    async with Connections(specs, restart=FAST, on_transition=lambda label, text: None) as connections:
        connections.add_state_listener(lambda label, up: states.append((label, up)))
        assert "sent invalid JSON" in connections.failures["garbled"].reason, connections.failures
        assert connections.failures["garbled"].retry_at is None
        assert connections.failures["garbled"].describe() == connections.failures["garbled"].reason
        with anyio.fail_after(30):  # the control: a server lost for another reason is started again, and again
            while starts(exits) < 4:
                await anyio.sleep(0.02)
        exited = connections.failures["exits"]
        assert exited.reason == "exited (code 2) before the handshake finished", exited
        assert exited.retry_at is not None, exited
        assert starts(garbled) == 1  # meanwhile (at least three retry periods) never started again
        assert states == []  # never up, so never lost: nothing to tell listeners


async def test_a_session_that_opens_after_its_server_was_closed_is_neither_served_nor_told(tmp_path: Path) -> None:
    # The gateway's race: a supervised retry was still starting the server when a reload closed the
    # label, connected it anew and kept it out of service. The late session must not take the label
    # back (served, its failure wiped, listeners told it is up), nor be left behind in `connected`.
    started, go = tmp_path / "started", tmp_path / "go"
    gated = (
        f"import os, time\nopen({str(started)!r}, 'w').close()\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        "from skilldeck.demo._servers import jobs_server; jobs_server().run()"
    )
    spec = ServerSpec("notes", StdioServer(sys.executable, ("-c", gated)), timeout=60)
    states: list[tuple[str, bool]] = []
    async with Connections([], restart=FAST, on_transition=lambda label, text: None) as connections:
        connections.add_state_listener(lambda label, up: states.append((label, up)))
        opened: list[object] = []

        async def add() -> None:
            opened.append(await connections.add(spec))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(add)
                while not started.exists():  # the server is starting; its session is not open yet
                    await anyio.sleep(0.02)
                connections.close("notes")
                kept_out = Failure("notes", "kept out of service")
                connections.failures["notes"] = kept_out
                go.touch()  # now the handshake finishes
        assert opened == [None]
        assert "notes" not in connections.connected
        assert connections.failures["notes"] is kept_out
        assert states == []


BANNER = """\
import os, sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("banner")


@server.tool()
def crash() -> str:
    sys.stderr.write("fatal: the database went away\\n")
    sys.stderr.flush()
    os._exit(1)


sys.stderr.write("Banner MCP Server running on stdio\\n")
sys.stderr.flush()
server.run()
"""


async def test_a_server_that_crashes_after_its_start_is_described_by_what_it_said_since() -> None:
    """Its start banner is what every such server says on starting: the reason keeps only the lines after it."""
    later = Backoff(first=600, cap=600, jitter=0.0)  # not restarted while the test reads the reason
    spec = ServerSpec("banner", StdioServer(sys.executable, ("-c", BANNER)), timeout=30)
    async with Connections([spec], restart=later, on_transition=lambda label, text: None) as connections:
        assert "banner" in connections.connected, connections.failures
        with pytest.raises(Exception):  # noqa: B017, PT011 - the process dies under the call
            await connections.connected["banner"].client.call_tool("crash", {})
        with anyio.fail_after(30):
            while "banner" not in connections.failures:
                await anyio.sleep(0.02)
        reason = connections.failures["banner"].reason
        assert reason == "exited (code 1); its stderr ended with: fatal: the database went away", reason
        assert "Banner MCP Server running on stdio" in connections.stderr("banner")  # still there for the log


async def test_a_session_that_opened_starts_the_backoff_again(tmp_path: Path) -> None:
    """Its first start exits (the schedule counts one failure); the second serves until the test makes it exit.
    That loss is retried after ``first`` again (0.05 s), because the schedule was told the session opened and
    stayed up its ``stable`` 0 s; not after ``first * factor`` (50 s), as a schedule never told would wait."""
    count, die = tmp_path / "count", tmp_path / "die"
    script = (
        "import os, sys, threading, time\n"
        f"open({str(count)!r}, 'a').write('x')\n"
        f"if len(open({str(count)!r}).read()) == 1: sys.exit(2)\n"
        "def die():\n"
        f"    while not os.path.exists({str(die)!r}): time.sleep(0.02)\n"
        "    os._exit(3)\n"
        "threading.Thread(target=die, daemon=True).start()\n"
        "from skilldeck.demo._servers import jobs_server; jobs_server().run()\n"
    )
    spec = ServerSpec("flaky", StdioServer(sys.executable, ("-c", script)), timeout=60)
    backoff = Backoff(first=0.05, factor=1_000, cap=10_000, jitter=0.0, stable=0.0)
    async with Connections([spec], restart=backoff, on_transition=lambda label, text: None) as connections:
        with anyio.fail_after(60):
            while "flaky" not in connections.connected:  # retried once, after 0.05 s
                await anyio.sleep(0.02)
            die.touch()
            while "flaky" in connections.connected or connections.failures.get("flaky") is None:
                await anyio.sleep(0.02)
        lost = connections.failures["flaky"]
        assert lost.reason.startswith("exited (code 3)"), lost
        assert lost.retry_at is not None
        assert lost.retry_at - time.monotonic() < 25, "the schedule went on from the failure before the session"
