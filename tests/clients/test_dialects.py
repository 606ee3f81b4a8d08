"""Each client's entry read in the gateway's terms, or kept in the client with the reason; where each
client keeps its files on each system."""

from __future__ import annotations

from typing import Any

import pytest

from skilldeck.clients import client_named, default_upstreams, locate
from skilldeck.clients._dialects import Context, Kept, gateway_entry, is_gateway, upstream_entry

USER = Context(home="/home/me")
PROJECT = Context(home="/home/me", project="/work/app")


def entry(client: str, raw: Any, ctx: Context = USER) -> dict[str, Any]:
    got = upstream_entry(client, raw, ctx)
    assert not isinstance(got, Kept), got
    return got


def kept(client: str, raw: Any, ctx: Context = USER) -> str:
    got = upstream_entry(client, raw, ctx)
    assert isinstance(got, Kept), got
    return got.reason


def test_claude_entries_pass_as_they_are() -> None:
    raw = {"type": "stdio", "command": "npx", "args": ["-y", "x"], "env": {"T": "${TOKEN:-none}"}}
    assert entry("claude-code", raw) == {"command": "npx", "args": ["-y", "x"], "env": {"T": "${TOKEN:-none}"}}
    assert entry("claude-code", {"type": "sse", "url": "https://s/sse"}) == {"type": "sse", "url": "https://s/sse"}
    oauth = {"type": "http", "url": "https://s/mcp", "oauth": {"clientId": "c"}}
    assert entry("claude-code", oauth) == {"url": "https://s/mcp", "oauth": {"clientId": "c"}}
    assert "headersHelper" in kept("claude-code", {"url": "https://s/mcp", "headersHelper": "/bin/h"})
    assert "passes as written" in kept("claude-desktop", {"command": "x", "args": ["${HOME}"]})
    assert entry("claude-desktop", {"command": "x", "disabled": True}) == {"command": "x", "disabled": True}


def test_editor_variables_become_the_gateways_or_stay_in_the_editor() -> None:
    raw = {"command": "node", "args": ["${userHome}/s.js", "${env:TZ}", "${workspaceFolder}${pathSeparator}x"]}
    assert entry("cursor", raw, PROJECT)["args"] == ["/home/me/s.js", "${TZ}", "/work/app/x"]
    assert "only the editor knows" in kept("cursor", raw, USER)
    assert "${input:key}" in kept("vscode", {"type": "stdio", "command": "x", "env": {"K": "${input:key}"}})
    assert "only the client fills in" in kept("vscode", {"type": "stdio", "command": "${command:pick}"})
    assert "env file" in kept("vscode", {"type": "stdio", "command": "x", "envFile": "${workspaceFolder}/.env"})
    assert "sandbox" in kept("vscode", {"type": "stdio", "command": "x", "sandboxEnabled": True})
    basename = {"type": "stdio", "command": "x", "args": ["${workspaceFolderBasename}"]}
    assert entry("vscode", basename, PROJECT)["args"] == ["app"]


def test_a_tool_filter_keeps_the_server_in_its_client_but_an_empty_one_does_not() -> None:
    for client, key in (("windsurf", "disabledTools"), ("gemini-cli", "excludeTools"), ("codex", "enabled_tools")):
        assert f"'{key}' limits which of its tools" in kept(client, {"command": "x", key: ["t"]})
        assert entry(client, {"command": "x", key: []}) == {"command": "x"}


def test_an_unknown_key_keeps_the_server_and_names_the_key() -> None:
    assert "'autoApprove'" in kept("cursor", {"command": "x", "autoApprove": ["t"]})
    assert "'bogus'" in kept("codex", {"command": "x", "bogus": 1})


def test_windsurf_gemini_codex_goose_and_zed_spellings() -> None:
    assert entry("windsurf", {"serverUrl": "https://f/mcp", "headers": {"A": "${env:X}"}}) == {
        "url": "https://f/mcp",
        "headers": {"A": "${X}"},
    }
    gemini = {"command": "py", "env": {"A": "$X", "B": "${Y}"}, "timeout": 15000, "trust": True, "cwd": "/d"}
    assert entry("gemini-cli", gemini) == {
        "command": "py",
        "env": {"A": "${X}", "B": "${Y}"},
        "cwd": "/d",
        "timeout": 15.0,
    }
    assert entry("gemini-cli", {"httpUrl": "http://h/mcp"}) == {"url": "http://h/mcp"}
    assert entry("gemini-cli", {"url": "http://h/sse"}) == {"type": "sse", "url": "http://h/sse"}
    assert "sign-in" in kept("gemini-cli", {"httpUrl": "http://h/mcp", "authProviderType": "google_credentials"})
    codex = {
        "url": "https://f/mcp",
        "bearer_token_env_var": "TOKEN",
        "http_headers": {"X-R": "us"},
        "env_http_headers": {"X-O": "ORG"},
        "enabled": False,
        "startup_timeout_ms": 20000,
    }
    assert entry("codex", codex) == {
        "url": "https://f/mcp",
        "headers": {"X-R": "us", "X-O": "${ORG}", "Authorization": "Bearer ${TOKEN}"},
        "timeout": 20.0,
        "disabled": True,
    }
    assert entry("codex", {"command": "x", "env_vars": ["K"], "env": {"L": "v"}}) == {
        "command": "x",
        "env": {"L": "v", "K": "${K}"},
    }
    goose = {"type": "stdio", "cmd": "npx", "args": ["-y", "g"], "envs": {}, "env_keys": ["T"], "bundled": None}
    assert entry("goose", {**goose, "name": "g", "timeout": 300}) == {
        "command": "npx",
        "args": ["-y", "g"],
        "env": {"T": "${T}"},
        "timeout": 300.0,
    }
    assert entry("goose", {"type": "sse", "uri": "http://h/sse", "enabled": False}) == {
        "type": "sse",
        "url": "http://h/sse",
        "disabled": True,
    }
    assert "builtin" in kept("goose", {"type": "builtin", "name": "developer"})
    old_zed = {"command": {"path": "/bin/s", "args": ["-v"], "env": {"A": "b"}}, "settings": {}}
    assert entry("zed", old_zed) == {"command": "/bin/s", "args": ["-v"], "env": {"A": "b"}}
    assert entry("zed", {"source": "custom", "command": "uvx", "args": ["t"], "env": {}}) == {
        "command": "uvx",
        "args": ["t"],
    }
    assert "Zed extension" in kept("zed", {"source": "extension", "settings": {}})
    assert "Zed extension" in kept("zed", {"settings": {"key": "v"}})


