#!/usr/bin/env python3
"""Print per-file added/removed line counts for a unified diff read on stdin.

Usage:
    git diff main...HEAD | python scripts/diffstat.py
    python scripts/diffstat.py < change.patch

Works with `git diff` output and plain `diff -u` / `diff -ruN` output.
Hunk lengths from the `@@ -a,b +c,d @@` headers are used to know where each
hunk ends, so removed lines that happen to start with "-- " are counted
correctly. Only the standard library is used.
"""

from __future__ import annotations

import re
import sys

HUNK_RE = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _clean_path(raw: str) -> str:
    """Strip a/ b/ prefixes, timestamps and quotes from a ---/+++ path."""
    path = raw.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def parse(lines) -> dict[str, list[int]]:
    """Return {path: [added, removed]} in the order files appear."""
    stats: dict[str, list[int]] = {}
    current = None
    old_path = None
    old_left = new_left = 0  # lines still expected in the current hunk

    for line in lines:
        line = line.rstrip("\r\n")

        if old_left > 0 or new_left > 0:
            if line.startswith("+"):
                stats[current][0] += 1
                new_left -= 1
            elif line.startswith("-"):
                stats[current][1] += 1
                old_left -= 1
            elif line.startswith("\\"):
                pass  # "\ No newline at end of file"
            else:  # context line (" text" or an empty line)
                old_left -= 1
                new_left -= 1
            continue

        if line.startswith("diff --git "):
            # Fallback name for diffs without ---/+++ lines (binary, rename).
            _, _, tail = line.partition(" b/")
            current = tail or None
            if current:
                stats.setdefault(current, [0, 0])
        elif line.startswith("--- "):
            old_path = _clean_path(line[4:])
        elif line.startswith("+++ "):
            new_path = _clean_path(line[4:])
            name = old_path if new_path == "/dev/null" else new_path
            if current and current != name and stats.get(current) == [0, 0]:
                del stats[current]
            current = name
            stats.setdefault(current, [0, 0])
        elif line.startswith("@@") and current is not None:
            match = HUNK_RE.match(line)
            if match:
                old_left = int(match.group(1) or 1)
                new_left = int(match.group(2) or 1)
    return stats


def main() -> int:
    stats = parse(sys.stdin)
    if not stats:
        print("no changes found in input", file=sys.stderr)
        return 1
    width = max(len(path) for path in stats)
    total_add = total_del = 0
    for path, (added, removed) in stats.items():
        total_add += added
        total_del += removed
        print(f"{path:<{width}}  +{added:<6} -{removed}")
    print(f"{len(stats)} file(s) changed, {total_add} insertion(s)(+), "
          f"{total_del} deletion(s)(-)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
