"""How a test run ends: skips grouped by reason at the end, and the process exits at its summary line.

A pytest plugin, registered by ``tests/conftest.py``:

- ``pytest_terminal_summary`` prints a section "skipped, by reason" just above the final line: each reason
  once, with how many tests it skipped and in which files, so that tests skipped for want of a program
  (redis-server, haproxy, Node.js) show at the end of the run, with the install command their reason names.
- Once pytest is done (the trylast ``pytest_unconfigure``, after every other plugin's), the process runs its
  ``atexit`` handlers, flushes its streams and leaves with ``os._exit`` and pytest's exit status: what would
  come after is the interpreter's teardown of every object a full run made (over a gigabyte). Not in an
  xdist worker (its controller stops it), nor under coverage, which saves its data at exit.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections import Counter
from collections.abc import Generator, Iterable, Sequence

import pytest

_SESSION = pytest.StashKey[pytest.Session]()


def skip_reasons(reports: Iterable[pytest.TestReport | pytest.CollectReport]) -> list[tuple[str, Counter[str]]]:
    """Each skip reason with the test files it skipped tests in (and how many), most skips first."""
    by_reason: dict[str, Counter[str]] = {}
    for report in reports:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        path = report.nodeid.split("::", 1)[0] or str(report.fspath)
        by_reason.setdefault(reason, Counter())[path] += 1
    return sorted(by_reason.items(), key=lambda item: (-item[1].total(), item[0]))


def skip_lines(reasons: Sequence[tuple[str, Counter[str]]]) -> list[str]:
    """The lines of the section: ``N skipped: reason`` and, indented, the files with their counts."""
    lines: list[str] = []
    for reason, files in reasons:
        lines.append(f"{files.total()} skipped: {reason}")
        lines.append("    in " + ", ".join(f"{path} ({n})" for path, n in sorted(files.items())))
    return lines


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Generator[None]:
    """After the rest of the summary (the short test summary too), just before the final line."""
    try:
        return (yield)
    finally:
        reasons = skip_reasons(terminalreporter.stats.get("skipped", []))
        if reasons:
            terminalreporter.section("skipped, by reason", sep="=", yellow=True)
            for line in skip_lines(reasons):
                terminalreporter.line(line)


def pytest_sessionfinish(session: pytest.Session) -> None:
    session.config.stash[_SESSION] = session


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION, None)
    if session is None or hasattr(config, "workerinput") or "coverage" in sys.modules:
        return
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(session.exitstatus))
