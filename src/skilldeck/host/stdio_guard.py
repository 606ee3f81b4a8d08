"""A line guard between a stdio MCP server and the host: ``python stdio_guard.py MAX_LINE -- COMMAND ARGS``.

The SDK's stdio transport reads a server's stdout into one growing buffer until a newline comes,
with no size limit, and decodes it strictly as UTF-8, so a server that writes a 200 MB line costs
the host several times that in memory, and one invalid byte stalls the session until its timeout.
The SDK offers no hook on that reader, so the host starts every stdio server through this small
script (standard library only, run by path with the host's interpreter): it starts COMMAND with
this process' stdin and stderr, and copies its stdout to ours **one complete line at a time**.

A line longer than MAX_LINE bytes, or one that is not UTF-8, is never passed on: in its place goes
one line starting with :data:`MARKER` that names the problem, and the rest of an over-long line is
skipped without being kept. The host reads that line as the server's fault and gives up on the
server with the reason (:mod:`skilldeck.host.connect`). If COMMAND cannot be started, the marker
line says so and this script waits for its stdin to close, so the host reports the reason and not
a lost connection. When the server's stdout ends, a last marker line gives its exit code, which is
also this script's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

MARKER = "dev.skilldeck/stdio-guard"
"""Starts the line the guard writes instead of a server line it will not pass on (never valid JSON)."""

LINE_TOO_LONG = "line-too-long"
NOT_UTF8 = "not-utf8"
NOT_STARTED = "not-started"
EXITED = "exited"
"""The server's stdout ended; the marker's detail is its exit code (the last line the guard writes)."""
_CHUNK = 1 << 16


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _marker(problem: str, detail: str) -> bytes:
    return f"{MARKER} {problem} {detail}\n".encode()


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
                line.clear()
                _write(sink, _marker(LINE_TOO_LONG, str(max_line)))
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


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        sys.stderr.write("usage: stdio_guard.py MAX_LINE -- COMMAND [ARGS...]\n")
        return 2
    max_line, command = int(argv[0]), argv[2:]
    try:
        server = subprocess.Popen(command, stdout=subprocess.PIPE)
    except OSError as exc:
        what = f"command not found: {command[0]}" if isinstance(exc, FileNotFoundError) else str(exc)
        _write(1, _marker(NOT_STARTED, what))
        while os.read(0, _CHUNK):  # until the host closes our stdin
            pass
        return 127
    assert server.stdout is not None
    try:
        relay(server.stdout.fileno(), 1, max_line)
    except (BrokenPipeError, ConnectionResetError):  # the host is gone; the server is stopped with our group
        server.kill()
        return server.wait()
    code = server.wait()
    with contextlib.suppress(OSError):  # so the host can say how it ended (a host closing no longer reads)
        _write(1, _marker(EXITED, str(code)))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
