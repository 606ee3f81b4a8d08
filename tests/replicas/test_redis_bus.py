"""The Redis ``SubscriptionBus``: one real ``redis-server`` per test, several buses as several replicas."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx2
import pytest
import redis.asyncio as aioredis
from mcp import Client
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent, ToolsListChanged

from skilldeck.errors import ServeError
from skilldeck.server import create_server
from skilldeck.serving._policy import parse_policy
from skilldeck.serving._redis_bus import (
    FULL_REANNOUNCE,
    MAX_MESSAGE_BYTES,
    RedisSubscriptionBus,
    encode_event,
    shared_state_key,
)
from skilldeck.serving._state_keys import MAX_RING_KEYS, KeyRing, sync_state_keys

from ..server.helpers import write_skill
from .test_shared_state import modern, replica, serving

pytestmark = pytest.mark.anyio
CHANNEL = "skilldeck:test:events"


@pytest.fixture
def redis_server(replicas_bench: ModuleType, tmp_path: Path) -> Iterator[Any]:
    """A ``redis-server`` of this test's own, on a free loopback port (``bench/replicas.py`` runs it)."""
    try:
        with replicas_bench.running_redis(tmp_path) as redis:
            yield redis
    except replicas_bench.Missing as exc:
        pytest.skip(str(exc))


class Heard:
    """What one listener heard, in order."""

    def __init__(self) -> None:
        self.events: list[ServerEvent] = []

    def __call__(self, event: ServerEvent) -> None:
        self.events.append(event)

    async def until(self, count: int, within: float = 10) -> list[ServerEvent]:
        with anyio.fail_after(within):
            while len(self.events) < count:
                await anyio.sleep(0.01)
        return self.events


@asynccontextmanager
async def replicas(url: str, count: int, **options: Any) -> AsyncIterator[list[tuple[RedisSubscriptionBus, Heard]]]:
    """``count`` buses on one channel (as ``count`` replicas), each with a listener."""
    async with AsyncExitStack() as stack:
        buses = []
        for _ in range(count):
            bus = await stack.enter_async_context(RedisSubscriptionBus(url, channel=CHANNEL, **options))
            heard = Heard()
            bus.subscribe(heard)
            buses.append((bus, heard))
        yield buses


async def test_an_event_published_on_one_replica_reaches_every_replica_once(redis_server: Any) -> None:
    async with replicas(redis_server.url, 3) as buses:
        publisher = buses[1][0]
        await publisher.publish(ResourcesListChanged())
        await publisher.publish(ResourceUpdated(uri="skill://a/SKILL.md"))
        for _, heard in buses:
            assert await heard.until(2) == [ResourcesListChanged(), ResourceUpdated(uri="skill://a/SKILL.md")]
        await anyio.sleep(0.3)  # nothing more arrives: the publisher hears its own event only through Redis
        assert all(len(heard.events) == 2 for _, heard in buses)
        assert all(bus.reannounced == 0 for bus, _ in buses)


async def test_one_change_published_by_three_replicas_reaches_each_listener_at_once_then_once_more(
    redis_server: Any,
) -> None:
    """Replicas watching one shared folder each reload an edit and each publish it: every listener heard it three
    times. A bus delivers the first at once, gathers for ``settle`` seconds and delivers each distinct event
    gathered once more, after the last replica's; an event arriving after the window closed is delivered at once."""
    async with replicas(redis_server.url, 3, settle=3.0) as buses:
        for bus, _ in buses:
            await bus.publish(ResourcesListChanged())
        for _, heard in buses:
            assert await heard.until(1) == [ResourcesListChanged()]
        for bus, heard in buses:
            assert await heard.until(2) == [ResourcesListChanged(), ResourcesListChanged()]  # the trailing edge
            assert bus.coalesced == 1  # the third replica's event, gathered with the second's
        await buses[2][0].publish(ResourcesListChanged())  # a replica that reloaded after the window closed
        for _, heard in buses:
            assert await heard.until(3) == [ResourcesListChanged()] * 3


