"""MCP Inspector's CLI (a third-party client) against a running ``skilldeck serve --http``.

``--method skills/list --verify`` makes Inspector list every skill, read every file the manifest
names, and check SEP-2640 conformance plus each file's digest and size; it prints one JSON report
per skill on stdout and exits 7 on any violation (8 if it could not read everything).

Inspector 2.12.0 looks for the Skills extension only under ``capabilities.extensions``. The SDK
drops that field from a legacy (2025-11-25) ``initialize`` reply; skilldeck puts it back (and
mirrors it under ``experimental``), so ``--verify`` runs in both eras. A further legacy test reads
a skill file and checks the reply has the 2025-11-25 shape.

Inspector validates each reply against its era's result schema before printing it (a 2026-07-28
``resources/directory/read`` without ``ttlMs``/``cacheScope`` is "Invalid result"), so every skills
method is also called on its own with ``--method``, in both eras.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from skilldeck.skill._uri import SKILL_MD

pytestmark = pytest.mark.thirdparty

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "skills"

SUMMARY = re.compile(r"Verified (\d+) skills? and (\d+) files?: no conformance errors\.")
ERROR_TEXT = re.compile(r"error|fail|mismatch|invalid|could not|unsupported|warn", re.IGNORECASE)


def chatter(stderr: str) -> list[str]:
    """Inspector's stderr minus npm's own warnings and the expected verification summary."""
    return [
        line
        for line in stderr.splitlines()
        if line.strip() and not line.startswith("npm warn") and not SUMMARY.fullmatch(line.strip())
    ]


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_inspector_verifies_skills(run_npx, inspector_cmd: list[str], skilldeck_server: Any, era: str) -> None:
    server = skilldeck_server
    result = run_npx(
        *inspector_cmd, server.url, "--transport", "http", "--protocol-era", era,
        "--method", "skills/list", "--verify",
    )  # fmt: skip
    server.assert_alive()
    assert result.returncode == 0, f"Inspector --verify reported problems\n{result.describe()}"

    reports = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    bad = [
        r
        for r in reports
        if not r.get("ok") or r.get("outcome") != "verified" or r.get("conformance") or r.get("frontmatter")
    ]
    assert not bad, "skills that failed verification:\n" + "\n".join(json.dumps(r) for r in bad)
    unverified_files = [(r["uri"], f) for r in reports for f in r.get("files", []) if f.get("status") != "verified"]
    assert not unverified_files, f"files not verified: {unverified_files}"

    names = {r.get("name") for r in reports}
    assert "job-search" in names, f"job-search missing from Inspector's reports: {sorted(names)}"
    assert len(reports) == server.skill_count, f"{len(reports)} reports for {server.skill_count} served skills"
    assert all(r["uri"].endswith(f"/{r['name']}/{SKILL_MD}") for r in reports), [r["uri"] for r in reports]

    summary = SUMMARY.search(result.stderr)
    assert summary, f"no 'Verified N skills ... no conformance errors.' summary\n{result.describe()}"
    assert int(summary.group(1)) == server.skill_count
    assert int(summary.group(2)) == sum(len(r["files"]) for r in reports)
    noise = [line for line in chatter(result.stderr) if ERROR_TEXT.search(line)]
    assert not noise, f"Inspector printed error text: {noise}\n{result.describe()}"


def test_inspector_reads_skill_file_legacy(run_npx, inspector_cmd: list[str], skilldeck_server: Any) -> None:
    server = skilldeck_server
    uri = f"skill://job-search/{SKILL_MD}"
    result = run_npx(
        *inspector_cmd, server.url, "--transport", "http", "--protocol-era", "legacy", "--format", "json",
        "--method", "resources/read", "--uri", uri,
    )  # fmt: skip
    server.assert_alive()
    assert result.returncode == 0, f"Inspector (legacy era) could not read {uri}\n{result.describe()}"
    payload = json.loads(result.stdout)
    contents = payload["result"]["contents"]
    assert len(contents) == 1, payload
    assert contents[0]["uri"] == uri
    assert contents[0]["text"] == (EXAMPLES / "job-search" / SKILL_MD).read_text(encoding="utf-8")
    # A legacy session gets the 2025-11-25 result shape: no 2026-07-28 cache attributes.
    assert not {"ttlMs", "cacheScope", "resultType"} & payload["result"].keys(), payload["result"].keys()
    noise = [line for line in chatter(result.stderr) if ERROR_TEXT.search(line)]
    assert not noise, f"Inspector printed error text: {noise}\n{result.describe()}"


PDF_FORMS = f"skill://pdf-forms/{SKILL_MD}"
INVOICE = "skill://pdf-forms/templates/invoice.md"
# (id, --method, --uri, the children a directory read must list)
CALLS: list[tuple[str, str, str | None, set[str]]] = [
    ("list", "skills/list", None, set()),
    ("get", "skills/get", PDF_FORMS, set()),
    ("read", "resources/read", INVOICE, set()),
    ("dir-skill", "resources/directory/read", "skill://pdf-forms", {PDF_FORMS, "skill://pdf-forms/templates"}),
    ("dir-subfolder", "resources/directory/read", "skill://pdf-forms/templates", {INVOICE}),
    ("dir-prefix", "resources/directory/read", "skill://acme", {"skill://acme/billing"}),
]


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize(("method", "uri", "children"), [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_inspector_accepts_every_skills_method(
    run_npx, inspector_cmd: list[str], skilldeck_server: Any, era: str, method: str, uri: str | None, children: set[str]
) -> None:
    server = skilldeck_server
    result = run_npx(
        *inspector_cmd, server.url, "--transport", "http", "--protocol-era", era, "--format", "json",
        "--method", method, *(["--uri", uri] if uri else []),
    )  # fmt: skip
    server.assert_alive()
    assert result.returncode == 0, f"Inspector ({era} era) refused the {method} reply\n{result.describe()}"
    payload = json.loads(result.stdout)
    assert "error" not in payload, payload
    reply = payload["result"]
    if method == "skills/list":
        assert len(reply["skills"]) == server.skill_count, reply
    elif method == "skills/get":
        assert reply["skill"]["uri"] == uri, reply
    elif method == "resources/read":
        (content,) = reply["contents"]
        assert content["text"] == (EXAMPLES / "pdf-forms" / "templates" / "invoice.md").read_text(encoding="utf-8")
    else:
        assert children <= {c["uri"] for c in reply["resources"]}, reply
    if era == "modern" and method != "skills/list":  # Inspector prints the listing's pages merged, without them
        assert (reply.get("ttlMs"), reply.get("cacheScope")) == (60_000, "public"), reply
    noise = [line for line in chatter(result.stderr) if ERROR_TEXT.search(line)]
    assert not noise, f"Inspector printed error text: {noise}\n{result.describe()}"
