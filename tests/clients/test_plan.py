"""The plan of a connect, on texts alone: what moves, what merges, what is renamed or kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from skilldeck.clients import client_named, locate, plan_connect
from skilldeck.clients._edits import read
from skilldeck.clients._plan import ConnectPlan, private_values
from skilldeck.errors import ClientFileError

UP = "/h/.config/skilldeck/upstreams.json"
SKILLDECK = ["/v/bin/skilldeck"]


def location(client: str, scope: str = "user") -> Any:
    found = client_named(client)
    assert found is not None
    return locate(found, scope, system="linux", home="/h", environ={}, project="/p")


def plan(client: str, text: str | None, upstreams: str | None = None, scope: str = "user") -> ConnectPlan:
    return plan_connect(
        location(client, scope), text, upstreams=UP, upstreams_text=upstreams, command=SKILLDECK, home="/h"
    )


def after(p: ConnectPlan, path: str) -> Any:
    change = next(c for c in p.changes if c.path == path)
    return read("toml" if path.endswith(".toml") else "yaml" if path.endswith(".yaml") else "json", change.after)


def servers(doc: dict[str, Any]) -> dict[str, Any]:
    return {"mcpServers": doc}


def test_the_servers_move_and_one_gateway_entry_takes_their_place() -> None:
    cursor = json.dumps(servers({"a": {"command": "x"}, "b": {"url": "https://b/mcp"}}))
    p = plan("cursor", cursor)
    assert [(m.label, m.upstream, m.how) for m in p.moves] == [("a", "a", "added"), ("b", "b", "added")]
    assert after(p, p.location.path) == servers(
        {"skilldeck": {"command": "/v/bin/skilldeck", "args": ["gateway", "--config", UP]}}
    )
    assert after(p, UP) == servers({"a": {"command": "x"}, "b": {"url": "https://b/mcp"}})


def test_two_clients_share_one_upstreams_file_each_server_once() -> None:
    github = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}
    first = plan("cursor", json.dumps(servers({"github": {**github, "env": {"T": "one"}}, "time": {"command": "t"}})))
    upstreams = next(c.after for c in first.changes if c.path == UP)
    # Claude Code: the same github under another label, and another server under the label "time"
    second = plan(
        "claude-code",
        json.dumps(servers({"gh": {"type": "stdio", **github, "env": {"T": "two"}}, "time": {"command": "other"}})),
        upstreams,
    )
    assert [(m.label, m.upstream, m.how) for m in second.moves] == [
        ("gh", "github", "same"),
        ("time", "time-claude-code", "renamed"),
    ]
    assert second.moves[0].note == "its env differ from the upstreams file's, which stay"
    merged = after(second, UP)["mcpServers"]
    assert set(merged) == {"github", "time", "time-claude-code"}
    assert merged["github"]["env"] == {"T": "one"}
    assert merged["time-claude-code"] == {"command": "other"}


def test_a_label_taken_twice_gets_a_number_and_the_same_url_is_one_server() -> None:
    existing = json.dumps(
        servers({"s": {"command": "a"}, "s-cursor": {"command": "b"}, "u": {"url": "https://u/mcp/"}})
    )
    p = plan("cursor", json.dumps(servers({"s": {"command": "c"}, "v": {"url": "https://u/mcp"}})), existing)
    assert [(m.upstream, m.how) for m in p.moves] == [("s-cursor-2", "renamed"), ("u", "same")]


def test_the_same_server_twice_in_one_client_is_kept_once() -> None:
    p = plan("cursor", json.dumps(servers({"a": {"command": "x"}, "b": {"command": "x"}})))
    assert [(m.label, m.upstream, m.how) for m in p.moves] == [("a", "a", "added"), ("b", "a", "same")]


def test_connecting_again_changes_nothing() -> None:
    p = plan("vscode", '{"servers": {"a": {"type": "stdio", "command": "x"}}}')
    client_after = next(c.after for c in p.changes if c.path == p.location.path)
    again = plan("vscode", client_after, next(c.after for c in p.changes if c.path == UP))
    assert again.changes == []
    assert again.moves == []


def test_a_new_skilldeck_path_rewrites_the_gateway_entry_in_place() -> None:
    old = servers({"skilldeck": {"command": "/old/skilldeck", "args": ["gateway", "--config", UP], "x": 1}})
    p = plan("claude-desktop", json.dumps(old))
    assert [c.path for c in p.changes] == [p.location.path]
    assert after(p, p.location.path)["mcpServers"]["skilldeck"]["command"] == "/v/bin/skilldeck"


def test_a_gateway_on_another_upstreams_file_is_refused_with_what_to_do() -> None:
    other = servers({"gw": {"command": "/v/bin/skilldeck", "args": ["gateway", "--config", "/other.json"]}})
    with pytest.raises(
        ClientFileError, match=r"'gw' starts a skilldeck gateway on /other\.json; connect with --upstreams /other\.json"
    ):
        plan("cursor", json.dumps(other))


def test_a_server_that_stays_may_hold_the_name_skilldeck() -> None:
    zed = {"context_servers": {"skilldeck": {"source": "extension", "settings": {}}}}
    p = plan("zed", json.dumps(zed))
    assert p.gateway_label == "skilldeck-gateway"
    assert [k.label for k in p.kept] == ["skilldeck"]


def test_a_server_named_skilldeck_that_moves_frees_the_name() -> None:
    p = plan("cursor", json.dumps(servers({"skilldeck": {"command": "/v/bin/skilldeck", "args": ["serve", "skills"]}})))
    assert [(m.label, m.upstream) for m in p.moves] == [("skilldeck", "skilldeck")]
    assert after(p, p.location.path)["mcpServers"]["skilldeck"]["args"][0] == "gateway"


def test_a_project_server_naming_project_files_runs_in_the_project_folder() -> None:
    mcp = servers(
        {
            "rel": {"command": "python", "args": ["./tools/server.py"]},
            "script": {"command": "node", "args": ["build/index.js"]},
            "package": {"command": "npx", "args": ["-y", "@scope/pkg"]},
            "here": {"command": "uvx", "args": ["mcp-server-git", "--repository", "."]},
        }
    )
    moved = after(plan("claude-code", json.dumps(mcp), scope="project"), UP)["mcpServers"]
    assert {k for k, v in moved.items() if v.get("cwd") == "/p"} == {"rel", "script", "here"}
    own = {"servers": {"own": {"type": "stdio", "command": "python", "args": ["s.py"], "cwd": "/elsewhere"}}}
    assert after(plan("vscode", json.dumps(own), scope="project"), UP)["mcpServers"]["own"]["cwd"] == "/elsewhere"
    user = after(plan("cursor", json.dumps(servers({"rel": {"command": "python", "args": ["./s.py"]}}))), UP)
    assert "cwd" not in user["mcpServers"]["rel"]


def test_an_entry_the_gateway_would_refuse_stays_and_says_why() -> None:
    bad = {"type": "http", "url": "https://x/mcp", "oauth": {"grant": "client_credentials"}}
    p = plan("claude-code", json.dumps(servers({"bad": bad})))
    assert p.kept[0].kept is not None
    assert "skilldeck would refuse it: mcpServers.bad: 'oauth': 'grant' is 'client_credentials'" in p.kept[0].kept


def test_secrets_written_to_the_upstreams_file_make_it_private() -> None:
    p = plan(
        "cursor",
        json.dumps(
            servers({"a": {"command": "x", "env": {"K": "s3cret"}}, "b": {"command": "y", "env": {"K": "${K}"}}})
        ),
    )
    assert p.private == ["a"]
    assert next(c for c in p.changes if c.path == UP).private
    assert private_values({"headers": {"Authorization": "Bearer ${T}"}}) == []
    assert private_values({"headers": {"Authorization": "Bearer abc"}}) == ["Bearer abc"]


def test_files_that_do_not_read_or_hold_servers_elsewhere_are_refused() -> None:
    with pytest.raises(ClientFileError, match=r"mcp\.json: line 1 column 2"):
        plan("cursor", "{x")
    with pytest.raises(ClientFileError, match="mcpServers is not an object of servers"):
        plan("cursor", '{"mcpServers": []}')
    with pytest.raises(ClientFileError, match=r"upstreams\.json: its servers are not under \"mcpServers\""):
        plan("cursor", "{}", '{"a": {"command": "x"}}')
    assert plan("cursor", None, '{"servers": {}}').changes[0].after.startswith('{\n  "mcpServers"')


def test_goose_hands_the_moved_servers_secrets_to_the_gateway() -> None:
    goose = "extensions:\n  gh:\n    type: stdio\n    cmd: npx\n    args: []\n    env_keys:\n    - GITHUB_TOKEN\n    envs: {}\n"
    p = plan("goose", goose)
    assert after(p, p.location.path)["extensions"]["skilldeck"]["env_keys"] == ["GITHUB_TOKEN"]
    assert after(p, UP)["mcpServers"]["gh"]["env"] == {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}
