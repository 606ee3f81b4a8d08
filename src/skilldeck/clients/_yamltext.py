"""A block mapping under a top-level key of a YAML file, edited as lines. Pure.

Goose keeps its extensions in ``config.yaml`` under ``extensions:``, a block mapping of block
mappings. ruamel.yaml reads the file and says on which line each key starts; an edit then cuts or
inserts whole lines, so every other byte of the file (comments, quoting, the indentation of its
lists, blank lines) stays as it was. A re-dump, even ruamel's round trip, rewrites some of them
(``null`` becomes an empty value, lists change indentation).

Each edit is checked: the edited text is read again and must hold exactly the data of the old one
with that one change, else :class:`~skilldeck.errors.ClientFileError` is raised and nothing is to be
written.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError as RuamelError

from skilldeck.clients._checked import checked
from skilldeck.errors import ClientFileError

__all__ = ["put", "read", "remove"]


def read(text: str) -> object:
    """The document's data (``None`` for an empty one).

    Raises:
        ClientFileError: not YAML.
    """
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ClientFileError(f"not YAML: {exc}") from None


def _positions(text: str) -> CommentedMap:
    try:
        data = YAML(typ="rt").load(text)
    except RuamelError as exc:
        raise ClientFileError(f"not YAML: {exc}") from None
    if data is None:
        return CommentedMap()
    if not isinstance(data, CommentedMap):
        raise ClientFileError("the document is not a mapping")
    return data


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _block_end(lines: list[str], first: int, column: int) -> int:
    """The line after the block that starts at line ``first`` with a key at ``column``.

    The block runs while lines are blank, comments, or indented deeper than ``column``; blank and
    comment lines that end it are left to what follows.
    """
    end = first + 1
    last_content = first
    while end < len(lines):
        line = lines[end]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if stripped and not stripped.startswith("#"):
            if indent <= column:
                break
            last_content = end
        elif stripped.startswith("#") and indent > column:
            last_content = end
        end += 1
    return last_content + 1


def _dump_block(key: str, value: object, column: int, step: int) -> list[str]:
    """``key: value`` as block YAML at ``column``, lists at their key's indentation (Goose's own style)."""
    dumped = yaml.safe_dump({key: value}, default_flow_style=False, sort_keys=False, indent=step, allow_unicode=True)
    return [" " * column + line + "\n" for line in dumped.splitlines()]


def put(text: str, top: str, key: str, value: object) -> str:
    """``text`` with ``key: value`` in the block mapping under the top-level key ``top`` (replaced in its
    place when there, else added last; ``top`` is added at the end of the file when missing).

    Raises:
        ClientFileError: the text is not YAML, ``top`` holds something other than a block mapping, or
            the edit would not give the data it should.
    """
    data = _positions(text)
    lines = _lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    if top not in data or data[top] is None or data[top] == {}:
        block = [f"{top}:\n", *_dump_block(key, value, 2, 2)]
        if top in data:  # `extensions:` or `extensions: {}` with nothing under it
            line = data.lc.key(top)[0]
            lines[line : _block_end(lines, line, 0)] = block
        else:
            lines.extend(block)
    else:
        servers = data[top]
        if not isinstance(servers, CommentedMap) or servers.fa.flow_style():
            raise ClientFileError(f"'{top}' is not a block mapping: edit it by hand")
        keys = list(servers)
        column = servers.lc.key(keys[0])[1]
        step = max(column - data.lc.key(top)[1], 1)
        block = _dump_block(key, value, column, step)
        if key in servers:
            line = servers.lc.key(key)[0]
            lines[line : _block_end(lines, line, column)] = block
        else:
            line = servers.lc.key(keys[-1])[0]
            at = _block_end(lines, line, column)
            lines[at:at] = block
    new = "".join(lines)
    expected = read(text) or {}
    assert isinstance(expected, dict)
    expected.setdefault(top, {})
    if expected[top] is None:
        expected[top] = {}
    expected[top][key] = copy.deepcopy(value)
    return checked(new, expected, f"setting {top}.{key}", read)


def remove(text: str, top: str, key: str) -> str:
    """``text`` without ``key`` (and every line of its block) in the mapping under ``top``; unchanged
    when it has none."""
    data = _positions(text)
    servers = data.get(top)
    if not isinstance(servers, CommentedMap) or key not in servers:
        return text
    if servers.fa.flow_style():
        raise ClientFileError(f"'{top}' is not a block mapping: edit it by hand")
    lines = _lines(text)
    line, column = servers.lc.key(key)
    del lines[line : _block_end(lines, line, column)]
    if len(servers) == 1:  # an empty block would read as null: the mapping is written empty
        top_line = data.lc.key(top)[0]
        lines[top_line] = f"{top}: {{}}\n"
    expected: Any = read(text)
    del expected[top][key]
    return checked("".join(lines), expected, f"removing {top}.{key}", read)
