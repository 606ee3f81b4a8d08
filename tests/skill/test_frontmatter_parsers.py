"""libyaml's parser and PyYAML's read frontmatter alike: the same value, or the same refusal, for each text.

``load_yaml_mapping`` parses on libyaml where PyYAML has it (five times faster; what ``serve`` spends
on a large pack) and on PyYAML's Python parser otherwise; a skill must not be served on one and
refused on the other, nor read as two different JSON values.
"""

from __future__ import annotations

from typing import Any

import pytest

from skilldeck.errors import FrontmatterError
from skilldeck.skill import _frontmatter as frontmatter

TEXTS = [
    "name: a\ndescription: plain words, with a comma",
    "n: ~\nb: true\nc: False\nd: 0o17\ne: 0x1F\nf: -12\ng: 1.5e3\nh: .5\ni: 2025-01-31\nj: yes\nk: 1.0.3\nl:",
    "q: 'single ''quoted'''\nr: \"double \\u00e9 \\t\"\ns: |\n  literal\n  block\nt: >\n  folded\n  block\n",
    "list:\n  - one\n  - 2\n  - [x, y]\nmap: {a: 1, b: [c, d]}\nnested:\n  deeper:\n    deepest: v",
    "desc: a plain scalar\n  that runs on\n  three lines",
    "# a comment\nname: a  # trailing comment\n",
    "unicode: caf\u00e9 \u65e5\u672c \U0001f600",
    "key with spaces: v\n'quoted key': w\n\"dq\": x",
    "a: &anchor v\nb: *anchor",
    "a: !!binary aGVsbG8=",
    "a: !!str 12",
    "a: !custom v",
    "name: a\nname: b",
    "1: one",
    "? [complex]\n: key",
    "ratio: .inf",
    "nan: .NaN",
    "x: [open",
    "x: {open",
    "  indented: wrongly",
    "a: b: c",
    "a:\n\t- tab",
    "a: 'unterminated",
    "- a\n- b",
    "just a string",
    "",
    "%YAML 1.2\n---\na: b",
    "a: b\n---\nc: d",
    "a: \x07bell",
    "a: b\x00",
    "x: " + "[" * 40 + "]" * 40,
    "x: " + "[" * 2000 + "]" * 2000,
    "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 40)) + "  " * 40 + "v: 1",
    "a: 'multi\n  line quoted'",
    "a: >-\n  stripped\n\nb: |+\n  kept\n\n",
    "a: -\nb: - x",
    "a: @reserved",
    "a: `reserved",
    "a: %percent",
]


def _read(loader: type[Any], text: str) -> Any:
    try:
        return ("value", frontmatter._load_mapping(loader, text, path=None, first_line=2))
    except FrontmatterError as exc:
        return ("refused", exc.rule)


@pytest.mark.skipif(frontmatter._Loader is frontmatter._CoreLoader, reason="PyYAML here has no libyaml")
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_libyaml_and_pyyaml_read_a_frontmatter_alike(text: str) -> None:
    assert _read(frontmatter._Loader, text) == _read(frontmatter._CoreLoader, text)


def test_the_corpus_holds_both_values_and_refusals() -> None:
    """So the comparison above cannot pass by every text being refused (or none)."""
    read = [_read(frontmatter._Loader, text)[0] for text in TEXTS]
    assert read.count("value") >= 10
    assert read.count("refused") >= 10
