"""Who may add a catalog server, what the person is asked, and what their answer decides."""

from __future__ import annotations

from typing import Any

import pytest

from skilldeck.catalog import Runtimes, choose, consent_form, decide, policy_refusal, read_entry
from skilldeck.catalog._consent import MAX_VALUE_CHARS, launch_refusal
from skilldeck.catalog._launch import Launch
from skilldeck.errors import AddRefused
from skilldeck.serving._policy import Caller, parse_policy

from .conftest import entry, package

HERE = Runtimes(npx="npx", python="python3", venvs="/v")


def launch(**fields: Any) -> Launch:
    found, _ = choose(read_entry(entry(**fields), source="https://registry.example.com"), HERE)
    assert found is not None
    return found


def inputs() -> Launch:
    env = [
        {"name": "API_KEY", "isSecret": True, "isRequired": True, "description": "The service key"},
        {"name": "UNITS", "choices": ["metric", "imperial"], "default": "metric"},
    ]
    return launch(packages=[package(environmentVariables=env)])


def refusal(run: Launch, action: str, content: dict[str, Any] | None) -> AddRefused:
    with pytest.raises(AddRefused) as caught:
        decide(run, action, content)
    return caught.value


def test_the_form_says_exactly_what_runs_and_asks_what_it_needs() -> None:
    message, schema = consent_form(inputs())
    assert "It runs, on this machine: npx -y @example/weather-mcp@1.2.3" in message
    assert "With environment: API_KEY (secret), UNITS" in message
    assert "From: https://registry.example.com" in message
    assert "As upstream: weather" in message
    assert schema["required"] == ["API_KEY"]
    key = schema["properties"]["API_KEY"]
    assert "secret" in key["description"]
    assert "default" not in key
    assert key["maxLength"] == MAX_VALUE_CHARS
    assert schema["properties"]["UNITS"] == {
        "type": "string",
        "title": "UNITS",
        "description": "[environment variable UNITS]",
        "enum": ["metric", "imperial"],
        "default": "metric",
    }


def test_a_form_for_a_server_that_needs_nothing_has_no_fields() -> None:
    message, schema = consent_form(launch())
    assert schema == {"type": "object", "properties": {}}
    assert message.endswith("decline to add nothing.")


def test_only_accept_adds_and_the_values_come_back_by_name() -> None:
    assert decide(inputs(), "accept", {"API_KEY": "k", "UNITS": "imperial"}) == {"API_KEY": "k", "UNITS": "imperial"}


@pytest.mark.parametrize(("action", "said"), [("decline", "the person declined"), ("cancel", "the person cancelled")])
def test_a_decline_or_a_cancel_adds_nothing_and_names_the_terminal_command(action: str, said: str) -> None:
    refused = refusal(inputs(), action, {"API_KEY": "k"})
    assert refused.code == "declined"
    assert said in str(refused)
    assert "skilldeck servers add io.github.example/weather --version 1.2.3" in str(refused)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({}, "API_KEY is required and was not given"),
        ({"API_KEY": ""}, "API_KEY is required and was not given"),
        ({"API_KEY": 7}, "API_KEY must be text"),
        ({"API_KEY": "a\nb"}, "API_KEY holds a control character"),
        ({"API_KEY": "k", "UNITS": "kelvin"}, "UNITS must be one of metric, imperial"),
        ({"API_KEY": "k", "EXTRA": "x"}, "fields it did not ask (EXTRA)"),
    ],
)
def test_an_accepted_form_that_does_not_fit_adds_nothing(content: dict[str, Any], said: str) -> None:
    refused = refusal(inputs(), "accept", content)
    assert refused.code == "inputs"
    assert said in str(refused)
    assert "a\nb" not in str(refused)  # a value is never echoed


def test_a_value_at_its_length_bound_is_taken_and_one_longer_is_not() -> None:
    assert decide(inputs(), "accept", {"API_KEY": "k" * MAX_VALUE_CHARS})["API_KEY"] == "k" * MAX_VALUE_CHARS
    refused = refusal(inputs(), "accept", {"API_KEY": "k" * (MAX_VALUE_CHARS + 1)})
    assert refused.code == "inputs"
    assert f"longer than {MAX_VALUE_CHARS:,}" in str(refused)


ADMIN = Caller(subject="ana", roles=frozenset({"admin"}))
READER = Caller(subject="bo", roles=frozenset({"reader"}))


def test_without_a_policy_anyone_may_add() -> None:
    assert policy_refusal(None, READER, read_entry(entry())) is None


def test_a_policy_without_a_registry_add_rule_lets_no_one_add() -> None:
    policy = parse_policy({"skills": {}})
    assert (
        policy_refusal(policy, ADMIN, read_entry(entry()))
        == "the policy lets no one add servers (it has no registry.add rule)"
    )


def test_the_registry_add_rule_admits_by_role() -> None:
    policy = parse_policy({"registry": {"add": {"roles": ["admin"]}}})
    assert policy_refusal(policy, ADMIN, read_entry(entry())) is None
    assert policy_refusal(policy, READER, read_entry(entry())) == (
        "the policy's registry.add rule does not admit you (your roles: reader)"
    )


def test_namespaces_limit_what_may_be_added() -> None:
    policy = parse_policy(
        {"registry": {"add": {"roles": ["admin"]}, "namespaces": ["io.github.modelcontextprotocol/*"]}}
    )
    assert policy_refusal(policy, ADMIN, read_entry(entry("io.github.modelcontextprotocol/server-memory"))) is None
    assert policy_refusal(policy, ADMIN, read_entry(entry("io.github.example/weather"))) == (
        "the policy's registry.namespaces do not include io.github.example/weather"
    )


def test_registry_types_and_remote_hosts_limit_how_it_may_run() -> None:
    rules = parse_policy(
        {"registry": {"add": {}, "registry_types": ["pypi"], "remote_hosts": ["*.example.org"]}}
    ).registry
    assert launch_refusal(rules, launch()) == "the policy's registry.registry_types do not include npm"
    remote = launch(packages=[], remotes=[{"type": "streamable-http", "url": "https://mcp.example.com/mcp"}])
    assert launch_refusal(rules, remote) == "the policy's registry.remote_hosts do not include mcp.example.com"
    allowed = launch(packages=[], remotes=[{"type": "streamable-http", "url": "https://mcp.example.org/mcp"}])
    assert launch_refusal(rules, allowed) is None


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ({"registry_types": ["cargo"]}, "registry.registry_types: 'cargo' is not a registry type skilldeck runs"),
        ({"namespaces": ["no slash"]}, "registry.namespaces: 'no slash' is not a server name or a glob"),
        ({"remote_hosts": ["https://x"]}, "registry.remote_hosts: 'https://x' is not a host name or a glob"),
        ({"add_roles": ["admin"]}, "registry: unknown key 'add_roles'"),
    ],
)
def test_a_registry_section_that_names_what_does_not_exist_is_an_error(section: dict[str, Any], said: str) -> None:
    from skilldeck.errors import PolicyError

    with pytest.raises(PolicyError) as caught:
        parse_policy({"registry": section})
    assert said in str(caught.value)
