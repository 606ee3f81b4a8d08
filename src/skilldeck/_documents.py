"""Reading the small JSON and YAML documents skilldeck takes (configs, snapshots, policies)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml

from skilldeck.errors import SkilldeckError

__all__ = ["DuplicateKey", "duplicate_keys", "load_document"]

T = TypeVar("T")
_STRINGS = json.JSONDecoder()
"""Reads one JSON value (here: a string) where it starts, and says where it ends."""


def load_document(
    path: str | os.PathLike[str],
    parse: Callable[[object], T],
    error: type[SkilldeckError],
    *,
    what: str,
    yaml_syntax: bool = False,
    check: Callable[[str, object], None] | None = None,
) -> T:
    """Read ``path`` (JSON, or YAML with safe loading) and ``parse`` it; every error names the file.

    ``check`` sees the text and the data before ``parse`` does (to refuse what parsing loses, such
    as a key given twice).

    Raises:
        ``error``: the file is missing, unreadable, malformed, or ``parse`` refused it.
    """
    kind = "YAML" if yaml_syntax else "JSON"
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = yaml.safe_load(text) if yaml_syntax else json.loads(text)
    except FileNotFoundError:
        raise error(f"{path}: no such {what} file") from None
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:  # ValueError covers JSON syntax
        raise error(f"{path}: not a readable {kind} file ({exc})") from None
    try:
        if check is not None:
            check(text, data)
        return parse(data)
    except error as exc:
        raise error(f"{path}: {exc}") from None


@dataclass(frozen=True)
class DuplicateKey:
    """A key given twice in one JSON object: where the object is (its keys from the top), and both lines."""

    path: tuple[str, ...]
    key: str
    first_line: int
    second_line: int


def duplicate_keys(text: str) -> list[DuplicateKey]:
    """Every key of a (well-formed) JSON document that its object gives more than once.

    ``json.loads`` keeps the last silently; this walks the text to say where each one is.
    """
    found: list[DuplicateKey] = []
    stack: list[tuple[tuple[str, ...], dict[str, int] | None]] = []  # (path, keys seen) per open object/array
    last_key = ""
    expect_key = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            value, end = _STRINGS.raw_decode(text, i)
            if expect_key and stack and stack[-1][1] is not None:
                path, seen = stack[-1]
                assert seen is not None
                line = text.count("\n", 0, i) + 1
                if value in seen:
                    found.append(DuplicateKey(path, value, seen[value], line))
                else:
                    seen[value] = line
                last_key = value
            expect_key = False
            i = end
            continue
        if c in "{[":
            parent = stack[-1][0] if stack else ()
            inner = (*parent, last_key) if stack and stack[-1][1] is not None else parent
            stack.append((inner, {} if c == "{" else None))
            expect_key = c == "{"
        elif c in "}]":
            stack.pop()
        elif c == ",":
            expect_key = bool(stack) and stack[-1][1] is not None
        i += 1
    return found
