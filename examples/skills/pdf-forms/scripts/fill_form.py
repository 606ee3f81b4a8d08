#!/usr/bin/env python3
"""Render a markdown template by replacing {{field}} placeholders.

Usage:
    python scripts/fill_form.py TEMPLATE DATA.json [-o OUTPUT] [--allow-missing]

DATA.json must be a JSON object. Keys are placeholder names; values may be
strings, numbers, booleans (rendered "yes"/"no") or null (treated as
missing). Nested objects can be addressed with dots: {{seller.name}}.

Exit status: 0 on success, 2 if placeholders have no value (unless
--allow-missing), 1 on bad input. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


def lookup(data: dict, key: str):
    """Return the value for a dotted key, or None if any part is missing."""
    if key in data:
        return data[key]
    current = data
    for part in key.split("."):
        if not isinstance(current, dict) or part not in current:
            return None
        current = current[part]
    return current


def to_text(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(to_text(v) for v in value)
    return str(value)


def render(template: str, data: dict) -> tuple[str, list[str]]:
    """Return (rendered text, sorted list of missing placeholder names)."""
    missing: set[str] = set()

    def substitute(match: re.Match) -> str:
        key = match.group(1)
        value = lookup(data, key)
        if value is None:
            missing.add(key)
            return match.group(0)
        return to_text(value)

    return PLACEHOLDER.sub(substitute, template), sorted(missing)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("template", type=Path, help="markdown template")
    parser.add_argument("data", type=Path, help="JSON file with field values")
    parser.add_argument("-o", "--output", type=Path,
                        help="write here instead of stdout")
    parser.add_argument("--allow-missing", action="store_true",
                        help="leave unknown placeholders in place")
    args = parser.parse_args(argv)

    try:
        template = args.template.read_text(encoding="utf-8")
        data = json.loads(args.data.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not isinstance(data, dict):
        print("error: the JSON data must be an object", file=sys.stderr)
        return 1

    text, missing = render(template, data)
    if missing and not args.allow_missing:
        print("error: no value for: " + ", ".join(missing), file=sys.stderr)
        return 2
    if missing:
        print("warning: left unfilled: " + ", ".join(missing), file=sys.stderr)

    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
