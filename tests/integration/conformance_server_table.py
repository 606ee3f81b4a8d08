"""The conformance suite's server scenarios, directly and through ``skilldeck gateway``: the runs and the table.

What it runs: the reference server (:mod:`tests.integration.conformance_reference_server`, the SDK)
on loopback, and ``skilldeck gateway --config mcp.json --http 127.0.0.1:0 --pin ref/TOOL...`` in
front of it (the upstream ``ref`` over streamable HTTP, each of its tools pinned, so the gateway
lists them). Then ``conformance server --url URL --scenario S --spec-version ERA`` for every server
scenario of the suite in each era it applies to (2025-11-25 and 2026-07-28; the extension
scenarios are left out, see :data:`LEFT_OUT`), against the reference server and against the
gateway, with the gateway's ``--names label`` (the default: ``LABEL__NAME``,
``upstream://LABEL/URI``) and ``--names upstream`` (the upstream's names where they do not collide).

A run passes when every check is ``SUCCESS`` (or ``INFO``, the suite's log of the wire); a check
that fails through the gateway but not directly is a *difference*. Every difference, and every check
that fails against the reference server itself, must be listed in ``conformance-gateway-expected.yml``
with its reason (``tests/integration/test_conformance_gateway.py`` asserts it, and that no entry is
stale).

``python tests/integration/conformance_server_table.py [--workers N] [--out FILE]`` runs them all
(run it with the project venv's Python) and prints the markdown table of docs/conformance.md (scenario, era, direct,
through the gateway with each naming, the reason of every difference) and the counts.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
try:
    from ..server.helpers import stop as _stop
    from .conftest import CONFORMANCE, NODE, npx_env
except ImportError:  # run as a script
    sys.path.insert(0, str(HERE.parents[1]))
    from tests.integration.conftest import CONFORMANCE, NODE, npx_env  # type: ignore[no-redef]
    from tests.server.helpers import stop as _stop  # type: ignore[no-redef]

REFERENCE = HERE / "conformance_reference_server.py"
EXPECTED = HERE / "conformance-gateway-expected.yml"
LABEL = "ref"
"""The reference server's label in the gateway's ``mcpServers`` file."""
OLD, NEW = "2025-11-25", "2026-07-28"
NAMINGS = ("label", "upstream")
"""The gateway's ``--names`` choices, each run as a column of the table."""
SCENARIO_TIMEOUT = 180.0
STARTUP_TIMEOUT = 120.0
PASSING = frozenset({"SUCCESS", "INFO"})

# Every server scenario of the suite (`conformance list --server`) but the extension ones, with the
# eras of those two it applies to.
BOTH, OLD_ONLY, NEW_ONLY = (OLD, NEW), (OLD,), (NEW,)
SCENARIOS: dict[str, tuple[str, ...]] = {
    "server-initialize": OLD_ONLY,
    "server-session-lifecycle": OLD_ONLY,
    "server-stateless": NEW_ONLY,
    "logging-set-level": OLD_ONLY,
    "ping": OLD_ONLY,
    "completion-complete": BOTH,
    "tools-list": BOTH,
    "tools-call-simple-text": BOTH,
    "tools-call-image": BOTH,
    "tools-call-audio": BOTH,
    "tools-call-embedded-resource": BOTH,
    "tools-call-mixed-content": BOTH,
    "tools-call-with-logging": OLD_ONLY,
    "tools-call-error": BOTH,
    "tools-call-with-progress": BOTH,
    "tools-call-sampling": OLD_ONLY,
    "tools-call-elicitation": OLD_ONLY,
    "json-schema-2020-12": BOTH,
    "elicitation-sep1034-defaults": OLD_ONLY,
    "server-sse-polling": OLD_ONLY,
    "server-sse-multiple-streams": BOTH,
    "elicitation-sep1330-enums": OLD_ONLY,
    "resources-list": BOTH,
    "resources-read-text": BOTH,
    "resources-read-binary": BOTH,
    "resources-templates-read": BOTH,
    "resources-subscribe": OLD_ONLY,
    "resources-unsubscribe": OLD_ONLY,
    "sep-2164-resource-not-found": NEW_ONLY,
    "prompts-list": BOTH,
    "prompts-get-simple": BOTH,
    "prompts-get-with-args": BOTH,
    "prompts-get-embedded-resource": BOTH,
    "prompts-get-with-image": BOTH,
    "dns-rebinding-protection": BOTH,
    "caching": NEW_ONLY,
    "http-header-validation": NEW_ONLY,
    "http-custom-header-server-validation": NEW_ONLY,
    **{
        f"input-required-result-{name}": NEW_ONLY
        for name in (
            "basic-elicitation",
            "basic-sampling",
            "basic-list-roots",
            "request-state",
            "multiple-input-requests",
            "multi-round",
            "missing-input-response",
            "non-tool-request",
            "result-type",
            "unsupported-methods",
            "tampered-state",
            "capability-check",
            "ignore-extra-params",
            "validate-input",
        )
    },
}
LEFT_OUT: dict[str, str] = {
    "sep-2640-skills-": "the Skills extension: the reference server has no skills (test_conformance_server.py runs "
    "these against skilldeck serve)",
    "tasks-": "the tasks extension (SEP-2663): the SDK does not implement it",
}
"""Server scenarios of the suite not run here (by name prefix), each with why."""


