"""LiveMCPBench as a selection benchmark: the catalog as a skilldeck snapshot, the tasks with gold labels.

Catalog. ``tools.json`` lists 70 MCP servers. Each becomes one snapshot server whose **label** is
its ``config.mcpServers`` key (the identity a host uses, e.g. ``bing-cn-mcp``), whose description
is ``"<name>: <description>"`` (the catalog's own words about the server, some of them Chinese) and
whose tools are the MCP Tool objects as listed (name, description, inputSchema, annotations).

Gold. ``Annotator Metadata.Tools`` is a numbered list of tool names. Each name is one
*requirement*: the set of servers that list a tool of that name. Resolution, in order:

1. Four names that no server lists are mapped to the tool the annotator evidently meant
   (:data:`RENAMED`); ``open_document`` (no such tool; the task's other tools are all on
   ``word-document-server``) counts for that server only and is left out of tool-level metrics.
2. A name listed by several servers (``write_file``, ``search``, ``fetch``, ...) is narrowed to
   the servers among them that the task already needs for an unambiguous name, if any; otherwise
   any of them satisfies the requirement (``write_file`` -> filesystem *or* desktop-commander).

Metrics per task: Hit@1 = the top server satisfies some requirement; server Recall@k = the share
of the task's distinct requirements satisfied by the top-k servers; tool Recall@5 = the share of
gold (server, tool) requirements with a matching tool among the top 5 tools.

Out-of-scope twins. Each task's question asked against the catalog without every server named in
any of its requirements; the right answer there is to abstain. (This label is noisy: a remaining
server can sometimes still do part of the job, e.g. ``text-editor`` can write a markdown file.)

Split. Tasks are split in two halves by SHA-256 of ``task_id`` (even -> ``A``, odd -> ``B``), so
the split is fixed and independent of the file's order. Design choices were tuned on half A only;
calibration is 2-fold (fit on one half, report on the other).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "RENAMED",
    "Requirement",
    "Task",
    "load_catalog",
    "load_tasks",
    "snapshot_json",
]

RENAMED: dict[str, str] = {
    "trial_references": "trial_references_getter",  # biomcp
    "ddg-search": "duckduckgo_web_search",  # duckduckgo-search
    "execute_command": "start_process",  # desktop-commander's command tool (named execute_command in older releases)
    "get_maven_latest_version": "get_latest_release",  # maven-deps-server
}
SERVER_ONLY: dict[str, str] = {"open_document": "word-document-server"}

_NUMBERED = re.compile(r"^\s*\d+[.)]\s*")


@dataclass(frozen=True)
class Requirement:
    """One gold tool name: the servers that satisfy it and the tool name (``None``: server only)."""

    tool: str | None
    servers: frozenset[str]


@dataclass(frozen=True)
class Task:
    task_id: str
    question: str
    requirements: tuple[Requirement, ...]
    half: str  # "A" or "B"

    @property
    def server_sets(self) -> list[frozenset[str]]:
        """Distinct requirement server sets (what server recall counts)."""
        return list(dict.fromkeys(r.servers for r in self.requirements))

    @property
    def gold_servers(self) -> frozenset[str]:
        return frozenset().union(*(r.servers for r in self.requirements))

    @property
    def tool_requirements(self) -> list[Requirement]:
        return list(dict.fromkeys(r for r in self.requirements if r.tool is not None))


def load_catalog(data_dir: Path) -> list[dict[str, Any]]:
    """``tools.json`` as snapshot server objects (see the module docstring)."""
    raw = json.loads((data_dir / "tools.json").read_text(encoding="utf-8"))
    servers = []
    for entry in raw:
        for label, block in entry["tools"].items():
            description = f"{entry['name'].strip()}: {' '.join(entry.get('description', '').split())}"
            tools = [
                {k: v for k, v in tool.items() if k in ("name", "title", "description", "inputSchema", "annotations")}
                for tool in block["tools"]
            ]
            servers.append({"label": label, "description": description, "tools": tools})
    return servers


def snapshot_json(servers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"servers": [{**s, "skills": []} for s in servers]}


def _half(task_id: str) -> str:
    return "A" if int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 2 == 0 else "B"


def load_tasks(data_dir: Path, servers: list[dict[str, Any]]) -> list[Task]:
    """The annotated tasks with resolved requirements (see the module docstring)."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for s in servers:
        for t in s["tools"]:
            by_name[t["name"]].add(s["label"])
    raw = json.loads((data_dir / "tasks.json").read_text(encoding="utf-8"))
    tasks = []
    for item in raw:
        lines = [_NUMBERED.sub("", line).strip() for line in item["Annotator Metadata"]["Tools"].splitlines()]
        names = [RENAMED.get(n, n) for n in lines if n]
        candidates: list[tuple[str | None, set[str]]] = []
        for name in names:
            if name in SERVER_ONLY:
                candidates.append((None, {SERVER_ONLY[name]}))
            elif name in by_name:
                candidates.append((name, set(by_name[name])))
            else:
                raise ValueError(f"task {item['task_id']}: unknown tool name {name!r}")
        pinned = set().union(*(s for _, s in candidates if len(s) == 1))
        requirements = []
        for name, options in candidates:
            if len(options) > 1 and options & pinned:
                options = options & pinned
            req = Requirement(name, frozenset(options))
            if req not in requirements:
                requirements.append(req)
        tasks.append(
            Task(
                task_id=item["task_id"],
                question=" ".join(item["Question"].split()),
                requirements=tuple(requirements),
                half=_half(item["task_id"]),
            )
        )
    return tasks
