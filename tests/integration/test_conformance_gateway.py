"""The gateway is transparent to the conformance suite's server scenarios, or says why not.

The reference server (:mod:`tests.integration.conformance_reference_server`, built with the SDK)
runs on loopback, and ``skilldeck gateway`` in front of it with every tool pinned (see
:mod:`tests.integration.conformance_server_table`, which also makes the table of
docs/conformance.md). Each server scenario runs in each of its eras against both, and:

* every check that fails against the reference server itself is listed (section ``reference``);
* every check that passes directly but fails through the gateway (a *difference*) is listed
  (``gateway``; with ``--names label`` also ``naming``), each entry with its reason;
* an entry that no longer fails is stale, and fails the test: remove it (so the list shrinks as
  the gateway is fixed).

The whole set (77 runs per target) takes longer than the CI budget, so by default a representative
subset (:data:`DEFAULT`) runs through the gateway with ``--names upstream``;
``SKILLDECK_CONFORMANCE_LONG=1`` runs every scenario, through the gateway with each ``--names``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .conformance_server_table import (
    EXPECTED,
    LEFT_OUT,
    NAMINGS,
    NEW,
    OLD,
    SCENARIOS,
    SECTIONS,
    Entry,
    Run,
    expected_entries,
    run_scenario,
    runs,
    targets,
)

pytestmark = pytest.mark.conformance

LONG = os.environ.get("SKILLDECK_CONFORMANCE_LONG", "").strip().lower() not in ("", "0", "false", "no")
LONG_MODE = "server scenarios through the gateway, long mode: set SKILLDECK_CONFORMANCE_LONG=1 to run them all"
DEFAULT = {
    ("tools-call-simple-text", NEW),
    ("tools-call-sampling", OLD),
    ("tools-call-with-progress", OLD),
    ("resources-templates-read", NEW),
    ("prompts-get-with-args", OLD),
    ("input-required-result-basic-elicitation", NEW),
    ("caching", NEW),
    # each a known difference, so that a fix shows here as a stale entry
    ("http-custom-header-server-validation", NEW),
    ("input-required-result-capability-check", NEW),
    ("server-sse-polling", OLD),
}
"""The runs of the default mode: tools, resources, prompts, a server request in each era, caching, and
three of the listed differences."""
GATEWAYS = NAMINGS if LONG else ("upstream",)


def _cases() -> list[Any]:
    return [
        pytest.param(
            scenario,
            era,
            id=f"{scenario}@{era}",
            marks=() if LONG or (scenario, era) in DEFAULT else (pytest.mark.skip(reason=LONG_MODE),),
        )
        for scenario, era in runs()
    ]


@pytest.fixture(scope="module")
def urls(npx: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The reference server (``direct``) and a gateway in front of it per naming of :data:`GATEWAYS`."""
    with targets(tmp_path_factory.mktemp("conformance-gateway"), GATEWAYS) as found:
        yield found


def test_every_entry_names_a_run_and_has_a_reason() -> None:
    entries = expected_entries()
    assert entries, f"{EXPECTED.name} lists nothing: delete it rather than keep it empty"
    assert not [e.key for e in entries if not e.reason], f"entries of {EXPECTED.name} without a reason"
    assert not [e.key for e in entries if e.section not in SECTIONS], f"sections are {SECTIONS}"
    unknown = [e.key for e in entries if e.era not in (None, *SCENARIOS.get(e.scenario, ()))]
    assert not unknown, f"entries naming no run of the suite (scenario@era): {unknown}"


LISTED = re.compile(r"^\s*-\s*(?P<name>\S+)\s*\[(?P<tags>[^\]]*)\]")


def test_every_server_scenario_of_the_suite_is_run(run_npx: Any, conformance_cmd: list[str]) -> None:
    """``conformance list --server`` names exactly the scenarios run here, in these eras, and those left out."""
    result = run_npx(*conformance_cmd, "list", "--server")
    assert result.returncode == 0, result.describe()
    listed: dict[str, tuple[str, ...]] = {}
    for line in result.stdout.splitlines():
        match = LISTED.match(line)
        if match and not match["name"].startswith(tuple(LEFT_OUT)):
            tags = [t.strip() for t in match["tags"].split(",")]
            listed[match["name"]] = tuple(t for t in tags if t in (OLD, NEW))
    assert listed == SCENARIOS, result.describe()


def _covering(entries: list[Entry], sections: set[str], scenario: str, era: str) -> list[Entry]:
    return [e for e in entries if e.section in sections and e.scenario == scenario and e.era in (None, era)]


def _judge(entries: list[Entry], sections: set[str], run: Run, failing: set[str]) -> list[str]:
    """What is wrong with ``failing`` (the checks of ``run`` to be explained): unlisted, or stale entries."""
    covering = _covering(entries, sections, run.scenario, run.era)
    unlisted = sorted(c for c in failing if not any(e.covers(run.scenario, run.era, c) for e in covering))
    stale = [e.key for e in covering if not any(e.check in (None, c) for c in failing)]
    out = [f"{run.target}: [{c}] {run.problems.get(c) or run.error or 'no check succeeded'}" for c in unlisted]
    return out + [
        f"{run.target}: entry {key!r} ({', '.join(sorted(sections))}) no longer fails: remove it" for key in stale
    ]


@pytest.mark.parametrize(("scenario", "era"), _cases())
def test_server_scenario_through_the_gateway(urls: dict[str, str], tmp_path: Path, scenario: str, era: str) -> None:
    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        found = {
            target: pool.submit(run_scenario, url, scenario, era, target, tmp_path) for target, url in urls.items()
        }
        results = {target: job.result() for target, job in found.items()}
    entries = expected_entries()
    direct = results["direct"]
    problems = _judge(entries, {"reference"}, direct, direct.failing())
    for naming in GATEWAYS:
        sections = {"gateway", "naming"} if naming == "label" else {"gateway"}
        problems += _judge(entries, sections, results[naming], results[naming].failing() - direct.failing())
    assert not problems, (
        f"{scenario} ({era}), listed in {EXPECTED.name}: every difference, with its reason\n" + "\n".join(problems)
    )


def test_an_unlisted_difference_and_a_stale_entry_are_both_reported() -> None:
    """The judgement itself, on made-up runs: what the test reports once a gateway fix lands, or a new difference."""
    entries = [
        Entry("gateway", "server-sse-polling@2025-11-25", "no event store"),
        Entry("gateway", "caching@2026-07-28:sep-2549-ttl", "a made-up entry"),
    ]
    fixed = Run("server-sse-polling", OLD, "upstream", succeeded=3)
    assert _judge(entries, {"gateway"}, fixed, fixed.failing()) == [
        "upstream: entry 'server-sse-polling@2025-11-25' (gateway) no longer fails: remove it"
    ]
    new = Run("caching", NEW, "upstream", problems={"sep-2549-scope": "FAILURE: no cacheScope"}, succeeded=1)
    assert _judge(entries, {"gateway"}, new, new.failing()) == [
        "upstream: [sep-2549-scope] FAILURE: no cacheScope",
        "upstream: entry 'caching@2026-07-28:sep-2549-ttl' (gateway) no longer fails: remove it",
    ]
    listed = Run("caching", NEW, "upstream", problems={"sep-2549-ttl": "FAILURE: no ttlMs"}, succeeded=1)
    assert _judge(entries, {"gateway"}, listed, listed.failing()) == []
