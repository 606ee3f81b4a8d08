"""Third-party clients see every upstream's skills through ``skilldeck gateway`` (skills re-published).

The gateway runs as a user runs it (``skilldeck gateway --config mcp.json --http 127.0.0.1:0``) in
front of two ``skilldeck serve`` upstreams over stdio (the example pack as ``ex``, the tenant
fixture pack as ``tenant``). The TypeScript SDK's ``SkillsClient`` lists, gets and reads every
skill and file through the one connection, checking sizes, digests and frontmatter against the
entries; MCP Inspector 2.12's ``skills/list --verify`` does the same. Both protocol eras.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..server.helpers import REPO, start_gateway
from ..server.helpers import stop as _stop
from .conftest import STARTUP_TIMEOUT, _port_open

pytestmark = pytest.mark.thirdparty

PACKS = {"ex": REPO / "examples" / "skills", "tenant": REPO / "tests" / "server" / "fixtures" / "tenant-skills"}
SKILLS = 12  # 8 in the example pack, 4 in the tenant pack
ERAS = {"modern": "2026-07-28", "legacy": "2025-11-25"}
DIRECTORIES = {
    "skill://tenant": {"skill://tenant/orders", "skill://tenant/refund-audit", "skill://tenant/style-guide"},
    "skill://tenant/orders": {"skill://tenant/orders/SKILL.md", "skill://tenant/orders/references"},
    "skill://ex/acme": {"skill://ex/acme/billing"},
}


class RunningGateway:
    def __init__(self, url: str, skills: int, log_path: Path, process: Any) -> None:
        self.url, self.skill_count, self.log_path, self.process = url, skills, log_path, process

    def assert_alive(self) -> None:
        code = self.process.poll()
        assert code is None, f"the gateway exited with code {code}; its log:\n{self.log_path.read_text()}"


@pytest.fixture(scope="session")
def skilldeck_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    folder = tmp_path_factory.mktemp("skilldeck-gateway")
    config = folder / "mcp.json"
    servers = {
        label: {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(pack)]}
        for label, pack in PACKS.items()
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    log_path = folder / "gateway.log"
    proc, match = start_gateway(config, log_path, timeout=STARTUP_TIMEOUT, ready=lambda m: _port_open(m["url"]))
    assert match["up"] == match["total"] == "2", match.group(0)
    try:
        yield RunningGateway(match["url"], int(match["skills"]), log_path, proc)
    finally:
        _stop(proc)


@pytest.mark.parametrize("era", list(ERAS))
def test_ts_skills_client_verifies_every_servers_skills_through_the_gateway(
    run_npx, ts_skills_client_cmd: list[str], skilldeck_gateway: RunningGateway, era: str
) -> None:
    gateway = skilldeck_gateway
    result = run_npx(*ts_skills_client_cmd, gateway.url, era, *DIRECTORIES)
    gateway.assert_alive()
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
    assert report["list"]["ok"], report["list"]
    assert not failures, "the TypeScript SkillsClient refused replies:\n" + "\n".join(failures)

    listed = report["list"]["uris"]
    assert gateway.skill_count == SKILLS
    assert len(listed) == SKILLS, listed
    assert {uri.split("/")[2] for uri in listed} == set(PACKS)  # skill://LABEL/...
    assert all(g["sameEntry"] for g in report["get"]), report["get"]
    reads = report["read"]
    assert len(reads) > len(listed), reads
    assert all(r["verified"] for r in reads), reads
    assert {r["uri"] for r in reads if r["frontmatterChecked"]} == set(listed)
    directories = {d["uri"]: {c["uri"] for c in d["resources"]} for d in report["readDirectory"]}
    for uri, expected in DIRECTORIES.items():
        assert expected <= directories[uri], (uri, directories[uri])
    if era == "modern":
        for call in [report["list"], *report["get"], *report["readDirectory"]]:
            assert (call["ttlMs"], call["cacheScope"]) == (60_000, "public"), call


@pytest.mark.parametrize("era", list(ERAS))
def test_inspector_verifies_every_servers_skills_through_the_gateway(
    run_npx, inspector_cmd: list[str], skilldeck_gateway: RunningGateway, era: str
) -> None:
    gateway = skilldeck_gateway
    result = run_npx(
        *inspector_cmd, gateway.url, "--transport", "http", "--protocol-era", era,
        "--method", "skills/list", "--verify",
    )  # fmt: skip
    gateway.assert_alive()
    assert result.returncode == 0, f"Inspector --verify reported problems\n{result.describe()}"
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    bad = [r for r in reports if not r.get("ok") or r.get("outcome") != "verified" or r.get("conformance")]
    assert not bad, "skills that failed verification:\n" + "\n".join(json.dumps(r) for r in bad)
    assert len(reports) == SKILLS, [r.get("uri") for r in reports]
    assert {r["uri"].split("/")[2] for r in reports} == set(PACKS)
    files = [f for r in reports for f in r.get("files", [])]
    assert files
    assert all(f.get("status") == "verified" for f in files), files
