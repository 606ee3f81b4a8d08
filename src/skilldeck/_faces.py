"""A package's face to its sibling packages: the names it gives them, each imported when first asked for.

Every package but the root's helpers has a ``_api`` module: what another skilldeck package may use
of it beyond its public ``__all__``. Another package imports from ``skilldeck.x`` or
``skilldeck.x._api``, never from one of ``x``'s other private modules (``tests/test_architecture.py``
checks), so a module can be split, renamed or merged inside its package without touching another.
A face is not public API: it may change in any release. Its names are imported lazily, so a face
costs nothing at start-up that the names asked of it do not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    face: str, where: Mapping[str, str], keep: MutableMapping[str, Any] | None = None
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``face``: a name of ``where`` comes from the module it maps to; with
    ``keep`` (the module's ``globals()``), it is kept there, so the next lookup does not call this again."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        if keep is not None:
            keep[name] = value
        return value

    return __getattr__
