"""Reading a registry's entries: each one on its own, within its bounds, and skipped with its reason when it must be."""

from __future__ import annotations

import json
from typing import Any

import pytest

from skilldeck.catalog import read_entry, read_page
from skilldeck.catalog._entries import CatalogLimits, entries_of_file, name_problem, version_problem
from skilldeck.errors import ServerEntryError

from .conftest import entry, package, server, snapshot


def refused(raw: Any, **limits: Any) -> str:
    with pytest.raises(ServerEntryError) as caught:
        read_entry(raw, limits=CatalogLimits(**limits))
    return caught.value.reason


def test_an_api_entry_is_read_with_what_a_card_and_an_add_need() -> None:
    raw = entry(
        title="Weather",
        packages=[package(environmentVariables=[{"name": "API_KEY", "isSecret": True, "isRequired": True}])],
        remotes=[{"type": "streamable-http", "url": "https://weather.example.com/mcp"}],
        repository={"url": "https://github.com/example/weather", "source": "github"},
    )
    read = read_entry(raw, source="https://registry.example.com")
    assert (read.name, read.version, read.title, read.id) == (
        "io.github.example/weather",
        "1.2.3",
        "Weather",
        "io.github.example/weather@1.2.3",
    )
    assert read.updated_at == "2026-01-01T00:00:00Z"
    assert read.status == "active"
    (only,) = read.packages
    assert (only.registry_type, only.identifier, only.version, only.runnable) == (
        "npm",
        "@example/weather-mcp",
        "1.2.3",
        True,
    )
    assert [(i.name, i.secret, i.required) for i in only.environment] == [("API_KEY", True, True)]
    assert read.remotes[0].host == "weather.example.com"
    assert read.raw == raw  # kept whole for the cache


def test_a_bare_server_json_is_read_too() -> None:
    assert read_entry(server()).name == "io.github.example/weather"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("weather", "is not NAMESPACE/SERVER"),
        ("io.github.example/../etc", "is not NAMESPACE/SERVER"),
        ("io.github.example/a/b", "is not NAMESPACE/SERVER"),
        ("io.github.example/..", "starts with '.'"),
        ("../weather", "starts with '.'"),
        ("io.github.example/.hidden", "starts with '.'"),
        ("io.github.example/we ather", "is not NAMESPACE/SERVER"),
        ("io.github.example/weather;rm", "is not NAMESPACE/SERVER"),
        ("", "has no name"),
    ],
)
def test_a_name_with_a_path_trick_skips_the_entry(name: str, why: str) -> None:
    assert why in refused(entry(name))


@pytest.mark.parametrize(
    "identifier",
    [
        "weather; rm -rf ~",
        "$(id)",
        "`id`",
        "-rf",
        "--call=id",
        "weather mcp",
        "@example/../weather",
        "Weather",  # npm names are lower case
        "weather|sh",
        "weather\nx",
    ],
)
def test_an_npm_identifier_that_is_not_a_plain_name_is_refused(identifier: str) -> None:
    why = refused(entry(packages=[package(identifier=identifier)]))
    assert "is not a plain npm package name" in why


@pytest.mark.parametrize("identifier", ["mcp-server-time", "a", "Mcp.Server_Time-2"])
def test_plain_pypi_names_are_kept(identifier: str) -> None:
    read = read_entry(entry(packages=[package(registryType="pypi", identifier=identifier)]))
    assert read.packages[0].identifier == identifier


@pytest.mark.parametrize("identifier", ["mcp-server-time;id", "-e", "../x", "x y"])
def test_a_pypi_identifier_that_is_not_a_plain_name_is_refused(identifier: str) -> None:
    assert "is not a plain pypi package name" in refused(
        entry(packages=[package(registryType="pypi", identifier=identifier)])
    )


