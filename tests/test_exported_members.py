"""One public list: ``skilldeck.__all__`` and each package's ``__all__`` agree (after httpx's test of the same name)."""

from __future__ import annotations

import importlib

import pytest

import skilldeck
import skilldeck.errors

PACKAGES = ["skilldeck.skill", "skilldeck.server", "skilldeck.host", "skilldeck.select", "skilldeck.gateway"]


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