def runs() -> list[tuple[str, str]]:
    """Every ``(scenario, era)`` run, in the suite's order."""
    return [(scenario, era) for scenario, eras in SCENARIOS.items() for era in eras]


# -- the expected differences -----------------------------------------------------------------------

ENTRY = re.compile(r"^\s*-\s*(?P<entry>[^#\s]+)\s*(?:#\s*(?P<reason>.*\S))?\s*$")
SECTIONS = ("reference", "gateway", "naming")
"""``reference``: checks failing against the reference server itself; ``gateway``: differences through
the gateway whatever the naming; ``naming``: differences only with ``--names label``."""


@dataclass(frozen=True)
class Entry:
    """One line of the expected-differences file: ``scenario[@era][:check]  # reason``."""

    section: str
    key: str
    reason: str

    @property
    def scenario(self) -> str:
        return self.key.partition(":")[0].partition("@")[0]

    @property
    def era(self) -> str | None:
        head = self.key.partition(":")[0]
        return head.partition("@")[2] or None

    @property
    def check(self) -> str | None:
        return self.key.partition(":")[2] or None

    def covers(self, scenario: str, era: str, check: str) -> bool:
        return self.scenario == scenario and self.era in (None, era) and self.check in (None, check)


def expected_entries(path: Path = EXPECTED) -> list[Entry]:
    """The entries of ``path`` (``conformance-gateway-expected.yml``), each with its section and reason."""
    entries: list[Entry] = []
    section = None
    for line in path.read_text().splitlines():
        if re.match(r"^\S", line) and not line.startswith("#"):
            section = line.rstrip(":").strip()
            continue
        match = ENTRY.match(line)
        if match and section is not None:
            entries.append(Entry(section, match["entry"], match["reason"] or ""))
    return entries


def reason_for(entries: Iterable[Entry], sections: Iterable[str], scenario: str, era: str, check: str) -> Entry | None:
    wanted = set(sections)
    return next((e for e in entries if e.section in wanted and e.covers(scenario, era, check)), None)


# -- running the suite ------------------------------------------------------------------------------


@dataclass
class Run:
    """One scenario run in one era against one server: the checks that did not pass, by id."""

    scenario: str
    era: str
    target: str
    problems: dict[str, str] = field(default_factory=dict)
    """Check id -> ``STATUS: message`` for every check not SUCCESS/INFO."""
    succeeded: int = 0
    error: str | None = None
    """Why the run produced no checks at all (the suite crashed or timed out)."""

    @property
    def passed(self) -> bool:
        return self.error is None and not self.problems and self.succeeded > 0

    def failing(self) -> set[str]:
        """The ids of the checks that did not pass (``(run)`` when the run produced none)."""
        empty = self.error is not None or (not self.succeeded and not self.problems)
        return set(self.problems) | ({"(run)"} if empty else set())


def npx_command() -> list[str]:
    return ["npx", "-y", "-p", NODE, "-p", CONFORMANCE, "conformance"]


