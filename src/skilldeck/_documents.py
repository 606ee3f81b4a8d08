"""Reading the small JSON and YAML documents skilldeck takes (configs, snapshots, policies)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml

from skilldeck.errors import SkilldeckError

__all__ = ["load_document"]

T = TypeVar("T")


def load_document(
    path: str | os.PathLike[str],
    parse: Callable[[object], T],
    error: type[SkilldeckError],
    *,
    what: str,
    yaml_syntax: bool = False,
) -> T:
    """Read ``path`` (JSON, or YAML with safe loading) and ``parse`` it; every error names the file.

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
        return parse(data)
    except error as exc:
        raise error(f"{path}: {exc}") from None
