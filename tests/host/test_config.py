"""``mcpServers`` configuration: good entries become specs, bad ones a ConfigError naming the label."""

from __future__ import annotations

import json
import shlex
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from skilldeck.host import ConfigError, HttpServer, StdioServer, load_config, parse_config
from skilldeck.host._config import DEFAULT_TIMEOUT, spec_for_target


def test_stdio_and_http_entries() -> None:
    specs = parse_config(
        {
            "mcpServers": {
                "time": {
                    "command": "uvx",
                    "args": ["mcp-server-time", "--tz", "UTC"],
                    "env": {"TZ": "UTC"},
                    "cwd": "/tmp",
                },
                "docs": {"url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer t"}, "timeout": 5},
                "bare": {"command": "server"},
                "plain": {"url": "http://127.0.0.1:8000/mcp"},
            }
        }
    )
    by_label = {s.label: s for s in specs}
    assert list(by_label) == ["time", "docs", "bare", "plain"]
    assert by_label["time"].transport == StdioServer("uvx", ("mcp-server-time", "--tz", "UTC"), {"TZ": "UTC"}, "/tmp")
    assert by_label["time"].kind == "stdio"
    assert by_label["time"].timeout == DEFAULT_TIMEOUT
    assert by_label["docs"].transport == HttpServer("https://docs.example/mcp", {"Authorization": "Bearer t"})
    assert by_label["docs"].kind == "http"
    assert by_label["docs"].timeout == 5.0
    assert by_label["bare"].transport == StdioServer("server")
    assert by_label["bare"].transport.env is None  # type: ignore[union-attr]
    assert by_label["plain"].transport == HttpServer("http://127.0.0.1:8000/mcp")


def test_inner_mapping_and_default_timeout() -> None:
    (spec,) = parse_config({"a": {"command": "x"}}, timeout=3)
    assert spec.label == "a"
    assert spec.timeout == 3.0


def test_disabled_entries_are_skipped_even_when_otherwise_invalid() -> None:
    specs = parse_config(
        {
            "mcpServers": {
                "off": {"command": "x", "disabled": True},
                "off-broken": {"disabled": True},
                "on": {"command": "x", "disabled": False},
            }
        }
    )
    assert [s.label for s in specs] == ["on"]


@pytest.mark.parametrize(
    ("servers", "fragments"),
    [
        ({"srv": {}}, ["mcpServers.srv", "needs 'command' (stdio) or 'url'"]),
        ({"srv": "uvx thing"}, ["mcpServers.srv: expected an object with 'command'"]),
        ({"srv": {"command": ""}}, ["mcpServers.srv.command: expected a non-empty string"]),
        ({"srv": {"command": ["uvx"]}}, ["mcpServers.srv.command"]),
        ({"srv": {"command": "x", "args": "a b"}}, ["mcpServers.srv.args: expected a list of strings"]),
        ({"srv": {"command": "x", "args": ["a", 1]}}, ["mcpServers.srv.args[1]"]),
        ({"srv": {"command": "x", "env": {"A": 1}}}, ["mcpServers.srv.env.A: expected an object of strings"]),
        ({"srv": {"command": "x", "env": ["A=1"]}}, ["mcpServers.srv.env"]),
        ({"srv": {"command": "x", "cwd": 3}}, ["mcpServers.srv.cwd: expected a string"]),
        ({"srv": {"url": "ftp://host/mcp"}}, ["mcpServers.srv.url: expected an http:// or https:// URL"]),
        ({"srv": {"url": "file:///etc/passwd"}}, ["mcpServers.srv.url"]),
        ({"srv": {"url": 42}}, ["mcpServers.srv.url"]),
        (
            {"srv": {"url": "https://x/mcp", "headers": {"A": ["b"]}}},
            ["mcpServers.srv.headers.A: expected an object of strings"],
        ),
        ({"srv": {"command": "x", "timeout": 0}}, ["mcpServers.srv.timeout: expected a positive number"]),
        ({"srv": {"command": "x", "timeout": -1}}, ["mcpServers.srv.timeout"]),
        ({"srv": {"command": "x", "timeout": True}}, ["mcpServers.srv.timeout"]),
        ({"srv": {"command": "x", "timeout": "10"}}, ["mcpServers.srv.timeout"]),
        ({"a/b": {"command": "x"}}, ["'a/b'", "may not contain '/'"]),
        ({"..": {"command": "x"}}, ["'..'"]),
        ({".": {"command": "x"}}, ["'.'"]),
        ({"bad\nlabel": {"command": "x"}}, ["control characters"]),
        ({"  ": {"command": "x"}}, ["non-empty string"]),
        ({"": {"command": "x"}}, ["non-empty string"]),
    ],
)
def test_bad_entries_name_the_label_and_the_field(servers: dict[str, Any], fragments: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"mcpServers": {"good": {"command": "ok"}, **servers}})
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("document", [[], "servers", {"mcpServers": []}, {"mcpServers": "x"}, None])
def test_documents_that_are_not_a_server_mapping(document: Any) -> None:
    with pytest.raises(ConfigError, match="mcpServers"):
        parse_config(document)


