"""Upstream resources, templates, prompts and completions reach the client through the gateway, by label.

Upstreams are real in-process servers: ``a`` and ``b`` (``MCPServer``\\ s with the same resource
URIs, template, prompt and completions, so only the label tells them apart), ``secret`` (the same,
hidden by the policy's ``secret/*`` rule), and lowlevel ``Server``\\ s where a test needs paging
or resource subscriptions. Every test is driven by the official Python client in both eras
(``modern`` 2026-07-28, ``legacy`` 2025-11-25).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.subscriptions import ResourceUpdated
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, PromptsListChanged, ResourcesListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    Completion,
    EmbeddedResource,
    EmptyResult,
    ListPromptsResult,
    ListResourcesResult,
    PaginatedRequestParams,
    Prompt,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourceTemplateReference,
    ServerNotification,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)

from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.gateway._app import follow_upstreams
from skilldeck.gateway._forward import (
    MAX_FETCHES_PER_PAGE,
    MAX_NAME_CHARS,
    MAX_PROMPT_ARGUMENTS,
    MAX_URI_CHARS,
    _encode_cursor,
    gateway_uri,
    prompt_name,
    split_prompt_name,
    split_uri,
)
from skilldeck.gateway._service import ORIGIN_META
from skilldeck.gateway._subscriptions import MAX_CLIENT_SUBSCRIPTIONS, MAX_SUBSCRIBERS, MAX_SUBSCRIPTIONS
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.host._discover import ListingLimits
from skilldeck.serving._policy import Match, Policy, SkillPolicy
from skilldeck.skill._uri import SKILL_MD

from .gateway_clients_support import Heard, client, jobs_upstream, open_gateway

# A 2025-11-25 client subscribes with resources/subscribe, which the SDK marks deprecated for 2026-07-28.
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

ERAS = ["modern", "legacy"]
HIDE_SECRET = Policy(
    skills={
        "secret/*": SkillPolicy(admit=(Match(roles=frozenset({"admin"})),)),
        "b/note://readme": SkillPolicy(admit=(Match(roles=frozenset({"admin"})),)),
    }
)


def docs_upstream(name: str, bus: InMemorySubscriptionBus | None = None, *, listen: bool = True) -> MCPServer[Any]:
    """A resource ``note://readme``, a template ``note://pages/{page}``, a prompt ``greet(who)``, completions.

    Without ``listen`` it serves no ``subscriptions/listen`` (a 2026-07-28 server without subscriptions).
    """
    server: MCPServer[Any] = MCPServer(name, subscriptions=bus if listen else False)

    @server.resource("note://readme", mime_type="text/plain")
    def readme() -> str:
        return f"readme of {name}"

    @server.resource("note://pages/{page}", mime_type="text/plain")
    def page(page: str) -> str:
        return f"page {page} of {name}"

    @server.prompt()
    def greet(who: str) -> str:
        """Greets someone."""
        return f"Hello {who} from {name}"

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion:
        if isinstance(ref, PromptReference):
            assert ref.name == "greet", ref  # the upstream's own name, never LABEL__NAME
            return Completion(values=[v for v in (f"{name}-alice", f"{name}-bob") if v.startswith(argument.value)])
        assert ref.uri == "note://pages/{page}", ref  # the upstream's own template
        return Completion(values=[f"{name}-1", f"{name}-2"])

    return server


@asynccontextmanager
async def docs_gateway(era: str, *, policy: Policy | None = HIDE_SECRET) -> AsyncIterator[Client]:
    upstreams = {label: docs_upstream(label) for label in ("a", "b", "secret")}
    async with open_gateway(upstreams, policy=policy) as gw, client(gw, era) as c:
        yield c


async def every_page(fetch: Any, field: str) -> list[Any]:
    items: list[Any] = []
    cursor = None
    for _ in range(20):
        page = await fetch(cursor=cursor)
        items += getattr(page, field)
        cursor = page.next_cursor
        if cursor is None:
            return items
    raise AssertionError("the gateway never stopped paging")


def test_names_round_trip() -> None:
    for label, uri in [("a", "note://x"), ("my server/1", "file:///tmp/a b"), ("x", "upstream://y/z")]:
        assert split_uri(gateway_uri(label, uri)) == (label, uri)
    assert split_prompt_name(prompt_name("docs", "a__b")) == ("docs", "a__b")
    assert split_prompt_name("no_separator") is None
    # "docs___x" is docs's "_x": a label ending in "_" (or holding "__") would collide, so its prompts are not forwarded
    assert split_prompt_name(prompt_name("docs_", "x")) == ("docs", "_x")
    assert split_prompt_name(prompt_name("a__b", "c")) == ("a", "b__c")


@pytest.mark.parametrize("era", ERAS)
async def test_resources_are_listed_and_read_by_label_without_collisions(era: str) -> None:
    async with docs_gateway(era) as c:
        listed = await every_page(c.list_resources, "resources")
        uris = {r.uri: r for r in listed}
        # b's readme is hidden by its own rule, all of secret by secret/*
        assert set(uris) == {"upstream://a/note://readme"}
        assert (uris["upstream://a/note://readme"].meta or {})[ORIGIN_META] == "a"
        templates = await every_page(c.list_resource_templates, "resource_templates")
        assert {t.uri_template for t in templates} == {
            "upstream://a/note://pages/{page}",
            "upstream://b/note://pages/{page}",
        }

        read = await c.read_resource("upstream://a/note://readme")
        [content] = read.contents
        assert isinstance(content, TextResourceContents)
        assert (content.uri, content.text) == ("upstream://a/note://readme", "readme of a")
        for label in ("a", "b"):  # the template's expansion, read through the gateway, from its own upstream
            [page] = (await c.read_resource(f"upstream://{label}/note://pages/7")).contents
            assert isinstance(page, TextResourceContents)
            assert (page.uri, page.text) == (f"upstream://{label}/note://pages/7", f"page 7 of {label}")

        for hidden in (
            "upstream://secret/note://readme",
            "upstream://secret/note://pages/1",
            "upstream://b/note://readme",
        ):
            with pytest.raises(MCPError) as refused:
                await c.read_resource(hidden)
            assert refused.value.error.code == INVALID_PARAMS
            assert "secret of" not in refused.value.error.message


def linking_upstream(name: str) -> MCPServer[Any]:
    """``docs_upstream`` with a tool ``links`` whose result names ``note://readme`` (linked and embedded) and a skill file."""
    server = docs_upstream(name)

    @server.tool()
    def links() -> CallToolResult:
        """Links to the readme."""
        return CallToolResult(
            content=[
                TextContent(type="text", text="see the readme"),
                ResourceLink(type="resource_link", name="readme", uri="note://readme"),
                EmbeddedResource(
                    type="resource", resource=TextResourceContents(uri="note://readme", text=f"readme of {name}")
                ),
                ResourceLink(type="resource_link", name="skill", uri=f"skill://acme/{SKILL_MD}"),
            ]
        )

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_resource_links_in_tool_results_name_what_the_gateway_serves(era: str) -> None:
    """A proxied result's links point where a client of the gateway reads them, never at the upstream's own URIs."""
    async with open_gateway({"a": linking_upstream("a")}, pinned=[("a", "links")]) as gw, client(gw, era) as c:
        [pinned] = [t.name for t in (await c.list_tools()).tools if t.name.endswith("links")]
        result = await c.call_tool(pinned, {})
        assert not result.is_error, result.content
        text, link, embedded, skill_link = result.content
        assert isinstance(text, TextContent)
        assert text.text == "see the readme"
        assert isinstance(link, ResourceLink)
        assert link.uri == "upstream://a/note://readme"
        assert isinstance(embedded, EmbeddedResource)
        assert embedded.resource.uri == "upstream://a/note://readme"
        assert isinstance(skill_link, ResourceLink)
        assert skill_link.uri == f"skill://a/acme/{SKILL_MD}"
        [content] = (await c.read_resource(link.uri)).contents  # the link is one the gateway serves
        assert isinstance(content, TextResourceContents)
        assert content.text == "readme of a"


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_are_listed_and_got_by_label(era: str) -> None:
    async with docs_gateway(era) as c:
        prompts = await every_page(c.list_prompts, "prompts")
        assert {p.name for p in prompts} == {"a__greet", "b__greet"}
        assert all((p.meta or {})[ORIGIN_META] == p.name.split("__")[0] for p in prompts)
        assert [a.name for a in prompts[0].arguments or []] == ["who"]
        got = await c.get_prompt("b__greet", {"who": "Ann"})
        assert [m.content.text for m in got.messages if m.content.type == "text"] == ["Hello Ann from b"]
        assert (got.meta or {})[ORIGIN_META] == "b"
        for unknown in ("secret__greet", "greet", "c__greet"):
            with pytest.raises(MCPError) as refused:
                await c.get_prompt(unknown, {"who": "x"})
            assert refused.value.error.code == INVALID_PARAMS
        with pytest.raises(MCPError) as upstream_error:  # the upstream's own error, passed on with its label
            await c.get_prompt("a__nope", {"who": "x"})
        assert upstream_error.value.error.message.startswith("[a] ")


