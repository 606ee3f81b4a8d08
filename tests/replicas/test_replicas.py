"""Three ``skilldeck serve --redis`` replicas behind HAProxy, with Redis: the issue's acceptance, on loopback.

The deployment (``bench/replicas.py`` starts it): a ``redis-server`` and an ``haproxy`` of the test's
own (temporary configs, free ports), three replicas each serving its own copy of ``examples/skills``
with ``--watch``, so a change on one replica's disk is a change made on that replica alone.
``bench/replicas.py`` runs the load part for longer (100 clients, 30 s) and writes the figures.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.shared.subscriptions import ResourcesListChanged

from skilldeck.server import create_server
from skilldeck.server._extension import CATALOG_VERSION_META
from skilldeck.serving._redis_bus import DEFAULT_SETTLE
from skilldeck.serving._sessions import UNKNOWN_SESSION_MESSAGE

from ..conftest import EXAMPLES
from ..server.helpers import POST_HEADERS, write_skill

MODERN = "2026-07-28"
LOAD_CLIENTS = 100
LOAD_SECONDS = 9.0


class Deployment:
    def __init__(self, bench: ModuleType, redis: Any, replicas: list[Any], balancer: int, work: Path) -> None:
        self.bench, self.redis, self.replicas, self.work = bench, redis, replicas, work
        self.balancer = balancer
        self.url = f"http://127.0.0.1:{balancer}/mcp"

    def direct(self, index: int) -> str:
        return f"http://127.0.0.1:{self.replicas[index].port}/mcp"


@pytest.fixture(scope="module")
def deployment(replicas_bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    bench = replicas_bench
    work = tmp_path_factory.mktemp("replicas")
    try:
        bench.executable("redis-server")
        bench.executable("haproxy")
    except bench.Missing as exc:
        pytest.skip(str(exc))
    with (
        bench.running_redis(work) as redis,
        bench.running_replicas(work, 3, redis.url) as replicas,
        bench.running_haproxy(work, [r.port for r in replicas]) as balancer,
    ):
        yield Deployment(bench, redis, replicas, balancer, work)


@pytest.fixture(autouse=True)
def restored(deployment: Deployment) -> Iterator[None]:
    """After each test: every replica's pack back to the bundled one, and every replica serving it again.

    Each replica's ``skills/list`` carries the catalog version, so "serving it again" is: all three
    report the version of the bundled pack.
    """
    yield
    for replica in deployment.replicas:
        for child in replica.pack.iterdir():
            if not (EXAMPLES / child.name).exists():
                shutil.rmtree(child)
    expected = create_server(EXAMPLES)[1].catalog.version
    deadline = time.monotonic() + 30
    with httpx2.Client(timeout=10) as http:
        for index in range(len(deployment.replicas)):
            while (served := _catalog_version(http, deployment.direct(index))) != expected:
                assert time.monotonic() < deadline, f"replica {index} still serves {served}, not {expected}"
                time.sleep(0.1)


def _catalog_version(http: httpx2.Client, url: str) -> str | None:
    headers = {**POST_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "skills/list"}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "replica-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "skills/list", "params": {"_meta": meta}}
    try:
        text = http.post(url, json=body, headers=headers).text
    except httpx2.HTTPError:
        return None
    data = next((line[5:].strip() for line in text.splitlines() if line.startswith("data:")), text)
    try:
        return json.loads(data)["result"]["_meta"][CATALOG_VERSION_META]  # type: ignore[no-any-return]
    except (ValueError, KeyError, TypeError):
        return None


async def next_event(sub: Any, within: float) -> Any:
    with anyio.fail_after(within):
        return await sub.__anext__()


async def drain(sub: Any, quiet: float = DEFAULT_SETTLE + 0.3) -> None:
    """Read whatever events are still in flight until none came for ``quiet`` seconds (longer than a bus
    gathers events before it delivers them, or one still gathering would arrive after the drain)."""
    while True:
        with anyio.move_on_after(quiet) as scope:
            await sub.__anext__()
        if scope.cancelled_caught:
            return


@pytest.mark.anyio
async def test_a_change_on_any_replica_reaches_a_listener_through_the_balancer_within_a_second(
    deployment: Deployment,
) -> None:
    """The listener's stream is held by one replica; the changes are made on each of the three in turn."""
    latencies = []
    async with (
        Client(deployment.url, mode=MODERN, cache=None) as client,
        client.listen(resources_list_changed=True) as sub,
    ):
        for replica in deployment.replicas:
            started = time.monotonic()
            write_skill(replica.pack, f"added-on-replica-{replica.index}")
            event = await next_event(sub, within=10)
            latencies.append(time.monotonic() - started)
            assert isinstance(event, ResourcesListChanged)
            await drain(sub)
    # the file written, seen by that replica's watcher (200 ms debounce), reloaded, published on
    # Redis, delivered at once by whichever replica holds the stream (the only event of its window: the
    # settle window delays only the other replicas' events for it): within a second, each time
    assert max(latencies) < 1.0, f"latencies {latencies}"
    print(f"change-to-event latency through the balancer: {[round(x, 3) for x in latencies]} s")


