"""The selection benchmark runs from a clone: its data ships in ``bench/`` with its licence."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
SELECTION = REPO / "bench" / "selection"


def _module(name: str) -> ModuleType:
    sys.path.insert(0, str(SELECTION))  # run.py imports its siblings by name, as when run as a script
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_{name}", SELECTION / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SELECTION))


def test_the_benchmark_reads_data_inside_the_repository_by_default() -> None:
    run = _module("run")
    data = (REPO / run.DEFAULT_DATA).resolve()
    assert data.is_relative_to(REPO), f"{run.DEFAULT_DATA} is outside the repository"
    livemcpbench = _module("livemcpbench")
    servers = livemcpbench.load_catalog(data)
    tasks = livemcpbench.load_tasks(data, servers)
    assert len(servers) == 70
    assert sum(len(s["tools"]) for s in servers) == 527
    assert len(tasks) == 95
    licence = (data / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence
    assert "Version 2.0" in licence
    readme = (data / "README.md").read_text(encoding="utf-8")
    assert "icip-cas/LiveMCPBench" in readme  # attribution, with the source commit
    assert "a928e57d1ee7a25579b9a7036030faffff72d15b" in readme


def test_near_duplicate_clusters_name_servers_of_the_catalog_once_each() -> None:
    import json

    livemcpbench = _module("livemcpbench")
    run = _module("run")
    labels = {s["label"] for s in livemcpbench.load_catalog((REPO / run.DEFAULT_DATA).resolve())}
    clusters = run.load_clusters()
    named = [label for cluster in clusters for label in cluster]
    assert len(named) == len(set(named))  # a server is in one cluster at most
    assert set(named) <= labels
    assert all(len(cluster) >= 2 for cluster in clusters)
    raw = json.loads((SELECTION / "data" / "near-duplicates.json").read_text(encoding="utf-8"))
    assert all(c["why"] for c in raw["clusters"])  # each cluster says why its servers are interchangeable
