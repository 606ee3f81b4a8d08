"""Three real MCP servers for the demo, each an in-process ``MCPServer`` with real tools and data.

* ``jobs``: ``search_jobs`` and ``get_job`` over a bundled list of 50 postings, and the
  ``job-search`` skill (which names ``search_jobs``).
* ``tracker``: a small in-memory issue tracker (``list_issues``, ``create_issue``,
  ``close_issue``) and the ``bug-triage`` skill.
* ``files``: an in-memory file store (``list_files``, ``read_file``, ``write_file``) and no
  skills: the host shows it as tool cards.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from skilldeck.server import create_server

__all__ = ["demo_servers", "files_server", "jobs_server", "tracker_server"]

Seniority = Literal["junior", "mid", "senior", "lead"]


def _pack(name: str) -> Path:
    return Path(str(resources.files("skilldeck.demo") / "packs" / name))


def _jobs() -> list[dict[str, Any]]:
    data = (resources.files("skilldeck.demo") / "data" / "jobs.json").read_text(encoding="utf-8")
    return list(json.loads(data))


def jobs_server() -> MCPServer[Any]:
    server, _ = create_server(_pack("jobs"), name="jobs")
    postings = _jobs()

    @server.tool()
    def search_jobs(
        query: str,
        location: str | None = None,
        seniority: Seniority | None = None,
        remote: Literal["onsite", "hybrid", "remote"] | None = None,
        limit: int = 5,
    ) -> list[dict[str, Any]]:
        """Search job postings by skill or title words, city or country, seniority and remote policy."""
        words = [w.lower() for w in query.split()]
        found = []
        for job in postings:
            haystack = f"{job['title']} {job['skill']}".lower()
            if not all(w in haystack for w in words):
                continue
            if location and location.lower() not in f"{job['city']} {job['country']}".lower():
                continue
            if seniority and job["seniority"] != seniority:
                continue
            if remote and job["remote"] != remote:
                continue
            found.append(job)
        return found[: max(1, min(limit, 20))]

    @server.tool()
    def get_job(job_id: str) -> dict[str, Any]:
        """Full details of one job posting by its id (e.g. JOB-2001)."""
        for job in postings:
            if job["id"] == job_id:
                return job
        raise ValueError(f"no posting {job_id!r}")

    return server


def tracker_server() -> MCPServer[Any]:
    server, _ = create_server(_pack("tracker"), name="tracker")
    issues: dict[int, dict[str, Any]] = {
        1: {"id": 1, "title": "Login button misaligned on mobile", "labels": ["bug", "ui"], "state": "open"},
        2: {"id": 2, "title": "Export to CSV drops the last row", "labels": ["bug", "regression"], "state": "open"},
        3: {"id": 3, "title": "Document the rate limits", "labels": ["docs"], "state": "closed"},
    }

    @server.tool()
    def list_issues(state: Literal["open", "closed", "all"] = "open") -> list[dict[str, Any]]:
        """List issues in the bug tracker by state."""
        return [i for i in issues.values() if state == "all" or i["state"] == state]

    @server.tool()
    def create_issue(title: str, body: str = "", labels: list[str] | None = None) -> dict[str, Any]:
        """File a new issue (bug report or task) in the tracker."""
        issue: dict[str, Any] = {
            "id": max(issues) + 1,
            "title": title,
            "body": body,
            "labels": labels or [],
            "state": "open",
        }
        issues[issue["id"]] = issue
        return issue

    @server.tool()
    def close_issue(issue_id: int) -> dict[str, Any]:
        """Close an issue that is fixed."""
        issues[issue_id]["state"] = "closed"
        return issues[issue_id]

    return server


def files_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("files", log_level="WARNING")
    store: dict[str, str] = {
        "notes/todo.md": "- renew passport\n- book dentist\n",
        "reports/q3.csv": "month,revenue\n7,120\n",
    }

    @server.tool()
    def list_files(prefix: str = "") -> list[str]:
        """List the files in the shared file store under a folder prefix."""
        return sorted(p for p in store if p.startswith(prefix))

    @server.tool()
    def read_file(path: str) -> str:
        """Read a text file from the shared file store."""
        if path not in store:
            raise ValueError(f"no file {path!r}")
        return store[path]

    @server.tool()
    def write_file(path: str, content: str) -> str:
        """Write (create or replace) a text file in the shared file store."""
        store[path] = content
        return f"wrote {len(content)} characters to {path}"

    return server


def demo_servers() -> dict[str, MCPServer[Any]]:
    """The demo's servers by label."""
    return {"jobs": jobs_server(), "tracker": tracker_server(), "files": files_server()}
