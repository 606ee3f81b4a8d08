"""One public list: ``skilldeck.__all__`` and each package's ``__all__`` agree (after httpx's test of the same name)."""

from __future__ import annotations

import importlib

import pytest

import skilldeck
import skilldeck.errors

PACKAGES = [
    "skilldeck.skill",
    "skilldeck.server",
    "skilldeck.host",
    "skilldeck.select",
    "skilldeck.gateway",
    "skilldeck.learning",
    "skilldeck.catalog",
]


@pytest.mark.parametrize("name", ["skilldeck", "skilldeck.errors", *PACKAGES])
def test_every_listed_name_exists_once(name: str) -> None:
    module = importlib.import_module(name)
    listed = list(module.__all__)
    assert len(listed) == len(set(listed)), name
    for member in listed:
        assert getattr(module, member) is not None, (name, member)


def test_top_level_names_are_public_in_the_package_they_come_from() -> None:
    for member in skilldeck.__all__:
        if member == "__version__" or member in skilldeck.errors.__all__:
            continue
        owner = skilldeck._LAZY[member]
        assert owner in PACKAGES, f"skilldeck.{member} re-exports {owner}, not a package"
        assert member in importlib.import_module(owner).__all__, f"{member} is missing from {owner}.__all__"
        assert getattr(skilldeck, member) is getattr(importlib.import_module(owner), member)


def test_errors_a_package_exports_are_the_ones_in_errors_py() -> None:
    for package in ["skilldeck", *PACKAGES]:
        module = importlib.import_module(package)
        for member in module.__all__:
            value = getattr(module, member)
            if isinstance(value, type) and issubclass(value, Exception):
                assert value.__module__ == "skilldeck.errors", (package, member)
                assert getattr(skilldeck.errors, member) is value


PUBLIC_MODULES = {
    "skilldeck",
    "skilldeck.agents",
    "skilldeck.agents.langchain",
    "skilldeck.agents.openai_agents",
    "skilldeck.agents.providers",
    "skilldeck.agents.pydantic_ai",
    "skilldeck.ask",
    "skilldeck.authoring",
    "skilldeck.catalog",
    "skilldeck.cli",
    "skilldeck.clients",
    "skilldeck.demo",
    "skilldeck.errors",
    "skilldeck.gateway",
    "skilldeck.host",
    "skilldeck.learning",
    "skilldeck.select",
    "skilldeck.server",
    "skilldeck.serving",
    "skilldeck.skill",
}
"""The modules whose names a user imports: the packages, the errors, and the entry points that are
modules of their own (each agent adapter imports its framework, so none is imported by its package)."""


def test_every_other_module_is_private() -> None:
    """A new implementation module starts with ``_``, so the public surface cannot grow by accident."""
    from pathlib import Path

    src = Path(skilldeck.__file__).parent
    public = set()
    for path in src.rglob("*.py"):
        parts = path.relative_to(src.parent).with_suffix("").parts
        if parts[-1] in ("__init__", "__main__"):
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts):
            public.add(".".join(parts))
    assert public == PUBLIC_MODULES, sorted(public ^ PUBLIC_MODULES)
