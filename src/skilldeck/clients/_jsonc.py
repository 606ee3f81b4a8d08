"""JSON with comments, read with the place of every value, and edited in place. Pure.

MCP clients keep their servers in JSON files that people edit by hand: VS Code's ``mcp.json`` and
Zed's ``settings.json`` are JSON with ``//`` and ``/* */`` comments and trailing commas, and every
file carries keys of its client's own. An edit here changes the bytes of the member it adds,
replaces or removes and nothing else: comments, key order, indentation and line endings stay as
they were (the standard library's ``json`` would re-dump the whole file and drop the comments).

:func:`parse` reads a document into nodes that know their offsets; :func:`put` and :func:`remove`
return the new text, and check it (:func:`~skilldeck.clients._checked.checked`): the edited text is
parsed again and must hold exactly the data of the old one with that one change, else
:class:`~skilldeck.errors.ClientFileError` is raised and nothing is to be written.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from skilldeck.clients._checked import checked
from skilldeck.errors import ClientFileError

__all__ = ["Array", "Member", "Node", "Object", "Scalar", "parse", "plain", "put", "remove"]

MAX_DEPTH = 200
"""Objects and arrays nested deeper than this are refused (a recursive reader's stack is bounded)."""

_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""The standard library's reader of one JSON string (escapes and all), from after its opening quote."""
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


@dataclass
class Node:
    start: int
    end: int
    """Offsets of the value's text: ``text[start:end]``."""


@dataclass
class Scalar(Node):
    value: object


@dataclass
class Array(Node):
    items: list[Node] = field(default_factory=list)


@dataclass
class Member:
    key: str
    key_start: int
    value: Node
    comma: int | None
    """The offset of the comma that follows the value, if one does."""


@dataclass
class Object(Node):
    members: list[Member] = field(default_factory=list)

    def member(self, key: str) -> Member | None:
        """The member named ``key`` (the last one, as JSON readers take, when a key is given twice)."""
        found = [m for m in self.members if m.key == key]
        return found[-1] if found else None


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def fail(self, what: str, at: int | None = None) -> ClientFileError:
        at = self.i if at is None else at
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return ClientFileError(f"line {line} column {column}: {what}")

    def skip(self) -> None:
        """Past whitespace and comments."""
        text = self.text
        while self.i < len(text):
            c = text[self.i]
            if c in " \t\r\n\ufeff":
                self.i += 1
            elif text.startswith("//", self.i):
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            elif text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    raise self.fail("a /* comment is not closed")
                self.i = end + 2
            else:
                return

    def value(self, depth: int) -> Node:
        self.skip()
        if self.i >= len(self.text):
            raise self.fail("a value was expected, the text ended")
        c, start = self.text[self.i], self.i
        if c == "{":
            return self.object(depth + 1)
        if c == "[":
            return self.array(depth + 1)
        if c == '"':
            text = self.string()  # moves past the string: the end is known after it
            return Scalar(start, self.i, text)
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, start):
                self.i = start + len(word)
                return Scalar(start, self.i, literal)
        number = _NUMBER.match(self.text, start)
        if number is None:
            raise self.fail(f"a value was expected, not {c!r}")
        self.i = number.end()
        digits = number.group(0)
        return Scalar(start, self.i, float(digits) if any(x in digits for x in ".eE") else int(digits))

    def string(self) -> str:
        try:
            value, self.i = _scanstring(self.text, self.i + 1, True)
        except json.JSONDecodeError as exc:
            raise self.fail(exc.msg, exc.pos) from None
        return value

    def nested(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")

    def object(self, depth: int) -> Object:
        self.nested(depth)
        node = Object(self.i, self.i)
        self.i += 1
        while True:
            self.skip()
            if self.i < len(self.text) and self.text[self.i] == "}":
                break
            if self.i >= len(self.text) or self.text[self.i] != '"':
                raise self.fail("a quoted key or '}' was expected")
            key_start = self.i
            key = self.string()
            self.skip()
            if self.i >= len(self.text) or self.text[self.i] != ":":
                raise self.fail("':' was expected after the key")
            self.i += 1
            value = self.value(depth)
            self.skip()
            comma = None
            if self.i < len(self.text) and self.text[self.i] == ",":
                comma = self.i
                self.i += 1
            node.members.append(Member(key, key_start, value, comma))
            if comma is None:
                self.skip()
                if self.i >= len(self.text) or self.text[self.i] != "}":
                    raise self.fail("',' or '}' was expected")
                break
        self.i += 1
        node.end = self.i
        return node

    def array(self, depth: int) -> Array:
        self.nested(depth)
        node = Array(self.i, self.i)
        self.i += 1
        while True:
            self.skip()
            if self.i < len(self.text) and self.text[self.i] == "]":
                break
            node.items.append(self.value(depth))
            self.skip()
            if self.i < len(self.text) and self.text[self.i] == ",":
                self.i += 1
                continue
            if self.i >= len(self.text) or self.text[self.i] != "]":
                raise self.fail("',' or ']' was expected")
            break
        self.i += 1
        node.end = self.i
        return node


def parse(text: str) -> Node:
    """The document's top value, every node with its offsets.

    Raises:
        ClientFileError: not JSON with comments (with the line and column).
    """
    reader = _Reader(text)
    node = reader.value(0)
    reader.skip()
    if reader.i != len(text):
        raise reader.fail("the document goes on after its value")
    return node


def plain(node: Node) -> object:
    """The data ``node`` holds, as ``json.loads`` would give it."""
    if isinstance(node, Object):
        return {m.key: plain(m.value) for m in node.members}
    if isinstance(node, Array):
        return [plain(item) for item in node.items]
    assert isinstance(node, Scalar)
    return node.value


def _find(root: Node, path: Sequence[str]) -> tuple[Object | None, int]:
    """The deepest object along ``path`` that exists, and how many keys of ``path`` lead to it."""
    if not isinstance(root, Object):
        return None, 0
    node: Object = root
    for depth, key in enumerate(path):
        member = node.member(key)
        if member is None:
            return node, depth
        if not isinstance(member.value, Object):
            raise ClientFileError(f"{'.'.join(path[: depth + 1])} is not an object")
        node = member.value
    return node, len(path)


@dataclass(frozen=True)
class _Style:
    unit: str
    newline: str


def _style(text: str) -> _Style:
    """The document's indentation step and line ending (two spaces and ``\\n`` when it has none)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    widths = sorted({len(m.group(1)) for m in re.finditer(r"\n( +)\S", text)})
    if re.search(r"\n\t+\S", text):
        return _Style("\t", newline)
    return _Style(" " * (widths[0] if widths else 2), newline)


def _indent_of(text: str, at: int) -> str:
    """The whitespace that starts the line ``at`` is on."""
    start = text.rfind("\n", 0, at) + 1
    return text[start : start + len(text[start:at]) - len(text[start:at].lstrip(" \t"))]


def _render(value: object, indent: str, style: _Style) -> str:
    """``value`` as JSON in the document's style, its lines after the first indented by ``indent``."""
    dumped = json.dumps(value, indent=style.unit, ensure_ascii=False)
    return dumped.replace("\n", style.newline + indent)


def _past_trailing(text: str, at: int) -> int | None:
    """Past the spaces and comments that follow ``at`` on its line: the offset of the line's end, or
    ``None`` when something else follows on the line."""
    i = at
    while i < len(text):
        if text[i] in " \t":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end - 1 if text[end - 1] == "\r" else end
        elif text.startswith("/*", i):
            i = text.find("*/", i) + 2
        else:
            break
    if i >= len(text) or text[i] in "\r\n":
        return i
    return None


def _line_end(text: str, at: int) -> int:
    """The offset just past the line break at ``at`` (``\\n`` or ``\\r\\n``), else ``at``."""
    if text.startswith("\r\n", at):
        return at + 2
    if text.startswith("\n", at):
        return at + 1
    return at


def _add(text: str, obj: Object, key: str, value: object, style: _Style) -> str:
    member_text = json.dumps(key, ensure_ascii=False) + ": "
    if not obj.members:
        inner = text[obj.start + 1 : obj.end - 1]
        outer = _indent_of(text, obj.start)
        indent = outer + style.unit
        rendered = member_text + _render(value, indent, style)
        if not inner.strip():
            return (
                text[: obj.start + 1] + style.newline + indent + rendered + style.newline + outer + text[obj.end - 1 :]
            )
        return text[: obj.start + 1] + style.newline + indent + rendered + text[obj.start + 1 :]
    last = obj.members[-1]
    after = last.comma + 1 if last.comma is not None else last.value.end
    if "\n" not in text[after : obj.end - 1]:  # the object on one line: the member on it too
        compact = member_text + json.dumps(value, ensure_ascii=False)
        if last.comma is not None:
            return text[:after] + " " + compact + "," + text[after:]
        return text[:after] + ", " + compact + text[after:]
    indent = _indent_of(text, last.key_start)
    rendered = member_text + _render(value, indent, style)
    end = _past_trailing(text, after)
    if end is None:  # something else follows on the line: the member goes right after the last one
        compact = member_text + json.dumps(value, ensure_ascii=False)
        if last.comma is not None:
            return text[:after] + " " + compact + "," + text[after:]
        return text[:after] + ", " + compact + text[after:]
    if last.comma is not None:  # trailing commas are this file's style: the new member gets one too
        return text[:end] + style.newline + indent + rendered + "," + text[end:]
    return text[:after] + "," + text[after:end] + style.newline + indent + rendered + text[end:]


def _nest(keys: Sequence[str], value: object) -> object:
    """``value`` under ``keys``, outermost first."""
    for name in reversed(keys):
        value = {name: value}
    return value


def put(text: str, path: Sequence[str], key: str, value: object) -> str:
    """``text`` with ``value`` at ``path`` + ``key`` (the objects on the way made where missing).

    An existing member keeps its place and gets the new value; a new one goes last in its object.
    A missing or empty document becomes an object.

    Raises:
        ClientFileError: the text is not JSON with comments, ``path`` runs through a value that is not
            an object, or the edit would not give the data it should.
    """
    if not text.strip():
        return json.dumps(_nest([*path, key], value), indent=2, ensure_ascii=False) + "\n"
    root = parse(text)
    if not isinstance(root, Object):
        raise ClientFileError("the document is not an object")
    style = _style(text)
    found, depth = _find(root, path)
    assert found is not None
    if depth < len(path):
        new = _add(text, found, path[depth], _nest([*path[depth + 1 :], key], value), style)
    elif sum(m.key == key for m in found.members) > 1:
        raise ClientFileError(_twice(path, key))
    elif (member := found.member(key)) is not None:
        node = member.value
        new = text[: node.start] + _render(value, _indent_of(text, member.key_start), style) + text[node.end :]
    else:
        new = _add(text, found, key, value, style)
    expected = plain(root)
    _set(expected, [*path, key], value)
    return checked(new, expected, f"setting {'.'.join([*path, key])}", _reread)


def remove(text: str, path: Sequence[str], key: str) -> str:
    """``text`` without the member ``key`` of the object at ``path`` (unchanged when it has none).

    The member's line goes with it when it stands on lines of its own, with a comment that ends
    its last line; a comma left dangling after the object's new last member is taken away.
    Comments on the lines above the member stay.
    """
    root = parse(text)
    found, depth = _find(root, path)
    if found is None or depth < len(path):
        return text
    indices = [i for i, m in enumerate(found.members) if m.key == key]
    if not indices:
        return text
    if len(indices) > 1:
        raise ClientFileError(_twice(path, key))
    index = indices[0]
    member = found.members[index]
    end = member.comma + 1 if member.comma is not None else member.value.end
    own_line = not text[text.rfind("\n", 0, member.key_start) + 1 : member.key_start].strip()
    start = member.key_start
    if own_line:
        start = text.rfind("\n", 0, member.key_start) + 1
        stop = _past_trailing(text, end)
        if stop is not None:  # the rest of the line is the member's: it goes, with the line break
            end = _line_end(text, stop)
    elif member.comma is not None:
        while end < len(text) and text[end] in " \t":
            end += 1
    new = text[:start] + text[end:]
    last = index == len(found.members) - 1
    if last and index > 0 and member.comma is None:  # the member before becomes last: its comma goes
        before = found.members[index - 1]
        assert before.comma is not None
        cut = before.comma
        # inline ("a": 1, "b": 2): from that comma to the removed member's end; else the comma alone
        new = text[:cut] + text[end:] if not own_line else new[:cut] + new[cut + 1 :]
    expected = plain(root)
    _drop(expected, [*path, key])
    return checked(new, expected, f"removing {'.'.join([*path, key])}", _reread)


def _reread(text: str) -> object:
    return plain(parse(text))


def _twice(path: Sequence[str], key: str) -> str:
    return f"{'.'.join([*path, key])} is given twice (readers take the last): remove one by hand, then run this again"


def _set(data: object, keys: Sequence[str], value: object) -> None:
    for k in keys[:-1]:
        assert isinstance(data, dict)
        data = data.setdefault(k, {})
    assert isinstance(data, dict)
    data[keys[-1]] = copy.deepcopy(value)


def _drop(data: object, keys: Sequence[str]) -> None:
    for k in keys[:-1]:
        assert isinstance(data, dict)
        data = data[k]
    assert isinstance(data, dict)
    data.pop(keys[-1], None)
