"""``SKILL.md`` frontmatter: split, parse, validate, render. Pure functions, no I/O.

The one rule for turning YAML into JSON
---------------------------------------
The Skills extension publishes a skill's frontmatter "rendered verbatim as a JSON object", and
hosts compare it field by field with what they parse from the file. Both sides must therefore
read the YAML the same way, and the JSON must say exactly what the author wrote. skilldeck reads
frontmatter as **YAML 1.2 with the core schema** (what the reference JavaScript tooling does),
and refuses what has no JSON form instead of changing it:

* plain scalars resolve as in the YAML 1.2 core schema: ``null``/``~``/empty, ``true``/``false``
  (in their three spellings), decimal, ``0o`` octal and ``0x`` hex integers, and decimal floats.
  **Everything else is a string, exactly as written**: ``2025-01-31`` stays ``"2025-01-31"``,
  ``yes`` stays ``"yes"``, ``1.0.3`` stays ``"1.0.3"``.
* refused, with an error naming the field: ``.inf`` and ``.nan`` (JSON has no such numbers),
  explicit tags other than the core ones (``!!binary``, ``!!timestamp``, ``!!set``, ...),
  mapping keys that are not strings, duplicate keys, and anchors/aliases (they also guard hosts
  against alias bombs from hostile servers).

:func:`render_frontmatter` writes YAML under the same rule, quoting every string that would
otherwise be read back as something else, so dynamic skills round-trip exactly.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, SequenceNode

from skilldeck.errors import FrontmatterError

__all__ = [
    "MAX_COMPATIBILITY_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_FRONTMATTER_BYTES",
    "MAX_NAME_LENGTH",
    "NAME_PATTERN",
    "TOOLS_METADATA_KEY",
    "ParsedSkillMd",
    "frontmatter_problems",
    "load_yaml_mapping",
    "parse_skill_md",
    "render_frontmatter",
    "render_skill_md",
    "validate_frontmatter",
    "validate_name",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500
MAX_FRONTMATTER_DEPTH = 32
"""Nesting deeper than this is refused before the YAML parser recurses on it."""
MAX_FRONTMATTER_BYTES = 64 * 1024
"""Frontmatter is a header, not a document: anything larger is refused before YAML sees it."""

TOOLS_METADATA_KEY = "dev.skilldeck/tools"
"""The frontmatter ``metadata`` key naming a skill's tools: skilldeck's own reverse-DNS namespace. Here, with
the format, so that what reads it (a server routing tools) need not import selection (and numpy with it)."""

NAME_PATTERN = re.compile(r"\A[a-z0-9]+(?:-[a-z0-9]+)*\Z")
"""Agent Skills ``name``: lowercase letters, digits and single inner hyphens (``\\Z``: not even a final newline)."""

_FRONTMATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"

# YAML 1.2 core schema, https://yaml.org/spec/1.2.2/#1032-tag-resolution
_CORE_RESOLVERS: list[tuple[str, re.Pattern[str], str]] = [
    (_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), "~nN"),
    (_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    (_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), "-+0123456789"),
    (
        _FLOAT,
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        "-+.0123456789",
    ),
]


def _install_core_resolvers(cls: Any) -> None:
    cls.yaml_implicit_resolvers = {}
    for tag, pattern, first in _CORE_RESOLVERS:
        for ch in first:
            cls.yaml_implicit_resolvers.setdefault(ch, []).append((tag, pattern))
    # The empty plain scalar resolves to null.
    cls.yaml_implicit_resolvers.setdefault("", []).append((_NULL, _CORE_RESOLVERS[0][1]))


class _CoreLoader(yaml.SafeLoader):
    """A safe loader speaking the YAML 1.2 core schema and refusing what JSON cannot hold."""

    yaml_constructors: ClassVar[dict[Any, Any]] = {}  # PyYAML's class-level registry

    _depth = 0
    first_line = 1
    """The line of the file the YAML text starts on (frontmatter: 2, after the opening ``---``)."""

    def file_line(self, node: Node) -> int:
        """The file's line number of ``node``, counting from 1."""
        return node.start_mark.line + self.first_line

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
            raise FrontmatterError(
                f"YAML aliases (*{event.anchor}, line {event.start_mark.line + self.first_line}) are not allowed "
                "in frontmatter; write the value out in full",
                rule="yaml-alias",
            )
        self._depth += 1
        try:
            if self._depth > MAX_FRONTMATTER_DEPTH:
                raise FrontmatterError(
                    f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels; flatten it", rule="yaml-depth"
                )
            return yaml.composer.Composer.compose_node(self, parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, MappingNode):
            raise FrontmatterError("expected a mapping", rule="yaml-type")
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise FrontmatterError(
                    f"mapping key {key!r} (line {self.file_line(key_node)}) is not a string; quote it",
                    rule="yaml-key",
                )
            if key in result:
                raise FrontmatterError(
                    f"duplicate key {key!r} (line {self.file_line(key_node)}); each key may appear once",
                    rule="yaml-duplicate-key",
                )
            result[key] = self.construct_object(value_node, deep=True)
        return result


