"""A table of tables in a TOML file, edited with tomlkit, which keeps comments and layout. Pure.

Codex CLI keeps its servers in ``config.toml`` as ``[mcp_servers.LABEL]`` tables. tomlkit parses
the file into a document that writes back byte for byte, so removing one table or adding one
changes only those lines. Each edit is checked: the edited text is read again and must hold
exactly the data of the old one with that one change, else
:class:`~skilldeck.errors.ClientFileError` is raised.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from skilldeck.clients._checked import checked
from skilldeck.errors import ClientFileError

__all__ = ["put", "read", "remove"]


def _document(text: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ClientFileError(f"not TOML: {exc}") from None


def read(text: str) -> dict[str, Any]:
    """The document's data, as plain dicts and lists.

    Raises:
        ClientFileError: not TOML.
    """
    return _document(text).unwrap()


def _table(value: Mapping[str, Any]) -> Table:
    table = tomlkit.table()
    for name, item in value.items():
        if isinstance(item, Mapping):  # env and headers: inline, as Codex's documentation writes them
            inline = tomlkit.inline_table()
            inline.update(item)
            table[name] = inline
        else:
            table[name] = item
    return table


def put(text: str, top: str, key: str, value: Mapping[str, Any]) -> str:
    """``text`` with the table ``[top.key]`` holding ``value`` (replaced when there, else added after
    the other ``[top.*]`` tables).

    Raises:
        ClientFileError: the text is not TOML, ``top`` is not a table, or the edit would not give the
            data it should.
    """
    document = _document(text)
    if top not in document:
        document[top] = tomlkit.table(is_super_table=True)
    servers = document[top]
    if not isinstance(servers, Mapping):
        raise ClientFileError(f"'{top}' is not a table")
    table = _table(value)
    keys = list(document)
    if key not in servers and keys and keys[-1] != top:  # a table follows: a blank line before it
        table.add(tomlkit.nl())
    servers[key] = table  # type: ignore[index]
    expected = read(text)
    expected.setdefault(top, {})[key] = copy.deepcopy(dict(value))
    return checked(document.as_string(), expected, f"setting [{top}.{key}]", read)


def remove(text: str, top: str, key: str) -> str:
    """``text`` without the table ``[top.key]``; unchanged when it has none."""
    document = _document(text)
    servers = document.get(top)
    if not isinstance(servers, Mapping) or key not in servers:
        return text
    del servers[key]  # type: ignore[attr-defined]
    expected = read(text)
    del expected[top][key]
    return checked(document.as_string(), expected, f"removing [{top}.{key}]", read)
