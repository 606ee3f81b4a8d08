"""What a hostile server costs the host: peak memory and time, before and after the message limit.

Run from the repository root::

    .venv/bin/python bench/host_limits.py              # about 1.5 minutes
    .venv/bin/python bench/host_limits.py --seconds 60 # let the unbounded runs go on longer

Three hostile servers, each answering the host's first listing request with more than any listing
needs: an endless chunked JSON body and an endless SSE event (a real skilldeck server on loopback
with ``skills/list`` replaced, in a subprocess of its own), and a 200 MB stdio line (a script that
writes it in answer to the first request). Each is met by two hosts, in the same run, each in a
fresh subprocess that measures itself:

- **before**: the transports as the host opened them before the limit, that is the SDK's own with
  their defaults (``Client(url)``; ``Client(StdioServerParameters(...))``), then ``skills/list``;
- **after**: ``skilldeck.host.Host`` with its defaults (32 MiB per message).

Both get the same deadline (``--seconds``: 30 by default, the host's default timeout; it is also
their request timeout). Memory is the growth of the measuring process' peak resident set
(``ru_maxrss``) over its size just before it connects, and for stdio also the largest child process
(the server, or the line guard with it).
Results: a table on stdout and ``bench/results/host_limits.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "bench"))  # appended: never shadows a package

from _common import free_port  # noqa: E402

EXAMPLES = REPO / "examples" / "skills"
MiB = 1024 * 1024
CHUNK = 64 * 1024

STDIO_LINE = """\
import sys
for line in sys.stdin:
    if '"id"' in line:
        request_id = line.split('"id":', 1)[1].split(",", 1)[0].split("}", 1)[0].strip()
        sys.stdout.write('{"jsonrpc": "2.0", "id": ' + request_id + ', "result": {"x": "')
        for _ in range(%d):
            sys.stdout.write("a" * (1 << 20))
        sys.stdout.write('"}}\\n')
        sys.stdout.flush()