_install_core_resolvers(_CoreLoader)

_Loader: type[_CoreLoader] = _CoreLoader
"""The loader :func:`load_yaml_mapping` uses: :class:`_CCoreLoader` where PyYAML has libyaml."""
try:  # libyaml's scanner and parser, in C, where PyYAML was built with it (its wheels are)
    from yaml._yaml import CParser

    class _CEvents(CParser):
        """libyaml's events, composed into nodes by PyYAML's Python composer (the loader's checks see every node)."""

        check_node = yaml.composer.Composer.check_node
        get_node = yaml.composer.Composer.get_node
        get_single_node = yaml.composer.Composer.get_single_node

    class _CCoreLoader(_CEvents, _CoreLoader):
        """:class:`_CoreLoader` on libyaml's scanner and parser: the same values and refusals, and a SKILL.md's
        frontmatter parsed about five times faster (it was most of what ``serve`` spent loading a large pack)."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    _Loader = _CCoreLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml: the same results, slower
    pass


def _construct_str(loader: _CoreLoader, node: Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


def _construct_null(loader: _CoreLoader, node: Node) -> None:
    return None


def _construct_bool(loader: _CoreLoader, node: Node) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"  # type: ignore[arg-type]


def _construct_int(loader: _CoreLoader, node: Node) -> int:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    try:
        if text.startswith(("0o", "0x")):
            return int(text, 0)
        return int(text, 10)
    except ValueError:
        raise FrontmatterError(
            f"{text!r} (line {loader.file_line(node)}) is not an integer", rule="yaml-type"
        ) from None


def _construct_float(loader: _CoreLoader, node: Node) -> float:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    value = math.inf if text.lstrip("+-").startswith(".") and text[-1] in "fFnN" else float(text)
    if math.isinf(value) or math.isnan(value):
        raise FrontmatterError(
            f"{text!r} (line {loader.file_line(node)}) has no JSON form; quote it if you mean the text",
            rule="yaml-no-json-form",
        )
    return value


def _construct_seq(loader: _CoreLoader, node: Node) -> list[Any]:
    if not isinstance(node, SequenceNode):
        raise FrontmatterError("expected a sequence", rule="yaml-type")
    return [loader.construct_object(child, deep=True) for child in node.value]


def _construct_map(loader: _CoreLoader, node: Node) -> dict[str, Any]:
    return loader.construct_mapping(node, deep=True)


def _refuse_tag(loader: _CoreLoader, node: Node) -> Any:
    raise FrontmatterError(
        f"the YAML tag {node.tag} (line {loader.file_line(node)}) has no JSON form; "
        "use a plain or quoted value instead",
        rule="yaml-no-json-form",
    )


for _tag, _fn in {
    _STR: _construct_str,
    _NULL: _construct_null,
    _BOOL: _construct_bool,
    _INT: _construct_int,
    _FLOAT: _construct_float,
    _SEQ: _construct_seq,
    _MAP: _construct_map,
    None: _refuse_tag,
}.items():
    _CoreLoader.add_constructor(_tag, _fn)


class _CoreDumper(yaml.SafeDumper):
    """Writes YAML that :class:`_CoreLoader` reads back to the same JSON value.

    It quotes every string that *either* YAML 1.2 or YAML 1.1 would read as something else
    (``yes``, ``2025-01-31``, ``0o17``), so hosts on either kind of parser see a string.
    """

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012


_install_core_resolvers(_CoreDumper)
for _first, _resolvers in yaml.SafeDumper.yaml_implicit_resolvers.items():
    _CoreDumper.yaml_implicit_resolvers.setdefault(_first, []).extend(_resolvers)


def _where(mark: Any, first_line: int) -> str:
    return f"line {mark.line + first_line}, column {mark.column + 1}"


def _yaml_error(exc: yaml.YAMLError, first_line: int) -> str:
    """A YAML error on one line, its marks counted as lines of the file.

    Where the error has a context (``while parsing a flow sequence``), its line comes first: it is
    where the construct the author left open starts, while the problem is often only noticed at the
    end of the frontmatter.
    """
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return " ".join(str(exc).split())
    problem = f"{exc.problem or exc.context or 'syntax error'} ({_where(exc.problem_mark, first_line)})"
    if exc.problem and exc.context and exc.context_mark is not None:
        return f"{exc.context} at {_where(exc.context_mark, first_line)}: {problem}"
    return problem


def load_yaml_mapping(text: str, *, path: str | None = None, first_line: int = 1) -> dict[str, Any]:
    """Parse YAML text under the one rule above; the top level must be a mapping.

    ``first_line`` is the line of the file that ``text`` starts on, so that errors name the
    file's lines (frontmatter starts on line 2, after the opening ``---``).

    Raises:
        FrontmatterError: malformed YAML, a value with no JSON form, or a non-mapping top level.
    """
    simple = _simple_mapping(text)
    if simple is not None:
        return simple
    return _load_mapping(_Loader, text, path=path, first_line=first_line)


_SIMPLE_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*): ((?![-?:,\[\]{}#&*!|>'\"%@` ])[ -~]+)")
"""``key: value`` where both are plain YAML scalars on one line of printable ASCII, the value not starting with
an indicator or a space (see :func:`_simple_mapping` for what else it must not hold)."""
_SIMPLE_REFUSED = (": ", " #", "\t")


def _simple_mapping(text: str) -> dict[str, Any] | None:
    """``text`` read without the YAML parser when every line is ``key: plain string`` (most frontmatter is), else
    ``None`` and the parser reads it.

    Taken only where YAML 1.2 reads the same: printable ASCII, one ``key: value`` per line, no blank or comment
    line, no indentation, no value holding ``": "``, ``" #"`` or a tab, none ending in a space or ``:``, keys
    each once, and keys and values that the core schema resolves to strings (``true``, ``12`` or ``null`` go to
    the parser, which types or refuses them). tests/skill/test_frontmatter_parsers.py reads every text of its
    corpus both ways.
    """
    if len(text) > MAX_FRONTMATTER_BYTES or not text.isascii():
        return None
    result: dict[str, Any] = {}
    for line in text.split("\n"):
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return None
        key, value = match.groups()
        if key in result or value[-1] in " :" or any(bad in value for bad in _SIMPLE_REFUSED):
            return None
        if _resolves_to_other_than_str(key) or _resolves_to_other_than_str(value):
            return None
        result[sys.intern(key)] = value  # the same few keys in every skill: one string each
    return result


def _resolves_to_other_than_str(plain: str) -> bool:
    """Whether the core schema reads the plain scalar ``plain`` as null, a boolean or a number."""
    return any(pattern.match(plain) for _tag, pattern in _CoreLoader.yaml_implicit_resolvers.get(plain[0], ()))


def _load_mapping(reader: type[_CoreLoader], text: str, *, path: str | None, first_line: int) -> dict[str, Any]:
    """:func:`load_yaml_mapping` with ``reader`` (the tests read each text with both parsers)."""
    if len(text.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        raise FrontmatterError(
            f"frontmatter is larger than {MAX_FRONTMATTER_BYTES} bytes; move long content into the body",
            path=path,
            rule="frontmatter-size",
        )
    loader: _CoreLoader | None = None
    try:
        loader = reader(text)
        loader.first_line = first_line
        value = loader.get_single_data()
    except FrontmatterError as exc:
        raise FrontmatterError(exc.reason, path=path, rule=exc.rule) from None
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", "")):  # libyaml's own bound (1,000 flow levels)
            raise FrontmatterError("frontmatter nests too deeply; flatten it", path=path, rule="yaml-depth") from None
        raise FrontmatterError(
            f"frontmatter is not valid YAML: {_yaml_error(exc, first_line)}", path=path, rule="yaml-syntax"
        ) from None
    except RecursionError:  # the scanner also recurses on flow collections: never a raw crash
        raise FrontmatterError("frontmatter nests too deeply; flatten it", path=path, rule="yaml-depth") from None
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(value, dict):
        raise FrontmatterError(
            "frontmatter must be a YAML mapping (key: value lines)", path=path, rule="frontmatter-mapping"
        )
    return value


@dataclass(frozen=True)
class ParsedSkillMd:
    """A ``SKILL.md`` split into its frontmatter (as JSON-ready data) and its markdown body."""

    frontmatter: dict[str, Any]
    body: str


def parse_skill_md(text: str, *, path: str | None = None) -> ParsedSkillMd:
    """Split ``SKILL.md`` text into frontmatter and body and parse the frontmatter.

    Only the syntax is checked here; :func:`validate_frontmatter` applies the Agent Skills rules.

    Raises:
        FrontmatterError: no leading ``---`` block, or YAML that breaks the one rule.
    """
    match = _FRONTMATTER.match(text)
    if match is None:
        raise FrontmatterError(
            "SKILL.md must begin with YAML frontmatter between two '---' lines", path=path, rule="frontmatter-missing"
        )
    frontmatter = load_yaml_mapping(match.group(1), path=path, first_line=2)  # line 1 is the opening '---'
    return ParsedSkillMd(frontmatter=frontmatter, body=text[match.end() :])


def validate_name(name: object) -> list[str]:
    """Problems with a skill ``name`` under the Agent Skills naming rules (empty when valid)."""
    if not isinstance(name, str) or not name:
        return ["'name' is required and must be a non-empty string"]
    problems = []
    if len(name) > MAX_NAME_LENGTH:
        problems.append(f"'name' is {len(name)} characters; the limit is {MAX_NAME_LENGTH}")
    if not NAME_PATTERN.match(name):
        problems.append(
            f"'name' {name!r} must use only lowercase letters, digits and single hyphens, "
            "not starting or ending with a hyphen"
        )
    return problems


def validate_frontmatter(
    frontmatter: dict[str, Any], *, directory_name: str | None = None, path: str | None = None
) -> None:
    """Apply the Agent Skills specification's rules to parsed frontmatter.

    ``directory_name`` is the skill folder's name, which ``name`` must equal. Unknown fields are
    allowed (they pass through to hosts unchanged).

    Raises:
        FrontmatterError: listing every rule broken, the first one as ``rule``, each one in ``details``.
    """
    problems = frontmatter_problems(frontmatter, directory_name=directory_name)
    if problems:
        raise FrontmatterError("; ".join(p for _, p in problems), path=path, rule=problems[0][0], details=problems)


def frontmatter_problems(frontmatter: dict[str, Any], *, directory_name: str | None = None) -> list[tuple[str, str]]:
    """Every Agent Skills rule ``frontmatter`` breaks, as ``(rule, message)``: the checks of :func:`validate_frontmatter`."""
    problems: list[tuple[str, str]] = [("name", p) for p in validate_name(frontmatter.get("name"))]
    name = frontmatter.get("name")
    if directory_name is not None and isinstance(name, str) and name and name != directory_name:
        problems.append(("name-directory", f"'name' {name!r} must equal its folder name {directory_name!r}"))
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append(("description", "'description' is required and must be a non-empty string"))
    elif len(description) > MAX_DESCRIPTION_LENGTH:
        problems.append(
            ("description", f"'description' is {len(description)} characters; the limit is {MAX_DESCRIPTION_LENGTH}")
        )
    if "license" in frontmatter and not isinstance(frontmatter["license"], str):
        problems.append(("license", "'license' must be a string"))
    if "compatibility" in frontmatter:
        compatibility = frontmatter["compatibility"]
        if not isinstance(compatibility, str) or not compatibility:
            problems.append(("compatibility", "'compatibility' must be a non-empty string"))
        elif len(compatibility) > MAX_COMPATIBILITY_LENGTH:
            problems.append(
                (
                    "compatibility",
                    f"'compatibility' is {len(compatibility)} characters; the limit is {MAX_COMPATIBILITY_LENGTH}",
                )
            )
    if "metadata" in frontmatter:
        metadata = frontmatter["metadata"]
        if not isinstance(metadata, dict):
            problems.append(("metadata", "'metadata' must be a mapping of string keys to string values"))
        else:
            for key, value in metadata.items():
                if not isinstance(value, str):
                    problems.append(
                        ("metadata", f"'metadata.{key}' must be a string (quote it, e.g. \"{_plain(value)}\")")
                    )
    if "allowed-tools" in frontmatter and not isinstance(frontmatter["allowed-tools"], str):
        problems.append(
            ("allowed-tools", "'allowed-tools' must be one space-separated string, e.g. 'Read Bash(git:*)'")
        )
    return problems


def _plain(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return str(value)


def render_frontmatter(frontmatter: dict[str, Any]) -> str:
    """YAML text for ``frontmatter`` that :func:`load_yaml_mapping` reads back unchanged."""
    text = yaml.dump(
        frontmatter, Dumper=_CoreDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1 << 16
    )
    if load_yaml_mapping(text) != frontmatter:  # pragma: no cover - a guard on PyYAML's emitter
        raise FrontmatterError("frontmatter does not round-trip through YAML", rule="yaml-round-trip")
    return text


def render_skill_md(frontmatter: dict[str, Any], body: str) -> str:
    """A complete ``SKILL.md``: the frontmatter block, then ``body``."""
    return f"---\n{render_frontmatter(frontmatter)}---\n{body}"
