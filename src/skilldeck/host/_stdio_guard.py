"""A line guard between a stdio MCP server and the host: ``python stdio_guard.py MAX_LINE PARENT -- COMMAND ARGS``.

The SDK's stdio transport reads a server's stdout into one growing buffer until a newline comes,
with no size limit, and decodes it strictly as UTF-8, so a server that writes a 200 MB line costs
the host several times that in memory, and one invalid byte stalls the session until its timeout.
The SDK offers no hook on that reader, so the host starts every stdio server through this small
script (standard library only, run by path with the host's interpreter): it starts COMMAND with
this process' stderr, copies our stdin to its stdin, and its stdout to ours **one complete line
at a time**.

A line longer than MAX_LINE bytes, or one that is not UTF-8, is never passed on, and the rest of an
over-long line is skipped without being kept. When its first bytes show it is the response to a
request (``{"jsonrpc": "2.0", "id": ..., "result"`` or ``"error"``, as the SDKs write them), an
error response for that id goes in its place: that request fails with the reason and the session,
shared by every other request, goes on. Otherwise one line starting with :data:`MARKER` names the
problem; the host reads it as the server's fault and ends the session with the reason
(:mod:`skilldeck.host._connect`). If COMMAND cannot be started, the marker
line says so and this script waits for its stdin to close, so the host reports the reason and not
a lost connection. When the server's stdout ends, a last marker line gives its exit code, which is
also this script's (unless the guard had to SIGKILL its group, itself included, as below).

The guard also ends the server **with the host**. Copying its stdin, it sees the host close it;
and a thread checks every 0.1 s that the host (PARENT, the host's pid) is
still its parent, which catches a host killed outright (SIGKILL, a crash) even if something else
still holds the pipe. Either way, or when the host stops reading, the server is stopped as the
MCP shutdown sequence asks: its stdin closed, then SIGTERM, then SIGKILL, within
:data:`STOP_WITHIN` seconds in all, sent to the guard's whole process group (the host starts the
guard as the leader of a new one), so the server's own children end too. Without this a server
that ignores the end of its stdin (most Node servers do) outlived its host until its next write
failed, which for one that writes only when asked was never.

A stop-gap for the SDK: ``docs/sdk-workarounds.md#stdio-guard`` says what it corrects and what
change to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it relies on.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

MARKER = "dev.skilldeck/stdio-guard"
"""Starts the line the guard writes instead of a server line it will not pass on (never valid JSON)."""

LINE_TOO_LONG = "line-too-long"
NOT_UTF8 = "not-utf8"
NOT_STARTED = "not-started"
EXITED = "exited"
"""The server's stdout ended; the marker's detail is its exit code (the last line the guard writes)."""
_CHUNK = 1 << 16

_RESPONSE_ID = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\\n]|\\.){0,256}")\s*,'
    rb'\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:'
)
"""The opening of a JSON-RPC response, with its id (an integer or a string)."""

EXIT_GRACE = 0.3
"""Seconds the server has to exit on its own once its stdin is closed, before SIGTERM."""
TERM_GRACE = 0.5
"""Seconds the server's process group has after SIGTERM, before SIGKILL."""
STOP_WITHIN = EXIT_GRACE + TERM_GRACE
"""The most stopping the server takes once the host is gone, its children included."""
PARENT_POLL = 0.1
"""How often the guard checks that the host is still its parent."""


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _marker(problem: str, detail: str) -> bytes:
    return f"{MARKER} {problem} {detail}\n".encode()


def _too_long(head: bytes, max_line: int) -> bytes:
    """What goes in place of an over-long line that begins with ``head``: an error answering the request it
    responds to, or the marker when it shows no response id."""
    found = _RESPONSE_ID.match(head)
    if found is None:
        return _marker(LINE_TOO_LONG, str(max_line))
    request_id = json.loads(found.group(1))
    message = f"response over {max_line} bytes, the host's limit per message: the answer was dropped"
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": message}}
    return json.dumps(error).encode() + b"\n"