async def test_one_change_published_by_one_replica_is_delivered_once_without_waiting_for_the_window(
    redis_server: Any,
) -> None:
    """Replicas that each watch a folder of their own publish one event per edit: with a window of 60 s, it is
    delivered at once (before, it waited the whole window) and nothing follows."""
    async with replicas(redis_server.url, 2, settle=60.0) as buses:
        await buses[0][0].publish(ResourcesListChanged())
        for _, heard in buses:
            with anyio.fail_after(30):  # under the window: only a delivery at once passes
                assert await heard.until(1) == [ResourcesListChanged()]
        await buses[1][0].publish(ToolsListChanged())  # another kind, in the open window: held to its end
        await anyio.sleep(0.5)
        assert all(heard.events == [ResourcesListChanged()] for _, heard in buses)


@pytest.mark.parametrize("settle", [-0.1, 60.5, float("nan"), float("inf")])
def test_a_bus_refuses_a_settle_window_out_of_bounds(settle: float) -> None:
    with pytest.raises(ValueError, match="settle must be between 0 and 60 seconds"):
        RedisSubscriptionBus("redis://127.0.0.1:1/0", settle=settle)
    RedisSubscriptionBus("redis://127.0.0.1:1/0", settle=60.0)  # the bound itself is taken


async def test_an_unsubscribed_listener_hears_nothing_more(redis_server: Any) -> None:
    async with RedisSubscriptionBus(redis_server.url, channel=CHANNEL) as bus:
        kept, dropped = Heard(), Heard()
        bus.subscribe(kept)
        unsubscribe = bus.subscribe(dropped)
        unsubscribe()
        unsubscribe()  # idempotent
        await bus.publish(ToolsListChanged())
        assert await kept.until(1) == [ToolsListChanged()]
        assert dropped.events == []


async def test_a_reload_puts_only_the_kind_of_change_on_the_channel(redis_server: Any, tmp_path: Path) -> None:
    """Without a policy what crosses Redis names no skill and no caller (with one, a change names its skills so
    each replica can scope it to its listeners' callers: tests/server/test_scoped_events.py)."""
    skills = tmp_path / "skills"
    write_skill(skills, "visible")
    bus = RedisSubscriptionBus(redis_server.url, channel=CHANNEL)
    _, ext = create_server(skills, subscriptions=bus)
    raw = aioredis.Redis.from_url(redis_server.url)
    pubsub = raw.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(CHANNEL)
    try:
        async with bus:
            write_skill(skills, "secret-tenant-b-skill")
            assert (await ext.reload()).added == ("skill://secret-tenant-b-skill/SKILL.md",)
            messages = []
            with anyio.fail_after(10):
                while not messages:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None:
                        messages.append(message["data"])
        assert messages == [b'{"method":"notifications/resources/list_changed"}']
    finally:
        await pubsub.aclose()
        await raw.aclose()


async def test_a_listener_on_another_replica_hears_only_what_its_caller_may_see(
    redis_server: Any, tmp_path: Path
) -> None:
    """Two replicas under one policy: a reload on replica A reaches a listener on replica B only when B's
    caller (tenant ``acme``) may see a skill it changed."""
    skills = tmp_path / "skills"
    write_skill(skills, "shared")
    write_skill(skills, "secret")
    policy = parse_policy(
        {"default_identity": {"subject": "desk", "tenant": "acme"}, "skills": {"secret": {"admit": [{"tenant": "b"}]}}}
    )
    async with (
        RedisSubscriptionBus(redis_server.url, channel=CHANNEL) as bus_a,
        RedisSubscriptionBus(redis_server.url, channel=CHANNEL) as bus_b,
    ):
        _, ext_a = create_server(skills, policy=policy, subscriptions=bus_a)
        server_b, _ = create_server(skills, policy=policy, subscriptions=bus_b)
        async with (
            Client(server_b, mode="auto", cache=None) as client,
            client.listen(resources_list_changed=True) as sub,
        ):
            arrived = Heard()  # every event reaching replica B, before scoping
            bus_b.subscribe(arrived)
            write_skill(skills, "secret", description="Changed where acme cannot see.")
            assert (await ext_a.reload()).changed == ("skill://secret/SKILL.md",)
            await arrived.until(1)
            with anyio.move_on_after(0.5) as idle:
                await sub.__anext__()
            assert idle.cancelled_caught, "a change acme may not see reached its listener on another replica"

            write_skill(skills, "shared", description="Changed where acme can see.")
            assert (await ext_a.reload()).changed == ("skill://shared/SKILL.md",)
            await arrived.until(2)
            with anyio.fail_after(10):
                await sub.__anext__()


