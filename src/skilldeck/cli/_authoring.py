"""``skilldeck validate`` and ``skilldeck new``: for skill authors, before anything is served.

``validate`` loads the folders exactly as ``serve`` does and prints each refusal (an error: the
skill or file would not be served) and each publishing warning, one line per problem as
``FILE:LINE: severity[rule]: message``; ``--json`` prints the report as one JSON object on stdout
(its schema is in docs/authoring.md). Exit 0 when nothing would be refused (warnings allowed),
1 on any error. ``new`` writes a skill folder whose ``SKILL.md`` passes ``validate``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from skilldeck.authoring import TEMPLATE_DESCRIPTION, lint_paths
from skilldeck.cli._exits import ExitCode
from skilldeck.cli._output import StdoutConsole
from skilldeck.errors import UsageError
from skilldeck.skill import SKILL_MD
from skilldeck.skill._api import validate_name

__all__ = ["add_authoring_commands", "run_new", "run_validate", "skill_template"]


def add_authoring_commands(sub: Any) -> None:
    validate = sub.add_parser(
        "validate",
        help="check skill folders as serve loads them, plus warnings before publishing (exit 1 on any error)",
        description="Check skill folders exactly as serve loads them: one line per problem (FILE:LINE: "
        "severity[rule]: message). Errors are what serve would refuse; warnings are advice before publishing.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="folders holding skills, as given to serve")
    validate.add_argument(
        "--json", action="store_true", help="print the report as one JSON object on stdout (see docs/authoring.md)"
    )
    validate.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    validate.set_defaults(handler=run_validate)

    new = sub.add_parser(
        "new",
        help="create a skill folder with a SKILL.md that passes validate",
        description="Create NAME/SKILL.md: frontmatter with a comment line per field, and a body to fill in.",
    )
    new.add_argument("name", metavar="NAME", help="the skill's name: lowercase letters, digits and single hyphens")
    new.add_argument(
        "--in", dest="into", default=".", metavar="DIR", help="the folder to create it in (default: the current one)"
    )
    new.set_defaults(handler=run_new)


def run_validate(args: argparse.Namespace, err: Console) -> int:
    report = lint_paths(args.paths)
    failed = bool(report.errors) or (args.strict and bool(report.warnings))
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return ExitCode.INPUT if failed else ExitCode.OK
    out = StdoutConsole(soft_wrap=True, highlight=False)
    for finding in report.findings:
        colour = "red" if finding.severity == "error" else "yellow"
        out.print(f"[{colour}]{escape(str(finding))}[/]")
    summary = (
        f"{len(report.skills)} skills would be served; {len(report.errors)} errors, {len(report.warnings)} warnings"
    )
    err.print(summary, highlight=False)
    return ExitCode.INPUT if failed else ExitCode.OK


def skill_template(name: str) -> str:
    """The ``SKILL.md`` ``skilldeck new`` writes for ``name``: it passes ``validate`` with one warning, the
    placeholder description (:data:`~skilldeck.authoring.TEMPLATE_DESCRIPTION`), until that is changed."""
    return f"""---
# name: the skill's id; lowercase letters, digits and single hyphens, equal to its folder's name.
name: {name}
# description: what the skill does and when to use it, in the words a user would ask with (up to 1024 characters).
#   Hosts and the gateway choose a skill by this line alone: name the task, its inputs and its outputs.
description: {TEMPLATE_DESCRIPTION.format(name=name)}
# license: optional; the license of the skill's files (an SPDX id, or the name of a LICENSE file in the folder).
# license: Apache-2.0
# compatibility: optional; what the skill needs to run (a product, system packages, network access).
# compatibility: Needs Python 3.11 and network access.
# allowed-tools: optional; host tools the skill may use once the user approves, separated by spaces.
# allowed-tools: Read Bash(git:*)
# metadata: optional; string keys to string values. dev.skilldeck/tools names the MCP tools the skill calls
#   (space-separated; label/tool for another server's tool), so the gateway activates exactly those.
# metadata:
#   dev.skilldeck/tools: search_items get_item
---
# {name}

Describe the task {name} helps with: when to use it and what it produces.

## Steps

1. Say what to do first, and which inputs it needs.
2. Say what to check before giving the result.
"""


def run_new(args: argparse.Namespace, err: Console) -> int:
    problems = validate_name(args.name)
    if problems:
        raise UsageError("; ".join(problems) + " (for example: invoice-review)")
    parent = Path(args.into)
    if not parent.is_dir():
        raise UsageError(f"--in {args.into}: not a folder; create it first or pass an existing one")
    folder = parent / args.name
    if folder.exists():
        raise UsageError(f"{folder} already exists; pick another name or remove it first")
    folder.mkdir()
    (folder / SKILL_MD).write_text(skill_template(args.name), encoding="utf-8")
    err.print(
        f"created {escape(str(folder / SKILL_MD))}: fill in the description and the body, then run "
        f"skilldeck validate {escape(str(parent))}",
        highlight=False,
    )
    return ExitCode.OK
