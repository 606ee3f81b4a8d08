"""The TOML (Codex) and YAML (Goose) editors: an edit changes its entry's lines and no other byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilldeck.clients import _tomltext, _yamltext
from skilldeck.errors import ClientFileError

FIXTURES = Path(__file__).parent / "fixtures"
ENTRY = {"command": "/abs/skilldeck", "args": ["gateway", "--config", "/u.json"]}


# -- TOML ------------------------------------------------------------------------------------------


def test_toml_remove_takes_the_table_and_nothing_else() -> None:
    text = (FIXTURES / "codex_config.toml").read_text()
    new = _tomltext.remove(text, "mcp_servers", "figma")
    block = (
        '[mcp_servers.figma]\nurl = "https://mcp.figma.com/mcp"\nbearer_token_env_var = "FIGMA_OAUTH_TOKEN"\n'
        'http_headers = { "X-Figma-Region" = "us-east-1" }\n\n'
    )
    assert new == text.replace(block, "")


def test_toml_put_adds_a_table_after_its_siblings_with_a_blank_line_before_the_next() -> None:
    text = (FIXTURES / "codex_config.toml").read_text()
    new = _tomltext.put(text, "mcp_servers", "skilldeck", {**ENTRY, "env": {"A": "b"}})
    added = (
        '[mcp_servers.skilldeck]\ncommand = "/abs/skilldeck"\nargs = ["gateway", "--config", "/u.json"]\n'
        'env = {A = "b"}\n\n[profiles.fast]'
    )
    assert new == text.replace("[profiles.fast]", added)
    assert _tomltext.read(new)["mcp_servers"]["skilldeck"]["env"] == {"A": "b"}


def test_toml_put_into_a_file_without_servers_and_into_an_empty_one() -> None:
    assert _tomltext.put('model = "o3"\n', "mcp_servers", "s", ENTRY) == (
        'model = "o3"\n\n[mcp_servers.s]\ncommand = "/abs/skilldeck"\nargs = ["gateway", "--config", "/u.json"]\n'
    )
    assert _tomltext.read(_tomltext.put("", "mcp_servers", "s", ENTRY)) == {"mcp_servers": {"s": ENTRY}}


def test_toml_replacing_keeps_the_place() -> None:
    text = (FIXTURES / "codex_config.toml").read_text()
    new = _tomltext.put(text, "mcp_servers", "figma", ENTRY)
    assert new.index("[mcp_servers.figma]") < new.index("[mcp_servers.chrome]")
    assert "bearer_token_env_var" not in new
    assert new.startswith('# Codex CLI configuration\nmodel = "gpt-5-codex"\napproval_policy = "on-request"  # ask')


def test_toml_refuses_what_it_cannot_read_or_edit() -> None:
    with pytest.raises(ClientFileError, match="not TOML"):
        _tomltext.read("[a\n")
    with pytest.raises(ClientFileError, match="'mcp_servers' is not a table"):
        _tomltext.put('mcp_servers = "x"\n', "mcp_servers", "s", ENTRY)
    assert _tomltext.remove('model = "o3"\n', "mcp_servers", "s") == 'model = "o3"\n'


# -- YAML ------------------------------------------------------------------------------------------


def test_yaml_remove_takes_the_block_and_keeps_every_other_byte() -> None:
    text = (FIXTURES / "goose_config.yaml").read_text()
    new = _yamltext.remove(text, "extensions", "github")
    start, end = text.index("  github:\n"), text.index("  remote:\n")
    assert new == text[:start] + text[end:]


def test_yaml_remove_of_the_last_block_leaves_the_next_top_level_key_and_its_comment() -> None:
    text = "extensions:\n  a:\n    cmd: x\n  b:\n    cmd: y\n    args:\n    - z\n\n# the mode\nMODE: 1\n"
    assert _yamltext.remove(text, "extensions", "b") == "extensions:\n  a:\n    cmd: x\n\n# the mode\nMODE: 1\n"


def test_yaml_remove_of_the_only_block_leaves_an_empty_mapping_not_null() -> None:
    new = _yamltext.remove("extensions:\n  a:\n    cmd: x\nMODE: 1\n", "extensions", "a")
    assert new == "extensions: {}\nMODE: 1\n"
    assert _yamltext.read(new) == {"extensions": {}, "MODE": 1}


def test_yaml_put_writes_goose_style_at_the_siblings_indentation() -> None:
    text = (FIXTURES / "goose_config.yaml").read_text()
    new = _yamltext.put(text, "extensions", "skilldeck", {**ENTRY, "bundled": None, "envs": {}})
    added = (
        "  skilldeck:\n    command: /abs/skilldeck\n    args:\n    - gateway\n    - --config\n    - /u.json\n"
        "    bundled: null\n    envs: {}\n"
    )
    assert new == text.replace("GOOSE_MODE: smart_approve\n", added + "GOOSE_MODE: smart_approve\n")


def test_yaml_put_with_four_space_indentation_and_no_final_newline() -> None:
    text = "extensions:\n    a:\n        cmd: x"
    new = _yamltext.put(text, "extensions", "b", {"cmd": "y", "args": ["1"]})
    assert new == "extensions:\n    a:\n        cmd: x\n    b:\n        cmd: y\n        args:\n        - '1'\n"


def test_yaml_put_where_extensions_is_missing_empty_or_null() -> None:
    for text, rest in (("MODE: 1\n", "MODE: 1\n"), ("extensions: {}\nMODE: 1\n", ""), ("extensions:\nMODE: 1\n", "")):
        new = _yamltext.put(text, "extensions", "s", {"cmd": "x"})
        assert _yamltext.read(new) == {"MODE": 1, "extensions": {"s": {"cmd": "x"}}}, (text, new)
        assert new.startswith(rest)


def test_yaml_replacing_keeps_the_place_and_the_neighbours() -> None:
    text = (FIXTURES / "goose_config.yaml").read_text()
    new = _yamltext.put(text, "extensions", "github", {"cmd": "x"})
    assert new.index("  github:\n    cmd: x\n  remote:") > 0
    assert new.startswith(text[: text.index("  github:")])


def test_yaml_refuses_a_flow_mapping_and_what_does_not_read() -> None:
    with pytest.raises(ClientFileError, match="not a block mapping"):
        _yamltext.put("extensions: {a: {cmd: x}}\n", "extensions", "b", {"cmd": "y"})
    with pytest.raises(ClientFileError, match="not a block mapping"):
        _yamltext.remove("extensions: {a: {cmd: x}}\n", "extensions", "a")
    with pytest.raises(ClientFileError, match="not YAML"):
        _yamltext.read("a: [\n")
    with pytest.raises(ClientFileError, match="not a mapping"):
        _yamltext.put("- a\n", "extensions", "b", {})