async def test_foreign_and_oversized_messages_are_dropped_and_delivery_goes_on(redis_server: Any) -> None:
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        async with replicas(redis_server.url, 1) as [(bus, heard)]:
            huge = json.dumps(
                {"method": "notifications/resources/updated", "uri": "skill://" + "x" * MAX_MESSAGE_BYTES}
            )
            for junk in (b"\xff\xfe not json", b"[]", b'{"method": 7}', b'{"method": "tools/call"}', huge.encode()):
                await raw.publish(CHANNEL, junk)
            await raw.publish(CHANNEL, encode_event(ToolsListChanged()))
            assert await heard.until(1) == [ToolsListChanged()]
            await anyio.sleep(0.2)
            assert heard.events == [ToolsListChanged()]
            assert bus.reannounced == 0
    finally:
        await raw.aclose()


async def test_redis_down_then_back_loses_no_announcement(redis_server: Any) -> None:
    """An event published while Redis is down reaches its own replica at once and every other one as a re-announce."""
    async with replicas(redis_server.url, 2, reconnect_delay=0.1, timeout=1.0) as [(a, heard_a), (b, heard_b)]:
        redis_server.kill()
        await anyio.sleep(0.3)
        await a.publish(ResourcesListChanged())  # fails on Redis: delivered to a's own listeners now
        assert heard_a.events[:1] == [ResourcesListChanged()]
        assert heard_b.events == []
        redis_server.start()
        # Each replica re-announces to its own listeners once its subscription is back, and the
        # failed publish is owed to every replica as a full re-announce through Redis.
        with anyio.fail_after(20):
            while not (a.reannounced and b.reannounced and ResourcesListChanged() in heard_b.events):
                await anyio.sleep(0.05)
        for heard in (heard_a, heard_b):
            assert set(FULL_REANNOUNCE) <= set(heard.events)
        # and the channel works as before (an event none of the re-announces carries, since the one owed
        # through Redis may still be gathering)
        count = len(heard_b.events)
        after = ResourceUpdated(uri="skill://after-the-gap/SKILL.md")
        await b.publish(after)
        with anyio.fail_after(20):
            while after not in heard_b.events[count:]:
                await anyio.sleep(0.05)


async def test_redis_out_of_reach_at_start_is_one_clear_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{sock.getsockname()[1]}/0"
    with pytest.raises(
        ServeError, match=r"cannot reach Redis at redis://127\.0\.0\.1:\d+/0: .*start Redis or fix --redis"
    ):
        async with RedisSubscriptionBus(url, timeout=1.0):
            pass
    with pytest.raises(ServeError, match="cannot reach Redis"):
        await shared_state_key(url, "k", wait=1.0)


async def test_publish_outside_its_context_says_how_to_start_it() -> None:
    with pytest.raises(RuntimeError, match="async with bus"):
        await RedisSubscriptionBus("redis://127.0.0.1:1/0").publish(ToolsListChanged())


async def test_every_replica_reads_the_same_state_key(redis_server: Any) -> None:
    keys = [await shared_state_key(redis_server.url, "skilldeck:test:state-key") for _ in range(3)]
    assert len(set(keys)) == 1
    assert len(keys[0]) >= 32
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        await raw.set("skilldeck:test:short", "short")
    finally:
        await raw.aclose()
    with pytest.raises(ServeError, match="at least 32 characters"):
        await shared_state_key(redis_server.url, "skilldeck:test:short")