@pytest.mark.parametrize(
    ("version", "why"),
    [
        ("latest", "is 'latest'"),
        ("LATEST", "is 'latest'"),
        ("^1.2.3", "not one exact version"),
        ("~1.2", "not one exact version"),
        (">=1.0", "not one exact version"),
        ("1.x", "not one exact version"),
        ("1.2.*", "not one exact version"),
        ("1.2 || 2", "not one exact version"),
        ("1.2.3;id", "not one exact version"),
        ("", "is missing"),
    ],
)
def test_a_package_version_that_is_not_one_exact_version_is_refused(version: str, why: str) -> None:
    assert why in refused(entry(packages=[package(version=version)]))
    assert why in (version_problem(version) or "")


@pytest.mark.parametrize("version", ["1.2.3", "2026.8.31", "0.1.0-beta.2", "1.0.0+build.5", "10"])
def test_exact_versions_are_kept(version: str) -> None:
    assert version_problem(version) is None
    assert read_entry(entry(packages=[package(version=version)])).packages[0].version == version


def test_a_server_version_of_latest_skips_the_entry() -> None:
    assert "is 'latest'" in refused(entry(version="latest"))


def test_one_bad_package_is_dropped_and_noted_while_another_is_kept() -> None:
    read = read_entry(entry(packages=[package(identifier="x; id"), package(identifier="good")]))
    assert [p.identifier for p in read.packages] == ["good"]
    assert read.notes == ("the npm package 'x; id' is not a plain npm package name",)


def test_a_package_of_a_type_skilldeck_does_not_run_is_kept_as_not_runnable() -> None:
    read = read_entry(entry(packages=[{"registryType": "nuget", "identifier": "Some.Package", "version": "latest"}]))
    (kept,) = read.packages
    assert not kept.runnable
    assert "does not run nuget packages" in (kept.not_runnable or "")
    assert not read.runnable


def test_a_secret_argument_makes_the_package_not_runnable() -> None:
    arg = {"type": "named", "name": "--token", "isSecret": True, "isRequired": True}
    (kept,) = read_entry(entry(packages=[package(packageArguments=[arg])])).packages
    assert "secret on its command line" in (kept.not_runnable or "")


@pytest.mark.parametrize(
    ("argument", "why"),
    [
        ({"type": "named", "name": "--dir /x/y"}, "not a plain flag name"),
        ({"type": "named", "name": "--mount", "value": "src={path}"}, "without {variables}"),
        ({"type": "named", "name": "--x", "variables": {"a": {}}}, "takes {variables}"),
        ({"type": "named", "name": "--x", "value": "a\nb"}, "without {variables}"),
        ({"type": "other", "name": "--x"}, "neither 'positional' nor 'named'"),
    ],
)
def test_arguments_skilldeck_cannot_pass_as_they_are_drop_the_package(argument: dict[str, Any], why: str) -> None:
    assert why in refused(entry(packages=[package(packageArguments=[argument])]))


def test_a_fixed_positional_argument_needs_no_plain_hint() -> None:
    argument = {"type": "positional", "valueHint": "-i", "value": "-i"}
    (kept,) = read_entry(entry(packages=[package(packageArguments=[argument])])).packages
    assert [(i.name, i.fixed, i.asked) for i in kept.package_arguments] == [("value", "-i", False)]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://{tenant}.example.com/mcp", "a template"),
        ("http://weather.example.com/mcp", "plain http on a host that is not this machine"),
        ("https://user:pw@weather.example.com/mcp", "without credentials"),
        ("ftp://weather.example.com/mcp", "not an http(s) URL"),
        ("https://weather.example.com/a b", "no usable url"),
    ],
)
def test_a_remote_that_cannot_be_reached_as_it_is_is_dropped(url: str, why: str) -> None:
    raw = entry(packages=[], remotes=[{"type": "streamable-http", "url": url}])
    assert why in refused(raw)


def test_a_plain_http_remote_on_this_machine_is_kept() -> None:
    raw = entry(packages=[], remotes=[{"type": "streamable-http", "url": "http://127.0.0.1:8000/mcp"}])
    assert read_entry(raw).remotes[0].url == "http://127.0.0.1:8000/mcp"


