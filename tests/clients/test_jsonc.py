"""The JSON-with-comments editor: each edit changes the bytes of its member and nothing else.

Every case checks the whole new text (so a comment moved, a comma left behind or an indentation
changed fails), and a generated run edits many documents of every layout and checks each result
reads back to exactly the expected data while every other line is kept.
"""

from __future__ import annotations

import json
import random

import pytest

from skilldeck.clients._jsonc import MAX_DEPTH, parse, plain, put, remove
from skilldeck.errors import ClientFileError

VSCODE = """{
  // Inputs are prompted on first start.
  "inputs": [],
  "servers": {
    // the first server
    "a": {
      "type": "stdio",
      "command": "uvx", // inline note
    },
    /* block note */
    "b": {"url": "https://b.example/mcp"},
  },
}
"""


def test_reading_comments_trailing_commas_escapes_and_numbers() -> None:
    text = '\ufeff{/*x*/"a\\n\\u00e9": [1, -2.5e3, true, null,], // end\n "b": "c//d" /* not */}'
    assert plain(parse(text)) == {"a\né": [1, -2500.0, True, None], "b": "c//d"}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1', "line 1 column 8"),
        ('{"a" 1}', "':' was expected"),
        ('{"a": 1} x', "goes on after"),
        ("{/* open", "not closed"),
        ('{"a": tru}', "a value was expected"),
        ('{"a": "\x01"}', "Invalid control character"),
        ("{\n\n  'a': 1}", "line 3 column 3"),
    ],
)
def test_a_broken_document_is_refused_with_where(text: str, where: str) -> None:
    with pytest.raises(ClientFileError, match=where):
        parse(text)


def test_nesting_is_bounded_at_max_depth() -> None:
    assert plain(parse("[" * MAX_DEPTH + "]" * MAX_DEPTH)) is not None
    with pytest.raises(ClientFileError, match=f"deeper than {MAX_DEPTH}"):
        parse("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


def test_removing_a_middle_member_takes_its_lines_and_keeps_every_comment() -> None:
    text = '{\n  "x": {\n    "a": 1, // about a\n    "b": 2,\n    // about c\n    "c": 3\n  }\n}\n'
    assert remove(text, ["x"], "b") == '{\n  "x": {\n    "a": 1, // about a\n    // about c\n    "c": 3\n  }\n}\n'
    assert remove(text, ["x"], "a") == '{\n  "x": {\n    "b": 2,\n    // about c\n    "c": 3\n  }\n}\n'


def test_removing_the_last_member_drops_the_comma_before_it_so_strict_json_stays_json() -> None:
    text = '{\n  "a": 1,\n  "b": {\n    "c": 2\n  }\n}\n'
    new = remove(text, [], "b")
    assert new == '{\n  "a": 1\n}\n'
    json.loads(new)


def test_removing_the_last_member_keeps_a_trailing_comma_style() -> None:
    assert remove(VSCODE, ["servers"], "b") == VSCODE.replace('    "b": {"url": "https://b.example/mcp"},\n', "")


def test_removing_the_only_member_leaves_an_empty_object() -> None:
    assert remove('{"s": {\n  "a": 1\n}}', ["s"], "a") == '{"s": {\n}}'


def test_removing_on_one_line() -> None:
    assert remove('{"a": 1, "b": 2, "c": 3}', [], "b") == '{"a": 1, "c": 3}'
    assert remove('{"a": 1, "b": 2, "c": 3}', [], "c") == '{"a": 1, "b": 2}'
    assert remove('{"a": 1}', [], "a") == "{}"


def test_removing_what_is_not_there_changes_nothing() -> None:
    assert remove(VSCODE, ["servers"], "zzz") == VSCODE
    assert remove(VSCODE, ["nothere"], "a") == VSCODE


def test_adding_follows_the_indentation_and_the_trailing_comma_style() -> None:
    new = put(VSCODE, ["servers"], "c", {"command": "x", "args": ["y"]})
    assert new == VSCODE.replace(
        '    "b": {"url": "https://b.example/mcp"},\n',
        '    "b": {"url": "https://b.example/mcp"},\n'
        '    "c": {\n      "command": "x",\n      "args": [\n        "y"\n      ]\n    },\n',
    )


def test_adding_after_a_member_with_a_comment_puts_the_comma_on_the_value_and_keeps_the_comment() -> None:
    text = '{\n    "a": 1 // one\n}'
    assert put(text, [], "b", 2) == '{\n    "a": 1, // one\n    "b": 2\n}'


def test_adding_keeps_crlf_tabs_and_unicode() -> None:
    text = '{\r\n\t"a": "é"\r\n}\r\n'
    assert put(text, [], "b", {"c": "ü"}) == '{\r\n\t"a": "é",\r\n\t"b": {\r\n\t\t"c": "ü"\r\n\t}\r\n}\r\n'


def test_adding_into_an_empty_object_and_a_one_line_object() -> None:
    assert put('{\n  "s": {}\n}', ["s"], "a", 1) == '{\n  "s": {\n    "a": 1\n  }\n}'
    assert put('{"a": 1}', [], "b", [2]) == '{"a": 1, "b": [2]}'


def test_adding_makes_the_objects_on_the_way() -> None:
    text = '{\n  "projects": {\n    "/p": {\n      "allowedTools": []\n    }\n  }\n}\n'
    new = put(text, ["projects", "/p", "mcpServers"], "s", {"command": "x"})
    assert plain(parse(new)) == {"projects": {"/p": {"allowedTools": [], "mcpServers": {"s": {"command": "x"}}}}}
    assert new.startswith('{\n  "projects": {\n    "/p": {\n      "allowedTools": [],\n      "mcpServers": {')
    assert put("", ["mcpServers"], "s", {}) == '{\n  "mcpServers": {\n    "s": {}\n  }\n}\n'
    assert put("  \n", [], "s", 1) == '{\n  "s": 1\n}\n'


def test_replacing_a_member_keeps_its_place() -> None:
    new = put(VSCODE, ["servers"], "a", {"command": "z"})
    assert new.index('"a"') < new.index('"b"')
    assert '// the first server\n    "a": {\n      "command": "z"\n    },\n    /* block note */' in new


def test_an_edit_through_a_value_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ClientFileError, match="inputs is not an object"):
        put(VSCODE, ["inputs"], "a", 1)
    with pytest.raises(ClientFileError, match="not an object"):
        put("[1]", [], "a", 1)


