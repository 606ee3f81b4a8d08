"""The TypeScript SDK's ``SkillsClient`` (``@modelcontextprotocol/client``) against ``skilldeck serve --http``.

``ts_skills_client.mjs`` connects in the requested era (pinned 2026-07-28, or the plain 2025-11-25
handshake) and calls every skills method the client has: ``list()`` over every page, ``get()`` and
``read()`` of every listed skill and every file its entry lists (the client checks size, digest and,
for ``SKILL.md``, the frontmatter against the entry), and ``readDirectory()`` of a skill, a
sub-folder and a prefix folder. The client validates each reply against its era's result schema:
on 2026-07-28 every one of them must carry ``ttlMs`` and ``cacheScope``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from skilldeck.skill._uri import SKILL_MD

pytestmark = pytest.mark.thirdparty

# A skill root, a sub-folder of a skill, and a prefix folder above a nested skill path.
DIRECTORIES = {
    "skill://pdf-forms": {"skill://pdf-forms/SKILL.md", "skill://pdf-forms/templates"},
    "skill://pdf-forms/templates": {"skill://pdf-forms/templates/invoice.md", "skill://pdf-forms/templates/regional"},
    "skill://acme": {"skill://acme/billing"},
}
ERAS = {"modern": "2026-07-28", "legacy": "2025-11-25"}


@pytest.mark.parametrize("era", list(ERAS))
def test_ts_skills_client_every_method(
    run_npx, ts_skills_client_cmd: list[str], skilldeck_server: Any, era: str
) -> None:
    server = skilldeck_server
    result = run_npx(*ts_skills_client_cmd, server.url, era, *DIRECTORIES)
    server.assert_alive()
    assert result.returncode == 0, f"the TypeScript SkillsClient could not run\n{result.describe()}"
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["protocolVersion"] == ERAS[era], report
    assert report["supported"] is True, report
    assert report["directoryRead"] is True, report

    failures = [
        f"{method} {call.get('uri', '')}: {call['error']}"
        for method in ("get", "read", "readDirectory")
        for call in report[method]
        if not call["ok"]
    ]
    if not report["list"]["ok"]:
        failures.insert(0, f"list: {report['list']['error']}")
    assert not failures, "the TypeScript SkillsClient refused replies:\n" + "\n".join(failures)

    listed = report["list"]["uris"]
    assert len(listed) == server.skill_count, listed
    assert all(uri.endswith(f"/{SKILL_MD}") for uri in listed), listed
    assert [g["uri"] for g in report["get"]] == listed
    assert all(g["sameEntry"] for g in report["get"]), report["get"]
    reads = report["read"]
    assert len(reads) >= len(listed), reads
    assert all(r["verified"] for r in reads), reads
    assert {r["uri"] for r in reads if r["frontmatterChecked"]} == set(listed)

    directories = {d["uri"]: d for d in report["readDirectory"]}
    assert directories.keys() == DIRECTORIES.keys()
    for uri, expected in DIRECTORIES.items():
        children = {c["uri"]: c for c in directories[uri]["resources"]}
        assert expected <= children.keys(), (uri, sorted(children))
        folders = {u for u, c in children.items() if c["mimeType"] == "inode/directory"}
        assert folders == {u for u in children if "." not in u.rsplit("/", 1)[-1]}, (uri, children)

    if era == "modern":  # each 2026-07-28 result is a CacheableResult, and the client hands on its fields
        for call in [report["list"], *report["get"], *report["readDirectory"]]:
            assert (call["ttlMs"], call["cacheScope"]) == (60_000, "public"), call
