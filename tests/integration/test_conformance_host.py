"""The official MCP conformance suite in client mode, driving skilldeck's host CLI.

``conformance client --command CMD --scenario NAME`` starts a mock Skills server, runs ``CMD URL``
(through a shell, with ``MCP_CONFORMANCE_SCENARIO`` set) and judges what the client did:

* ``sep-2640-client-no-prefetch`` runs ``skilldeck skills``: listing must not read any skill file.
* ``sep-2640-client-verify-{digest,size,frontmatter}`` run ``skilldeck load --all-files`` against a
  server whose ``SKILL.md`` does not match its entry: skilldeck must refuse it, exit 4 and say
  ``verification failed (<check>)`` on stderr, and print nothing of the content on stdout.

Every check in ``checks.json`` must be SUCCESS: no failure, no warning, nothing skipped or
informational-only. The suite saves the client's ``stdout.txt`` and ``stderr.txt`` next to it.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.conformance

VERIFY_MODES = ["digest", "size", "frontmatter"]
CLIENT_EXIT = re.compile(r"Client exited with code (-?\d+)")
EXIT_VERIFICATION = 4


@pytest.fixture
def run_client_scenario(
    run_npx, conformance_cmd: list[str], skilldeck_cmd: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Run one client scenario with ``skilldeck <args>`` as the client; return checks, exit code and output."""
    # The suite passes its own environment on to the client: keep skilldeck's state in the test's tmp dir.
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "skilldeck-home"))
    monkeypatch.setenv("COLUMNS", "400")

    def run(scenario: str, *skilldeck_args: str) -> tuple[list[dict[str, Any]], int, str, str]:
        out_dir = tmp_path / "results"
        # The suite splits --command on spaces and runs it through a shell: quote each word.
        command = " ".join(shlex.quote(part) for part in [*skilldeck_cmd, *skilldeck_args])
        result = run_npx(*conformance_cmd, "client", "--command", command, "--scenario", scenario, "-o", str(out_dir))
        found = sorted(out_dir.glob(f"{scenario}-*/checks.json"))
        assert len(found) == 1, (
            f"expected one checks.json for {scenario} under {out_dir}, found {found} "
            f"(the scenario may have been skipped or crashed)\n{result.describe()}"
        )
        checks: list[dict[str, Any]] = json.loads(found[0].read_text())
        stdout = (found[0].parent / "stdout.txt").read_text()
        stderr = (found[0].parent / "stderr.txt").read_text()

        counts: dict[str, int] = {}
        for c in checks:
            counts[c.get("status", "?")] = counts.get(c.get("status", "?"), 0) + 1
        problems = [c for c in checks if c.get("status") != "SUCCESS"]
        detail = "\n".join(
            f"  [{c.get('status')}] {c.get('id')}: {c.get('errorMessage') or c.get('description')}"
            + (f"\n      details: {json.dumps(c['details'])}" if c.get("details") else "")
            for c in problems
        )
        context = f"{result.describe()}\n--- skilldeck stdout ---\n{stdout[-3000:]}\n--- skilldeck stderr ---\n{stderr[-3000:]}"
        assert checks, f"{scenario}: the suite recorded no check at all\n{context}"
        assert not problems, f"conformance client scenario {scenario}: {counts}\n{detail}\n{context}"
        assert result.returncode == 0, f"{scenario}: the suite exited non-zero although every check passed\n{context}"

        # The suite reports a non-zero client exit as "Client exited with code N" and says nothing on 0.
        exits = CLIENT_EXIT.findall(result.stderr + result.stdout)
        exit_code = int(exits[-1]) if exits else 0
        return checks, exit_code, stdout, stderr

    return run


def test_no_prefetch_on_listing(run_client_scenario) -> None:
    checks, exit_code, stdout, stderr = run_client_scenario("sep-2640-client-no-prefetch", "skills")
    assert exit_code == 0, f"skilldeck skills exited {exit_code}\n--- stderr ---\n{stderr}"
    (check,) = [c for c in checks if c.get("id") == "sep-2640-host-no-prefetch"]
    details = check.get("details") or {}
    assert details.get("skillsListCalled") is True, check
    assert details.get("fileReads") == 0, check
    # The listing really happened: the mock server's skill is shown as a card.
    assert "skills extension" in stdout, stdout
    assert re.search(r"\b1 skills\b", stdout), stdout


@pytest.mark.parametrize("mode", VERIFY_MODES)
def test_verify_refuses_mismatching_skill(run_client_scenario, mode: str) -> None:
    checks, exit_code, stdout, stderr = run_client_scenario(f"sep-2640-client-verify-{mode}", "load", "--all-files")
    assert [c.get("name") for c in checks] == [f"SkillsClientVerify_{mode}"], checks
    assert exit_code == EXIT_VERIFICATION, (
        f"skilldeck load should exit {EXIT_VERIFICATION} (verification failed), got {exit_code}\n"
        f"--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
    )
    assert f"verification failed ({mode})" in stderr, stderr
    assert "SKILL.md" in stderr, stderr
    # Nothing of the unverified content reached stdout (where the skill would be printed).
    assert stdout.strip() == "", f"unverified content was printed:\n{stdout}"
