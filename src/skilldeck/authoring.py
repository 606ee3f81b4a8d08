"""What ``skilldeck validate`` reports about a pack: the loader's refusals, one per rule, and publishing warnings.

Errors are exactly what :class:`~skilldeck.skill._pack.DirectorySource` refuses (``serve`` prints
them as ``refused …`` lines): this module does not check a rule of its own, it only splits a
refusal that names several rules into one finding each and finds the line it is about. A pack
with no error is served whole.

Warnings are what a maintainer wants to hear before publishing, none of which stops ``serve``:

* ``agentskills-field``: a top-level field the Agent Skills format does not define (its reference
  validator refuses such a skill; skilldeck passes the field through);
* ``body-long``: a body over 500 lines (the format's advice: move detail into referenced files);
* ``description-template``: the description is still the one ``skilldeck new`` wrote, which says
  nothing of the skill (:data:`TEMPLATE_DESCRIPTION`);
* ``description-short`` / ``description-long``: too few words to be found, or so many that the
  words that matter are diluted;
* ``description-unrelated``: the description shares no index word with the skill's name, body
  or tools, so a question phrased like the body does not find it;
* ``description-duplicate``: two skills whose descriptions are nearly the same words (the ranker
  cannot tell them apart);
* ``tool-name``: an ``allowed-tools`` entry or a ``dev.skilldeck/tools`` name that is not a tool name;
* ``tool-undeclared``: a tool-like name in backticks in the body that the skill does not declare;
* ``reserved-key``: a ``metadata`` key under ``io.modelcontextprotocol/`` (reserved for MCP).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skilldeck.errors import FrontmatterError, SkillError
from skilldeck.select._api import tokens
from skilldeck.skill import SKILL_MD, parse_skill_md
from skilldeck.skill._api import TOOLS_METADATA_KEY, DirectorySource, LoadResult, StaticSkill

__all__ = [
    "AGENT_SKILLS_FIELDS",
    "DESCRIPTION_MAX_WORDS",
    "DESCRIPTION_MIN_WORDS",
    "DUPLICATE_SIMILARITY",
    "TEMPLATE_DESCRIPTION",
    "Finding",
    "Report",
    "lint",
    "lint_paths",
]

AGENT_SKILLS_FIELDS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
"""The top-level frontmatter fields the Agent Skills format defines."""
DESCRIPTION_MIN_WORDS = 6
"""Fewer index words than this (stop words left out) and a description matches few questions."""
DESCRIPTION_MAX_WORDS = 150
"""More words than this and the words that say what the skill is for weigh little in the ranking."""
DUPLICATE_SIMILARITY = 0.75
"""Two descriptions sharing this share of their index words (Jaccard) are near-duplicates."""
BODY_MAX_LINES = 500
TEMPLATE_DESCRIPTION = "Describe the task {name} helps with, when to use it, and what it produces from which inputs."
"""The description ``skilldeck new`` writes for skill ``{name}``: a placeholder, warned about until it is changed."""

Severity = Literal["error", "warning"]

_LINE_IN_MESSAGE = re.compile(r"\bline (\d+)")
_MCP_TOOL_NAME = re.compile(r"\A(?:[A-Za-z0-9_.\-]+/)?[A-Za-z0-9_.\-]{1,128}\Z")
_ALLOWED_ENTRY = re.compile(r"[^\s(]+(?:\([^()]*\))?|\S+")
"""One ``allowed-tools`` entry: a name, and its pattern in parentheses, which may hold spaces (``Bash(git diff:*)``)."""
_ALLOWED_TOOL = re.compile(r"\A[A-Za-z0-9_.\-]+(?:\([^()]*\))?\Z")
_TOOL_LIKE = re.compile(r"`((?:[A-Za-z0-9\-]+/)?[a-z][a-z0-9]*(?:_[a-z0-9]+)+)(`|\()")
"""A snake_case name in backticks (``search_jobs``, ``files/read_file``): how bodies name MCP tools."""
_TOOL_LINE = re.compile(r"\btools?\b|\bcall", re.IGNORECASE)
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+`")
"""A list item starting with a name in backticks (``- `search_jobs` - ...``): matched at a line's start."""
_FIELD_OF_RULE = {"name-directory": "name"}


@dataclass(frozen=True)
class Finding:
    """One problem: where (file and line, when there is one), which rule, and what to do."""

    severity: Severity
    rule: str
    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.severity}[{self.rule}]: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "rule": self.rule,
            "path": self.path,
            "line": self.line,
            "message": self.message,
        }


