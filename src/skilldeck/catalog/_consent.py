"""Who may add a catalog server, what the person is asked, and what their answer decides. Pure.

* :func:`policy_refusal`: under a policy, its ``registry:`` section decides (who may add, which
  namespaces, registry types and remote hosts); without one, anyone whose client can ask a person.
* :func:`consent_form`: the MCP elicitation (form mode) a person answers: a message saying
  exactly what will run (the quoted command with its pinned version, or the URL, and the
  environment variables or headers it gets, secrets marked) and a field per input it needs.
* :func:`decide`: the answer. Only ``accept`` adds; ``decline`` and ``cancel`` add nothing. An
  accepted form must give every required input, each a string of at most
  :data:`MAX_VALUE_CHARS` characters without control characters (a header or an argument is one
  line), one of the input's choices when it has them.

A refusal is an :class:`~skilldeck.errors.AddRefused` whose message says what a person can do
instead: the terminal command (:func:`cli_command`), which asks the same questions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skilldeck.catalog._entries import CatalogEntry, Input
from skilldeck.catalog._launch import Launch
from skilldeck.errors import AddRefused, shorten
from skilldeck.serving._api import Caller, Policy, RegistryRules

__all__ = [
    "MAX_VALUE_CHARS",
    "cli_command",
    "consent_form",
    "decide",
    "entry_allowed",
    "launch_refusal",
    "policy_refusal",
    "what_runs",
]

MAX_VALUE_CHARS = 4_096
"""The longest value a person may give for one input."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def cli_command(entry: CatalogEntry) -> str:
    """The terminal command that adds ``entry`` (asking the same questions, with a confirmation)."""
    return f"skilldeck servers add {entry.name} --version {entry.version}"


def entry_allowed(rules: RegistryRules, entry: CatalogEntry) -> str | None:
    """Why the policy's ``registry.namespaces`` keeps ``entry`` out; ``None`` when it does not."""
    if not rules.name_allowed(entry.name):
        return f"the policy's registry.namespaces do not include {entry.name}"
    return None


def launch_refusal(rules: RegistryRules, launch: Launch) -> str | None:
    """Why the policy's ``registry`` section refuses this way of running; ``None`` when it allows it."""
    if launch.package is not None and not rules.type_allowed(launch.package.registry_type):
        return f"the policy's registry.registry_types do not include {launch.package.registry_type}"
    if launch.remote is not None and not rules.host_allowed(launch.remote.host):
        return f"the policy's registry.remote_hosts do not include {launch.remote.host}"
    return None


def policy_refusal(policy: Policy | None, caller: Caller, entry: CatalogEntry) -> str | None:
    """Why ``caller`` may not add ``entry`` under ``policy``; ``None`` when it may (always without a policy)."""
    if policy is None:
        return None
    rules = policy.registry
    if not rules.add:
        return "the policy lets no one add servers (it has no registry.add rule)"
    if not rules.may_add(caller):
        roles = ", ".join(sorted(caller.roles)) or "none"
        return f"the policy's registry.add rule does not admit you (your roles: {roles})"
    return entry_allowed(rules, entry)


def _field(item: Input) -> dict[str, Any]:
    what = {"env": "environment variable", "header": "HTTP header", "argument": "argument"}[item.kind]
    note = f"{what} {item.name}"
    if item.secret:
        note += " (secret: kept only in your added.json, never shown or logged)"
    description = f"{item.description} [{note}]" if item.description else f"[{note}]"
    schema: dict[str, Any] = {"type": "string", "title": item.name, "description": shorten(description, 500)}
    if item.choices:
        schema["enum"] = list(item.choices)
    if item.default is not None and not item.secret:
        schema["default"] = item.default
    if not item.choices:
        schema["maxLength"] = MAX_VALUE_CHARS
    return schema


def what_runs(launch: Launch) -> list[str]:
    """The lines saying what adding ``launch`` runs, exactly: the form's message and the terminal show the same."""
    entry = launch.entry
    lines = [
        f"Description (the registry's): {shorten(entry.description, 300)}",
        f"From: {entry.source}" if entry.source else "",
    ]
    if launch.remote is not None:
        lines.append(f"It connects to: {launch.remote.url} ({launch.remote.transport})")
    else:
        lines.append(f"It runs, on this machine: {launch.command_line()}")
        if launch.venv is not None:
            assert launch.package is not None
            package = launch.package
            lines.append(f"(first installing {package.identifier}=={package.version} into {launch.venv} with pip)")
    if extra := launch.environment_line():
        lines.append(f"With {extra}")
    lines.append(f"As upstream: {launch.label}")
    return [line for line in lines if line]


def consent_form(launch: Launch) -> tuple[str, dict[str, Any]]:
    """The elicitation a person answers: ``(message, requested_schema)`` (see the module docs)."""
    entry = launch.entry
    ask = (
        "Fill in what it needs; accept to add it, decline to add nothing."
        if launch.inputs
        else ("Accept to add it, decline to add nothing.")
    )
    lines = [f"Add the MCP server {entry.name} {entry.version} to this gateway?", *what_runs(launch), ask]
    properties = {item.name: _field(item) for item in launch.inputs}
    required = [item.name for item in launch.inputs if item.required and item.default is None]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return "\n".join(lines), schema


def decide(launch: Launch, action: str, content: Mapping[str, Any] | None) -> dict[str, str]:
    """The values of an accepted form, by input name.

    Raises:
        AddRefused: ``declined`` (the person declined or cancelled), or ``inputs`` (a required input
            missing, a value that is not a string, too long, has a control character or is not one of
            its choices); the message names the input, never its value.
    """
    command = cli_command(launch.entry)
    if action != "accept":
        raise AddRefused(
            f"the person {'declined' if action == 'decline' else 'cancelled'}: {launch.entry.name} was not added, "
            f"nothing was run (a person can add it from a terminal: {command})",
            code="declined",
        )
    given = dict(content or {})
    values: dict[str, str] = {}
    for item in launch.inputs:
        value = given.pop(item.name, None)
        if value is None or value == "":
            if item.required and item.default is None:
                raise AddRefused(f"{item.name} is required and was not given; nothing was added", code="inputs")
            continue
        if not isinstance(value, str):
            raise AddRefused(f"{item.name} must be text; nothing was added", code="inputs")
        if len(value) > MAX_VALUE_CHARS:
            raise AddRefused(
                f"{item.name} is longer than {MAX_VALUE_CHARS:,} characters; nothing was added", code="inputs"
            )
        if _CONTROL.search(value):
            raise AddRefused(f"{item.name} holds a control character (a line break?); nothing was added", code="inputs")
        if item.choices and value not in item.choices:
            raise AddRefused(
                f"{item.name} must be one of {', '.join(item.choices[:10])}; nothing was added", code="inputs"
            )
        values[item.name] = value
    if given:
        unknown = ", ".join(sorted(shorten(str(k), 40) for k in given)[:5])
        raise AddRefused(f"the form answered fields it did not ask ({unknown}); nothing was added", code="inputs")
    return values
