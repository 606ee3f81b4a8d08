"""One face over the three editors: read a client's file, put or remove one entry, by the file's format. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from skilldeck.clients import _jsonc, _tomltext, _yamltext
from skilldeck.errors import ClientFileError

__all__ = ["Format", "format_of", "put", "read", "remove"]

Format = Literal["json", "toml", "yaml"]


def format_of(path: str) -> Format:
    """A file's format by its name: TOML, YAML, else JSON (with comments)."""
    if path.endswith(".toml"):
        return "toml"
    if path.endswith((".yaml", ".yml")):
        return "yaml"
    return "json"


def read(fmt: Format, text: str) -> object:
    """The data of ``text`` (an empty text reads as an empty mapping).

    Raises:
        ClientFileError: the text is not of its format.
    """
    if not text.strip():
        return {}
    if fmt == "toml":
        return _tomltext.read(text)
    if fmt == "yaml":
        return _yamltext.read(text) or {}
    return _jsonc.plain(_jsonc.parse(text))


def put(fmt: Format, text: str, keys: Sequence[str], key: str, value: Mapping[str, Any]) -> str:
    """``text`` with ``value`` under ``keys`` + ``key`` (TOML and YAML: one key leads to the servers).

    Raises:
        ClientFileError: the text is not of its format, or the edit would not give the data it should.
    """
    if fmt == "toml":
        return _tomltext.put(text, _top(keys), key, value)
    if fmt == "yaml":
        return _yamltext.put(text, _top(keys), key, dict(value))
    return _jsonc.put(text, keys, key, dict(value))


def remove(fmt: Format, text: str, keys: Sequence[str], key: str) -> str:
    """``text`` without the entry ``key`` under ``keys``; unchanged when there is none.

    Raises:
        ClientFileError: as :func:`put`.
    """
    if fmt == "toml":
        return _tomltext.remove(text, _top(keys), key)
    if fmt == "yaml":
        return _yamltext.remove(text, _top(keys), key)
    return _jsonc.remove(text, keys, key)


def _top(keys: Sequence[str]) -> str:
    if len(keys) != 1:
        raise ClientFileError(f"servers under {'.'.join(keys)} can only be edited in a JSON file")
    return keys[0]