@pytest.mark.anyio
async def test_redis_killed_for_five_seconds_loses_no_announcement(deployment: Deployment) -> None:
    """A change made on replica 1 while Redis is down reaches a listener on replica 0 once Redis is back."""
    async with (
        Client(deployment.direct(0), mode=MODERN, cache=None) as client,
        client.listen(resources_list_changed=True) as sub,
    ):
        await drain(sub)
        deployment.redis.kill()
        killed = time.monotonic()
        write_skill(deployment.replicas[1].pack, "added-while-redis-was-down")
        with anyio.move_on_after(4.0) as quiet:
            await sub.__anext__()  # nothing can reach replica 0 while Redis is down
        assert quiet.cancelled_caught
        await anyio.sleep(max(0.0, killed + 5.0 - time.monotonic()))
        deployment.redis.start()
        event = await next_event(sub, within=15)  # the re-announce
        assert isinstance(event, ResourcesListChanged)
        await drain(sub)
    # and the bus works as before: a change on replica 2 reaches a listener on replica 0 again
    async with (
        Client(deployment.direct(0), mode=MODERN, cache=None) as client,
        client.listen(resources_list_changed=True) as sub,
    ):
        write_skill(deployment.replicas[2].pack, "added-after-redis-came-back")
        assert isinstance(await next_event(sub, within=10), ResourcesListChanged)


@pytest.mark.anyio
async def test_a_legacy_session_through_a_round_robin_balancer_fails_fast_and_says_why(deployment: Deployment) -> None:
    with anyio.fail_after(30), pytest.raises(BaseException) as caught:  # noqa: PT011,PT012 - the SDK wraps it
        async with Client(deployment.url, mode="legacy", cache=None) as client:
            for _ in range(3):
                await client.list_tools()
    assert UNKNOWN_SESSION_MESSAGE in _all_messages(caught.value), _all_messages(caught.value)


@pytest.mark.anyio
async def test_a_legacy_session_works_through_a_balancer_sticky_on_its_session_header(deployment: Deployment) -> None:
    bench = deployment.bench
    with bench.running_haproxy(deployment.work, [r.port for r in deployment.replicas], sticky=True) as port:
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as client:
            for _ in range(4):
                assert (await client.list_tools()).tools is not None


def test_100_clients_see_no_wrong_content_and_only_retryable_errors_while_a_replica_is_killed(
    deployment: Deployment,
) -> None:
    import asyncio

    bench = deployment.bench
    result = asyncio.run(
        bench.run_load(
            deployment.balancer,
            clients=LOAD_CLIENTS,
            seconds=LOAD_SECONDS,
            replicas=deployment.replicas,
            kill=1,
        )
    )
    summary = result.as_dict()
    print(f"load through the balancer: {summary}")
    # nothing has failed before the kill: every request that failed then is a failure, whatever it was
    assert result.failed_before_kill == 0, summary
    assert result.ok > LOAD_CLIENTS, summary
    assert result.wrong == 0, summary
    assert result.errors_other == 0, summary
    assert result.errors_retryable_outside_window == 0, summary
    assert result.kill_window_s is not None
    assert len(result.kill_window_s) == 2, summary  # killed, and back
    # HAProxy (option http-server-close) opens a connection per request and sends it whole at once, so no
    # bound of a replica's connection table may act on ordinary load: a connection closed to make room or
    # for a slow request is one HAProxy answers 502 when its retries run out (replica 1: since its restart)
    for replica in deployment.replicas:
        acted = {k: v for k, v in bench.bound_refusals(replica).items() if v and k != "sessions_evicted"}
        assert acted == {}, f"replica {replica.index}: {acted}"


def _all_messages(exc: BaseException) -> str:
    """Every message in ``exc``, its causes and (for a group) its members."""
    parts = [f"{type(exc).__name__}: {exc}"]
    if isinstance(exc, BaseExceptionGroup):
        parts += [_all_messages(e) for e in exc.exceptions]
    if exc.__cause__ is not None:
        parts.append(_all_messages(exc.__cause__))
    if exc.__context__ is not None and exc.__context__ is not exc.__cause__:
        parts.append(_all_messages(exc.__context__))
    return "\n".join(parts)