async def test_a_burst_on_the_channel_reaches_a_listen_stream_as_a_few_events_and_later_changes_still_arrive(
    redis_server: Any, tmp_path: Path
) -> None:
    """5,000 identical events published at once used to fill every listen stream's backlog (1,024) and end
    the stream: later changes were never heard. A batch read off the channel delivers each distinct event once."""
    skills = tmp_path / "skills"
    write_skill(skills, "shared")
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        async with RedisSubscriptionBus(redis_server.url, channel=CHANNEL) as bus:
            server, _ = create_server(skills, subscriptions=bus)
            arrived = Heard()
            bus.subscribe(arrived)
            async with (
                Client(server, mode="auto", cache=None) as client,
                client.listen(resources_list_changed=True, tools_list_changed=True) as sub,
            ):
                burst = encode_event(ResourcesListChanged())
                async with raw.pipeline(transaction=False) as pipe:
                    for _ in range(5_000):
                        pipe.publish(CHANNEL, burst)
                    await pipe.execute()
                with anyio.fail_after(20):
                    while len(arrived.events) + bus.coalesced < 5_000:
                        await anyio.sleep(0.01)
                assert len(arrived.events) < 1_024 // 2, len(arrived.events)
                assert bus.coalesced == 5_000 - len(arrived.events)
                await raw.publish(CHANNEL, encode_event(ToolsListChanged()))
                with anyio.fail_after(20):
                    while not isinstance(event := await sub.__anext__(), ToolsListChanged):
                        assert isinstance(event, ResourcesListChanged), event
    finally:
        await raw.aclose()


async def test_replicas_that_started_either_side_of_an_emptied_redis_unseal_each_others_state(
    redis_server: Any, tmp_path: Path
) -> None:
    """Replica A took the agreed key; Redis restarted empty; replica B, started then, stored a key of its own.
    Two-round state sealed by either was refused by the other, silently. A round of keeping the keys in step
    on each puts A's key back and takes up the other's, and each then unseals what the other sealed."""
    write_skill(tmp_path, "one")
    name = "skilldeck-test"
    ring_a = KeyRing(await shared_state_key(redis_server.url, f"skilldeck:{name}:state-key"))
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        await raw.flushall()  # as a Redis restarted without its data
        ring_b = KeyRing(await shared_state_key(redis_server.url, f"skilldeck:{name}:state-key"))
        assert ring_a.own != ring_b.own
        a, ext_a = replica(tmp_path, name=name, request_state_codec=ring_a)
        b, ext_b = replica(tmp_path, name=name, request_state_codec=ring_b)
        async with serving(a, ext_a) as url_a, serving(b, ext_b) as url_b, httpx2.AsyncClient(timeout=10) as http:
            call = {"name": "two_rounds", "arguments": {}}

            async def resumed(first: str, then: str) -> bool:
                sealed = (await modern(http, first, "tools/call", call, "two_rounds"))["result"]["requestState"]
                retry = {**call, "requestState": sealed}
                return "result" in await modern(http, then, "tools/call", retry, "two_rounds")

            assert not await resumed(url_a, url_b)
            assert not await resumed(url_b, url_a)
            assert await sync_state_keys(raw, name, ring_a) == []  # B's key not in the set yet; A's goes in
            assert await sync_state_keys(raw, name, ring_b) == [ring_a.own]
            assert await sync_state_keys(raw, name, ring_a) == [ring_b.own]
            assert await sync_state_keys(raw, name, ring_b) == []  # nothing new: no second line
            assert await resumed(url_a, url_b)
            assert await resumed(url_b, url_a)
    finally:
        await raw.aclose()


def test_a_ring_holds_a_bounded_number_of_keys_and_never_a_short_one() -> None:
    ring = KeyRing("o" * 32)
    assert ring.accept(["s" * 31]) == []
    added = ring.accept(f"{i:040d}" for i in range(MAX_RING_KEYS + 5))
    assert len(added) == MAX_RING_KEYS + 5
    assert ring.others == [f"{i:040d}" for i in range(6, MAX_RING_KEYS + 5)]  # the newest 15 besides its own
    assert len(ring.others) == MAX_RING_KEYS - 1
    with pytest.raises(ValueError, match="at least 32 bytes"):
        KeyRing("short")
