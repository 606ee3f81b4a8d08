"""A ``redis-server`` of the tests' own (``bench/replicas.py``'s helpers), for the ledger shared by replicas."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest


@pytest.fixture(scope="module")
def redis(load_bench: Callable[[str], ModuleType], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The running ``redis-server`` (``.url``; ``.kill()`` and ``.start()`` again on the same port)."""
    bench = load_bench("replicas.py")
    try:
        bench.executable("redis-server")
    except bench.Missing as exc:
        pytest.skip(str(exc))
    with bench.running_redis(tmp_path_factory.mktemp("ledger-redis")) as running:
        yield running


@pytest.fixture
def redis_url(redis: Any) -> str:
    return str(redis.url)
