"""A dense usage history from real questions: the Berkeley Function Calling Leaderboard's live sets.

``bfcl-eval`` (Apache-2.0, on PyPI) ships its question sets. Its *live* sets (``live_simple``,
``live_multiple``) are questions users sent, each with the one function it should call; many
functions are asked for by several different questions (``Events_3_FindEvents`` by 84), which is
what a gateway's ledger would hold: different users' wordings of what led to the same tool.

The catalog: every distinct function of the two sets (its first definition), each a server of its
own with that one tool (near-duplicates such as ``Movies_1_FindMovies`` and ``Movies_3_FindMovies``
stay apart, as they are in the data). The measured questions: for each function asked by at least
``min_questions`` questions, up to ``per_function`` of them (in a fixed order by SHA-256 of the
entry id). A measured question's history: every function's other questions, up to ``past`` each
(the question itself is never in it).

Install the data with ``pip install --no-deps bfcl-eval`` (only its data files are read; the
package is not imported).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livemcpbench import Requirement, Task

__all__ = ["Bfcl", "data_dir", "load"]

SETS = ("BFCL_v4_live_simple", "BFCL_v4_live_multiple")


@dataclass(frozen=True)
class Bfcl:
    """The catalog (snapshot server objects), the measured tasks, and every function's questions."""

    servers: list[dict[str, Any]]
    tasks: list[Task]
    questions: dict[str, list[str]]
    """Server label -> its questions, in a fixed order."""


def data_dir() -> Path | None:
    """The installed ``bfcl_eval`` package's ``data`` folder (found without importing it), if any."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data"
    return path if path.is_dir() else None


def _label(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _order(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load(data: Path, *, min_questions: int = 6, per_function: int = 5) -> Bfcl:
    """The catalog and the measured questions (module docstring)."""
    functions: dict[str, dict[str, Any]] = {}
    asked: dict[str, list[tuple[str, str]]] = defaultdict(list)  # label -> (entry id, question)
    for name in SETS:
        answers = {a["id"]: a for a in _lines(data / "possible_answer" / f"{name}.json")}
        for entry in _lines(data / f"{name}.json"):
            for f in entry["function"]:
                functions.setdefault(_label(f["name"]), f)
            truth = answers.get(entry["id"], {}).get("ground_truth", [])
            users = [m["content"] for m in entry["question"][0] if m.get("role") == "user"]
            if len(truth) != 1 or not users:
                continue
            asked[_label(next(iter(truth[0])))].append((entry["id"], " ".join(users[-1].split())))
    servers = [
        {
            "label": label,
            "description": " ".join(str(f.get("description", "")).split()),
            "tools": [
                {
                    "name": f["name"],
                    "description": " ".join(str(f.get("description", "")).split()),
                    "inputSchema": {**f.get("parameters", {}), "type": "object"},
                }
            ],
        }
        for label, f in sorted(functions.items())
    ]
    questions: dict[str, list[str]] = {}
    tasks: list[Task] = []
    for label, entries in sorted(asked.items()):
        if label not in functions:
            continue
        entries = sorted(entries, key=lambda e: _order(e[0]))
        questions[label] = list(dict.fromkeys(q for _, q in entries))
        if len(questions[label]) < min_questions:
            continue
        tool = functions[label]["name"]
        for entry_id, question in entries[:per_function]:
            half = "A" if int(_order(entry_id), 16) % 2 == 0 else "B"
            tasks.append(Task(entry_id, question, (Requirement(tool, frozenset({label})),), half))
    return Bfcl(servers=servers, tasks=tasks, questions=questions)