@pytest.mark.parametrize("era", ERAS)
async def test_completions_are_asked_under_the_upstreams_names(era: str) -> None:
    async with docs_gateway(era) as c:
        prompt = await c.complete(PromptReference(type="ref/prompt", name="b__greet"), {"name": "who", "value": "b-a"})
        assert prompt.completion.values == ["b-alice"]
        template = ResourceTemplateReference(type="ref/resource", uri="upstream://a/note://pages/{page}")
        assert (await c.complete(template, {"name": "page", "value": ""})).completion.values == ["a-1", "a-2"]
        hidden = PromptReference(type="ref/prompt", name="secret__greet")
        with pytest.raises(MCPError) as refused:
            await c.complete(hidden, {"name": "who", "value": ""})
        assert refused.value.error.code == INVALID_PARAMS


@pytest.mark.parametrize("era", ERAS)
async def test_without_a_policy_every_label_is_forwarded(era: str) -> None:
    async with docs_gateway(era, policy=None) as c:
        listed = await every_page(c.list_resources, "resources")
        assert {r.uri for r in listed} == {f"upstream://{label}/note://readme" for label in ("a", "b", "secret")}
        assert {p.name for p in await every_page(c.list_prompts, "prompts")} == {
            "a__greet",
            "b__greet",
            "secret__greet",
        }


