"""FastMCP 4.2's client (``fastmcp.Client``) against ``skilldeck serve --http`` and ``skilldeck gateway --http``.

``fastmcp_client.py`` runs in FastMCP's own venv (``ensure_fastmcp_venv()``) and prints a JSON report.
What FastMCP's client checks: every ``skills/list`` / ``skills/get`` entry against its wire model
(URI ends in ``SKILL.md`` and names ``frontmatter.name``, every file inside the skill and listed
once, ``sha256:`` digests, no unknown fields, Agent Skills frontmatter rules); ``read_skill()``
reads every listed file and checks its size and digest, parses ``SKILL.md`` (PyYAML, safe loader)
and compares its frontmatter with the entry's, and checks the name against the URI. It sends the
extension's methods only on a 2026-07-28 connection; on 2025-11-25 it finds skills through
``resources/list`` and wants FastMCP's own ``<skill>/_manifest`` resource to read a whole skill,
which is not part of the extension, so there it reads single files only.

Every byte is compared with the pack on disk, not with what the server says.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from skilldeck.gateway import META_OUTPUT_SCHEMAS, META_TOOLS

from ..server.helpers import REPO, start_gateway
from ..server.helpers import stop as _stop
from .conftest import STARTUP_TIMEOUT, _port_open, _start_server

pytestmark = pytest.mark.thirdparty

SCRIPT = Path(__file__).resolve().parent / "fastmcp_client.py"
EXAMPLES = REPO / "examples" / "skills"
JOBS_PACK = REPO / "src" / "skilldeck" / "demo" / "packs" / "jobs"
JOBS_STDIO = "from skilldeck.demo._servers import jobs_server; jobs_server().run()"
ERAS = {"modern": "2026-07-28", "legacy": "2025-11-25"}
META_NAMES = [t["name"] for t in META_TOOLS]
OUTPUT_SCHEMAS = {t["name"]: META_OUTPUT_SCHEMAS.get(t["name"]) for t in META_TOOLS}
RUN_TIMEOUT = 120.0


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def pack_skills(pack: Path, prefix: str = "") -> dict[str, dict[str, str]]:
    """``skill://[prefix/]<path>/SKILL.md`` → ``{relative file path: digest}`` of every file in that folder."""
    skills = {}
    for skill_md in sorted(pack.rglob("SKILL.md")):
        folder = skill_md.parent
        uri = f"skill://{prefix}{folder.relative_to(pack).as_posix()}/SKILL.md"
        skills[uri] = {p.relative_to(folder).as_posix(): digest(p) for p in sorted(folder.rglob("*")) if p.is_file()}
    return skills


def run_client(python: Path, *args: str) -> dict[str, Any]:
    cmd = [str(python), str(SCRIPT), *args]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    described = f"command: {' '.join(cmd)}\nexit code: {proc.returncode}\n--- stderr ---\n{proc.stderr[-6000:]}"
    assert proc.returncode == 0, f"FastMCP's client could not run\n{described}\n--- stdout ---\n{proc.stdout}"
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def refusals(report: dict[str, Any]) -> list[str]:
    """Every call FastMCP's client failed on, as ``what uri: error``."""
    out = [f"{key}: {report[key]['error']}" for key in ("pages", "list") if not report.get(key, {"ok": True})["ok"]]
    for key in ("get", "readSkill", "readResource"):
        out += [f"{key} {c['uri']}: {c['error']}" for c in report.get(key, []) if not c["ok"]]
    return out


def check_skills_modern(report: dict[str, Any], expected: dict[str, dict[str, str]]) -> None:
    assert report["protocolVersion"] == ERAS["modern"], report
    assert not refusals(report), "FastMCP's client refused replies:\n" + "\n".join(refusals(report))
    assert report["list"]["uris"] == sorted(expected), report["list"]
    assert [g["uri"] for g in report["get"]] == sorted(expected)
    assert all(g["sameEntry"] for g in report["get"]), report["get"]
    for call in [*report["pages"]["pages"], *report["get"]]:  # each a CacheableResult on 2026-07-28
        assert (call["ttlMs"], call["cacheScope"]) == (60_000, "public"), call
    # read_skill() verified every file; the bytes it returned are the pack's
    assert {r["uri"]: r["files"] for r in report["readSkill"]} == expected