def test_an_entry_at_its_byte_bound_is_read_and_one_byte_more_is_skipped() -> None:
    raw = entry()
    size = len(json.dumps(raw, ensure_ascii=False))
    assert read_entry(raw, limits=CatalogLimits(max_entry_bytes=size)).name
    assert f"{size:,} bytes of JSON, more than {size - 1:,}" in refused(raw, max_entry_bytes=size - 1)


def test_inputs_at_their_bound_are_read_and_one_more_drops_the_package() -> None:
    variables = [{"name": f"VAR_{i}"} for i in range(4)]
    assert (
        len(
            read_entry(entry(packages=[package(environmentVariables=variables)]), limits=CatalogLimits(max_inputs=4))
            .packages[0]
            .environment
        )
        == 4
    )
    assert "takes 4 env inputs, more than 3" in refused(
        entry(packages=[package(environmentVariables=variables)]), max_inputs=3
    )


def test_packages_at_their_bound_are_read_and_one_more_is_not() -> None:
    packages = [package(identifier=f"p{i}") for i in range(3)]
    assert len(read_entry(entry(packages=packages), limits=CatalogLimits(max_packages=3)).packages) == 3
    assert "lists 3 packages, more than 2" in refused(entry(packages=packages), max_packages=2)


def test_a_description_is_cut_at_its_bound() -> None:
    read = read_entry(entry(description="word " * 400), limits=CatalogLimits(max_text=50))
    assert len(read.description) == 50
    assert read.description.endswith("\u2026")


def test_an_input_named_twice_drops_the_package() -> None:
    twice = [{"name": "KEY"}, {"name": "KEY"}]
    assert "names one env input twice" in refused(entry(packages=[package(environmentVariables=twice)]))


def test_a_deleted_entry_is_read_so_that_a_refresh_can_drop_it() -> None:
    read = read_entry(entry(status="deleted", packages=[]))
    assert read.status == "deleted"


def test_an_unknown_status_skips_the_entry() -> None:
    assert "status 'gone'" in refused(entry(status="gone"))


def test_a_page_reads_every_good_entry_and_skips_each_bad_one_with_its_reason() -> None:
    page = read_page(
        {
            "servers": [entry("io.github.a/one"), "not an object", entry("bad name"), entry("io.github.a/two")],
            "metadata": {"nextCursor": "abc", "count": 4},
        }
    )
    assert [e.name for e in page.entries] == ["io.github.a/one", "io.github.a/two"]
    assert [str(s) for s in page.skipped] == [
        "?: it is not a server.json object",
        "bad name: its name 'bad name' is not NAMESPACE/SERVER (letters, digits, '.', '-' and '_', one '/')",
    ]
    assert page.next_cursor == "abc"


def test_a_document_that_is_no_page_is_refused_whole() -> None:
    with pytest.raises(ValueError, match="not a page of the registry API"):
        read_page({"items": []})


def test_a_registry_file_may_be_a_list_of_server_json_documents() -> None:
    page = entries_of_file([server("io.github.a/one"), server("io.github.a/two")])
    assert [e.name for e in page.entries] == ["io.github.a/one", "io.github.a/two"]
    assert page.next_cursor is None


def test_the_official_seed_is_read_entry_by_entry() -> None:
    """The registry's own 471 seed entries: the unsafe ones are skipped, each with its reason, the rest kept."""
    page = read_page(snapshot())
    assert (len(page.entries), len(page.skipped)) == (322, 153)
    reasons = {s.reason.split(" ")[1] for s in page.skipped}
    assert reasons <= {"argument", "npm", "oci", "pypi", "has", "name", "status", "unknown", "is", "env"}, reasons
    assert all(s.reason for s in page.skipped)
    assert sum(1 for e in page.entries if e.runnable) == 72


def test_name_problem_accepts_a_reverse_dns_name() -> None:
    assert name_problem("io.github.modelcontextprotocol/server-memory") is None