def test_a_key_given_twice_is_not_edited() -> None:
    """Readers take the last of the two: removing it would bring the other one back to life."""
    text = '{\n  "s": {\n    "a": 1,\n    "a": 2\n  }\n}'
    assert plain(parse(text)) == {"s": {"a": 2}}
    for edit in (lambda: remove(text, ["s"], "a"), lambda: put(text, ["s"], "a", 3)):
        with pytest.raises(ClientFileError, match=r"s\.a is given twice"):
            edit()
    assert put(text, ["s"], "b", 3).endswith('"a": 2,\n    "b": 3\n  }\n}')


# -- generated documents ---------------------------------------------------------------------------


def _document(rng: random.Random) -> tuple[str, dict[str, object]]:
    """A servers document in one of many layouts: indentation, line endings, comments, trailing commas."""
    indent = rng.choice(["  ", "    ", "\t"])
    newline = rng.choice(["\n", "\r\n"])
    trailing = rng.random() < 0.3
    comments = rng.random() < 0.6
    servers = {f"s{i}": {"command": f"c{i}", "args": [str(rng.randint(0, 9))]} for i in range(rng.randint(1, 5))}
    lines = ["{"]
    if comments:
        lines.append(f"{indent}// settings of a client")
    lines.append(f'{indent}"other": {{"keep": [1, 2, {{"x": null}}]}},')
    lines.append(f'{indent}"mcpServers": {{')
    names = list(servers)
    for n, name in enumerate(names):
        if comments and rng.random() < 0.5:
            lines.append(f"{indent * 2}/* {name} */")
        comma = "," if n < len(names) - 1 or trailing else ""
        body = json.dumps(servers[name])
        note = f" // about {name}" if comments and rng.random() < 0.4 else ""
        lines.append(f'{indent * 2}"{name}": {body}{comma}{note}')
    lines.append(f"{indent}}}{',' if trailing else ''}")
    lines.append("}")
    return newline.join(lines) + newline, {"other": {"keep": [1, 2, {"x": None}]}, "mcpServers": servers}


def test_generated_documents_keep_every_line_an_edit_does_not_touch() -> None:
    rng = random.Random(44)
    for _ in range(300):
        text, data = _document(rng)
        assert plain(parse(text)) == data
        servers = data["mcpServers"]
        assert isinstance(servers, dict)
        victim = rng.choice(list(servers))
        removed = remove(text, ["mcpServers"], victim)
        expected = {**data, "mcpServers": {k: v for k, v in servers.items() if k != victim}}
        assert plain(parse(removed)) == expected
        kept_lines = [line for line in text.splitlines() if f'"{victim}"' not in line and f"/* {victim} */" not in line]
        new_lines = [x.replace(",", "") for x in removed.splitlines()]  # a comma may go with the removed member
        for line in kept_lines:
            assert line.replace(",", "") in new_lines, (text, removed)
        added = put(removed, ["mcpServers"], "skilldeck", {"command": "/abs/skilldeck", "args": ["gateway"]})
        assert plain(parse(added))["mcpServers"]["skilldeck"] == {  # type: ignore[index]
            "command": "/abs/skilldeck",
            "args": ["gateway"],
        }
        newline = "\r\n" if "\r\n" in text else "\n"
        assert added.count(newline) >= removed.count(newline)
        assert "\r\n" not in added or "\n" not in added.replace("\r\n", "")  # one line ending throughout
        if "\r\n" not in text and "," not in text.split('"mcpServers"')[1].rstrip().rstrip("}").rstrip()[-3:]:
            json.loads(_strip_comments(added))  # strict JSON in, strict JSON out


def _strip_comments(text: str) -> str:
    import re

    return re.sub(r"//[^\n\"]*$|/\*.*?\*/", "", text, flags=re.M)