"""


# -- the hostile HTTP server (its own process) -----------------------------------------------------


def serve(mode: str, port: int) -> None:
    import anyio
    import anyio.lowlevel
    import uvicorn

    from skilldeck.server import create_server

    server, _ = create_server(EXAMPLES)
    inner = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await inner(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        request = json.loads(body)
        if not (isinstance(request, dict) and request.get("method") == "skills/list"):
            sent = False

            async def replay() -> dict[str, Any]:
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            return await inner(scope, replay, send)
        kind = b"application/json" if mode == "json" else b"text/event-stream"
        head = b'{"jsonrpc":"2.0","id":' + json.dumps(request["id"]).encode() + b',"result":{"skills":[],"x":"'
        if mode == "sse":
            head = b"event: message\ndata: " + head
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
        gone = anyio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await send({"type": "http.response.body", "body": head, "more_body": True})
            while not gone.is_set():
                await send({"type": "http.response.body", "body": b"a" * CHUNK, "more_body": True})
                await anyio.lowlevel.checkpoint()  # a send to a gone client may not yield
            tg.cancel_scope.cancel()

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", timeout_graceful_shutdown=1)


# -- the measured host (its own process) -------------------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(variant: str, target: str, seconds: float) -> dict[str, Any]:
    import logging

    import anyio
    import anyio.lowlevel
    from mcp import Client, StdioServerParameters

    from skilldeck.host import Host, HttpServer, ServerSpec, StdioServer
    from skilldeck.host._wire import SkillsWire

    logging.disable(logging.CRITICAL)  # the SDK's tracebacks are not what is measured
    stdio = not target.startswith("http")
    outcome = "deadline reached"

    async def before() -> str:
        server: Any = StdioServerParameters(command=sys.executable, args=[target]) if stdio else target
        async with Client(server, mode="auto", cache=None, read_timeout_seconds=seconds) as client:
            await SkillsWire(client).list_skills()
        return "listed"

    async def after() -> str:
        transport = StdioServer(sys.executable, (target,)) if stdio else HttpServer(target)
        async with Host([ServerSpec("hostile", transport, timeout=seconds)]) as host:
            failure = host.failures.get("hostile")
            return f"dropped: {failure.reason}" if failure else "listed"

    async def run() -> None:
        nonlocal outcome
        with anyio.move_on_after(seconds):
            try:
                outcome = await (before() if variant == "before" else after())
            except Exception as exc:  # the outcome, whatever it is, is reported
                while isinstance(exc, ExceptionGroup) and exc.exceptions:
                    exc = exc.exceptions[0]
                outcome = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"

    baseline = _rss()
    before_usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = before_usage.ru_utime + before_usage.ru_stime
    start = time.monotonic()
    anyio.run(run)
    elapsed = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak = usage.ru_maxrss * 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return {
        "seconds": round(elapsed, 2),
        "host_cpu_seconds": round(usage.ru_utime + usage.ru_stime - cpu_before, 2),
        "host_growth_mib": round(max(0, peak - baseline) / MiB, 1),
        "largest_child_mib": round(child / MiB, 1) if stdio else None,
        "outcome": outcome,
    }


# -- the run -----------------------------------------------------------------------------------------


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the hostile server on port {port} did not start")


def _measure_in_child(variant: str, target: str, seconds: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", variant, target, "--seconds", str(seconds)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} on {target} failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--seconds", type=float, default=30.0, help="deadline and request timeout per run (the host's default timeout)"
    )
    parser.add_argument("--line-mb", type=int, default=200, help="size of the stdio line in MiB")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "host_limits.json")
    parser.add_argument("--serve", nargs=2, metavar=("MODE", "PORT"), help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=2, metavar=("VARIANT", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return
    if args.measure:
        print(json.dumps(measure(args.measure[0], args.measure[1], args.seconds)))
        return

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir) / "line.py"
        scratch.write_text(STDIO_LINE % args.line_mb)
        for mode, title in (("json", "endless JSON body"), ("sse", "endless SSE event")):
            port = free_port()
            server = subprocess.Popen(
                [sys.executable, __file__, "--serve", mode, str(port)], cwd=REPO, stderr=subprocess.DEVNULL
            )
            try:
                _wait_for(port)
                for variant in ("before", "after"):
                    result = _measure_in_child(variant, f"http://127.0.0.1:{port}/mcp", args.seconds)
                    rows.append({"scenario": title, "variant": variant, **result})
                    print(rows[-1], flush=True)
            finally:
                server.kill()
                server.wait()
        for variant in ("before", "after"):
            result = _measure_in_child(variant, str(scratch), args.seconds)
            rows.append({"scenario": f"{args.line_mb} MiB stdio line", "variant": variant, **result})
            print(rows[-1], flush=True)

    print("\n| server sends | host | time s | host CPU s | host memory growth MiB | largest child MiB | outcome |")
    print("|---|---|---:|---:|---:|---:|---|")
    for row in rows:
        child = "" if row["largest_child_mib"] is None else f"{row['largest_child_mib']:.0f}"
        outcome = row["outcome"].split(" (raise it", 1)[0]
        print(
            f"| {row['scenario']} | {row['variant']} | {row['seconds']:.1f} | {row['host_cpu_seconds']:.1f} "
            f"| {row['host_growth_mib']:.0f} "
            f"| {child} | {outcome} |"
        )
    args.output.write_text(
        json.dumps(
            {
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "command": " ".join([Path(sys.executable).name, *sys.argv]),
                "machine": {
                    "cpus": os.cpu_count(),
                    "loadavg_at_end": os.getloadavg(),
                    "platform": platform.platform(),
                    "python": platform.python_version(),
                },
                "settings": {"seconds": args.seconds, "line_mib": args.line_mb, "limit_mib": 32},
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
