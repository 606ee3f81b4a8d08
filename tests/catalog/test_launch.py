"""What adding a catalog server runs: an argument list per registry type, never a shell line; what it is shown as."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from skilldeck.catalog import Runtimes, choose, read_entry
from skilldeck.catalog._launch import Launch, label_for
from skilldeck.host._config import HttpServer, StdioServer

from .conftest import entry, package

HERE = Runtimes(
    npx="/usr/bin/npx",
    uvx="/usr/bin/uvx",
    container="/usr/bin/podman",
    python="/usr/bin/python3",
    venvs="/home/me/.skilldeck/venvs",
)
BARE = Runtimes(python="/usr/bin/python3", venvs="/home/me/.skilldeck/venvs")


def launch(runtimes: Runtimes = HERE, **fields: Any) -> Launch:
    found, reasons = choose(read_entry(entry(**fields)), runtimes)
    assert found is not None, reasons
    return found


def test_an_npm_package_runs_pinned_through_npx() -> None:
    args = [
        {"type": "positional", "valueHint": "root", "isRequired": True},
        {"type": "named", "name": "--mode", "value": "read only"},
    ]
    run = launch(packages=[package(packageArguments=args)])
    assert run.argv({"root": "/tmp/my files"}) == [
        "npx",
        "-y",
        "@example/weather-mcp@1.2.3",
        "/tmp/my files",
        "--mode",
        "read only",
    ]
    assert run.command_line() == "npx -y @example/weather-mcp@1.2.3 <root> --mode 'read only'"


def test_a_pypi_package_runs_pinned_through_uvx() -> None:
    run = launch(packages=[package(registryType="pypi", identifier="mcp-server-time", version="2026.10.10")])
    assert run.argv({}) == ["uvx", "mcp-server-time==2026.10.10"]
    assert run.venv is None


def test_without_uvx_a_pypi_package_runs_from_a_venv_of_its_own() -> None:
    run = launch(BARE, packages=[package(registryType="pypi", identifier="mcp-server-time", version="2026.10.10")])
    assert run.venv == "/home/me/.skilldeck/venvs/mcp-server-time-2026.10.10"
    assert run.argv({}) == ["/home/me/.skilldeck/venvs/mcp-server-time-2026.10.10/bin/mcp-server-time"]


def test_an_oci_image_gets_its_environment_by_name_never_its_values_on_the_command_line() -> None:
    env = [{"name": "API_KEY", "isSecret": True, "isRequired": True}]
    run = launch(packages=[package(registryType="oci", identifier="example/weather", environmentVariables=env)])
    argv = run.argv({"API_KEY": "s3cret-value"})
    assert argv == ["podman", "run", "-i", "--rm", "-e", "API_KEY", "example/weather:1.2.3"]
    spec = run.spec({"API_KEY": "s3cret-value"})
    assert isinstance(spec.transport, StdioServer)
    assert spec.transport.env == {"API_KEY": "s3cret-value"}
    assert "s3cret-value" not in run.command_line() + " ".join(argv)


def test_a_value_with_shell_metacharacters_is_one_argument_and_is_shown_quoted() -> None:
    args = [{"type": "positional", "valueHint": "root", "isRequired": True}]
    run = launch(packages=[package(packageArguments=args)])
    hostile = "$(touch /tmp/pwned); `id` | sh"
    assert run.argv({"root": hostile})[-1] == hostile
    fixed = [{"type": "named", "name": "--note", "value": "a; b"}]
    assert shlex.split(launch(packages=[package(packageArguments=fixed)]).command_line())[-2:] == ["--note", "a; b"]


def test_an_optional_input_left_empty_is_left_out_with_its_flag_and_a_required_one_cannot_be() -> None:
    args = [{"type": "named", "name": "--zone"}, {"type": "named", "name": "--city", "isRequired": True}]
    run = launch(packages=[package(packageArguments=args)])
    assert run.argv({"--city": "Lima"}) == ["npx", "-y", "@example/weather-mcp@1.2.3", "--city", "Lima"]
    with pytest.raises(KeyError):
        run.argv({})


def test_a_default_stands_in_for_an_input_left_empty() -> None:
    env = [{"name": "UNITS", "default": "metric"}]
    spec = launch(packages=[package(environmentVariables=env)]).spec({})
    assert isinstance(spec.transport, StdioServer)
    assert spec.transport.env == {"UNITS": "metric"}


def test_a_secret_is_redacted_from_every_message_about_the_server() -> None:
    env = [{"name": "API_KEY", "isSecret": True}]
    spec = launch(packages=[package(environmentVariables=env)]).spec({"API_KEY": "s3cret-value"})
    assert spec.redact("failed with s3cret-value in its stderr") == "failed with <API_KEY> in its stderr"
    assert "s3cret-value" not in repr(spec)


def test_a_remote_becomes_an_http_upstream_with_its_headers() -> None:
    headers = [{"name": "X-Api-Key", "isSecret": True, "isRequired": True}]
    run = launch(packages=[], remotes=[{"type": "sse", "url": "https://weather.example.com/sse", "headers": headers}])
    spec = run.spec({"X-Api-Key": "k3y-value"})
    assert isinstance(spec.transport, HttpServer)
    assert spec.transport.sse
    assert dict(spec.transport.headers) == {"X-Api-Key": "k3y-value"}
    assert run.command_line() == "sse https://weather.example.com/sse"
    assert run.needs() == {"secrets": ["X-Api-Key"]}


def test_a_remote_without_a_key_of_its_own_may_ask_for_a_login() -> None:
    run = launch(packages=[], remotes=[{"type": "streamable-http", "url": "https://weather.example.com/mcp"}])
    assert run.needs() == {"login": True}
    assert run.runs() == {
        "transport": "streamable-http",
        "url": "https://weather.example.com/mcp",
    }


def test_the_card_says_what_runs_and_what_it_needs_by_name() -> None:
    env = [{"name": "API_KEY", "isSecret": True}, {"name": "UNITS"}]
    args = [{"type": "positional", "valueHint": "root", "isRequired": True}]
    run = launch(packages=[package(environmentVariables=env, packageArguments=args)])
    assert run.runs() == {"registryType": "npm", "package": "@example/weather-mcp", "version": "1.2.3"}
    assert run.needs() == {"env": ["UNITS"], "secrets": ["API_KEY"], "arguments": ["root"]}


def test_packages_are_preferred_by_registry_type_and_remotes_come_last() -> None:
    fields = {
        "packages": [
            package(registryType="oci", identifier="example/weather"),
            package(registryType="pypi", identifier="weather-mcp"),
        ],
        "remotes": [{"type": "streamable-http", "url": "https://weather.example.com/mcp"}],
    }
    assert launch(**fields).kind == "pypi"


def test_what_cannot_run_here_is_passed_over_with_its_reason() -> None:
    raw = entry(packages=[package(), package(registryType="oci", identifier="example/weather")])
    found, reasons = choose(read_entry(raw), Runtimes())
    assert found is None
    assert reasons == [
        "it is an npm package and npx is not on the PATH (install Node.js with npm)",
        "it is an OCI image and neither docker nor podman is on the PATH",
    ]
    with_remote = entry(packages=[package()], remotes=[{"type": "streamable-http", "url": "https://w.example.com/mcp"}])
    found, reasons = choose(read_entry(with_remote), Runtimes())
    assert found is not None
    assert found.kind == "streamable-http"
    assert len(reasons) == 1


def test_a_predicate_may_refuse_a_way_of_running() -> None:
    found, reasons = choose(read_entry(entry()), HERE, lambda launch: f"no {launch.kind} here")
    assert found is None
    assert reasons == ["no npm here"]


def test_the_entry_for_added_json_keeps_where_it_came_from() -> None:
    env = [{"name": "API_KEY", "isSecret": True}, {"name": "UNITS"}]
    run = launch(packages=[package(environmentVariables=env)])
    kept = run.config_entry({"API_KEY": "s3cret-value", "UNITS": "metric"}, added_at="2026-01-02T03:04:05Z")
    assert kept["command"] == "npx"
    assert kept["args"] == ["-y", "@example/weather-mcp@1.2.3"]
    assert kept["env"] == {"API_KEY": "s3cret-value", "UNITS": "metric"}
    assert kept["dev.skilldeck/registry"]["secrets"] == ["API_KEY"]
    assert kept["dev.skilldeck/registry"]["name"] == "io.github.example/weather"


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("io.github.modelcontextprotocol/server-memory", "server-memory"),
        ("io.github.x/_odd", "odd"),
        ("io.github.x/a.b_c-d", "a.b_c-d"),
    ],
)
def test_the_label_is_the_last_part_of_the_name(name: str, label: str) -> None:
    assert label_for(read_entry(entry(name))) == label
