"""The official MCP conformance suite's client scenarios, with skilldeck's host as the client.

``conformance client --command "python conformance_client.py" --scenario NAME --spec-version ERA``
starts the scenario's mock server (and for ``auth/*`` its authorization server) and runs the driver
:mod:`tests.integration.conformance_client`, which uses skilldeck as a user does: an ``mcpServers``
file with an ``"oauth"`` object, ``skilldeck login --no-browser`` (the driver plays the browser), and
the :class:`~skilldeck.host.Host` that lists and calls the server's tools through its tool gate.

Each scenario runs in every era it applies to (2025-11-25, 2026-07-28; the ``auth/2025-03-26-*``
ones at 2025-03-26, the extensions at the suite's default). Every check must be SUCCESS (INFO
checks, the suite's log of the wire, are allowed), unless ``conformance-client-expected.yml`` names
the scenario or the check, with its reason; an entry that no longer fails is stale and fails too.

The whole client suite takes about four minutes here (233 s for 61 runs), so by default the ``auth/*`` scenarios run
as a representative subset (:data:`AUTH_DEFAULT`); ``SKILLDECK_CONFORMANCE_LONG=1`` runs them all
(the long mode, see docs/conformance.md).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.conformance

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "conformance_client.py"
EXPECTED = HERE / "conformance-client-expected.yml"
LONG = os.environ.get("SKILLDECK_CONFORMANCE_LONG", "").strip().lower() not in ("", "0", "false", "no")

OLD, NEW = "2025-11-25", "2026-07-28"
EXTENSION = ""
"""No ``--spec-version``: an extension scenario runs at the suite's default."""

# Every active client scenario of the suite (`conformance list --client`) but the skills ones, which
# tests/integration/test_conformance_host.py runs, with the eras each applies to.
CORE: dict[str, tuple[str, ...]] = {
    "initialize": (OLD,),
    "tools_call": (OLD, NEW),
    "elicitation-sep1034-client-defaults": (OLD,),
    "sse-retry": (OLD,),
    "request-metadata": (NEW,),
    "sep-2322-client-request-state": (NEW,),
    "http-standard-headers": (NEW,),
    "http-custom-headers": (NEW,),
    "http-invalid-tool-headers": (NEW,),
    "json-schema-ref-no-deref": (NEW,),
    "json-schema-2020-12-preservation": (OLD, NEW),
}
AUTH: dict[str, tuple[str, ...]] = {
    **{
        f"auth/{name}": (OLD, NEW)
        for name in (
            "metadata-default",
            "metadata-var1",
            "metadata-var2",
            "metadata-var3",
            "basic-cimd",
            "scope-from-www-authenticate",
            "scope-from-scopes-supported",
            "scope-omitted-when-undefined",
            "scope-step-up",
            "scope-retry-limit",
            "token-endpoint-auth-basic",
            "token-endpoint-auth-post",
            "token-endpoint-auth-none",
            "pre-registration",
        )
    },
    "auth/2025-03-26-oauth-metadata-backcompat": ("2025-03-26",),
    "auth/2025-03-26-oauth-endpoint-fallback": ("2025-03-26",),
    **{
        f"auth/{name}": (NEW,)
        for name in (
            "resource-mismatch",
            "offline-access-scope",
            "offline-access-not-supported",
            "authorization-server-migration",
            "iss-supported",
            "iss-not-advertised",
            "iss-supported-missing",
            "iss-wrong-issuer",
            "iss-unexpected",
            "iss-normalized",
            "metadata-issuer-mismatch",
        )
    },
    **{
        f"auth/{name}": (EXTENSION,)
        for name in (
            "client-credentials-jwt",
            "client-credentials-basic",
            "enterprise-managed-authorization",
            "dpop",
            "dpop-nonce",
            "wif-jwt-bearer",
        )
    },
}
# The auth scenarios of the default run: discovery, a login and its step-up, a pre-registered client,
# client credentials, a migrated authorization server, an issuer the client must refuse.
AUTH_DEFAULT = {
    ("auth/metadata-default", OLD),
    ("auth/metadata-default", NEW),
    ("auth/scope-step-up", NEW),
    ("auth/pre-registration", NEW),
    ("auth/client-credentials-basic", EXTENSION),
    ("auth/authorization-server-migration", NEW),
    ("auth/iss-wrong-issuer", NEW),
}


def _cases() -> list[Any]:
    cases = [pytest.param(s, era, id=f"{s}@{era}") for s, eras in CORE.items() for era in eras]
    for scenario, eras in AUTH.items():
        for era in eras:
            marks = () if LONG or (scenario, era) in AUTH_DEFAULT else (pytest.mark.skip(reason=LONG_MODE),)
            cases.append(pytest.param(scenario, era, id=f"{scenario}@{era or 'extension'}", marks=marks))
    return cases


