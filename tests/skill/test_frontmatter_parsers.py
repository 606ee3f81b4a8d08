"""libyaml's parser and PyYAML's read frontmatter alike: the same value, or the same refusal, for each text.

``load_yaml_mapping`` parses on libyaml where PyYAML has it (five times faster; what ``serve`` spends
on a large pack) and on PyYAML's Python parser otherwise; a skill must not be served on one and
refused on the other, nor read as two different JSON values.
"""

from __future__ import annotations

import random
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


# -- the one-line reader: `key: plain string` lines read without the YAML parser -------------------------------

SIMPLE = [
    "name: a\ndescription: plain words, with a comma",
    "name: skill-00001\ndescription: Handles case 1 for the {{ brand }} desk.",
    "name: pdf\ndescription: Fill forms -- no, wait, fill PDF forms (C#, 100% of them) [fast] {ok}\nlicense: MIT",
    'name: a\ndescription: it\'s "quoted" inside, ~tilde, a  double space, http://x.y/z?q=1&r=2',
    "x: 1.0.3\ny: 2025-01-31\nz: yes\nw: 0o8\nv: 12abc",
]
"""Texts the one-line reader takes (each line ``key: string``), so the comparisons below exercise it."""

_ALPHABET = "ab -_:#,[]{}&*!|>'\"%@`~?.0123456789\t\r\\=+<eE\u00e9"


def _random_texts(count: int) -> list[str]:
    """Texts built from ``key: value`` lines whose values draw on every character YAML treats specially."""
    rng = random.Random(29)
    texts = []
    for _ in range(count):
        lines = []
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(["name", "description", "a", "true", "null", "1", "k-y", "_k", "name"])
            value = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 12)))
            lines.append(f"{key}: {value}" if rng.random() < 0.95 else f"{key}:{value}")
        texts.append("\n".join(lines))
    return texts


@pytest.mark.parametrize("text", TEXTS + SIMPLE, ids=range(len(TEXTS) + len(SIMPLE)))
def test_the_one_line_reader_reads_what_the_yaml_parser_reads_or_leaves_it_to_the_parser(text: str) -> None:
    simple = frontmatter._simple_mapping(text)
    if simple is not None:
        assert ("value", simple) == _read(frontmatter._CoreLoader, text)
    try:
        public = ("value", frontmatter.load_yaml_mapping(text, first_line=2))
    except FrontmatterError as exc:
        public = ("refused", exc.rule)
    assert public == _read(frontmatter._CoreLoader, text)


def test_the_one_line_reader_takes_plain_string_lines_and_nothing_else() -> None:
    assert all(frontmatter._simple_mapping(text) is not None for text in SIMPLE)
    taken = [text for text in TEXTS if frontmatter._simple_mapping(text) is not None]
    assert taken == [TEXTS[0]]  # the rest types, quotes, nests, comments or is refused: the parser reads it


def test_the_one_line_reader_agrees_with_the_parser_on_random_lines() -> None:
    """5,000 texts of indicator-laden values: each taken is read as the parser reads it, and some are refused."""
    texts = _random_texts(5_000)
    taken = 0
    for text in texts:
        simple = frontmatter._simple_mapping(text)
        if simple is not None:
            taken += 1
            assert ("value", simple) == _read(frontmatter._CoreLoader, text), text
    assert 200 <= taken < len(texts)  # both ways are exercised


def test_a_refusal_still_comes_from_the_parser() -> None:
    with pytest.raises(FrontmatterError) as refused:
        frontmatter.load_yaml_mapping("name: a\nname: b")
    assert refused.value.rule == "yaml-duplicate-key"
    assert frontmatter.load_yaml_mapping("a: true\nb: 12\nc: x") == {"a": True, "b": 12, "c": "x"}