@dataclass
class Report:
    """Every finding of one validation, and the skills that would be served."""

    skills: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": not self.errors,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "skills": list(self.skills),
            "findings": [f.to_json() for f in self.findings],
        }


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def lint(loaded: LoadResult, *, read: Callable[[str], str | None] = _read) -> Report:
    """The report on ``loaded``: each of its problems as errors, then the publishing warnings of its skills.

    ``read`` gives a refused ``SKILL.md``'s text (to find the line a rule is about), ``None`` if unreadable.
    """
    report = Report(skills=[s.skill_path for s in loaded.skills])
    for problem in loaded.problems:
        report.findings.extend(_errors_of(problem, read))
    seen: list[tuple[StaticSkill, str, frozenset[str], int | None]] = []
    for skill in loaded.skills:
        text = skill.files[SKILL_MD].decode("utf-8")
        skill_md = str(Path(skill.origin) / SKILL_MD)
        found, words = _warnings_of(skill, text, skill_md)
        report.findings.extend(found)
        line = _field_line(text, "description")
        for other, other_md, other_words, _ in seen:
            if _similar(words, other_words):
                report.findings.append(
                    Finding(
                        "warning",
                        "description-duplicate",
                        skill_md,
                        f"description is nearly the same words as {other.skill_path}'s ({other_md}); "
                        "say what sets each one apart, or the ranker cannot tell them apart",
                        line,
                    )
                )
                break
        seen.append((skill, skill_md, words, line))
    return report


def _errors_of(problem: SkillError, read: Callable[[str], str | None]) -> list[Finding]:
    path = problem.path or ""
    if not isinstance(problem, FrontmatterError):
        return [Finding("error", problem.rule, path, problem.reason, _line_in(problem.reason))]
    text = read(path) if path else None
    findings = []
    for rule, message in problem.details:
        line = _line_in(message)
        if line is None and text is not None:
            line = 1 if rule.startswith("frontmatter") else _rule_line(text, rule, message)
        findings.append(Finding("error", rule, path, message, line))
    return findings


def _line_in(message: str) -> int | None:
    match = _LINE_IN_MESSAGE.search(message)
    return int(match.group(1)) if match else None


def _rule_line(text: str, rule: str, message: str) -> int | None:
    """The line of the frontmatter field a rule is about (``metadata.KEY`` for one metadata value)."""
    field_name = _FIELD_OF_RULE.get(rule, rule)
    if field_name == "metadata":
        key = re.search(r"'metadata\.(.+?)'", message)
        if key:
            return _field_line(text, key.group(1), indented=True, after="metadata")
    return _field_line(text, field_name)


def _field_line(text: str, name: str, *, indented: bool = False, after: str | None = None) -> int | None:
    """The line of the key ``name`` in ``text``'s frontmatter (top level, or indented below the key ``after``)."""
    lines = text.splitlines()
    start = 1
    if after is not None:
        found = _field_line(text, after)
        if found is None:
            return None
        start = found
    indent = "[ \t]+" if indented else ""
    pattern = re.compile("^" + indent + "[\"']?" + re.escape(name) + "[\"']?[ \t]*:")
    for number in range(start, len(lines)):
        line = lines[number]
        if number > 0 and line.rstrip() == "---":
            return None
        if pattern.match(line):
            return number + 1
    return None


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    if len(a) < 3 or len(b) < 3:
        return False
    return len(a & b) / len(a | b) >= DUPLICATE_SIMILARITY


@dataclass
class _Lint:
    """One served skill as its publishing warnings read it, and the warnings found so far."""

    skill: StaticSkill
    text: str
    skill_md: str
    body: str
    body_line: int
    frontmatter: dict[str, Any]
    metadata: Mapping[str, Any]
    declared: list[str]
    """The tools in ``metadata['dev.skilldeck/tools']``."""
    allowed: list[str]
    """The entries of ``allowed-tools``."""
    found: list[Finding] = field(default_factory=list)

    @classmethod
    def of(cls, skill: StaticSkill, text: str, skill_md: str) -> _Lint:
        frontmatter = dict(skill.entry.frontmatter)
        body = parse_skill_md(text).body
        metadata = frontmatter.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        declared_text = metadata.get(TOOLS_METADATA_KEY)
        allowed_text = frontmatter.get("allowed-tools")
        return cls(
            skill=skill,
            text=text,
            skill_md=skill_md,
            body=body,
            body_line=text[: len(text) - len(body)].count("\n") + 1,
            frontmatter=frontmatter,
            metadata=metadata,
            declared=declared_text.split() if isinstance(declared_text, str) else [],
            allowed=_ALLOWED_ENTRY.findall(allowed_text) if isinstance(allowed_text, str) else [],
        )

    def warn(self, rule: str, message: str, line: int | None) -> None:
        self.found.append(Finding("warning", rule, self.skill_md, message, line))


def _warnings_of(skill: StaticSkill, text: str, skill_md: str) -> tuple[list[Finding], frozenset[str]]:
    """The publishing warnings of one served skill, and its description's index words."""
    lint = _Lint.of(skill, text, skill_md)
    _warn_fields(lint)
    words = _warn_description(lint)
    _warn_reserved_keys(lint)
    _warn_tool_names(lint)
    _warn_undeclared_tools(lint)
    return lint.found, frozenset(words)