def test_a_malformed_entry_is_kept_with_what_is_wrong() -> None:
    assert "not an object" in kept("cursor", ["x"])
    assert "'args' is not a list of strings" in kept("cursor", {"command": "x", "args": "y"})
    assert "neither a command nor a URL" in kept("cursor", {"env": {}})
    assert "'type' 'websocket'" in kept("cursor", {"type": "websocket", "url": "ws://x"})
    assert "positive number" in kept("gemini-cli", {"command": "x", "timeout": -1})


def test_the_gateway_entry_in_each_clients_spelling_is_recognised_as_the_gateway() -> None:
    command = ["/v/bin/skilldeck", "gateway", "--config", "/u.json"]
    for client in (
        "claude-desktop",
        "claude-code",
        "cursor",
        "vscode",
        "windsurf",
        "gemini-cli",
        "codex",
        "goose",
        "zed",
    ):
        raw = gateway_entry(client, command, ["T"])
        read = entry(client, raw)
        assert is_gateway(read) == "/u.json", (client, raw)
    assert gateway_entry("goose", command, ["T"])["env_keys"] == ["T"]
    assert (
        is_gateway({"command": "/usr/bin/python3", "args": ["-m", "skilldeck.cli", "gateway", "--config=/u"]}) == "/u"
    )
    assert is_gateway({"command": "skilldeck", "args": ["serve", "x"]}) is None
    assert is_gateway({"command": "skilldeck-other", "args": ["gateway"]}) is None
    assert is_gateway({"command": "C:\\v\\Scripts\\skilldeck.exe", "args": ["gateway"]}) == ""


@pytest.mark.parametrize(
    ("system", "environ", "client", "scope", "path"),
    [
        ("darwin", {}, "claude-desktop", "user", "/h/Library/Application Support/Claude/claude_desktop_config.json"),
        (
            "win32",
            {"APPDATA": "C:\\U\\AppData\\Roaming"},
            "claude-desktop",
            "user",
            "C:\\U\\AppData\\Roaming\\Claude\\claude_desktop_config.json",
        ),
        ("linux", {"XDG_CONFIG_HOME": "/x"}, "claude-desktop", "user", "/x/Claude/claude_desktop_config.json"),
        ("linux", {}, "claude-code", "user", "/h/.claude.json"),
        ("linux", {"CLAUDE_CONFIG_DIR": "/c"}, "claude-code", "local", "/c/.claude.json"),
        ("linux", {}, "claude-code", "project", "/p/.mcp.json"),
        ("darwin", {}, "vscode", "user", "/h/Library/Application Support/Code/User/mcp.json"),
        ("linux", {}, "vscode", "project", "/p/.vscode/mcp.json"),
        ("linux", {}, "cursor", "project", "/p/.cursor/mcp.json"),
        ("win32", {}, "windsurf", "user", "C:\\h\\.codeium\\windsurf\\mcp_config.json"),
        ("linux", {}, "gemini-cli", "project", "/p/.gemini/settings.json"),
        ("linux", {"CODEX_HOME": "/cx"}, "codex", "user", "/cx/config.toml"),
        ("darwin", {}, "goose", "user", "/h/.config/goose/config.yaml"),
        ("win32", {"APPDATA": "C:\\A"}, "goose", "user", "C:\\A\\Block\\goose\\config\\config.yaml"),
        ("darwin", {}, "zed", "user", "/h/.config/zed/settings.json"),
        ("linux", {}, "zed", "project", "/p/.zed/settings.json"),
    ],
)
def test_where_each_client_keeps_its_servers(
    system: str, environ: dict[str, str], client: str, scope: str, path: str
) -> None:
    home, project = ("C:\\h", "C:\\p") if system == "win32" else ("/h", "/p")
    found = client_named(client)
    assert found is not None
    location = locate(found, scope, system=system, home=home, environ=environ, project=project)
    assert location.path == path


def test_claude_codes_local_scope_is_its_projects_entry_and_a_missing_scope_is_named() -> None:
    code = client_named("claude-code")
    assert code is not None
    local = locate(code, "local", system="linux", home="/h", environ={}, project="/p")
    assert local.keys == ("projects", "/p", "mcpServers")
    desktop = client_named("claude-desktop")
    assert desktop is not None
    with pytest.raises(ValueError, match="claude-desktop has no project scope; it has user"):
        locate(desktop, "project", system="linux", home="/h", environ={}, project="/p")
    assert default_upstreams(system="linux", home="/h", environ={}) == "/h/.config/skilldeck/upstreams.json"
    assert (
        default_upstreams(system="win32", home="C:\\h", environ={"APPDATA": "C:\\A"})
        == "C:\\A\\skilldeck\\upstreams.json"
    )
