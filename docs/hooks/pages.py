"""MkDocs hook: the pages generated at build time (the ``hooks:`` entry of ``mkdocs.yml``).

* ``reference/cli.md``: the command-line reference, walked from the parser ``skilldeck`` itself
  parses with (``skilldeck.cli``), so a flag added to a command is documented by the next build.
* ``benchmarks/details.md``: ``bench/README.md``, which lives beside the benchmarks it describes,
  with its links into ``docs/`` made relative to the site.
"""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
CLI_PAGE = "reference/cli.md"
BENCH_PAGE = "benchmarks/details.md"
WIDTH = 100


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages to the site (they exist in no folder)."""
    files.append(File.generated(config, CLI_PAGE, content=cli_reference()))
    files.append(File.generated(config, BENCH_PAGE, content=bench_page()))
    return files


def bench_page() -> str:
    """``bench/README.md`` as a page of the site: links into ``docs/`` point at the site's pages."""
    text = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    return text.replace("](../docs/", "](../")


def cli_reference() -> str:
    """The reference of every ``skilldeck`` command, from the parser the command line uses."""
    from skilldeck.cli import _build_parser

    parser = _build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Generated from `skilldeck`'s own argument parser when this site is built: every command, "
        "its usage and every option, with the help text `skilldeck COMMAND --help` prints. "
        "Exit codes are the same for every command (`skilldeck.cli._exits.ExitCode`): 0 ok, 1 bad input "
        "or configuration, 2 bad arguments, 3 a server unreachable, 4 verification failed, 5 budget "
        "exceeded, 6 refused; 141 when standard output is closed early.",
        "",
        *_command(parser, "skilldeck", level=2),
    ]
    for name, sub in _subcommands(parser):
        lines += _command(sub, f"skilldeck {name}", level=2)
    return "\n".join(lines) + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def _command(parser: argparse.ArgumentParser, title: str, *, level: int) -> list[str]:
    parser.formatter_class = _wide
    formatter = parser._get_formatter()
    lines = [f"{'#' * level} `{title}`", ""]
    if parser.description:
        lines += [_text(parser.description), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    rows = [_row(formatter, action) for action in parser._actions if not _hidden(action)]
    if rows:
        lines += ["| argument | what it does |", "|---|---|", *rows, ""]
    if parser.epilog:
        lines += [_text(parser.epilog), ""]
    return lines


def _wide(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=WIDTH)


def _hidden(action: argparse.Action) -> bool:
    return action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction)


def _row(formatter: Any, action: argparse.Action) -> str:
    if action.option_strings:
        metavar = "" if action.nargs == 0 else " " + formatter._format_args(action, action.dest.upper())
        names = ", ".join(f"`{option}{metavar}`" for option in action.option_strings)
    else:
        names = f"`{formatter._format_args(action, action.dest)}`"
    help_text = formatter._expand_help(action) if action.help else ""
    return f"| {names} | {_text(help_text).replace('|', '&#124;')} |"


def _text(text: str) -> str:
    """Plain help text as Markdown: markup characters shown as written, whitespace folded."""
    text = html.escape(re.sub(r"\s+", " ", text).strip(), quote=False)
    return re.sub(r"([\\`*_\[\]])", r"\\\1", text)