LONG_MODE = "auth/* long mode: set SKILLDECK_CONFORMANCE_LONG=1 to run every auth scenario"
ENTRY = re.compile(r"^\s*-\s*(?P<entry>[^#\s]+)\s*(?:#\s*(?P<reason>.*\S))?\s*$")


def expected_failures() -> dict[str, str]:
    """``conformance-client-expected.yml``: each entry (a scenario, or ``scenario:check``) and its reason."""
    found: dict[str, str] = {}
    in_client = False
    for line in EXPECTED.read_text().splitlines():
        if re.match(r"^\S", line):
            in_client = line.startswith("client:")
            continue
        match = ENTRY.match(line)
        if in_client and match:
            found[match["entry"]] = match["reason"] or ""
    return found


def test_every_expected_failure_has_a_reason() -> None:
    entries = expected_failures()
    assert entries, f"{EXPECTED.name} lists nothing: delete it rather than keep it empty"
    assert not [e for e, reason in entries.items() if not reason], f"entries of {EXPECTED.name} without a reason"
    known = {*CORE, *AUTH}
    assert not [e for e in entries if e.partition(":")[0] not in known], "entries naming no scenario of the suite"


SKILLS_SCENARIOS = {  # run by tests/integration/test_conformance_host.py
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
}
LISTED = re.compile(r"^\s*-\s*(?P<name>\S+)\s*\[(?P<tags>[^\]]*)\]")


def test_every_client_scenario_of_the_suite_is_run(run_npx, conformance_cmd: list[str]) -> None:
    """``conformance list --client`` names exactly the scenarios above, in the eras above (a new pin may add some)."""
    result = run_npx(*conformance_cmd, "list", "--client")
    assert result.returncode == 0, result.describe()
    listed: dict[str, tuple[str, ...]] = {}
    for line in result.stdout.splitlines():
        if (match := LISTED.match(line)) and match["name"] not in SKILLS_SCENARIOS:
            tags = [t.strip() for t in match["tags"].split(",")]
            eras = tuple(t for t in tags if t in (OLD, NEW)) or tuple(t for t in tags if t[:1].isdigit())
            listed[match["name"]] = eras or (EXTENSION,)
    assert listed == {**CORE, **AUTH}, result.describe()


def _problems(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in checks if c.get("status") not in ("SUCCESS", "INFO")]


def _excused(scenario: str, check: dict[str, Any], entries: dict[str, str]) -> bool:
    return scenario in entries or f"{scenario}:{check.get('id')}" in entries


@pytest.mark.parametrize(("scenario", "era"), _cases())
def test_client_scenario(
    run_npx, conformance_cmd: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, era: str
) -> None:
    # The suite hands its own environment to the client: skilldeck's state and tokens stay in tmp_path.
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "skilldeck-home"))
    monkeypatch.setenv("SKILLDECK_KEYRING", "0")
    command = " ".join(shlex.quote(part) for part in (sys.executable, str(DRIVER)))
    out_dir = tmp_path / "results"
    args = [*conformance_cmd, "client", "--command", command, "--scenario", scenario, "-o", str(out_dir)]
    if era:
        args += ["--spec-version", era]
    result = run_npx(*args)
    found = sorted(out_dir.glob("**/checks.json"))
    assert len(found) == 1, (
        f"expected one checks.json for {scenario} under {out_dir}, found {found}\n{result.describe()}"
    )
    checks: list[dict[str, Any]] = json.loads(found[0].read_text())
    stdout = (found[0].parent / "stdout.txt").read_text()
    stderr = (found[0].parent / "stderr.txt").read_text()
    context = f"{result.describe()}\n--- driver stdout ---\n{stdout[-3000:]}\n--- driver stderr ---\n{stderr[-3000:]}"
    assert any(c.get("status") == "SUCCESS" for c in checks), f"{scenario}: no check succeeded\n{context}"

    entries = expected_failures()
    problems = _problems(checks)
    unexpected = [c for c in problems if not _excused(scenario, c, entries)]
    detail = "\n".join(
        f"  [{c.get('status')}] {c.get('id')}: {c.get('errorMessage') or c.get('description')}" for c in unexpected
    )
    assert not unexpected, f"conformance client scenario {scenario} ({era or 'extension'}):\n{detail}\n{context}"
    listed = [e for e in entries if e == scenario or e.startswith(scenario + ":")]
    stale = [e for e in listed if not any(e in (scenario, f"{scenario}:{c.get('id')}") for c in problems)]
    assert not stale, f"{EXPECTED.name}: these entries no longer fail, remove them: {stale}\n{context}"
    if not listed:  # the suite fails a run whose client exited non-zero where the scenario did not expect it
        assert result.returncode == 0, f"{scenario}: the suite exited non-zero although every check passed\n{context}"