@pytest.mark.parametrize("era", ERAS)
async def test_skill_files_stay_on_the_skills_path(era: str) -> None:
    """An upstream's own skill:// resources are re-published (verified) as skill://LABEL/..., never forwarded."""
    async with open_gateway({"jobs": jobs_upstream(), "a": docs_upstream("a")}) as gw, client(gw, era) as c:
        uris = {r.uri for r in await every_page(c.list_resources, "resources")}
        assert f"skill://jobs/job-search/{SKILL_MD}" in uris
        assert "upstream://a/note://readme" in uris
        assert not [u for u in uris if u.startswith("upstream://jobs/skill://")], uris
        [skill] = (await c.read_resource(f"skill://jobs/job-search/{SKILL_MD}")).contents
        assert isinstance(skill, TextResourceContents)
        assert "job-search" in skill.text
        with pytest.raises(MCPError) as refused:
            await c.read_resource(f"upstream://jobs/skill://job-search/{SKILL_MD}")
        assert refused.value.error.code == INVALID_PARAMS


def endless_upstream() -> Server[Any]:
    """Pages ``resources/list`` and ``prompts/list`` forever (a new cursor every page)."""

    async def list_resources(ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        n = int((params.cursor if params else None) or 0)
        return ListResourcesResult(resources=[Resource(name=f"r{n}", uri=f"loop://{n}")], next_cursor=str(n + 1))

    async def list_prompts(ctx: Any, params: PaginatedRequestParams | None) -> ListPromptsResult:
        n = int((params.cursor if params else None) or 0)
        return ListPromptsResult(prompts=[Prompt(name=f"p{n}")], next_cursor=str(n + 1))

    return Server("endless", on_list_resources=list_resources, on_list_prompts=list_prompts)


@pytest.mark.parametrize("era", ERAS)
async def test_paging_stops_at_the_hosts_page_cap_and_goes_on_with_the_next_upstream(era: str) -> None:
    specs = [
        ServerSpec("a", InProcessServer(docs_upstream("a")), timeout=10),
        ServerSpec("0loop", InProcessServer(endless_upstream()), timeout=10),
    ]
    async with Host(specs, limits=ListingLimits(max_pages=3, max_entries=100)) as host:
        server, _ = create_gateway(GatewayService(host))
        async with Client(server, mode="auto" if era == "modern" else "legacy", cache=None) as c:
            listed = await every_page(c.list_resources, "resources")
            assert [r.uri for r in listed] == [
                "upstream://0loop/loop://0",
                "upstream://0loop/loop://1",
                "upstream://0loop/loop://2",
                "upstream://a/note://readme",
            ]
            prompts = await every_page(c.list_prompts, "prompts")
            assert [p.name for p in prompts] == ["0loop__p0", "0loop__p1", "0loop__p2", "a__greet"]
            for cursor in ("bogus", "upstream:!!", "upstream:" + "A" * 5_000):
                with pytest.raises(MCPError) as refused:
                    await c.list_prompts(cursor=cursor)
                assert refused.value.error.code == INVALID_PARAMS


async def test_a_cursor_names_a_page_from_0_to_the_cap_and_a_negative_one_is_refused() -> None:
    """The page count a gateway cursor carries is what stops paging at the host's cap: page 0 and the last page
    under the cap are taken (the last one moves on to the next upstream), and a client that forges page -1
    (or a page that is not a number) is refused, not paged past the cap without end."""
    specs = [
        ServerSpec("a", InProcessServer(docs_upstream("a")), timeout=10),
        ServerSpec("0loop", InProcessServer(endless_upstream()), timeout=10),
    ]
    async with Host(specs, limits=ListingLimits(max_pages=3, max_entries=100)) as host:
        server, _ = create_gateway(GatewayService(host))
        async with Client(server, mode="legacy", cache=None) as c:
            first = await c.list_resources(cursor=_encode_cursor("0loop", None, 0))
            assert [r.uri for r in first.resources] == ["upstream://0loop/loop://0"]
            assert first.next_cursor == _encode_cursor("0loop", "1", 1)
            last = await c.list_resources(cursor=_encode_cursor("0loop", "2", 2))  # page 3 of at most 3
            assert [r.uri for r in last.resources] == ["upstream://0loop/loop://2"]
            assert last.next_cursor == _encode_cursor("a", None, 0)
            for forged in (_encode_cursor("0loop", "2", -1), _encode_cursor("0loop", "2", True)):  # type: ignore[arg-type]
                with pytest.raises(MCPError) as refused:
                    await c.list_resources(cursor=forged)
                assert refused.value.error.code == INVALID_PARAMS
                assert "invalid cursor" in refused.value.error.message


def empty_upstream(pages: int | None) -> tuple[Server, list[str | None]]:
    """Lists ``pages`` empty pages of resources, each with a next cursor (``None``: without end); records cursors."""
    asked: list[str | None] = []

    async def list_resources(ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        cursor = params.cursor if params else None
        asked.append(cursor)
        n = int(cursor or 0)
        more = pages is None or n + 1 < pages
        return ListResourcesResult(resources=[], next_cursor=str(n + 1) if more else None)

    return Server("empty", on_list_resources=list_resources), asked


@pytest.mark.parametrize("era", ERAS)
async def test_the_first_page_passes_over_upstream_pages_empty_for_the_caller(era: str) -> None:
    """An upstream whose label sorts first and lists nothing (a skills-only upstream: its skill:// resources
    are re-published) gave an empty first page with a nextCursor, which clients take for "no resources"."""
    empty, asked = empty_upstream(3)
    specs = [
        ServerSpec("a", InProcessServer(docs_upstream("a")), timeout=10),
        ServerSpec("0empty", InProcessServer(empty), timeout=10),
    ]
    async with Host(specs) as host:
        server, _ = create_gateway(GatewayService(host))
        async with Client(server, mode="auto" if era == "modern" else "legacy", cache=None) as c:
            first = await c.list_resources()
            assert [r.uri for r in first.resources] == ["upstream://a/note://readme"], first
            assert asked == [None, "1", "2"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_list_request_asks_for_at_most_so_many_empty_upstream_pages(era: str) -> None:
    empty, asked = empty_upstream(None)
    specs = [
        ServerSpec("a", InProcessServer(docs_upstream("a")), timeout=10),
        ServerSpec("0void", InProcessServer(empty), timeout=10),
    ]
    async with Host(specs, limits=ListingLimits(max_pages=3 * MAX_FETCHES_PER_PAGE, max_entries=100)) as host:
        server, _ = create_gateway(GatewayService(host))
        async with Client(server, mode="auto" if era == "modern" else "legacy", cache=None) as c:
            first = await c.list_resources()
            assert first.resources == []  # legal, and bounded: the next page goes on where this one stopped
            assert first.next_cursor is not None
            assert len(asked) == MAX_FETCHES_PER_PAGE
            listed = await every_page(c.list_resources, "resources")
            assert [r.uri for r in listed] == ["upstream://a/note://readme"]  # after the host's page cap


@pytest.mark.parametrize("era", ERAS)
async def test_client_input_is_bounded(era: str) -> None:
    async with docs_gateway(era) as c:
        with pytest.raises(MCPError) as long_uri:
            await c.read_resource("upstream://a/note://pages/" + "x" * MAX_URI_CHARS)
        assert long_uri.value.error.code == INVALID_PARAMS
        many = {f"k{i}": "v" for i in range(MAX_PROMPT_ARGUMENTS + 1)}
        with pytest.raises(MCPError) as too_many:
            await c.get_prompt("a__greet", many)
        assert too_many.value.error.code == INVALID_PARAMS
        assert str(MAX_PROMPT_ARGUMENTS) in too_many.value.error.message
        with pytest.raises(MCPError) as long_name:
            await c.get_prompt("a__" + "g" * (MAX_NAME_CHARS + 1), {"who": "x"})
        assert long_name.value.error.code == INVALID_PARAMS


@pytest.mark.parametrize("era", ERAS)
async def test_list_changes_of_upstream_prompts_and_resources_reach_the_client(era: str) -> None:
    bus = InMemorySubscriptionBus()
    heard: list[str] = []
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification) and "list_changed" in message.method:
            heard.append(message.method)
            got.set()

    async with (
        open_gateway({"a": docs_upstream("a", bus)}, watch=True) as gw,
        client(gw, era, message_handler=on_message) as c,
    ):
        if era == "modern":
            async with c.listen(prompts_list_changed=True, resources_list_changed=True) as sub:
                await bus.publish(PromptsListChanged())
                with anyio.fail_after(10):
                    first = await sub.__anext__()
                assert isinstance(first, PromptsListChanged)
                await bus.publish(ResourcesListChanged())
                with anyio.fail_after(10):
                    second = await sub.__anext__()
                assert isinstance(second, ResourcesListChanged)
            return
        await c.list_prompts()  # the session is known from its notifications/initialized on
        await bus.publish(PromptsListChanged())
        with anyio.fail_after(10):
            await got.wait()
        assert "notifications/prompts/list_changed" in heard


@pytest.mark.parametrize("era", ERAS)
async def test_a_legacy_upstreams_prompt_list_change_reaches_the_client(era: str) -> None:
    """A 2025-11-25 upstream says so with notifications/prompts/list_changed (heard by the gateway's watcher)."""
    sessions: list[Any] = []

    async def list_prompts(ctx: Any, params: PaginatedRequestParams | None) -> ListPromptsResult:
        sessions.append(ctx.session)
        return ListPromptsResult(prompts=[Prompt(name="p")])

    upstream: Server[Any] = Server("old", on_list_prompts=list_prompts)
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification) and message.method == "notifications/prompts/list_changed":
            heard.set()

    async with Host([ServerSpec("old", InProcessServer(upstream), timeout=10)], mode="legacy") as host:
        service = GatewayService(host)
        server, middleware = create_gateway(service)
        mode = "auto" if era == "modern" else "legacy"
        async with (
            host.watch(on_change=follow_upstreams(service, middleware)),
            Client(server, mode=mode, cache=None, message_handler=on_message) as c,
        ):
            assert [p.name for p in (await c.list_prompts()).prompts] == ["old__p"]
            if era == "modern":
                async with c.listen(prompts_list_changed=True) as sub:
                    await sessions[-1].send_prompt_list_changed()
                    with anyio.fail_after(10):
                        assert isinstance(await sub.__anext__(), PromptsListChanged)
                return
            await sessions[-1].send_prompt_list_changed()
            with anyio.fail_after(10):
                await heard.wait()


class Subscribable:
    """A lowlevel 2025-11-25 upstream that serves ``note://x`` and records (un)subscriptions."""

    def __init__(self) -> None:
        self.subscribed: list[str] = []
        self.unsubscribed: list[str] = []
        self.session: Any = None
        self.server: Server[Any] = Server(
            "subs",
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
        )

    async def list_resources(self, ctx: Any, params: Any) -> ListResourcesResult:
        return ListResourcesResult(resources=[Resource(name="x", uri="note://x")])

    async def read_resource(self, ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        return ReadResourceResult(contents=[TextResourceContents(uri=params.uri, text="x")])

    async def subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        self.subscribed.append(params.uri)
        self.session = ctx.session
        return EmptyResult()

    async def unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        self.unsubscribed.append(params.uri)
        return EmptyResult()


@pytest.mark.parametrize("era", ERAS)
async def test_resource_subscriptions_go_upstream_and_updates_come_back(era: str) -> None:
    upstream = Subscribable()
    uri = "upstream://subs/note://x"
    heard = Heard()

    async with Host([ServerSpec("subs", InProcessServer(upstream.server), timeout=10)], mode="legacy") as host:
        server, _ = create_gateway(GatewayService(host))
        mode = "auto" if era == "modern" else "legacy"
        async with Client(server, mode=mode, cache=None, message_handler=heard) as c:
            if era == "modern":
                async with c.listen(resource_subscriptions=[uri]) as sub:
                    assert upstream.subscribed == ["note://x"]
                    await upstream.session.send_resource_updated("note://x")
                    with anyio.fail_after(10):
                        event = await sub.__anext__()
                    assert event == ResourceUpdated(uri=uri)
                with anyio.fail_after(10):
                    while not upstream.unsubscribed:
                        await anyio.sleep(0.01)
                assert upstream.unsubscribed == ["note://x"]
                return
            others: list[Any] = []

            async def other_message(message: Any) -> None:
                others.append(message)

            async with Client(server, mode="legacy", cache=None, message_handler=other_message) as other:
                await other.list_resources()  # connected and initialized, but subscribed to nothing
                await c.subscribe_resource(uri)
                assert upstream.subscribed == ["note://x"]
                await upstream.session.send_resource_updated("note://x")
                await heard.until(1)
                await other.list_resources()
            assert heard.uris == [uri]
            assert not [m for m in others if "resources/updated" in str(getattr(m, "method", ""))], others
            await c.unsubscribe_resource(uri)
            assert upstream.unsubscribed == ["note://x"]
            with pytest.raises(MCPError) as refused:
                await c.subscribe_resource("upstream://subs/note://y" + "z" * MAX_URI_CHARS)
            assert refused.value.error.code == INVALID_PARAMS
            for n in range(MAX_CLIENT_SUBSCRIPTIONS):
                await c.subscribe_resource(f"upstream://subs/note://{n}")
            with pytest.raises(MCPError) as too_many:
                await c.subscribe_resource("upstream://subs/note://one-more")
            assert too_many.value.error.code == INVALID_PARAMS
            assert "note://one-more" not in upstream.subscribed
        # the client went away holding its subscriptions: the upstream is told of each (in the background)
        with anyio.fail_after(10):
            while len(upstream.unsubscribed) < 1 + MAX_CLIENT_SUBSCRIPTIONS:
                await anyio.sleep(0.01)
        assert sorted(upstream.unsubscribed[1:]) == sorted(f"note://{n}" for n in range(MAX_CLIENT_SUBSCRIPTIONS))


async def test_an_update_of_a_sub_resource_reaches_the_subscribers_of_the_resource_above_it() -> None:
    """2025-11-25: an update "might be a sub-resource of the one that the client actually subscribed to". A legacy
    subscriber hears the sub-resource's URI; a listen stream (exact URIs only) hears of the resource it named."""
    upstream = Subscribable()
    uri = "upstream://subs/note://x"
    heard = Heard()

    async with Host([ServerSpec("subs", InProcessServer(upstream.server), timeout=10)], mode="legacy") as host:
        server, _ = create_gateway(GatewayService(host))
        async with (
            Client(server, mode="legacy", cache=None, message_handler=heard) as old,
            Client(server, mode="auto", cache=None) as new,
            new.listen(resource_subscriptions=[uri]) as sub,
        ):
            await old.subscribe_resource(uri)
            assert upstream.subscribed == ["note://x"]
            for sent in ("note://xy", "note://y/x", "note://x/pages/2"):  # only the last is below note://x
                await upstream.session.send_resource_updated(sent)
            await heard.until(1)
            with anyio.fail_after(10):
                event = await sub.__anext__()
            await old.list_resources()  # anything sent before this answer has arrived
            assert heard.uris == ["upstream://subs/note://x/pages/2"]
            assert event == ResourceUpdated(uri=uri)


HELD = 3_600.0
"""The host's read timeout in front of ``SlowSubscribable``: longer than any test takes. Its requests are held
until the test releases them, all at once; with 30 s, on a loaded machine the first of the gateway's 1,024 held
subscriptions timed out before the last was sent, freed its place and failed the test at teardown."""


HANG = 240.0
"""How long ``_subscribe_at_once`` waits for every request to be answered or held: under the suite's 300 s timeout,
so a request that never arrives (a limit off by one left it queued) fails the test instead of hanging it."""


class SlowSubscribable(Subscribable):
    """``Subscribable`` whose subscriptions are all held until ``release`` is set: every request is in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.release = anyio.Event()

    async def subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        self.subscribed.append(params.uri)
        await self.release.wait()
        return EmptyResult()


async def _subscribe_at_once(
    clients: list[Client], per_client: int, upstream: SlowSubscribable, *, shared: bool = False
) -> list[str]:
    """Each client subscribes to ``per_client`` resources of its own (or all to one, ``shared``), all requests in
    flight together; the refusals."""
    refusals: list[str] = []

    async def one(c: Client, uri: str) -> None:
        try:
            await c.subscribe_resource(uri)
        except MCPError as exc:
            assert exc.error.code == INVALID_PARAMS
            refusals.append(exc.error.message)

    async with anyio.create_task_group() as tg:
        for i, c in enumerate(clients):
            for n in range(per_client):
                tg.start_soon(one, c, "upstream://subs/note://x" if shared else f"upstream://subs/note://{i}-{n}")
        with anyio.fail_after(HANG):  # a guard against a hang only (a clean failure): counted, not timed
            # every request was answered (refused at once) or reached the upstream (held there)
            while len(upstream.subscribed) + len(refusals) < len(clients) * per_client:
                await anyio.sleep(0.01)
        upstream.release.set()
    return refusals


async def test_concurrent_subscriptions_of_one_client_stop_at_its_limit() -> None:
    """Requests still waiting on the upstream count against the per-client limit: it is not overshot."""
    upstream = SlowSubscribable()
    async with Host([ServerSpec("subs", InProcessServer(upstream.server), timeout=HELD)], mode="legacy") as host:
        server, _ = create_gateway(GatewayService(host))
        async with Client(server, mode="legacy", cache=None) as c:
            refusals = await _subscribe_at_once([c], MAX_CLIENT_SUBSCRIPTIONS + 3, upstream)
    assert len(upstream.subscribed) == MAX_CLIENT_SUBSCRIPTIONS
    assert len(refusals) == 3
    assert all(f"may hold {MAX_CLIENT_SUBSCRIPTIONS}" in why for why in refusals), refusals


async def test_concurrent_subscriptions_of_many_clients_stop_at_the_gateways_limit() -> None:
    """Requests still waiting on the upstream count against the gateway-wide limit: it is not overshot."""
    upstream = SlowSubscribable()
    clients = MAX_SUBSCRIPTIONS // MAX_CLIENT_SUBSCRIPTIONS + 1
    async with Host([ServerSpec("subs", InProcessServer(upstream.server), timeout=HELD)], mode="legacy") as host:
        server, _ = create_gateway(GatewayService(host))
        async with contextlib.AsyncExitStack() as stack:
            opened = [
                await stack.enter_async_context(Client(server, mode="legacy", cache=None)) for _ in range(clients)
            ]
            refusals = await _subscribe_at_once(opened, MAX_CLIENT_SUBSCRIPTIONS, upstream)
    assert len(upstream.subscribed) == MAX_SUBSCRIPTIONS
    assert len(refusals) == clients * MAX_CLIENT_SUBSCRIPTIONS - MAX_SUBSCRIPTIONS
    assert all(f"holds {MAX_SUBSCRIPTIONS}" in why for why in refusals), refusals[:3]


async def test_concurrent_subscribers_of_one_resource_stop_at_its_limit() -> None:
    """Requests still waiting on the upstream count against the per-resource limit: it is not overshot."""
    upstream = SlowSubscribable()
    async with Host([ServerSpec("subs", InProcessServer(upstream.server), timeout=HELD)], mode="legacy") as host:
        server, _ = create_gateway(GatewayService(host))
        async with contextlib.AsyncExitStack() as stack:
            opened = [
                await stack.enter_async_context(Client(server, mode="legacy", cache=None))
                for _ in range(MAX_SUBSCRIBERS + 2)
            ]
            refusals = await _subscribe_at_once(opened, 1, upstream, shared=True)
            assert len(refusals) == 2
            assert all(f"{MAX_SUBSCRIBERS} clients subscribe" in why for why in refusals), refusals


@pytest.mark.parametrize("up", ["modern", "legacy"])
async def test_gateway_without_upstream_subscriptions_refuses_to_subscribe(up: str) -> None:
    """An upstream that declares no ``resources.subscribe`` (2026-07-28: serves no ``subscriptions/listen``)."""
    spec = ServerSpec("a", InProcessServer(docs_upstream("a", listen=False)), timeout=10)
    async with Host([spec], mode="auto" if up == "modern" else "legacy") as host:
        server, _ = create_gateway(GatewayService(host))
        async with Client(server, mode="legacy", cache=None) as c:
            with pytest.raises(MCPError) as refused:
                await c.subscribe_resource("upstream://a/note://readme")
            assert refused.value.error.code == INVALID_PARAMS
            assert "subscriptions" in refused.value.error.message
        async with (
            Client(server, mode="auto", cache=None) as c,
            c.listen(resource_subscriptions=["upstream://a/note://readme"], resources_list_changed=True) as sub,
        ):
            assert not sub.honored.resource_subscriptions  # acknowledged without it: it cannot be told
            assert sub.honored.resources_list_changed


async def test_follow_upstreams_relays_prompt_changes() -> None:
    """The watcher's change with reason ``prompts`` reaches the forwarding (both eras are told there)."""
    async with open_gateway({"a": docs_upstream("a")}) as gw:
        events: list[Any] = []
        unsubscribe = gw.middleware.subscriptions.subscribe(events.append)
        try:
            from skilldeck.host._watch import CatalogChange

            await follow_upstreams(gw.service, gw.middleware)(CatalogChange("a", frozenset({"prompts"})))
        finally:
            unsubscribe()
        assert PromptsListChanged() in events


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_request_method_sent_as_a_notification_is_no_error_of_the_gateways(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``prompts/get`` (or ``resources/read``, ``completion/complete``) with no id is the client's mistake: the
    forwarding middleware answered it as a request, and the SDK logged what it raised at ERROR with a traceback."""
    caplog.set_level(logging.DEBUG)
    spec = ServerSpec("a", InProcessServer(docs_upstream("a")), timeout=10)
    async with Host([spec]) as host:
        server, _ = create_gateway(GatewayService(host))
        async with Client(server, mode=mode, cache=None) as c:
            for method in ("prompts/get", "resources/read", "completion/complete", "resources/list"):
                await c.session._dispatcher.notify(method, {"name": "nope", "uri": "upstream://a/note://readme"})
            assert [p.name for p in (await c.list_prompts()).prompts] == ["a__greet"]  # the session goes on
    raised = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert raised == [], [(r.name, r.getMessage()[:120]) for r in raised]