def run_scenario(url: str, scenario: str, era: str, target: str, work: Path) -> Run:
    """``conformance server --url URL --scenario S --spec-version ERA``: its checks as a :class:`Run`."""
    out = Path(tempfile.mkdtemp(prefix=f"{target}-{scenario}-", dir=work))
    cmd = [*npx_command(), "server", "--url", url, "--scenario", scenario, "--spec-version", era, "-o", str(out)]
    run = Run(scenario, era, target)
    try:
        proc = subprocess.run(
            cmd, cwd=out, env=npx_env(out), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=SCENARIO_TIMEOUT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        run.error = f"the suite did not finish within {SCENARIO_TIMEOUT:.0f}s"
        return run
    found = sorted(out.glob("**/checks.json"))
    if len(found) != 1:
        run.error = f"no checks.json (exit code {proc.returncode}): {(proc.stdout + proc.stderr)[-1500:]}"
        return run
    for check in json.loads(found[0].read_text()):
        status = check.get("status")
        if status == "SUCCESS":
            run.succeeded += 1
        elif status not in PASSING:
            why = check.get("errorMessage") or check.get("description") or ""
            run.problems[str(check.get("id"))] = f"{status}: {why}"[:400]
    return run


# -- the servers ------------------------------------------------------------------------------------


def _started(cmd: list[str], log: Path, pattern: re.Pattern[str], what: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``cmd`` (its output into ``log``); the process and the URL ``pattern`` finds once it is printed."""
    env = {**npx_env(log.parent), "COLUMNS": "400", "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        text = log.read_text(errors="replace")
        match = pattern.search(text)
        if match:
            return proc, match["url"]
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise RuntimeError(f"{what} did not start (exit code {proc.returncode}); its output:\n{text[-4000:]}")
        time.sleep(0.1)


@contextmanager
def reference_server(work: Path) -> Iterator[str]:
    """The reference server on a free loopback port, until the block ends: its URL."""
    pattern = re.compile(r"conformance reference server at (?P<url>http://\S+)")
    proc, url = _started([sys.executable, str(REFERENCE)], work / "reference.log", pattern, "the reference server")
    try:
        yield url
    finally:
        _stop(proc)


def reference_tools(url: str) -> list[str]:
    """The names of the tools the reference server lists (what the gateway pins)."""
    import anyio
    from mcp.client import Client

    async def listed() -> list[str]:
        async with Client(url, cache=None) as client:
            return [t.name for t in (await client.list_tools()).tools]

    return anyio.run(listed)


@contextmanager
def gateway(upstream: str, tools: Iterable[str], naming: str, work: Path) -> Iterator[str]:
    """``skilldeck gateway --http`` in front of ``upstream`` with ``tools`` pinned and ``--names naming``: its URL."""
    folder = Path(tempfile.mkdtemp(prefix=f"gateway-{naming}-", dir=work))
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {LABEL: {"url": upstream}}}))
    pins = [arg for tool in tools for arg in ("--pin", f"{LABEL}/{tool}")]
    cmd = [sys.executable, "-m", "skilldeck.cli", "gateway", "--config", str(config), "--http", "127.0.0.1:0"]
    cmd += ["--lexical", "--names", naming, *pins]
    pattern = re.compile(r"skilldeck gateway: 1 of 1 servers .* at (?P<url>http://\S+)")
    proc, url = _started(cmd, folder / "gateway.log", pattern, "the gateway")
    try:
        yield url
    finally:
        _stop(proc)


@contextmanager
def targets(work: Path, namings: Iterable[str] = NAMINGS) -> Iterator[dict[str, str]]:
    """The reference server and a gateway in front of it per naming: ``{"direct": URL, "label": URL, ...}``."""
    with ExitStack() as stack:
        direct = stack.enter_context(reference_server(work))
        tools = reference_tools(direct)
        urls = {"direct": direct}
        for naming in namings:
            urls[naming] = stack.enter_context(gateway(direct, tools, naming, work))
        yield urls


# -- the table --------------------------------------------------------------------------------------


@dataclass
class Row:
    scenario: str
    era: str
    runs: dict[str, Run]

    def differences(self, target: str) -> set[str]:
        """The checks failing against ``target`` (a gateway) that pass directly."""
        return self.runs[target].failing() - self.runs["direct"].failing()


def _cell(run: Run) -> str:
    if run.passed:
        return "pass"
    return f"**fail** ({len(run.failing())})"


def _reasons(row: Row, entries: list[Entry], namings: list[str]) -> str:
    """Why each check of ``row`` fails directly or differs: its checks and where, grouped by reason."""
    found: dict[str, tuple[dict[str, None], dict[str, None]]] = {}
    for check in sorted(row.runs["direct"].failing()):
        entry = reason_for(entries, ["reference"], row.scenario, row.era, check)
        checks, where = found.setdefault(entry.reason if entry else "UNLISTED", ({}, {}))
        checks[check], where["directly"] = None, None
    for naming in namings:
        sections = ["gateway", *(["naming"] if naming == "label" else [])]
        for check in sorted(row.differences(naming)):
            entry = reason_for(entries, sections, row.scenario, row.era, check)
            checks, where = found.setdefault(entry.reason if entry else "UNLISTED", ({}, {}))
            checks[check], where[f"`{naming}`"] = None, None
    return "<br>".join(
        f"{', '.join(f'`{c}`' for c in checks)} ({', '.join(where)}): {reason}"
        for reason, (checks, where) in found.items()
    )


def table(rows: list[Row], entries: list[Entry], namings: Iterable[str] = NAMINGS) -> str:
    """The markdown table: a line per scenario (its eras together where they agree), the reason of every
    check that fails directly or differs through the gateway (with each ``--names``)."""
    namings = list(namings)
    head = ["scenario", "era", "direct", *(f"gateway `--names {n}`" for n in namings), "reason"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    merged: dict[tuple[str, ...], list[str]] = {}
    for row in rows:
        cells = (
            f"`{row.scenario}`",
            _cell(row.runs["direct"]),
            *(_cell(row.runs[n]) for n in namings),
            _reasons(row, entries, namings),
        )
        merged.setdefault(cells, []).append(row.era)
    for (scenario, *rest), eras in merged.items():
        lines.append("| " + " | ".join([scenario, ", ".join(eras), *rest]) + " |")
    return "\n".join(lines)


def counts(rows: list[Row], entries: list[Entry], namings: Iterable[str] = NAMINGS) -> list[str]:
    """Per naming: runs passing directly, passing through the gateway, differing by naming, differing for real."""
    out = [f"{sum(r.runs['direct'].passed for r in rows)} of {len(rows)} runs pass directly"]
    for naming in namings:
        through = [r for r in rows if r.runs["direct"].passed and r.runs[naming].passed]
        differing = [r for r in rows if r.differences(naming)]
        by_naming = [
            r
            for r in differing
            if all(
                (e := reason_for(entries, ["gateway", "naming"], r.scenario, r.era, c)) is not None
                and e.section == "naming"
                for c in r.differences(naming)
            )
        ]
        out.append(
            f"--names {naming}: {len(through)} pass through the gateway, {len(by_naming)} differ by naming only, "
            f"{len(differing) - len(by_naming)} differ for real"
        )
    return out


def measure(
    selected: list[tuple[str, str]], work: Path, *, workers: int = 2, namings: Iterable[str] = NAMINGS
) -> list[Row]:
    """Run ``selected`` against the reference server and a gateway per naming; one :class:`Row` each."""
    namings = list(namings)
    with targets(work, namings) as urls, ThreadPoolExecutor(max_workers=workers) as pool:
        jobs = {
            (scenario, era, target): pool.submit(run_scenario, url, scenario, era, target, work)
            for scenario, era in selected
            for target, url in urls.items()
        }
        return [
            Row(scenario, era, {target: jobs[(scenario, era, target)].result() for target in urls})
            for scenario, era in selected
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="scenario runs at once (default 2)")
    parser.add_argument("--out", type=Path, help="write the markdown table to this file too")
    parser.add_argument("--scenario", action="append", default=[], help="only this scenario (repeatable)")
    parser.add_argument("--save", type=Path, help="write every run's failing checks to this JSON file")
    parser.add_argument("--load", type=Path, help="make the table from a file --save wrote (nothing is run)")
    args = parser.parse_args(argv)
    selected = [(s, e) for s, e in runs() if not args.scenario or s in args.scenario]
    started = time.monotonic()
    if args.load:
        rows = [
            Row(row["scenario"], row["era"], {target: Run(**run) for target, run in row["runs"].items()})
            for row in json.loads(args.load.read_text())
        ]
    else:
        with tempfile.TemporaryDirectory(prefix="conformance-gateway-") as work:
            rows = measure(selected, Path(work), workers=args.workers)
    if args.save:
        args.save.write_text(json.dumps([asdict(row) for row in rows], indent=1) + "\n")
    entries = expected_entries()
    text = table(rows, entries)
    summary = counts(rows, entries)
    print(text)
    print()
    for line in summary:
        print(f"- {line}")
    if not args.load:
        print(f"- {len(rows)} runs per target in {time.monotonic() - started:.0f} s ({args.workers} at once)")
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