def relay(source: int, sink: int, max_line: int) -> None:
    """Copy ``source`` to ``sink`` line by line until EOF; replace lines over ``max_line`` or not UTF-8."""
    line = bytearray()
    skipping = False  # inside an over-long line whose marker was written
    while chunk := os.read(source, _CHUNK):
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end == -1 else chunk[start : end + 1]
            start += len(piece)
            if skipping:
                skipping = end == -1
                continue
            line += piece
            if len(line) - (end != -1) > max_line:
                _write(sink, _too_long(bytes(line[:4096]), max_line))
                line.clear()
                skipping = end == -1
                continue
            if end == -1:
                continue
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                _write(sink, _marker(NOT_UTF8, f"byte {exc.start}"))
            else:
                _write(sink, bytes(line))
            line.clear()
    if line and not skipping:
        _write(sink, bytes(line))


class _Stopper:
    """Stops the server and its process group once, whichever notices first that the host is gone."""

    def __init__(self, server: subprocess.Popen[bytes]) -> None:
        self.server = server
        self.stopping = False
        self.stopped = threading.Event()
        self._once = threading.Lock()

    def on_sigterm(self, signum: int, frame: object) -> None:
        """SIGTERM from elsewhere (the host stopping our group) ends us as it would have; ours we outlive."""
        if not self.stopping:
            os._exit(128 + signum)

    def stop(self) -> None:
        if not self._once.acquire(blocking=False):
            return
        self.stopping = True
        try:
            self._stop()
        finally:
            self.stopped.set()

    def _stop(self) -> None:
        if self.server.stdin is not None:
            with contextlib.suppress(OSError):
                self.server.stdin.close()
        if self._wait(EXIT_GRACE) and not _others_in_group():
            return
        # The server and what it started share our group; we stay to escalate (see on_sigterm), then go with it.
        _signal_group(signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE
        while time.monotonic() < deadline:
            if self.server.poll() is not None and not _others_in_group():
                return
            time.sleep(0.02)
        _signal_group(signal.SIGKILL)

    def _wait(self, seconds: float) -> bool:
        try:
            self.server.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True


def _signal_group(signum: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signum)


def _others_in_group() -> bool:
    """Whether a process other than this one (and not a zombie) is in our process group.

    Read from ``/proc`` on Linux; elsewhere assumed so, which costs only the SIGTERM the host's own
    shutdown sends the group anyway.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    me, group = os.getpid(), os.getpgrp()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == group and fields[0] != b"Z":
            return True
    return False


def _copy_stdin(server_stdin: int, stopper: _Stopper) -> None:
    """Our stdin to the server's until the host closes it (or the server's end is gone); then stop the server."""
    try:
        while chunk := os.read(0, _CHUNK):
            _write(server_stdin, chunk)
    except OSError:
        pass
    stopper.stop()


def _watch_parent(parent: int, stopper: _Stopper) -> None:
    """Stop the server once ``parent`` is no longer our parent (it ended, and we were handed to another)."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    stopper.stop()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--" or not argv[0].isdigit() or not argv[1].isdigit():
        sys.stderr.write("usage: stdio_guard.py MAX_LINE PARENT -- COMMAND [ARGS...]\n")
        return 2
    max_line, parent, command = int(argv[0]), int(argv[1]), argv[3:]
    try:
        server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as exc:
        what = f"command not found: {command[0]}" if isinstance(exc, FileNotFoundError) else str(exc)
        _write(1, _marker(NOT_STARTED, what))
        while os.read(0, _CHUNK):  # until the host closes our stdin
            pass
        return 127
    assert server.stdin is not None
    assert server.stdout is not None
    stopper = _Stopper(server)
    signal.signal(signal.SIGTERM, stopper.on_sigterm)
    threading.Thread(target=_copy_stdin, args=(server.stdin.fileno(), stopper), daemon=True).start()
    threading.Thread(target=_watch_parent, args=(parent, stopper), daemon=True).start()
    try:
        relay(server.stdout.fileno(), 1, max_line)
    except (BrokenPipeError, ConnectionResetError):  # the host stopped reading: it is gone
        stopper.stop()
    code = server.wait()
    if stopper.stopping:  # the server ended because we stop it: see its group ended too before we go
        stopper.stopped.wait()
    with contextlib.suppress(OSError):  # so the host can say how it ended (a host closing no longer reads)
        _write(1, _marker(EXITED, str(code)))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
