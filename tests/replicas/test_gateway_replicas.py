"""Two ``skilldeck gateway --redis`` replicas behind HAProxy (round-robin), in front of the same upstreams.

The deployment: a ``redis-server`` and an ``haproxy`` of the test's own (``bench/replicas.py``'s
helpers), one ``skilldeck serve --watch`` over HTTP (the shared skills upstream, on its own copy of
``examples/skills``) and, per gateway, the demo jobs server over stdio (a tool to call). A client's
activation (what it loaded) is in Redis, so a ``call`` may land on a replica other than the one that
took the ``load``; upstream changes reach each replica directly, so a listener is told once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import anyio
import pytest
from mcp.client import Client
from mcp.shared.subscriptions import ResourcesListChanged
from mcp_types import RequestParamsMeta

from skilldeck.demo._servers import jobs_server
from skilldeck.errors import GateRefused
from skilldeck.gateway import GatewayService
from skilldeck.gateway._activation import SharedActivation, client_key
from skilldeck.gateway._redis_store import RedisActivationStore
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.serving._policy import Caller

from ..conftest import EXAMPLES
from ..server.helpers import CLI, GATEWAY_STARTUP_LINE, start_serve, stop, wait_for_startup, write_skill

MODERN = "2026-07-28"
JOBS_STDIO = "from skilldeck.demo._servers import jobs_server; jobs_server().run()"


class GatewayReplica:
    """One ``skilldeck gateway --http 127.0.0.1:PORT --redis URL`` process, on a port kept across restarts."""

    def __init__(self, index: int, config: Path, port: int, redis_url: str, work: Path) -> None:
        self.index, self.config, self.port, self.redis_url, self.work = index, config, port, redis_url, work
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc: Any = None
        self.starts = 0

    @property
    def log(self) -> Path:
        return self.work / f"gateway{self.index}-{self.starts}.log"

    def start(self) -> None:
        """Start the process (:meth:`wait` for it to serve: replicas start side by side)."""
        self.starts += 1
        cmd = [*CLI, "gateway", "--config", str(self.config), "--http", f"127.0.0.1:{self.port}"]
        self.proc = start_serve([*cmd, "--redis", self.redis_url], self.log)

    def wait(self) -> None:
        ready = lambda m: m["up"] == m["total"]  # noqa: E731
        found = wait_for_startup(self.proc, self.log, 90, ready, pattern=GATEWAY_STARTUP_LINE)
        if isinstance(found, str):
            stop(self.proc)
            pytest.fail(f"gateway replica {self.index} did not start: {found}", pytrace=False)

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)


class Deployment:
    def __init__(self, redis: Any, upstream: Any, gateways: list[GatewayReplica], balancer: int) -> None:
        self.redis, self.upstream, self.gateways = redis, upstream, gateways
        self.url = f"http://127.0.0.1:{balancer}/mcp"


@pytest.fixture(scope="module")
def deployment(replicas_bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    bench = replicas_bench
    work = tmp_path_factory.mktemp("gateway-replicas")
    try:
        bench.executable("redis-server")
        bench.executable("haproxy")
    except bench.Missing as exc:
        pytest.skip(str(exc))
    with bench.running_redis(work) as redis, bench.running_replicas(work, 1, None) as (upstream,):
        config = work / "mcp.json"
        servers = {
            "jobs": {"command": sys.executable, "args": ["-c", JOBS_STDIO]},
            "deck": {"url": f"http://127.0.0.1:{upstream.port}/mcp"},
        }
        config.write_text(json.dumps({"mcpServers": servers}))
        gateways = [GatewayReplica(i, config, bench.free_port(), redis.url, work) for i in range(2)]
        try:
            for gateway in gateways:
                gateway.start()
            for gateway in gateways:
                gateway.wait()
            with bench.running_haproxy(work, [g.port for g in gateways]) as balancer:
                yield Deployment(redis, upstream, gateways, balancer)
        finally:
            for gateway in gateways:
                gateway.stop()


def conversation(name: str) -> RequestParamsMeta:
    return cast(RequestParamsMeta, {"dev.skilldeck/conversation": name})


async def call(url: str, meta: RequestParamsMeta, tool: str, arguments: dict[str, Any]) -> Any:
    async with Client(url, mode=MODERN, cache=None) as client:
        return await client.call_tool(tool, arguments, meta=meta)


def text_of(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


SEARCH = {"tool": "jobs/search_jobs", "arguments": {"query": "engineer", "limit": 1}}


@pytest.mark.anyio
async def test_a_load_on_one_replica_holds_on_the_other_and_through_the_balancer(deployment: Deployment) -> None:
    first, second = deployment.gateways
    meta = conversation("load-here-call-there")
    loaded = await call(first.url, meta, "load", {"ids": ["jobs/job-search", "deck/pdf-forms"]})
    assert not loaded.is_error, text_of(loaded)
    assert [t["name"] for t in loaded.structured_content["tools"]] == ["jobs/search_jobs"]
    called = await call(second.url, meta, "call", SEARCH)
    assert not called.is_error, text_of(called)
    assert "JOB-" in json.dumps(called.structured_content)
    # a supporting file of a skill loaded on the first replica: the second loads and verifies it itself
    read = await call(second.url, meta, "read_skill_file", {"skill": "deck/pdf-forms", "path": "templates/invoice.md"})
    assert not read.is_error, text_of(read)
    assert (EXAMPLES / "pdf-forms" / "templates" / "invoice.md").read_text() in read.structured_content["text"]
    # through the round-robin balancer: consecutive requests alternate between the two replicas
    meta = conversation("through-the-balancer")
    async with Client(deployment.url, mode=MODERN, cache=None) as client:
        loaded = await client.call_tool("load", {"ids": ["jobs/job-search"]}, meta=meta)
        assert not loaded.is_error, text_of(loaded)
        for _ in range(4):
            called = await client.call_tool("call", SEARCH, meta=meta)
            assert not called.is_error, text_of(called)


@pytest.mark.anyio
async def test_a_tool_not_loaded_is_refused_on_both_replicas(deployment: Deployment) -> None:
    meta = conversation("not-loaded")
    for gateway in deployment.gateways:
        refused = await call(gateway.url, meta, "call", SEARCH)
        assert refused.is_error, text_of(refused)
    loaded = await call(deployment.gateways[0].url, meta, "load", {"ids": ["jobs/job-search"]})
    assert not loaded.is_error, text_of(loaded)
    for gateway in deployment.gateways:  # loaded: search_jobs; never get_job
        refused = await call(gateway.url, meta, "call", {"tool": "jobs/get_job", "arguments": {"job_id": "JOB-1005"}})
        assert refused.is_error, text_of(refused)
        assert "get_job" in text_of(refused), text_of(refused)
        unread = await call(gateway.url, meta, "read_skill_file", {"skill": "deck/pdf-forms", "path": "SKILL.md"})
        assert unread.is_error
        assert "load it first" in text_of(unread), text_of(unread)


@pytest.mark.anyio
async def test_an_activation_survives_a_replica_restart(deployment: Deployment) -> None:
    meta = conversation("across-restarts")
    loaded = await call(deployment.gateways[0].url, meta, "load", {"ids": ["jobs/job-search"]})
    assert not loaded.is_error, text_of(loaded)
    for gateway in deployment.gateways:
        gateway.stop()
    for gateway in deployment.gateways:
        gateway.start()
    for gateway in deployment.gateways:
        gateway.wait()
    for gateway in deployment.gateways:
        called = await call(gateway.url, meta, "call", SEARCH)
        assert not called.is_error, text_of(called)


async def events_after_a_change(gateway: GatewayReplica, pack: Path, name: str) -> list[Any]:
    """What a 2026-07-28 listener on ``gateway`` hears after one skill is added upstream (until 3 s of quiet)."""
    heard: list[Any] = []
    async with (
        Client(gateway.url, mode=MODERN, cache=None) as client,
        client.listen(resources_list_changed=True) as sub,
    ):
        write_skill(pack, name)
        with anyio.fail_after(15):
            heard.append(await sub.__anext__())
        while True:
            with anyio.move_on_after(3.0) as quiet:
                heard.append(await sub.__anext__())
            if quiet.cancelled_caught:
                return heard


@pytest.mark.anyio
async def test_an_upstream_change_reaches_a_listener_on_either_replica_once(deployment: Deployment) -> None:
    """Both replicas see the upstream change; each tells only its own listeners, so a second replica adds nothing.

    What a listener hears with the other replica stopped (a single gateway) is what it hears with both running.
    """
    first, second = deployment.gateways
    pack = deployment.upstream.pack
    second.stop()
    try:
        alone = await events_after_a_change(first, pack, "added-with-one-replica")
    finally:
        second.start()
        second.wait()
    assert alone, alone
    assert all(isinstance(e, ResourcesListChanged) for e in alone), alone
    for index, gateway in enumerate(deployment.gateways):
        both = await events_after_a_change(gateway, pack, f"added-with-two-replicas-{index}")
        assert both == alone, f"replica {index} with both running: {both}; a single replica: {alone}"


# -- the store's bounds, on the same Redis ----------------------------------------------------------


@pytest.mark.anyio
async def test_the_shared_store_is_bounded_per_client_and_in_clients(deployment: Deployment) -> None:
    store = RedisActivationStore(
        deployment.redis.url, prefix="skilldeck:bounds-test:activation", max_clients=3, max_entries=4, ttl=60
    )
    async with store:
        await store.add("a", {"deck/pdf-forms": "sha256:" + "0" * 64}, [("jobs", "search_jobs")])
        with pytest.raises(GateRefused, match="4 skills and tools loaded"):
            await store.add("a", {}, [("jobs", "t1"), ("jobs", "t2"), ("jobs", "t3")])
        shared = await store.fetch("a")
        assert shared == SharedActivation({"deck/pdf-forms": "sha256:" + "0" * 64}, [("jobs", "search_jobs")])
        with pytest.raises(GateRefused, match="too long"):
            await store.add("a", {"x" * 2_000: "d"}, [])
        for key in ("b", "c", "d"):  # a fourth client: the least recently used ("a") gives way
            await store.add(key, {}, [("jobs", "search_jobs")])
        assert await store.fetch("a") is None
        assert await store.fetch("b") is not None
        record, _, _ = store._keys("b")
        assert 0 < await store._redis.ttl(record) <= 60
        # a field nobody but a gateway should write, and an oversized one, are never trusted
        await store._redis.hset(record, mapping={"t:not json": "", "t:" + json.dumps(["x", "y" * 2_000]): ""})
        assert await store.fetch("b") == SharedActivation({}, [("jobs", "search_jobs")])


@pytest.mark.anyio
async def test_a_legacy_sessions_activation_is_never_shared(deployment: Deployment) -> None:
    """A legacy session's key names a connection of one process: another replica may reuse it for another client."""
    store = RedisActivationStore(deployment.redis.url, prefix="skilldeck:legacy-test:activation")
    async with store, Host([ServerSpec("jobs", InProcessServer(jobs_server()))]) as host:
        service = GatewayService(host, shared=store)
        legacy, modern = client_key("session:1", None), client_key("http", None, "legacy-test")
        for client in (legacy, modern):
            loaded = await service.load(Caller(), client, ["jobs/job-search"])
            assert [t["name"] for t in loaded["tools"]] == ["jobs/search_jobs"], loaded
        assert await store.fetch(legacy) is None
        shared = await store.fetch(modern)
        assert shared is not None
        assert shared.tools == [("jobs", "search_jobs")]
        assert list(shared.skills) == ["jobs/job-search"]
        assert shared.skills["jobs/job-search"].startswith("sha256:"), shared
        # the same legacy key on another replica (a fresh service) has loaded nothing there
        other = GatewayService(host, shared=store)
        with pytest.raises(GateRefused):
            await other.call(Caller(), legacy, "jobs/search_jobs", {"query": "engineer"})
        assert not (await other.call(Caller(), modern, "jobs/search_jobs", {"query": "engineer"})).get("isError")
