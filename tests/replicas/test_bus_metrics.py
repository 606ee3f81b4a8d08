"""``serve --redis --metrics``: the Redis change bus's series, read from ``/metrics`` while a real ``redis-server`` goes and comes back.

``skilldeck_redis_bus_up`` is 1 while the bus is subscribed, 0 through an outage, 1 again once it is
back, and the return is counted in ``skilldeck_redis_bus_reannouncements_total``; identical events
gathered in one ``--settle`` window (after the one delivered at once) are counted in
``skilldeck_redis_bus_coalesced_total``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import anyio
import redis.asyncio as aioredis
from mcp.shared.subscriptions import ToolsListChanged

from skilldeck.serving._redis_bus import encode_event

from ..conftest import EXAMPLES
from ..gateway.test_metrics import Gateway, value
from ..server.test_serve_metrics import serve_with_metrics

UP = "skilldeck_redis_bus_up"
REANNOUNCED = "skilldeck_redis_bus_reannouncements_total"
COALESCED = "skilldeck_redis_bus_coalesced_total"


def scraped_until(server: Gateway, holds: Callable[[dict[str, float]], bool], within: float = 60) -> dict[str, float]:
    """The first scrape of which ``holds`` is true (the bus re-subscribes every 0.5 s); fails after ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        samples = server.scrape()
        if holds(samples) or time.monotonic() > deadline:
            return samples
        time.sleep(0.2)


async def publish(url: str, times: int) -> None:
    async with aioredis.from_url(url) as raw:
        for _ in range(times):
            await raw.publish("skilldeck:skilldeck:events", encode_event(ToolsListChanged()))


def test_the_bus_is_up_down_through_an_outage_and_up_again_with_one_reannouncement(
    replicas_bench: ModuleType, tmp_path: Path
) -> None:
    with replicas_bench.running_redis(tmp_path) as redis:
        flags = ["--redis", redis.url, "--settle", "1"]
        with serve_with_metrics(EXAMPLES, tmp_path / "serve.log", *flags) as (server, proc):
            start = scraped_until(server, lambda s: value(s, UP) == 1)
            assert value(start, UP) == 1, start
            assert value(start, REANNOUNCED) == value(start, COALESCED) == 0, start

            # three identical events in one settle window: the first delivered at once, the rest gathered and
            # delivered once at its end; whether the second was read before the first went out decides if
            # one or two are coalesced (never none: three events are never delivered three times)
            anyio.run(publish, redis.url, 3)
            gathered = scraped_until(server, lambda s: value(s, COALESCED) >= 1)
            assert value(gathered, COALESCED) in (1, 2), gathered

            redis.kill()
            down = scraped_until(server, lambda s: value(s, UP) == 0)
            assert value(down, UP) == 0, down
            assert value(down, REANNOUNCED) == 0, down

            redis.start()  # the same port: the bus finds it again on its own
            back = scraped_until(server, lambda s: value(s, UP) == 1)
            assert value(back, UP) == 1, back
            assert value(back, REANNOUNCED) == 1, back
            assert proc.poll() is None
