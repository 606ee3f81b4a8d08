"""Capture what real MCP servers list, for the everyday benchmark (``everyday.py``).

Each server below is started for real over stdio (npm packages with ``npx``, PyPI packages from a
venv of their own, ``bench/.venv-everyday``, made on first use) and asked, through the official SDK's
``Client``, for its ``serverInfo``, its ``instructions`` and every tool it lists (name, title,
description, input schema, annotations). The answers go to
``bench/selection/data/everyday/servers.json`` with the package versions, so the benchmark and its
test run without npm or network and ask the same catalog every time; run this again to refresh it
(the versions are pinned here, and the file says which were captured).

    .venv/bin/python bench/selection/everyday_snapshot.py          # about a minute, on first use longer
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "bench" / "selection" / "data" / "everyday" / "servers.json"
VENV = REPO / "bench" / ".venv-everyday"

NPM = {
    "everything": "@modelcontextprotocol/server-everything@2026.8.31",
    "fs": "@modelcontextprotocol/server-filesystem@2026.8.31",
    "memory": "@modelcontextprotocol/server-memory@2026.8.31",
    "thinking": "@modelcontextprotocol/server-sequential-thinking@2026.8.31",
}
PYPI = {
    "time": ("mcp-server-time==2026.10.19", "mcp_server_time"),
    "git": ("mcp-server-git==2026.10.19", "mcp_server_git"),
    "fetch": ("mcp-server-fetch==2026.10.24", "mcp_server_fetch"),
}
SETS = {
    "five": ["everything", "fs", "memory", "time"],  # with the example skill pack as "skills", served in process
    "second": ["git", "fetch", "thinking"],  # with the example skill pack too
}


def python_venv() -> Path:
    """``bench/.venv-everyday`` holding the PyPI servers at their pinned versions (made once)."""
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *(spec for spec, _ in PYPI.values())],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return python


def parameters(label: str, python: Path, folder: Path) -> StdioServerParameters:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder)}
    if label in NPM:
        args = ["-y", NPM[label]]
        if label == "fs":
            args.append(str(folder))
        if label == "memory":
            env["MEMORY_FILE_PATH"] = str(folder / "memory.jsonl")
        return StdioServerParameters(command="npx", args=args, env=env)
    module = PYPI[label][1]
    args = ["-m", module]
    if label == "git":
        args += ["--repository", str(folder)]
    return StdioServerParameters(command=str(python), args=args, env=env)


async def capture(label: str, params: StdioServerParameters) -> dict[str, Any]:
    async with Client(params, read_timeout_seconds=120) as client:
        info = client.server_info
        tools = (await client.list_tools()).tools
        return {
            "label": label,
            "package": NPM.get(label) or PYPI[label][0],
            "server_info": info.model_dump(mode="json", exclude_none=True, by_alias=True) if info else {},
            "instructions": client.instructions,
            "tools": [t.model_dump(mode="json", exclude_none=True, by_alias=True) for t in tools],
        }


async def main_async(labels: list[str]) -> dict[str, Any]:
    python = python_venv()
    servers = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(folder)], check=True)
        for label in labels:
            servers.append(await capture(label, parameters(label, python, folder)))
            print(f"{label}: {len(servers[-1]['tools'])} tools", file=sys.stderr)
    return {
        "captured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": "python bench/selection/everyday_snapshot.py",
        "sets": SETS,
        "servers": servers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    labels = [label for members in SETS.values() for label in members]
    data = asyncio.run(main_async(labels))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.output.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
