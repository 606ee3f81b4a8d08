"""A real gateway over a real upstream on loopback, with a usage ledger in a given store, for the learning tests."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.gateway._activation import ActivationStore
from skilldeck.gateway._service import AnonymousLearning
from skilldeck.host import Host, HttpServer, ServerSpec
from skilldeck.learning import Learner, LedgerStore, Use
from skilldeck.select import Encoder
from skilldeck.serving._policy import Caller, Policy

from ..gateway.gateway_clients_support import Gateway
from ..host.hostile_http import serving_in_thread
from .usage_upstream import usage_server


@dataclass
class Learning:
    gateway: Gateway
    store: LedgerStore

    @property
    def service(self) -> GatewayService:
        return self.gateway.service

    async def uses(self, audience: str = "") -> list[Use]:
        return (await self.store.load(audience))[1]

    def history(self, caller: Caller | None = None) -> dict[str, list[str]]:
        """The past questions the caller's ranker reads once it took every history given (by card key)."""
        ranker = self.service.index_for(caller or Caller()).selector.ranker
        assert self.service.usage.history_settled(60), "the rankers did not take their history within 60 s"
        return {ranker.cards[i].key: list(asked) for i, asked in ranker.history.questions.items()}


@asynccontextmanager
async def gateway_learning_in(
    store: LedgerStore,
    *,
    policy: Policy | None = None,
    pinned: Iterable[tuple[str, str]] = (),
    shared: ActivationStore | None = None,
    url: str | None = None,
    anonymous: AnonymousLearning = "trusted",
    encoder: Encoder | None = None,
) -> AsyncIterator[Learning]:
    """A gateway (lexical ranking, unless ``encoder``) over :func:`usage_server` served on loopback, learning into ``store``
    (``shared``: the activations, and so the paths, it shares with other replicas; ``url``: an upstream
    already served there, as replicas with one configuration share it, instead of one of its own)."""
    with contextlib.ExitStack() as serving:
        if url is None:
            app = usage_server().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
            url = serving.enter_context(serving_in_thread(app))
        async with Host([ServerSpec("up", HttpServer(url), timeout=30)]) as host:
            ticks = itertools.count(1_000)
            learner = Learner(store, clock=lambda: float(next(ticks)))
            service = GatewayService(
                host,
                encoder=encoder,
                policy=policy,
                pinned=pinned,
                learning=learner,
                shared=shared,
                anonymous=anonymous,
            )
            server, middleware = create_gateway(service)
            yield Learning(Gateway(host, service, server, middleware), store)
