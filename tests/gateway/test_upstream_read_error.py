"""A read that fails on one HTTP request to an upstream fails that call alone; the session stays up.

Under heavy load the gateway once lost its HTTP upstream's session to one ``ReadError`` (the
connection of one POST reset before its answer came back): every call in flight over that session
failed at once with "Connection closed" and the supervisor reconnected. The SDK's transport runs
each request's POST as a task of the transport's own task group, and an HTTP error before the answer
arrives (or while a JSON answer is read) is not caught there, so it ends the group and with it the
session. Here a loopback upstream misbehaves in exactly that way, without any clock: a TCP relay in
front of a real streamable HTTP upstream resets (RST, ``SO_LINGER`` 0) the connection that carries
one marked call, and holds another call's request until then, so that call is in flight over the
same session when the reset happens. A real gateway process (``skilldeck gateway --http``), a real
SDK client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.server.mcpserver import MCPServer

from ..host.hostile_http import serving_in_thread
from ..server.helpers import start_gateway, stop
from .gateway_clients_support import check_structured

pytestmark = pytest.mark.anyio

RESET = b"reset-this-call"
"""A call whose request carries this is reset by the relay (RST) before it reaches the upstream."""
CUT = b"cut-this-answer"
"""A call whose request carries this is answered by the upstream, but the relay passes on the answer's head
and half its body, then closes the connection."""
HOLD = b"hold-this-call"
"""A call whose request carries this is held by the relay until a fault happened, then passed on."""


def echo_upstream() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("echo")

    @server.tool()
    def echo(text: str) -> str:
        """Return ``text`` unchanged."""
        return text

    return server


class _Reset(Exception):
    """The relay resets the gateway's connection."""


class FaultyRelay:
    """A TCP relay to ``target`` that breaks the connection a marked request arrives on (see the module)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.faults = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._fault = asyncio.Event()
        self.holding = threading.Event()
        """Set once a held request arrived."""
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None

    def _broke(self) -> None:
        self.faults += 1
        self._fault.set()

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, cut: asyncio.Event) -> None:
        while chunk := await reader.read(65536):
            if RESET in chunk:
                self._broke()
                raise _Reset
            if CUT in chunk:
                cut.set()
            if HOLD in chunk:
                self.holding.set()
                await self._fault.wait()
            writer.write(chunk)
            await writer.drain()

    async def _answers(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, cut: asyncio.Event) -> None:
        pending = b""
        while chunk := await reader.read(65536):
            if not cut.is_set():
                writer.write(chunk)
                await writer.drain()
                continue
            pending += chunk
            head, found, body = pending.partition(b"\r\n\r\n")
            if found and len(body) >= 2:
                writer.write(head + found + body[: len(body) // 2])
                await writer.drain()
                self._broke()
                break
        writer.close()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        cut = asyncio.Event()
        answers = asyncio.ensure_future(self._answers(up_reader, client_writer, cut))
        try:
            await self._requests(client_reader, up_writer, cut)
        except _Reset:
            sock = client_writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
            client_writer.transport.abort()
            answers.cancel()
        except OSError:
            answers.cancel()
        finally:
            up_writer.close()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await answers

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()

    @contextmanager
    def running(self) -> Iterator[str]:
        thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),), daemon=True)
        thread.start()
        assert self._ready.wait(30), "the relay did not start"
        try:
            yield f"http://127.0.0.1:{self.port}/mcp"
        finally:
            assert self._stop is not None
            self._loop.call_soon_threadsafe(self._stop.set)
            thread.join(10)


def texts(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


@pytest.mark.parametrize(
    ("marker", "error"),
    [(RESET, "ReadError"), (CUT, "RemoteProtocolError: peer closed connection without sending complete message body")],
    ids=["reset-before-the-answer", "closed-mid-answer"],
)
def test_a_broken_connection_fails_that_call_alone_and_the_session_stays_up(
    tmp_path: Path, marker: bytes, error: str
) -> None:
    with serving_in_thread(echo_upstream().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")) as url:
        host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
        relay = FaultyRelay((host, int(port)))
        with relay.running() as relayed:
            config = tmp_path / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"echo": {"url": relayed}}}))
            log = tmp_path / "gateway.log"
            proc, match = start_gateway(config, log)
            try:
                anyio.run(calls_through, match["url"], relay, marker.decode(), error)
            finally:
                stop(proc)
    said = log.read_text()
    assert "connection lost" not in said, said  # the session was not lost: nothing to reconnect
    assert "reconnecting" not in said, said
    assert f"[echo] tools/call failed: the connection broke before the answer arrived ({error}" in said, said


async def calls_through(url: str, relay: FaultyRelay, marked: str, error: str) -> None:
    async with Client(url, cache=None) as c:
        check_structured("load", await c.call_tool("load", {"ids": ["echo/echo"]}))
        results: dict[str, Any] = {}

        async def call(text: str) -> None:
            results[text] = await c.call_tool("call", {"tool": "echo/echo", "arguments": {"text": text}})

        held = HOLD.decode()
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, held)  # in flight over the same upstream session when the fault comes
                assert await anyio.to_thread.run_sync(relay.holding.wait, 60), "the held call did not arrive"
                tg.start_soon(call, marked)
        assert relay.faults == 1, relay.faults
        assert not results[held].is_error, texts(results[held])
        assert texts(results[held]) == held, texts(results[held])
        failed = texts(results[marked])
        assert results[marked].is_error, failed
        assert failed.startswith(f"[echo] echo failed: the connection broke before the answer arrived ({error}"), failed
        assert failed.endswith("); the server may have run it, so retry it only if running it twice is harmless"), (
            failed
        )
        after = await c.call_tool("call", {"tool": "echo/echo", "arguments": {"text": "after"}})
        assert not after.is_error, texts(after)
        assert texts(after) == "after", texts(after)