def _warn_fields(lint: _Lint) -> None:
    """Fields outside the Agent Skills format, and a body longer than it advises."""
    for key in lint.frontmatter:
        if key not in AGENT_SKILLS_FIELDS:
            lint.warn(
                "agentskills-field",
                f"'{key}' is not a field of the Agent Skills format ({', '.join(sorted(AGENT_SKILLS_FIELDS))}); "
                "other tools may refuse the skill: move it under 'metadata'",
                _field_line(lint.text, key),
            )
    body = lint.body
    body_lines = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    if body_lines > BODY_MAX_LINES:
        lint.warn(
            "body-long",
            f"the body is {body_lines} lines; the Agent Skills format advises under {BODY_MAX_LINES}: "
            "move detail into files the body links to",
            lint.body_line,
        )


def _warn_description(lint: _Lint) -> list[str]:
    """A description too short, too long, or sharing no word with the skill; returns its index words."""
    description = lint.skill.entry.description
    words = tokens(description)
    line = _field_line(lint.text, "description")
    if description == TEMPLATE_DESCRIPTION.format(name=lint.skill.entry.name):
        lint.warn(
            "description-template",
            "the description is still skilldeck new's placeholder: say what the skill does and when to use it, "
            "in the words a user would ask with (hosts and the gateway choose a skill by this line alone)",
            line,
        )
    elif len(words) < DESCRIPTION_MIN_WORDS:
        lint.warn(
            "description-short",
            f"the description has {len(words)} index words (fewer than {DESCRIPTION_MIN_WORDS}): say what the "
            "skill does and when to use it, in the words a user would ask with",
            line,
        )
    elif len(description.split()) > DESCRIPTION_MAX_WORDS:
        lint.warn(
            "description-long",
            f"the description is {len(description.split())} words (over {DESCRIPTION_MAX_WORDS}): keep what the "
            "skill is for and when to use it; move the rest into the body",
            line,
        )
    own = set(words)
    context = tokens(" ".join([lint.skill.entry.name.replace("-", " "), lint.body, *lint.declared, *lint.allowed]))
    if own and not own & set(context):
        lint.warn(
            "description-unrelated",
            "the description shares no word with the skill's name, body or tools: "
            "use the words of the task the body teaches",
            line,
        )
    return words


def _warn_reserved_keys(lint: _Lint) -> None:
    """Metadata keys under the namespace MCP reserves."""
    for key in lint.metadata:
        if str(key).startswith("io.modelcontextprotocol/"):
            lint.warn(
                "reserved-key",
                f"metadata key '{key}' is under io.modelcontextprotocol/, reserved for MCP: "
                "use your own reverse-DNS prefix",
                _field_line(lint.text, str(key), indented=True, after="metadata"),
            )


def _warn_tool_names(lint: _Lint) -> None:
    """Declared tools and ``allowed-tools`` entries that cannot be tool names."""
    tools_line = _field_line(lint.text, TOOLS_METADATA_KEY, indented=True, after="metadata")
    for name in lint.declared:
        if not _MCP_TOOL_NAME.match(name):
            lint.warn(
                "tool-name",
                f"{TOOLS_METADATA_KEY} names {name!r}, which is not a tool name "
                "(letters, digits, '_', '-', '.', up to 128; 'label/tool' for another server's tool)",
                tools_line,
            )
    for entry in lint.allowed:
        if not _ALLOWED_TOOL.match(entry):
            lint.warn(
                "tool-name",
                f"allowed-tools entry {entry!r} is not a tool name or Tool(pattern) (entries are separated by "
                "spaces, so a pattern cannot hold one)",
                _field_line(lint.text, "allowed-tools"),
            )


def _warn_undeclared_tools(lint: _Lint) -> None:
    """Tools the body names (called, listed, or on a line about tools) that the skill does not declare."""
    body = lint.body
    known = set(lint.declared) | {entry.split("(")[0] for entry in lint.allowed}
    known |= {name.rpartition("/")[2] for name in lint.declared}
    reported: set[str] = set()
    for match in _TOOL_LIKE.finditer(body):
        name = match.group(1)
        if name in known or name.rpartition("/")[2] in known or name in reported:
            continue
        if not _names_a_tool(body, match):
            continue  # a field or file name in backticks, most likely
        reported.add(name)
        lint.warn(
            "tool-undeclared",
            f"the body names `{name}`, which the skill does not declare: if it is a tool the skill needs, "
            f"add it to metadata '{TOOLS_METADATA_KEY}'",
            lint.body_line + body.count("\n", 0, match.start()),
        )


def _names_a_tool(body: str, match: re.Match[str]) -> bool:
    """Whether a backticked name in ``body`` reads as a tool: called, a list item of its own, or on a line about tools."""
    start = body.rfind("\n", 0, match.start()) + 1
    end = body.find("\n", match.end())
    line_text = body[start : len(body) if end < 0 else end]
    item = _LIST_ITEM.match(body, start)
    listed = item is not None and item.end() == match.start() + 1
    return bool(match.group(2) == "(" or listed or _TOOL_LINE.search(line_text))


def lint_paths(roots: Sequence[str]) -> Report:
    """Load ``roots`` as ``serve`` does and lint the result.

    Raises:
        SourceError: a root does not exist or is not a folder.
    """
    return lint(DirectorySource(*roots).load())