def test_load_config_reads_a_file_and_prefixes_errors_with_its_path(tmp_path: Path) -> None:
    good = tmp_path / "mcp.json"
    good.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}))
    (spec,) = load_config(good, timeout=7)
    assert spec.label == "time"
    assert spec.timeout == 7.0
    assert spec.transport == StdioServer("uvx", ("mcp-server-time",))

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"docs": {"url": "gopher://x"}}}))
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    assert str(info.value).startswith(str(bad))
    assert "mcpServers.docs.url: expected an http:// or https:// URL" in str(info.value)

    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ConfigError, match="not a readable JSON file"):
        load_config(broken)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"mcpServers": {"caf\xe9": {}}}')
    with pytest.raises(ConfigError, match="not a readable JSON file"):
        load_config(latin)


def test_spec_for_target() -> None:
    http = spec_for_target("http://127.0.0.1:8000/mcp")
    assert http.label == "127.0.0.1_8000"
    assert http.transport == HttpServer("http://127.0.0.1:8000/mcp")
    assert spec_for_target("https://x/mcp", label="docs").label == "docs"
    stdio = spec_for_target(["/usr/bin/python3", "-m", "srv"], timeout=2)
    assert stdio.label == "python3"
    assert stdio.transport == StdioServer("/usr/bin/python3", ("-m", "srv"))
    assert stdio.timeout == 2
    with pytest.raises(ConfigError, match="not an http"):
        spec_for_target("ws://x")
    with pytest.raises(ConfigError, match="no command"):
        spec_for_target([])


def test_a_label_with_a_colon_is_refused_or_resolvable() -> None:
    from skilldeck.host import Registry

    from .hostile import Skill

    try:
        parse_config({"mcpServers": {"team:docs": {"command": "x"}}})
    except ConfigError:
        return
    registry = Registry()
    registry.add_listing("team:docs", [Skill("refunds").entry()])
    assert registry.resolve("team:docs:skill://refunds/SKILL.md").label == "team:docs"


def test_disabled_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match=r"mcpServers\.x\.disabled: expected true or false"):
        parse_config({"mcpServers": {"x": {"command": "y", "disabled": "true"}}})
    assert parse_config({"mcpServers": {"x": {"command": "y", "disabled": True}}}) == []


def test_a_legacy_sse_entry_is_an_http_server_spoken_over_sse() -> None:
    (spec,) = parse_config(
        {"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"A": "b"}}}}
    )
    assert spec.transport == HttpServer("http://127.0.0.1:9/sse", {"A": "b"}, sse=True)
    assert spec.kind == "sse"


def test_a_label_given_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        "{\n"
        '  "mcpServers": {\n'
        '    "docs": {"command": "a"},\n'
        '    "time": {"command": "t", "env": {"docs": "1", "docs\\u0020": "2"}},\n'
        '    "docs": {"url": "http://127.0.0.1:1/mcp"},\n'
        '    "x\\"y": {"command": "b"}, "x\\"y": {"command": "c"}\n'
        "  }\n"
        "}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert "mcpServers.docs: server 'docs' is given twice (lines 3 and 5)" in message
    assert "server 'x\"y' is given twice (lines 6 and 6)" in message
    assert "'time'" not in message  # a key repeated in another object, or a near one, is not a label given twice
    # the same key in two different objects (each server's "command") is no duplicate
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "x"}, "b": {"command": "x"}}}, indent=2))
    assert [s.label for s in load_config(path)] == ["a", "b"]


# -- ${VAR} in an entry -------------------------------------------------------------------------------

SECRET = "ghp_s3cr3t-token-value"


