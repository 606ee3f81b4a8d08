"""The sans-I/O core stays free of the MCP SDK, and imports point one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "skilldeck"

PURE = [
    "skill/frontmatter.py",
    "skill/manifest.py",
    "skill/uri.py",
    "skill/pack.py",  # disk I/O, but no SDK: the host and the server both read packs with it
    "server/catalog.py",
    "server/dynamic.py",
    "host/registry.py",
    "host/verify.py",
    "host/loader.py",
    "host/port.py",
    "host/approvals.py",
    "host/cache.py",
    "server/policy.py",
    "server/audience.py",
    "server/service.py",
    "select/snapshot.py",
    "select/cards.py",
    "select/rank.py",
    "select/decide.py",
    "select/project.py",
    "select/gate.py",
]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def closure(module_file: str) -> set[str]:
    """Every skilldeck module reachable by imports from ``module_file``, plus external roots."""
    seen: set[str] = set()
    todo = [SRC / module_file]
    external: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:  # type: ignore[comparison-overlap]
            continue
        seen.add(path)  # type: ignore[arg-type]
        for name in imported_modules(path):
            if name.startswith("skilldeck."):
                rel = name.removeprefix("skilldeck.").replace(".", "/")
                candidate = SRC / f"{rel}.py"
                todo.append(candidate if candidate.exists() else SRC / rel / "__init__.py")
            else:
                external.add(name.split(".")[0])
    return external


@pytest.mark.parametrize("module_file", PURE)
def test_core_modules_never_import_the_sdk(module_file: str) -> None:
    external = closure(module_file)
    assert not {"mcp", "mcp_types", "starlette", "uvicorn", "httpx2"} & external, external


def test_skill_layer_imports_nothing_above_it() -> None:
    for path in (SRC / "skill").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("skilldeck.server", "skilldeck.host", "skilldeck.cli")), (path, name)


def test_select_never_imports_host_server_or_cli() -> None:
    for path in (SRC / "select").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("skilldeck.host", "skilldeck.server", "skilldeck.cli")), (path, name)


def test_the_public_api_resolves() -> None:
    import skilldeck

    for name in skilldeck.__all__:
        assert getattr(skilldeck, name) is not None, name


def test_server_never_imports_host_or_cli() -> None:
    for path in (SRC / "server").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("skilldeck.host", "skilldeck.cli", "skilldeck.demo")), (path, name)


def test_host_never_imports_server_or_cli() -> None:
    """Host and server are siblings: what both need of a skill pack lives in ``skill/``."""
    for path in (SRC / "host").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("skilldeck.server", "skilldeck.cli", "skilldeck.demo")), (path, name)


@pytest.mark.parametrize("module_file", ["server/middleware.py", "server/extension.py", "server/app.py"])
def test_server_adapters_use_each_other_only_through_public_names(module_file: str) -> None:
    """``x._name`` only on ``self``: the middleware and the app read the extension's public surface."""
    tree = ast.parse((SRC / module_file).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value.id if isinstance(node.value, ast.Name) else ast.unparse(node.value)
            assert owner == "self", (module_file, node.lineno, node.attr)
