"""The one YAML-to-JSON rule and the Agent Skills frontmatter rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilldeck.errors import FrontmatterError
from skilldeck.skill._frontmatter import (
    MAX_FRONTMATTER_BYTES,
    load_yaml_mapping,
    parse_skill_md,
    render_frontmatter,
    render_skill_md,
    validate_frontmatter,
)
from skilldeck.skill._manifest import build_entry
from skilldeck.skill._pack import DirectorySource

from ..server.helpers import write_skill


def test_core_schema_scalars_resolve_as_yaml_1_2() -> None:
    data = load_yaml_mapping(
        "a: true\nb: False\nc: ~\nd:\ne: 012\nf: 0o17\ng: 0x1F\nh: 1.5\ni: -2e3\nj: .5\n"
        "k: yes\nl: 2025-01-31\nm: 1.0.3\nn: 1_000\no: on\n"
    )
    assert data == {
        "a": True,
        "b": False,
        "c": None,
        "d": None,
        "e": 12,
        "f": 15,
        "g": 31,
        "h": 1.5,
        "i": -2000.0,
        "j": 0.5,
        # YAML 1.1 would have changed these; under the rule they stay the text the author wrote.
        "k": "yes",
        "l": "2025-01-31",
        "m": "1.0.3",
        "n": "1_000",
        "o": "on",
    }


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("x: .inf", "yaml-no-json-form"),
        ("x: -.Inf", "yaml-no-json-form"),
        ("x: .NaN", "yaml-no-json-form"),
        ("x: 1e999", "yaml-no-json-form"),
        ("x: !!binary aGk=", "yaml-no-json-form"),
        ("x: !!timestamp 2020-01-01", "yaml-no-json-form"),
        ("x: !!set {a: null}", "yaml-no-json-form"),
        ("x: !!python/object:os.system ls", "yaml-no-json-form"),
        ("1: a", "yaml-key"),
        ("true: a", "yaml-key"),
        ("a: 1\na: 2", "yaml-duplicate-key"),
        ("a: &x [1]\nb: *x", "yaml-alias"),
        ("- a\n- b", "frontmatter-mapping"),
        ("a: [b", "yaml-syntax"),
    ],
)
def test_values_without_json_form_are_refused_not_changed(text: str, rule: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        load_yaml_mapping(text, path="x/SKILL.md")
    assert info.value.rule == rule
    assert str(info.value).startswith("x/SKILL.md: ")


def test_alias_bomb_is_refused_before_expansion() -> None:
    bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c, *c]\n"
    with pytest.raises(FrontmatterError, match="aliases"):
        load_yaml_mapping(bomb)


def test_oversize_frontmatter_is_refused() -> None:
    with pytest.raises(FrontmatterError) as info:
        load_yaml_mapping("a: '" + "x" * 70_000 + "'")
    assert info.value.rule == "frontmatter-size"


def test_parse_splits_frontmatter_and_body_and_tolerates_bom_and_crlf() -> None:
    parsed = parse_skill_md("\ufeff---\r\nname: a\r\ndescription: d\r\n---\r\n# Title\r\nbody\r\n")
    assert parsed.frontmatter == {"name": "a", "description": "d"}
    assert parsed.body == "# Title\r\nbody\r\n"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("name: again", "duplicate key 'name' (line {n})"),
        ("when: !!timestamp 2020-01-01", "(line {n}) has no JSON form"),
        ("ratio: .inf", "'.inf' (line {n}) has no JSON form"),
        ("1: one", "mapping key 1 (line {n}) is not a string"),
        ("  indented: wrongly", "mapping values are not allowed in this context (line {n}, column 11)"),
        ("tags: [open", "while parsing a flow sequence at line {n}, column 7"),
    ],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_errors_name_the_line_of_the_file(bad: str, message: str, newline: str) -> None:
    lines = ["---", "name: pdf-forms", "description: Fill PDF forms.", bad, "license: MIT", "---", "# Body"]
    n = lines.index(bad) + 1  # the opening '---' is line 1, as in an editor
    with pytest.raises(FrontmatterError) as info:
        parse_skill_md(newline.join(lines) + newline, path="pdf-forms/SKILL.md")
    assert message.format(n=n) in str(info.value)
    assert "\n" not in str(info.value)  # one line, fit for a log


@pytest.mark.parametrize("text", ["no frontmatter", "--- \nname: a\n", "\n---\nname: a\n---\n", ""])
def test_missing_frontmatter_is_an_error(text: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        parse_skill_md(text)
    assert info.value.rule == "frontmatter-missing"


def _valid(**extra: object) -> dict[str, object]:
    return {"name": "pdf-forms", "description": "Fill PDF forms.", **extra}


def test_valid_frontmatter_passes_with_unknown_fields_kept() -> None:
    text = (
        "---\nname: pdf-forms\ndescription: Fill PDF forms.\nlicense: MIT\nmetadata:\n  v: '1'\n"
        "compatibility: py3\nallowed-tools: Read Bash(git:*)\nfuture-field:\n  nested: [1, 2]\nx-vendor: true\n---\n"
    )
    fm = parse_skill_md(text).frontmatter
    expected = _valid(
        license="MIT",
        metadata={"v": "1"},
        compatibility="py3",
        **{"allowed-tools": "Read Bash(git:*)", "future-field": {"nested": [1, 2]}, "x-vendor": True},
    )
    assert fm == expected
    validate_frontmatter(fm, directory_name="pdf-forms")
    assert fm == expected  # validation changes nothing
    # ...and the entry hosts receive carries every field, unknown ones included, in the file's order.
    entry = build_entry("pdf-forms", fm, {"SKILL.md": text.encode()})
    assert entry.to_wire()["frontmatter"] == expected
    assert list(entry.to_wire()["frontmatter"]) == list(expected)


def _nested(levels: int) -> str:
    """A mapping holding sequences, ``levels`` collections deep in all (the top mapping counts)."""
    return "a: " + "[" * (levels - 1) + "]" * (levels - 1)


@pytest.mark.parametrize(
    ("fm", "directory"),
    [
        (_valid(name="a" * 64), "a" * 64),
        (_valid(description="x" * 1024), "pdf-forms"),
        (_valid(compatibility="x" * 500), "pdf-forms"),
    ],
    ids=["name-64", "description-1024", "compatibility-500"],
)
def test_every_length_limit_holds_exactly_at_the_limit(fm: dict[str, object], directory: str) -> None:
    validate_frontmatter(fm, directory_name=directory)


@pytest.mark.parametrize(
    ("fm", "directory", "fragment"),
    [
        (_valid(name="a" * 65), "a" * 65, "'name' is 65 characters; the limit is 64"),
        (_valid(description="x" * 1025), "pdf-forms", "'description' is 1025 characters; the limit is 1024"),
        (_valid(compatibility="x" * 501), "pdf-forms", "'compatibility' is 501 characters; the limit is 500"),
    ],
    ids=["name-65", "description-1025", "compatibility-501"],
)
def test_every_length_limit_refuses_one_past_it(fm: dict[str, object], directory: str, fragment: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        validate_frontmatter(fm, directory_name=directory)
    assert str(info.value) == fragment


def test_yaml_nesting_is_allowed_32_deep_and_refused_33_deep() -> None:
    innermost: list[object] = []
    for _ in range(30):  # 32 deep: the mapping, then 31 sequences
        innermost = [innermost]
    assert load_yaml_mapping(_nested(32)) == {"a": innermost}
    with pytest.raises(FrontmatterError) as info:
        load_yaml_mapping(_nested(33))
    assert info.value.rule == "yaml-depth"
    assert "deeper than 32 levels" in str(info.value)


def test_frontmatter_of_exactly_64_kib_is_read_and_one_byte_more_is_refused() -> None:
    head = "a: '"
    at_limit = head + "x" * (MAX_FRONTMATTER_BYTES - len(head) - 1) + "'"
    assert len(at_limit.encode()) == MAX_FRONTMATTER_BYTES
    assert load_yaml_mapping(at_limit) == {"a": "x" * (MAX_FRONTMATTER_BYTES - len(head) - 1)}
    with pytest.raises(FrontmatterError) as info:
        load_yaml_mapping(head + "x" * (MAX_FRONTMATTER_BYTES - len(head)) + "'")
    assert info.value.rule == "frontmatter-size"


@pytest.mark.parametrize(
    ("text", "value"),
    [("0o8", "0o8"), ("0o7", 7), ("0o", "0o"), ("0x1g", "0x1g"), ("0xff", 255), ("08", 8), ("+0o7", "+0o7")],
)
def test_octal_and_hex_follow_the_core_schema_exactly(text: str, value: object) -> None:
    """``0o`` takes only the digits 0-7 and no sign: ``0o8`` stays the string ``"0o8"``."""
    assert load_yaml_mapping(f"x: {text}") == {"x": value}


@pytest.mark.parametrize(
    ("fm", "rule", "fragment"),
    [
        ({"description": "d"}, "name", "'name' is required"),
        (_valid(name="PDF"), "name", "lowercase"),
        (_valid(name="-a"), "name", "lowercase"),
        (_valid(name="a--b"), "name", "lowercase"),
        (_valid(name="pdf-forms\n"), "name", "lowercase"),  # `$` alone would let a final newline through
        (_valid(name="a" * 65), "name", "limit is 64"),
        (_valid(name="other"), "name-directory", "must equal its folder name 'pdf-forms'"),
        ({"name": "pdf-forms"}, "description", "'description' is required"),
        (_valid(description="x" * 1025), "description", "limit is 1024"),
        (_valid(compatibility="x" * 501), "compatibility", "limit is 500"),
        (_valid(metadata={"version": 1.2}), "metadata", "'metadata.version' must be a string"),
        (_valid(metadata=["a"]), "metadata", "mapping"),
        (_valid(**{"allowed-tools": ["Read"]}), "allowed-tools", "space-separated"),
        (_valid(license=3), "license", "must be a string"),
    ],
)
def test_rule_violations_name_the_rule(fm: dict[str, object], rule: str, fragment: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        validate_frontmatter(fm, directory_name="pdf-forms", path="pdf-forms/SKILL.md")
    assert info.value.rule == rule
    assert fragment in str(info.value)
    assert "pdf-forms/SKILL.md" in str(info.value)


def test_all_problems_are_reported_at_once() -> None:
    with pytest.raises(FrontmatterError) as info:
        validate_frontmatter({"name": "Bad", "description": ""}, directory_name="bad")
    message = str(info.value)
    assert "lowercase" in message
    assert "description" in message


@pytest.mark.parametrize(
    "value",
    ["yes", "no", "on", "2025-01-31", "0o17", "012", "1.5", "-3", "true", "null", "~", "", "a: b", "- x", "#c", "x\ny"],
)
def test_render_quotes_strings_that_would_read_back_as_something_else(value: str) -> None:
    fm = {"name": "a", "description": value, "metadata": {"k": value}}
    assert load_yaml_mapping(render_frontmatter(fm)) == fm


def test_render_skill_md_round_trips_through_parse() -> None:
    fm = {"name": "daily", "description": "Daily report", "metadata": {"when": "2025-01-31"}, "n": 3, "f": 0.25}
    text = render_skill_md(fm, "# Daily\n")
    parsed = parse_skill_md(text)
    assert parsed.frontmatter == fm
    assert parsed.body == "# Daily\n"


def test_deeply_nested_frontmatter_is_refused_not_a_crash(tmp_path: Path) -> None:
    deep = "x: " + "[" * 5000 + "]" * 5000
    with pytest.raises(FrontmatterError) as info:
        parse_skill_md(f"---\nname: a\ndescription: d\n{deep}\n---\n")
    assert info.value.rule == "yaml-depth"
    write_skill(tmp_path, "good")
    bad = tmp_path / "deep"
    bad.mkdir()
    (bad / "SKILL.md").write_text(f"---\nname: deep\ndescription: d\n{deep}\n---\n")
    loaded = DirectorySource(tmp_path).load()  # one bad skill does not take the others down
    assert [s.skill_path for s in loaded.skills] == ["good"]
    assert [p.rule for p in loaded.problems] == ["yaml-depth"]


def test_a_folder_and_name_ending_in_a_newline_is_refused_and_the_rest_served(tmp_path: Path) -> None:
    """Such a name is no Agent Skills name: served, it made FastMCP's client refuse the whole skills/list page."""
    write_skill(tmp_path, "good")
    folder = tmp_path / "bad\n"
    folder.mkdir()
    (folder / "SKILL.md").write_text('---\nname: "bad\\n"\ndescription: A name ending in a newline.\n---\nBody\n')
    loaded = DirectorySource(tmp_path).load()
    assert [s.skill_path for s in loaded.skills] == ["good"]
    assert [p.rule for p in loaded.problems] == ["name"]