@pytest.mark.parametrize("era", list(ERAS))
def test_fastmcp_client_lists_gets_and_reads_every_skill(
    fastmcp_python: Path, paged_skilldeck_server: Any, era: str
) -> None:
    server = paged_skilldeck_server
    expected = pack_skills(EXAMPLES)
    files = ["skill://pdf-forms/SKILL.md", "skill://pdf-forms/assets/logo.png", "skill://pdf-forms/references/FORMS.md"]
    report = run_client(fastmcp_python, "skills", server.url, era, *files)
    server.assert_alive()
    assert report["clientVersion"] == "4.2.3", report

    reads = {r["uri"]: r for r in report["readResource"]}
    assert all(r["ok"] for r in reads.values()), reads
    for uri in files:
        path = EXAMPLES / uri.removeprefix("skill://")
        (block,) = reads[uri]["contents"]
        assert (block["size"], block["digest"]) == (path.stat().st_size, digest(path)), (uri, block)
        assert block["kind"] == ("blob" if uri.endswith(".png") else "text"), (uri, block)

    if era == "modern":
        check_skills_modern(report, expected)
        pages = report["pages"]["pages"]  # --page-size 2: every page full but the last, no entry split
        assert [len(p["uris"]) for p in pages] == [2, 2, 2, 2], pages
        assert [u for p in pages for u in p["uris"]] == sorted(expected)
    else:
        assert report["protocolVersion"] == ERAS["legacy"], report
        # the SKILL.md of every skill from resources/list; a nested skill (code-review/security-review) stays a skill
        assert report["skillResources"] == {"ok": True, "uris": sorted(expected)}, report
        # FastMCP sends no extension method on 2025-11-25; to read a whole skill there it wants FastMCP's own
        # `<skill>/_manifest` resource, which the extension does not define, and skilldeck answers it as unknown.
        assert "requires a modern MCP connection" in report["listSkills"]["error"], report
        (read,) = report["readSkill"]
        assert read["ok"] is False, read
        assert "_manifest" in read["error"], read


def test_a_name_ending_in_a_newline_is_not_served_so_fastmcp_lists_the_rest(
    fastmcp_python: Path, tmp_path: Path
) -> None:
    """A folder ``bad\\n`` whose SKILL.md says ``name: "bad\\n"`` used to be served (the name check was
    ``^...$``, and ``$`` matches before a final newline). FastMCP's client validates every entry of a
    ``skills/list`` page and refused the whole page, so it saw none of the server's skills."""
    pack = tmp_path / "pack"
    for folder, name in (("good", "good"), ("bad\n", '"bad\\n"')):
        (pack / folder).mkdir(parents=True)
        (pack / folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: A skill.\n---\nBody\n")
    server, why = _start_server(tmp_path, None, pack=str(pack))
    assert server is not None, why
    try:
        report = run_client(fastmcp_python, "skills", server.url, "modern")
        server.assert_alive()
    finally:
        _stop(server.process)
    check_skills_modern(report, {"skill://good/SKILL.md": {"SKILL.md": digest(pack / "good" / "SKILL.md")}})
    assert "refused" in server.log(), server.log()


# -- through the gateway ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fastmcp_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``skilldeck gateway --http`` before ``skilldeck serve examples/skills`` (``skills``) and the demo ``jobs``."""
    folder = tmp_path_factory.mktemp("fastmcp-gateway")
    servers = {
        "skills": {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(EXAMPLES)]},
        "jobs": {"command": sys.executable, "args": ["-c", JOBS_STDIO]},
    }
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    log_path = folder / "gateway.log"
    proc, match = start_gateway(config, log_path, timeout=STARTUP_TIMEOUT, ready=lambda m: _port_open(m["url"]))
    try:
        assert match["up"] == match["total"] == "2", match.group(0)
        yield match["url"]
        assert proc.poll() is None, f"the gateway exited during the tests:\n{log_path.read_text(errors='replace')}"
    finally:
        _stop(proc)


def check_meta(tool: str, call: dict[str, Any]) -> dict[str, Any]:
    assert (call["ok"], call.get("isError")) == (True, False), (tool, call)
    structured: dict[str, Any] = call["structuredContent"]
    if OUTPUT_SCHEMAS[tool] is not None:
        jsonschema.validate(structured, OUTPUT_SCHEMAS[tool])
    return structured


@pytest.mark.parametrize("era", list(ERAS))
def test_fastmcp_client_through_the_gateway(fastmcp_python: Path, fastmcp_gateway: str, era: str) -> None:
    expected = {**pack_skills(EXAMPLES, "skills/"), **pack_skills(JOBS_PACK, "jobs/")}
    arguments = {"query": "python", "limit": 2}
    report = run_client(
        fastmcp_python,
        "gateway",
        fastmcp_gateway,
        era,
        "find job openings in a city",
        json.dumps(["jobs/job-search", "jobs/search_jobs"]),
        "jobs/search_jobs",
        json.dumps(arguments),
    )
    if era == "modern":  # every server's skills through the one connection, each read and verified whole
        check_skills_modern(report, expected)
    else:
        assert report["protocolVersion"] == ERAS["legacy"], report
        assert report["skillResources"] == {"ok": True, "uris": sorted(expected)}, report

    assert report["toolsBefore"] == META_NAMES, report
    calls = report["calls"]
    found = check_meta("find", calls["find"])
    assert found["cards"][0]["id"] == "jobs/job-search", found
    loaded = check_meta("load", calls["load"])
    assert [(s["id"], s["verified"]) for s in loaded["skills"]] == [("jobs/job-search", True)], loaded
    assert [t["name"] for t in loaded["tools"]] == ["jobs/search_jobs"], loaded
    called = calls["call"]
    assert (called["ok"], called.get("isError")) == (True, False), called
    jobs = called["structuredContent"]["result"]
    assert len(jobs) == 2, called
    assert all("python" in f"{job['title']} {job['skill']}".lower() for job in jobs), called
    # 2025-11-25: the loaded tool is injected into this session's list; 2026-07-28: the list never varies
    injected = ["jobs__search_jobs"] if era == "legacy" else []
    assert report["toolsAfter"] == [*META_NAMES, *injected], report