def test_variables_are_expanded_in_command_args_env_url_and_headers() -> None:
    environ = {"TOKEN": SECRET, "BIN": "/opt/bin/server", "ROOT": "/srv/data", "HOST": "mcp.example.test"}
    [stdio, http] = parse_config(
        {
            "mcpServers": {
                "local": {
                    "command": "${BIN}",
                    "args": ["--root", "${ROOT}/files", "$NOT_BRACED"],
                    "env": {"API_TOKEN": "${TOKEN}", "MODE": "${MODE:-fast}"},
                    "cwd": "${ROOT}",  # not among the expanded fields: left as written
                },
                "remote": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            }
        },
        environ=environ,
    )
    assert isinstance(stdio.transport, StdioServer)
    assert stdio.transport.command == "/opt/bin/server"
    assert stdio.transport.args == ("--root", "/srv/data/files", "$NOT_BRACED")
    assert stdio.transport.env == {"API_TOKEN": SECRET, "MODE": "fast"}
    assert stdio.transport.cwd == "${ROOT}"
    assert isinstance(http.transport, HttpServer)
    assert http.transport.url == "https://mcp.example.test/mcp"
    assert http.transport.headers == {"Authorization": f"Bearer {SECRET}"}


@pytest.mark.parametrize(("environ", "expected"), [({}, "dflt"), ({"V": ""}, "dflt"), ({"V": "set"}, "set")])
def test_a_default_stands_in_for_an_unset_or_empty_variable(environ: dict[str, str], expected: str) -> None:
    [spec] = parse_config({"mcpServers": {"s": {"command": "run", "args": ["${V:-dflt}"]}}}, environ=environ)
    assert isinstance(spec.transport, StdioServer)
    assert spec.transport.args == (expected,)


def test_an_unset_variable_without_a_default_names_the_entry_and_the_variable() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"mcpServers": {"gh": {"url": "https://x/mcp", "headers": {"A": "${GH_TOKEN}"}}}}, environ={})
    assert str(refused.value).startswith("mcpServers.gh: ${GH_TOKEN} is not set; export GH_TOKEN"), refused.value
    [spec] = parse_config({"mcpServers": {"gh": {"command": "x", "args": ["${EMPTY}"]}}}, environ={"EMPTY": ""})
    assert isinstance(spec.transport, StdioServer)
    assert spec.transport.args == ("",)  # set, though empty: no default asked for, none given


def test_values_from_the_environment_never_show_in_a_message_or_a_repr() -> None:
    [spec] = parse_config(
        {"mcpServers": {"gh": {"url": "https://h/${TOKEN}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}},
        environ={"TOKEN": SECRET},
    )
    assert spec.redact(f"cannot reach https://h/{SECRET}/mcp (Bearer {SECRET})") == (
        "cannot reach https://h/${TOKEN}/mcp (Bearer ${TOKEN})"
    )
    assert SECRET not in repr(spec), repr(spec)
    assert "https://h/${TOKEN}/mcp" in repr(spec)
    [short] = parse_config({"mcpServers": {"s": {"command": "x", "args": ["${N}"]}}}, environ={"N": "1"})
    assert short.redact("exit code 1") == "exit code 1"  # a three-letter value would mangle every message


QUOTED = "p\"a'ss\\w%rd é"
"""A value with both quotes, a backslash, a percent sign, a space and a letter JSON escapes as \\u."""


@pytest.mark.parametrize(
    ("how", "written"),
    [
        ("as it is", QUOTED),
        ("JSON", json.dumps(QUOTED)),
        ("JSON, not ASCII", json.dumps(QUOTED, ensure_ascii=False)),
        ("repr", repr(QUOTED)),
        ("repr in single quotes", "'" + QUOTED.replace("\\", "\\\\").replace("'", "\\'") + "'"),
        ("shell", shlex.quote(QUOTED)),
        ("percent-encoded", urllib.parse.quote(QUOTED, safe="")),
        ("form-encoded", urllib.parse.quote_plus(QUOTED, safe="")),
        ("JSON of a repr", json.dumps(repr(QUOTED))),
        ("JSON of argv", json.dumps(["x", QUOTED])),
    ],
)
def test_a_secret_is_redacted_however_it_is_quoted_or_escaped(how: str, written: str) -> None:
    [spec] = parse_config({"mcpServers": {"s": {"command": "x", "args": ["${PASS}"]}}}, environ={"PASS": QUOTED})
    told = spec.redact(f"upstream said: {written} (exit 1)")
    assert "${PASS}" in told, (how, told)
    for piece in ("ss\\w", "ss%5Cw", "ss%5cw", "a'ss", "a\\'ss", "\\u00e9", "%C3%A9"):
        assert piece not in told, (how, piece, told)


def test_a_short_value_is_not_redacted_in_any_form() -> None:
    [short] = parse_config({"mcpServers": {"s": {"command": "x", "args": ["${N}"]}}}, environ={"N": "1 2"})
    assert short.redact("exit code 1 2, '1 2', 1%202") == "exit code 1 2, '1 2', 1%202"
