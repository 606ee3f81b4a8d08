"""Real clients through ``skilldeck gateway`` in front of real upstreams, all in one gateway process.

The gateway is started as a user would (``skilldeck gateway --config mcp.json --http 127.0.0.1:0``)
in front of ``server-everything``, ``server-filesystem`` (on a temp folder) and ``server-memory``
from npm, ``mcp-server-time`` from PyPI, ``skilldeck serve examples/skills`` over stdio, a dead
upstream (its command does not exist) and a hung one (never answers ``initialize``, ``"timeout": 5``).
One module-scoped gateway serves every test, to keep the npm start-up cost to once.

* the Python SDK client: ``find`` reports the dead and hung upstreams and still ranks the others;
  a tool of each working upstream is loaded and called through ``call``;
* MCP Inspector 2.12 CLI in both ``--protocol-era``\\ s: ``tools/list`` and ``tools/call`` of each
  meta-tool (``call`` of the ``--pin``\\ ned ``everything/echo``, so it works from a fresh session);
* the TypeScript client ``@modelcontextprotocol/client`` 2.4: ``callTool`` of each meta-tool in both
  eras, after ``listTools`` (each ``structuredContent`` is checked against the meta-tool's result schema).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp.client import Client

from skilldeck.gateway import META_OUTPUT_SCHEMAS, META_TOOLS

from ..server.helpers import REPO, start_gateway, stop
from .conftest import NODE

pytestmark = [pytest.mark.thirdparty, pytest.mark.anyio]

EXAMPLES = REPO / "examples" / "skills"
META_NAMES = [t["name"] for t in META_TOOLS]
OUTPUT_SCHEMAS = {t["name"]: META_OUTPUT_SCHEMAS.get(t["name"]) for t in META_TOOLS}
WORKING = {"everything", "filesystem", "memory", "time", "deck"}
PIN = "everything/echo"


def check(tool: str, structured: Any) -> dict[str, Any]:
    assert isinstance(structured, dict), structured
    if OUTPUT_SCHEMAS[tool] is not None:
        jsonschema.validate(structured, OUTPUT_SCHEMAS[tool])
    return structured


def chatter(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("npm warn")]


@pytest.fixture(scope="module")
def gateway(
    npx: str, npm_server_specs: dict[str, str], time_server_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("gateway-upstreams")
    files = tmp / "fs-root"
    (files / "notes").mkdir(parents=True)
    (files / "notes" / "hello.txt").write_text("hello from the filesystem server\n")
    npm_env = {"npm_config_yes": "true", "npm_config_loglevel": "error", "npm_config_update_notifier": "false"}
    pins = npm_server_specs
    hung = "import sys, time; sys.stdin.readline(); time.sleep(600)"
    config = {
        "mcpServers": {
            "everything": {"command": npx, "args": ["-y", pins["everything"]], "env": npm_env},
            "filesystem": {"command": npx, "args": ["-y", pins["filesystem"], str(files)], "env": npm_env},
            "memory": {
                "command": npx,
                "args": ["-y", pins["memory"]],
                "env": {**npm_env, "MEMORY_FILE_PATH": str(tmp / "memory.jsonl")},
            },
            "time": {
                "command": str(time_server_python),
                "args": ["-m", "mcp_server_time", "--local-timezone", "Etc/UTC"],
            },
            "deck": {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(EXAMPLES)]},
            "dead": {"command": "skilldeck-test-no-such-command", "args": ["--stdio"]},
            "hung": {"command": sys.executable, "args": ["-c", hung], "timeout": 5},
        }
    }
    path = tmp / "mcp.json"
    path.write_text(json.dumps(config))
    log_path = tmp / "gateway.log"
    proc, match = start_gateway(path, log_path, "--pin", PIN, timeout=240)
    try:
        text = log_path.read_text(errors="replace")
        assert (match["up"], match["total"]) == ("5", "7"), text
        assert "unavailable [dead]" in text, text
        assert "unavailable [hung]" in text, text
        yield match["url"]
        assert proc.poll() is None, f"the gateway exited during the tests:\n{log_path.read_text(errors='replace')}"
    finally:
        stop(proc)


# (load id, call arguments, text the result must hold) for one tool of each working upstream
CALLS = {
    "everything/echo": ({"message": "through the gateway"}, "through the gateway"),
    "filesystem/list_allowed_directories": ({}, "fs-root"),
    "memory/create_entities": (
        {"entities": [{"name": "gateway", "entityType": "test", "observations": ["works"]}]},
        "gateway",
    ),
    "time/get_current_time": ({"timezone": "Etc/UTC"}, "Etc/UTC"),
}


async def test_python_client_reaches_every_real_upstream(gateway: str) -> None:
    meta = {"dev.skilldeck/conversation": "python-real-upstreams"}
    async with Client(gateway, mode="auto", cache=None) as c:
        found = check(
            "find",
            (await c.call_tool("find", {"query": "echo a message back", "limit": 10}, meta=meta)).structured_content,
        )
        unavailable = {u["server"]: u["reason"] for u in found["unavailable"]}
        assert set(unavailable) == {"dead", "hung"}, found
        assert "command not found" in unavailable["dead"], unavailable
        assert "timed out" in unavailable["hung"], unavailable
        assert "everything/echo" in [card["id"] for card in found["cards"]], found
        result = await c.call_tool("call", {"tool": "dead/anything", "arguments": {}}, meta=meta)
        assert result.is_error, result

        loaded = check(
            "load", (await c.call_tool("load", {"ids": [*CALLS, "deck/pdf-forms"]}, meta=meta)).structured_content
        )
        assert loaded["refused"] == [], loaded
        assert {t["name"] for t in loaded["tools"]} == set(CALLS), loaded
        assert [s["id"] for s in loaded["skills"]] == ["deck/pdf-forms"], loaded
        for tool, (arguments, expected) in CALLS.items():
            result = await c.call_tool("call", {"tool": tool, "arguments": arguments}, meta=meta)
            assert not result.is_error, (tool, result)
            assert expected in json.dumps([r.model_dump() for r in result.content]), (tool, result)


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_inspector_lists_and_calls_each_meta_tool(run_npx, inspector_cmd: list[str], gateway: str, era: str) -> None:
    def inspector(*args: str, exit_code: int = 0) -> dict[str, Any]:
        result = run_npx(
            *inspector_cmd, gateway, "--transport", "http", "--protocol-era", era, "--format", "json", *args
        )
        assert result.returncode == exit_code, result.describe()
        payload = json.loads(result.stdout)
        assert "error" not in payload, payload
        return dict(payload.get("result", payload))

    listed = inspector("--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == [*META_NAMES, "everything__echo"], listed
    conversation = f"dev.skilldeck/conversation=inspector-{era}"

    def call(tool: str, arguments: dict[str, Any], exit_code: int = 0) -> dict[str, Any]:
        return inspector(
            "--method", "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(arguments),
            "--tool-metadata", conversation, exit_code=exit_code,
        )  # fmt: skip

    found = call("find", {"query": "fill in a PDF form"})
    assert not found.get("isError"), found
    assert "deck/pdf-forms" in [card["id"] for card in check("find", found["structuredContent"])["cards"]]
    loaded = call("load", {"ids": ["deck/pdf-forms"]})
    assert [s["id"] for s in check("load", loaded["structuredContent"])["skills"]] == ["deck/pdf-forms"], loaded
    # Inspector exits 5 on a result with isError (a refusal)
    read = call("read_skill_file", {"skill": "deck/pdf-forms", "path": "SKILL.md"}, 0 if era == "modern" else 5)
    if era == "modern":  # the same caller and conversation: the skill it loaded is there
        assert "name: pdf-forms" in check("read_skill_file", read["structuredContent"])["text"], read
    else:  # each Inspector run is a new legacy session, which has loaded nothing
        assert read["isError"] is True, read
        assert "load it first" in read["content"][0]["text"], read
    echoed = call("call", {"tool": PIN, "arguments": {"message": f"inspector {era}"}})
    assert not echoed.get("isError"), echoed
    assert f"inspector {era}" in json.dumps(echoed["content"]), echoed


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_ts_client_calls_each_meta_tool(run_npx, ts_client_dir: Path, gateway: str, era: str) -> None:
    script = Path(__file__).resolve().parent / "ts_gateway_client.mjs"
    arguments = json.dumps({"message": f"typescript {era}"})
    result = run_npx(
        "-p", NODE, "node", str(script), str(ts_client_dir), gateway, era, "deck/pdf-forms", PIN, arguments
    )
    assert result.returncode == 0, result.describe()
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["protocolVersion"] == ("2026-07-28" if era == "modern" else "2025-11-25"), report
    assert report["toolsBefore"] == [*META_NAMES, "everything__echo"], report
    failed = {name: call for name, call in report["calls"].items() if not call["ok"] or call["isError"]}
    assert not failed, f"the TypeScript client refused or got errors:\n{json.dumps(failed, indent=1)}"
    for name in ("find", "load", "read_skill_file"):
        check(name, report["calls"][name]["structuredContent"])
    assert f"typescript {era}" in report["calls"]["call"]["text"], report["calls"]["call"]
    if era == "legacy":  # the loaded pin is already listed; loading pdf-forms adds no tool
        assert report["toolsAfter"] == report["toolsBefore"], report
    else:
        assert report["toolsAfter"] == [*META_NAMES, "everything__echo"], report
