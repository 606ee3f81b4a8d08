"""How soon ``find`` ranks semantically behind many HTTP upstreams: a cold start, and a restart.

``--upstreams`` single-tool MCP servers (each one of LiveMCPBench's real tools, name, description and
input schema unchanged) are served over streamable HTTP by one child process (one uvicorn server per
upstream, each on a loopback port of its own). A real ``skilldeck gateway --http`` process is started
with them in its config, under a temporary ``SKILLDECK_HOME``, and asked ``find`` (the official SDK's
``Client``) every 0.2 s from its start until an answer says ``"ranker": "semantic"``. Then the gateway
is stopped and started again on the same home: its card vectors are on disk, so the restart should
rank semantically at once.

    .venv/bin/python bench/gateway_ready.py                      # 200 upstreams, about a minute
    .venv/bin/python bench/gateway_ready.py --upstreams 50

Writes ``bench/results/gateway_ready.json``: seconds from the gateway's start to its startup line
(every upstream connected), to its first answer, and to its first semantic answer, for both starts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE / "selection"))

from livemcpbench import load_catalog  # noqa: E402

DATA = HERE / "selection" / "data" / "livemcpbench"
OUTPUT = HERE / "results" / "gateway_ready.json"
STARTUP = re.compile(r"(https?://127\.0\.0\.1:\d+/mcp)")
QUESTION = "get the current weather forecast for a city"


def tools(n: int) -> list[dict[str, Any]]:
    """``n`` distinct real tools of LiveMCPBench (by name), in catalog order."""
    found: dict[str, dict[str, Any]] = {}
    for server in load_catalog(DATA):
        for tool in server["tools"]:
            found.setdefault(str(tool["name"]), dict(tool))
    chosen = list(found.values())[:n]
    if len(chosen) < n:
        raise SystemExit(f"LiveMCPBench has {len(chosen)} distinct tools, fewer than {n}")
    return chosen


def serve_upstreams(spec: Path) -> None:
    """The child: one uvicorn server per tool of ``spec`` (a JSON list), each printing nothing; the ports
    are written to ``spec.ports`` once every server listens."""
    import uvicorn

    sys.path.insert(0, str(HERE))
    from gateway_agent import upstream_server

    listed = json.loads(spec.read_text())

    async def main() -> None:
        servers = []
        for i, tool in enumerate(listed):
            app = upstream_server(f"u{i}", [tool])[0].streamable_http_app()
            config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
            servers.append(uvicorn.Server(config))
        tasks = [asyncio.create_task(s.serve()) for s in servers]
        while not all(s.started for s in servers):
            await asyncio.sleep(0.05)
        ports = [s.servers[0].sockets[0].getsockname()[1] for s in servers]
        await asyncio.to_thread(Path(f"{spec}.ports").write_text, json.dumps(ports))
        await asyncio.gather(*tasks)

    asyncio.run(main())


async def ask(url: str) -> dict[str, Any] | None:
    from mcp.client import Client

    try:
        async with Client(url, cache=None) as client:
            result = await client.call_tool("find", {"query": QUESTION})
    except Exception:
        return None
    found: dict[str, Any] = dict(result.structured_content or {})
    return found


async def one_start(config: Path, home: Path, log: Path) -> dict[str, Any]:
    env = {**os.environ, "SKILLDECK_HOME": str(home)}
    started = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skilldeck.cli", "gateway", "--config", str(config), "--http", "127.0.0.1:0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    try:
        url = None
        while url is None:
            text = await asyncio.to_thread(log.read_text, errors="replace")
            if proc.poll() is not None:
                raise SystemExit(f"the gateway ended: {text[-2000:]}")
            match = STARTUP.search(text)
            url = match.group(1) if match else None
            await asyncio.sleep(0.05)
        up = time.perf_counter() - started
        first: float | None = None
        first_ranker = None
        while True:
            found = await ask(url)
            now = time.perf_counter() - started
            if found is not None and first is None:
                first, first_ranker = now, found.get("ranker")
            if found is not None and found.get("ranker") == "semantic":
                return {
                    "startup_line_s": round(up, 2),
                    "first_answer_s": round(first or now, 2),
                    "first_answer_ranker": first_ranker,
                    "semantic_s": round(now, 2),
                }
            if now > 600:
                raise SystemExit("no semantic answer within 600 s")
            await asyncio.sleep(0.2)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstreams", type=int, default=200)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the child's entry point
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve_upstreams(args.serve)
        return 0
    load = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec = work / "tools.json"
        spec.write_text(json.dumps(tools(args.upstreams)))
        child = subprocess.Popen([sys.executable, __file__, "--serve", str(spec)], stdin=subprocess.DEVNULL)
        try:
            ports_file = Path(f"{spec}.ports")
            deadline = time.monotonic() + 300
            while not ports_file.exists():
                if child.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the upstreams did not start")
                time.sleep(0.1)
            ports = json.loads(ports_file.read_text())
            config = work / "upstreams.json"
            servers = {f"u{i}": {"type": "http", "url": f"http://127.0.0.1:{p}/mcp"} for i, p in enumerate(ports)}
            config.write_text(json.dumps({"mcpServers": servers}))
            home = work / "home"
            cold = asyncio.run(one_start(config, home, work / "cold.log"))
            warm = asyncio.run(one_start(config, home, work / "warm.log"))
        finally:
            child.kill()  # the upstreams hold nothing worth a graceful end
            child.wait(timeout=30)
    payload = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": " ".join(["bench/gateway_ready.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": load},
        "upstreams": args.upstreams,
        "cold_start": cold,
        "restart": warm,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
