"""skilldeck's host CLI against real third-party MCP servers, all from one ``mcpServers`` config.

Over stdio: the reference servers ``@modelcontextprotocol/server-everything``, ``server-filesystem``
(on a temp dir) and ``server-memory`` from npm (``npx -y <pinned spec>``, pre-warmed by .ci/run),
and ``mcp-server-time`` from PyPI, run from a venv of its own (it needs mcp 1.x; the project venv
keeps mcp 2.3). Over streamable HTTP: ``skilldeck serve examples/skills``. The pins live in
``conftest.py``.

* every server connects and its cards are listed (tools for the third-party servers, the 8
  example skills for skilldeck), exit code 0;
* a server whose command does not exist and one that never answers (``"timeout": 5``) are
  reported with their reasons, exit code 3, while every working server is still listed and the
  whole run finishes within the timeout plus a margin;
* ``skilldeck load --all-files --json`` returns every file of ``pdf-forms`` byte for byte, binary
  assets as base64 ``blob``, the second time from the verified cache.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skilldeck.skill._uri import SKILL_MD

pytestmark = pytest.mark.thirdparty

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "skills"

HANG_TIMEOUT = 5
# The hanging server may hold up the run by its timeout plus this much (process start-up, the
# other servers' listing, tearing the hanging process down).
HANG_MARGIN = 15.0
MISSING_COMMAND = "skilldeck-test-no-such-command"

# Tool names each third-party server lists (a few real ones, not the full set, so that a
# harmless addition upstream does not break the test).
EXPECTED_TOOLS = {
    "everything": {"echo", "get-sum"},
    "filesystem": {"read_file", "read_text_file", "list_directory", "list_allowed_directories"},
    "memory": {"create_entities", "read_graph", "search_nodes"},
    "time": {"get_current_time", "convert_time"},
}
THIRD_PARTY = sorted(EXPECTED_TOOLS)
SKILLDECK_LABEL = "skilldeck"


def example_skill_uris() -> set[str]:
    return {f"skill://{p.parent.relative_to(EXAMPLES).as_posix()}/{SKILL_MD}" for p in EXAMPLES.rglob(SKILL_MD)}


@pytest.fixture
def servers_config(
    npx: str, npm_server_specs: dict[str, str], time_server_python: Path, skilldeck_server: Any, tmp_path: Path
) -> dict[str, Any]:
    """An ``mcpServers`` document with the four third-party stdio servers and skilldeck over HTTP."""
    pins = npm_server_specs
    files = tmp_path / "fs-root"
    (files / "notes").mkdir(parents=True)
    (files / "notes" / "hello.txt").write_text("hello from the filesystem server\n")
    npm_env = {
        "npm_config_yes": "true",
        "npm_config_loglevel": "error",
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }
    return {
        "mcpServers": {
            "everything": {"command": npx, "args": ["-y", pins["everything"]], "env": npm_env},
            "filesystem": {"command": npx, "args": ["-y", pins["filesystem"], str(files)], "env": npm_env},
            "memory": {
                "command": npx,
                "args": ["-y", pins["memory"]],
                "env": {**npm_env, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
            },
            "time": {
                "command": str(time_server_python),
                "args": ["-m", "mcp_server_time", "--local-timezone", "Etc/UTC"],
            },
            SKILLDECK_LABEL: {"url": skilldeck_server.url},
        }
    }


def write_config(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def servers_by_label(result: Any) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"`skilldeck skills --json` did not print JSON on stdout\n{result.describe()}")
    return {s["label"]: s for s in data["servers"]}


def assert_working_servers_listed(servers: dict[str, dict[str, Any]], skilldeck_server: Any, context: str) -> None:
    for label in [*THIRD_PARTY, SKILLDECK_LABEL]:
        assert label in servers, f"{label} missing from the listing\n{context}"
        server = servers[label]
        assert server["status"] == "connected", f"{label}: {server}\n{context}"
        assert server["protocolVersion"], server
        assert not server["rejected"], f"{label}: rejected entries {server['rejected']}"
        assert not server["notes"], f"{label}: listing notes {server['notes']}\n{context}"

    for label, expected in EXPECTED_TOOLS.items():
        server = servers[label]
        assert server["transport"] == "stdio"
        names = {t["name"] for t in server["tools"]}
        assert expected <= names, f"{label}: expected tools {sorted(expected)}, listed {sorted(names)}"
        for tool in server["tools"]:
            assert isinstance(tool.get("inputSchema"), dict), f"{label}/{tool['name']}: no inputSchema: {tool}"
        # None of these servers declares the Skills extension, so no skills/list was sent.
        assert server["skillsExtension"] is False, server
        assert server["skills"] == [], server

    deck = servers[SKILLDECK_LABEL]
    assert deck["transport"] == "http"
    assert deck["skillsExtension"] is True, deck
    assert deck["tools"] == [], deck
    uris = {s["uri"] for s in deck["skills"]}
    assert len(deck["skills"]) == skilldeck_server.skill_count == 8, [s["uri"] for s in deck["skills"]]
    assert uris == example_skill_uris()
    for card in deck["skills"]:
        assert card["name"].startswith(f"{SKILLDECK_LABEL}/"), card["name"]
        assert card["frontmatter"]["description"], card
        assert card["resources"], card


def test_lists_cards_of_every_server(servers_config, run_skilldeck, skilldeck_server, tmp_path: Path) -> None:
    config = write_config(tmp_path, servers_config)
    result = run_skilldeck("skills", "--config", str(config), "--json")
    skilldeck_server.assert_alive()
    assert result.returncode == 0, f"expected exit code 0 with every server reachable\n{result.describe()}"
    servers = servers_by_label(result)
    assert sorted(servers) == sorted([*THIRD_PARTY, SKILLDECK_LABEL]), sorted(servers)
    assert_working_servers_listed(servers, skilldeck_server, result.describe())


def _process_gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "?")
    return state in ("Z", "X")  # a zombie has exited; only its parent's reaping is left


def test_reports_missing_and_hanging_servers(servers_config, run_skilldeck, skilldeck_server, tmp_path: Path) -> None:
    pid_file = tmp_path / "hanging.pid"
    hang = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
    servers_config["mcpServers"]["missing"] = {"command": MISSING_COMMAND, "args": ["--stdio"]}
    servers_config["mcpServers"]["hanging"] = {
        "command": sys.executable,
        "args": ["-c", hang, str(pid_file)],
        "timeout": HANG_TIMEOUT,
    }
    config = write_config(tmp_path, servers_config)

    start = time.monotonic()
    try:
        result = run_skilldeck("skills", "--config", str(config), "--json")
        elapsed = time.monotonic() - start
        skilldeck_server.assert_alive()
        assert result.returncode == 3, f"expected exit code 3 (a server unreachable)\n{result.describe()}"
        servers = servers_by_label(result)

        missing = servers["missing"]
        assert missing["status"] == "unreachable", missing
        assert "command not found" in missing["error"], missing
        assert MISSING_COMMAND in missing["error"], missing

        hanging = servers["hanging"]
        assert hanging["status"] == "unreachable", hanging
        assert "timed out" in hanging["error"], hanging
        assert f"{HANG_TIMEOUT}s" in hanging["error"], hanging

        assert_working_servers_listed(servers, skilldeck_server, result.describe())
        assert elapsed <= HANG_TIMEOUT + HANG_MARGIN, (
            f"the run took {elapsed:.1f}s: the hanging server (timeout {HANG_TIMEOUT}s) held it up\n{result.describe()}"
        )

        # The hanging server was started, and skilldeck did not leave it running.
        assert pid_file.exists(), "the hanging server never started"
        pid = int(pid_file.read_text())
        deadline = time.monotonic() + 5
        while not _process_gone(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _process_gone(pid), f"the hanging server (pid {pid}) is still running after skilldeck exited"
    finally:
        if pid_file.exists() and pid_file.read_text().strip().isdigit():
            pid = int(pid_file.read_text())
            if not _process_gone(pid):
                os.kill(pid, 9)  # our own child's leftover only


def _expected_files(skill: str) -> dict[str, bytes]:
    root = EXAMPLES / skill
    return {f"skill://{skill}/{p.relative_to(root).as_posix()}": p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_load_returns_every_file_verified(run_skilldeck, skilldeck_server, tmp_path: Path) -> None:
    skill = "pdf-forms"
    uri = f"skill://{skill}/{SKILL_MD}"
    expected = _expected_files(skill)
    assert any(b"\0" in data for data in expected.values()), "pdf-forms should hold binary assets"
    home = tmp_path / "home"

    outputs = []
    for attempt in ("network", "cache"):
        result = run_skilldeck("load", skilldeck_server.url, uri, "--all-files", "--json", home=home)
        skilldeck_server.assert_alive()
        assert result.returncode == 0, f"load ({attempt}) failed\n{result.describe()}"
        outputs.append(json.loads(result.stdout))
    first, second = outputs
    # The second run is served from the verified cache and must be indistinguishable.
    assert first == second
    assert any((home / "cache").rglob("*")), "nothing was cached"

    assert first["uri"] == uri
    assert first["origin"] == "mcp"
    assert first["verified"] is True
    assert first["allowedTools"] == [], "allowed-tools must not be granted without --yes"
    assert first["content"].encode("utf-8") == expected[uri]

    listed = {r["uri"]: r for r in first["entry"]["resources"]}
    assert set(listed) == set(expected), f"listed {sorted(listed)}, on disk {sorted(expected)}"
    for resource_uri, data in expected.items():
        assert listed[resource_uri]["size"] == len(data), resource_uri
        assert listed[resource_uri]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest(), resource_uri

    files = {f["uri"]: f for f in first["files"]}
    assert len(files) == len(first["files"]), "a file was returned twice"
    assert set(files) == set(expected) - {uri}, f"returned {sorted(files)}"
    kinds = {"text": 0, "blob": 0}
    for file_uri, item in files.items():
        data = expected[file_uri]
        assert item["size"] == len(data), file_uri
        if "blob" in item:
            kinds["blob"] += 1
            assert "text" not in item, item
            assert base64.b64decode(item["blob"], validate=True) == data, file_uri
        else:
            kinds["text"] += 1
            assert item["text"].encode("utf-8") == data, file_uri
    assert kinds["blob"] == 2, f"expected the two binary assets as blobs: {kinds}"
    assert {u for u, f in files.items() if "blob" in f} == {
        f"skill://{skill}/assets/blank-form.pdf",
        f"skill://{skill}/assets/logo.png",
    }
