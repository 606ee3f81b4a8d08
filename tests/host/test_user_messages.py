"""Messages that send a new user the right way: config files of other clients, ``load`` forms, typos, wrong URLs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skilldeck.cli import main
from skilldeck.host import ConfigError, HttpServer, StdioServer, load_config, parse_config
from skilldeck.server import create_server

from .hostile_http import hostile_app, not_json, serving_in_thread

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "skills"

# -- config files -------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["mcpservers", "MCPServers", "mcp_servers"])
def test_a_misspelt_mcpservers_key_is_named_not_read_as_a_server(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({key: {"time": {"command": "uvx"}}})
    message = str(info.value)
    assert f"found {key!r}" in message
    assert 'the key is "mcpServers"' in message
    assert "needs 'command'" not in message


def test_vs_code_mcp_json_is_read(tmp_path: Path) -> None:
    document = {
        "inputs": [{"type": "promptString", "id": "token", "description": "API token", "password": True}],
        "servers": {
            "files": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]},
            "docs": {"type": "http", "url": "http://127.0.0.1:8000/mcp", "headers": {"X-Team": "a"}},
        },
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(document))
    by_label = {spec.label: spec for spec in load_config(path)}
    assert by_label["files"].transport == StdioServer("npx", ("-y", "@modelcontextprotocol/server-filesystem"))
    assert by_label["docs"].transport == HttpServer("http://127.0.0.1:8000/mcp", {"X-Team": "a"})


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"type": "sse", "command": "x"}, "'type' is 'sse', so it needs a 'url'"),
        ({"type": "stdio", "url": "http://x/mcp"}, "'type' is 'stdio', so it needs a 'command'"),
        ({"type": "http", "command": "x"}, "'type' is 'http', so it needs a 'url'"),
        ({"type": "websocket", "url": "ws://x"}, "'type' must be 'stdio', 'http' or 'sse'"),
    ],
)
def test_an_entrys_type_is_checked_against_its_fields(entry: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        parse_config({"servers": {"srv": entry}})


def test_a_server_labelled_servers_in_a_bare_mapping_is_still_a_server() -> None:
    (spec,) = parse_config({"servers": {"command": "x"}})
    assert spec.label == "servers"


# -- the CLI against a real server on loopback -------------------------------------------------------


@pytest.fixture(scope="module")
def examples_url() -> Iterator[str]:
    server, _ = create_server(EXAMPLES)
    with serving_in_thread(hostile_app(server, "none", not_json)) as url:
        yield url


def _config(tmp_path: Path, **servers: str) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {label: {"url": url} for label, url in servers.items()}}))
    return str(path)


def _load(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str, str]:
    code = main(["load", *args, "--home", str(tmp_path / "home"), "--timeout", "20"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", ["pdf-forms", "docs/pdf-forms"])
def test_load_with_config_and_only_a_skill_name(
    examples_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    config = _config(tmp_path, docs=examples_url)
    code, out, err = _load(capsys, tmp_path, "--config", config, name)
    assert code == 0, err
    assert out.startswith('<skill-content origin="mcp" server="docs" uri="skill://pdf-forms/SKILL.md" verified="true">')


def test_load_with_config_finds_a_bare_name_across_servers_and_a_label_picks_one(
    examples_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, docs=examples_url, mirror=examples_url)
    code, _, err = _load(capsys, tmp_path, "--config", config, "pdf-forms")
    assert code == 1
    assert "docs/pdf-forms" in err
    assert "mirror/pdf-forms" in err
    code, out, err = _load(capsys, tmp_path, "--config", config, "mirror/pdf-forms")
    assert code == 0, err
    assert 'server="mirror"' in out.split("\n", 1)[0]
    code, _, err = _load(capsys, tmp_path, "--config", config, "nowhere/pdf-forms")
    assert code == 1
    assert "no server labelled 'nowhere'" in err
    assert "docs, mirror" in err


def test_a_file_name_the_skill_does_not_list_is_a_typo_with_the_files_listed(
    examples_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _load(capsys, tmp_path, examples_url, "pdf-forms", "--file", "references/FORM.md")
    assert code == 1, err
    assert out == ""
    message = " ".join(err.split())
    assert "lists no file 'references/FORM.md'" in message, message
    assert "references/FORMS.md" in message
    assert "verification failed" not in message
    code, out, err = _load(capsys, tmp_path, examples_url, "pdf-forms", "--file", "references/FORMS.md")
    assert code == 0, err
    assert 'uri="skill://pdf-forms/references/FORMS.md"' in out


@pytest.mark.parametrize("path", ["/", "", "/api"])
def test_a_url_without_the_mcp_path_gets_a_hint(
    examples_url: str, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    base = examples_url.removesuffix("/mcp")
    code = main(["skills", base + path, "--timeout", "20"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 3
    assert f"no MCP endpoint at {base + path} (HTTP 404 Not Found)" in err, err
    assert f"try {base}{path.rstrip('/')}/mcp" in err, err
    assert "MCPError" not in err
