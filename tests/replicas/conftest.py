"""The replica tests run real ``redis-server`` and ``haproxy`` processes through ``bench/replicas.py``'s helpers."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.fixture(scope="session")
def replicas_bench(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("replicas.py")
