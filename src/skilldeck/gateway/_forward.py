"""Resources, prompts and completions of the upstream servers, forwarded through the gateway by label.

:class:`ForwardedUpstreams` is a ``ServerMiddleware`` (innermost in the gateway's chain, after the
re-published skills) that answers, for every connected upstream that declares the capability:

* ``prompts/list`` and ``prompts/get``: each prompt as ``LABEL__NAME`` (like an injected tool; a
  label that holds ``__`` or ends in ``_`` could make two names meet, so its prompts are not
  forwarded), the upstream entry otherwise unchanged;
* ``resources/list``, ``resources/templates/list`` and ``resources/read``: every URI rewritten to
  ``upstream://LABEL/UPSTREAM-URI`` (the label percent-encoded, the upstream URI verbatim), so two
  upstreams' URIs never collide, a read needs no table (the URI names its upstream) and a
  template's expansion is the gateway form of the upstream's expansion. An upstream's own
  ``skill://`` resources are left out while the gateway re-publishes skills (they are served,
  verified, as ``skill://LABEL/...``), so a ``skill://`` read always takes the skills path;
* ``resources/subscribe``/``unsubscribe`` (2025-11-25 clients) and the resource URIs of a
  2026-07-28 ``subscriptions/listen`` filter, for an upstream that declares ``resources.subscribe``:
  a 2025-11-25 upstream is sent ``resources/subscribe`` once per resource; a 2026-07-28 upstream
  has one ``subscriptions/listen`` stream whose filter names every resource subscribed there
  (:mod:`skilldeck.gateway._resource_listen`: reopened with the new set as subscriptions come and
  go, closed when the last goes). Each ``notifications/resources/updated`` is relayed as the
  gateway URI to exactly the subscribers of that resource: the legacy sessions that subscribed,
  and the 2026-07-28 listen streams whose filter named it (an update a 2025-11-25 upstream sends
  for a sub-resource reaches the subscribers of the resource above it). When the last subscriber
  of a resource goes (unsubscribes, closes its listen stream or its connection), the upstream is told
  (``resources/unsubscribe``, or the stream reopened without it). A listen filter's gateway URI
  that cannot be subscribed for its caller (hidden by the policy, an upstream without
  subscriptions, over the limits) is left out of the filter the stream acknowledges;
* ``completion/complete`` for a forwarded prompt's or template's argument, asked of the upstream
  under its own names.

A list, ``prompts/get``, ``resources/read`` and ``completion/complete`` is sent upstream declaring the
caller's capabilities, as a proxied tool call is (:mod:`skilldeck.host._on_behalf`), never the
gateway's own; an upstream subscription serves every subscriber, so it is sent as the gateway's.

With ``names="upstream"`` (``--names upstream``, see :mod:`skilldeck.gateway._names`) a prompt name,
resource URI or template no other upstream lists is served under the upstream's own name instead,
and a kept template's expansion is read from its upstream; the label forms are still accepted.

The resource links and embedded resources of a prompt message and of a proxied tool result
(:meth:`ForwardedUpstreams.tool_result`) name the gateway's URI of what the upstream named (an
upstream's skill file: where it is re-published), so a client can read them through the gateway.

Lists page one upstream page at a time (the gateway's cursor names the upstream and its cursor),
upstreams in label order, under the host's listing caps (``ListingLimits``: pages per upstream,
entries per page); an upstream that fails is skipped and the next one listed.

Under the gateway's policy a caller sees and uses only what is admitted to them, by id: a prompt
is ``LABEL/PROMPT``, a resource ``LABEL/UPSTREAM-URI``, a template ``LABEL/URI-TEMPLATE``; the rule
``LABEL/*`` covers every prompt, resource and template of that upstream that has no rule of its
own (``admit:`` conditions, as for skills). A read of a URI no list showed (a template's expansion)
is decided by its own id, else ``LABEL/*``.

Change notifications are relayed by :meth:`ForwardedUpstreams.relay_change` (the gateway's
watcher hears ``prompts`` and ``resources`` changes of every upstream, in both eras).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import quote, unquote

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp_types import (
    METHOD_NOT_FOUND,
    PromptReference,
    ResourceTemplateReference,
)
from mcp_types.methods import parse_client_request, serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from skilldeck.errors import shorten
from skilldeck.gateway._names import Naming, UpstreamNames
from skilldeck.gateway._service import GatewayService
from skilldeck.gateway._subscriptions import ResourceSubscriptions, tell
from skilldeck.gateway._upstream_answers import answer, invalid
from skilldeck.gateway._upstreams import ORIGIN_META, with_origin
from skilldeck.host import Connected, Host
from skilldeck.host._api import on_behalf_of
from skilldeck.serving._api import Caller, LegacyConnections, caller_of
from skilldeck.skill import SCHEME as SKILL_SCHEME
from skilldeck.skill._api import neutralise_in

__all__ = [
    "MAX_FETCHES_PER_PAGE",
    "PROMPT_SEPARATOR",
    "RESOURCE_SCHEME",
    "ForwardedUpstreams",
    "declares",
    "fetch_page",
    "gateway_uri",
    "prompt_name",
    "split_prompt_name",
    "split_uri",
]

logger = logging.getLogger(__name__)

RESOURCE_SCHEME = "upstream"
"""The gateway's URI scheme for an upstream's resources: ``upstream://LABEL/UPSTREAM-URI``."""
PROMPT_SEPARATOR = "__"
_PREFIX = f"{RESOURCE_SCHEME}://"
_CURSOR_PREFIX = "upstream:"
_SKILL_PREFIX = f"{SKILL_SCHEME}://"

MAX_URI_CHARS = 8_192
"""A resource URI (or template) a client sends, or an upstream lists, may take this many characters."""
MAX_NAME_CHARS = 512
"""A prompt name or argument name."""
MAX_CURSOR_CHARS = 4_096
"""A cursor, the gateway's (from a client) or an upstream's (carried inside the gateway's)."""
MAX_PROMPT_ARGUMENTS = 64
MAX_ARGUMENT_CHARS = 64 * 1024
"""One prompt or completion argument value."""
UNSUBSCRIBE_SECONDS = 10.0
"""How long a closed listen stream's upstream unsubscriptions may take."""

_KINDS = {
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("resources", "resourceTemplates"),
}
_FORWARDED = frozenset(
    {
        *_KINDS,
        "prompts/get",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
    }
)


def gateway_uri(label: str, uri: str) -> str:
    """The gateway's URI of an upstream's resource (or template): ``upstream://LABEL/URI``."""
    return f"{_PREFIX}{quote(label, safe='')}/{uri}"


def split_uri(uri: str) -> tuple[str, str] | None:
    """``(label, upstream URI)`` of a gateway URI, or ``None`` if ``uri`` is not one."""
    if not uri.startswith(_PREFIX):
        return None
    label, sep, upstream = uri[len(_PREFIX) :].partition("/")
    if not sep or not label or not upstream:
        return None
    return unquote(label), upstream


def _prompts_forwarded(label: str) -> bool:
    """Whether ``LABEL__NAME`` splits back unambiguously: the label holds no ``__`` and does not end in ``_``."""
    return bool(label) and PROMPT_SEPARATOR not in label and not label.endswith("_")


def prompt_name(label: str, name: str) -> str:
    """The gateway's name of an upstream's prompt: ``LABEL__NAME``."""
    return f"{label}{PROMPT_SEPARATOR}{name}"


def split_prompt_name(name: str) -> tuple[str, str] | None:
    """``(label, upstream name)`` of a gateway prompt name, or ``None``."""
    label, sep, upstream = name.partition(PROMPT_SEPARATOR)
    if not sep or not upstream or not _prompts_forwarded(label):
        return None
    return label, upstream


MAX_FETCHES_PER_PAGE = 8
"""Upstream pages one ``list`` request may ask for, at most, while the pages it gets are empty for its caller."""


def _encode_cursor(label: str, cursor: str | None, page: int) -> str:
    raw = json.dumps([label, cursor, page], separators=(",", ":")).encode("utf-8")
    return _CURSOR_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(cursor: str) -> tuple[str, str | None, int]:
    bad = invalid("invalid cursor: pass back a nextCursor this gateway returned, or none to start over")
    if len(cursor) > MAX_CURSOR_CHARS or not cursor.startswith(_CURSOR_PREFIX):
        raise bad
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor[len(_CURSOR_PREFIX) :].encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise bad from None
    if not (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and (value[1] is None or isinstance(value[1], str))
        and isinstance(value[2], int)
        and not isinstance(value[2], bool)
        and value[2] >= 0
    ):
        raise bad
    return value[0], value[1], value[2]


def _dump(result: Any) -> dict[str, Any]:
    out: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    for key in ("resultType", "ttlMs", "cacheScope", "nextCursor"):
        out.pop(key, None)
    return out


def _narrowed(params: dict[str, Any], kept: list[Any]) -> dict[str, Any]:
    """A ``subscriptions/listen`` request's params whose filter names only ``kept`` of its resources."""
    narrowed = {k: v for k, v in params["notifications"].items() if k != "resourceSubscriptions"}
    if kept:
        narrowed["resourceSubscriptions"] = kept
    return {**params, "notifications": narrowed}


def declares(connected: Connected, kind: str) -> bool:
    """Whether an upstream declared the capability ``kind`` (``prompts``, ``resources``)."""
    return getattr(connected.client.server_capabilities, kind, None) is not None


async def fetch_page(connected: Connected, method: str, cursor: str | None) -> tuple[list[Any], str | None]:
    """One page of an upstream's ``prompts/list``, ``resources/list`` or ``resources/templates/list``."""
    client = connected.client
    if method == "prompts/list":
        prompts = await client.list_prompts(cursor=cursor, cache_mode="bypass")
        return list(prompts.prompts), prompts.next_cursor
    if method == "resources/list":
        resources = await client.list_resources(cursor=cursor, cache_mode="bypass")
        return list(resources.resources), resources.next_cursor
    templates = await client.list_resource_templates(cursor=cursor, cache_mode="bypass")
    return list(templates.resource_templates), templates.next_cursor


class ForwardedUpstreams:
    """The gateway's forwarding of upstream resources, prompts and completions (see the module docs).

    Args:
        service: the gateway service (its policy).
        host: the host the upstreams run on (their sessions).
        subscriptions: the ``subscriptions/listen`` bus the gateway serves.
        skills_republished: whether ``skill://`` is the re-published skills' (upstream ``skill://``
            resources are then left out).
        legacy: the process's table of live legacy connections (one is kept when omitted).
        names: ``"label"`` (every name in its label form) or ``"upstream"`` (the upstreams' own names
            where they do not collide; see :mod:`skilldeck.gateway._names`).
    """

    def __init__(
        self,
        service: GatewayService,
        host: Host,
        subscriptions: SubscriptionBus,
        *,
        skills_republished: bool = True,
        legacy: LegacyConnections | None = None,
        names: Naming = "label",
    ) -> None:
        self.service = service
        self.host = host
        self.names = names
        self._snapshot: UpstreamNames | None = None
        """Under ``--names upstream``: who lists what, as of :attr:`_snapshot_of` (rebuilt when that changes)."""
        self._snapshot_of: tuple[tuple[str, int], ...] | None = None
        self.subscriptions = subscriptions
        self.skills_republished = skills_republished
        self.legacy = legacy if legacy is not None else LegacyConnections()
        """Legacy connections told of list changes and resource updates (the gateway's one table)."""
        self.subscribed = ResourceSubscriptions(host, subscriptions, self.legacy, self.public_uri)
        """Who subscribes to which upstream resource (:class:`~skilldeck.gateway._subscriptions.ResourceSubscriptions`)."""
        self.legacy.on_forget(self.subscribed.forget)

    # -- who asks, and what they may see -----------------------------------------------------------

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        return caller_of(self.service.policy, ctx)

    def admits(self, caller: Caller, label: str, key: str) -> bool:
        """Whether ``caller`` may see ``key`` (a prompt name, resource URI or template) of ``label``."""
        policy = self.service.policy
        if policy is None:
            return True
        rule = policy.rule_for(f"{label}/{key}")
        return rule is None or rule.admits(caller)

    def _connected(self, label: str) -> Connected:
        connected = self.host.sessions.get(label)
        if connected is None:
            raise invalid(f"no upstream server {shorten(label)!r} is connected; list again")
        return connected

    def _labels(self, kind: str) -> list[str]:
        """Connected upstreams, in label order, that declare ``kind`` (``prompts``, ``resources``)."""
        connected = self.host.sessions
        return sorted(
            label
            for label, c in connected.items()
            if declares(c, kind) and (kind != "prompts" or _prompts_forwarded(label))
        )

    # -- names -------------------------------------------------------------------------------------

    @property
    def upstream_names(self) -> UpstreamNames | None:
        """Under ``--names upstream``, the last snapshot of who lists what (see :meth:`refresh_names`)."""
        return self._snapshot if self.names == "upstream" else None

    async def refresh_names(self) -> UpstreamNames | None:
        """Under ``--names upstream``: the snapshot of who lists what, rebuilt when the upstreams changed.

        It lists every page (under the host's caps) of every connected upstream's prompts, resources
        and templates; an upstream that fails is left out until the next rebuild.
        """
        if self.names != "upstream":
            return None
        sessions = self.host.sessions
        key = tuple(sorted((label, id(connected)) for label, connected in sessions.items()))
        if self._snapshot is not None and self._snapshot_of == key:
            return self._snapshot
        snapshot = UpstreamNames()
        for label, connected in sorted(sessions.items()):
            for method, capability, kind, field in (
                ("prompts/list", "prompts", "prompts", "name"),
                ("resources/list", "resources", "resources", "uri"),
                ("resources/templates/list", "resources", "templates", "uri_template"),
            ):
                if not declares(connected, capability):
                    continue
                try:
                    items = await self._every_page(connected, method)
                except Exception as exc:  # one upstream's trouble must not hide the others
                    logger.warning("%s of %r failed: %s", method, label, connected.explain(exc))
                    continue
                snapshot.add(kind, label, (str(getattr(item, field)) for item in items))  # type: ignore[arg-type]
        self._snapshot, self._snapshot_of = snapshot, key
        return snapshot

    async def _every_page(self, connected: Connected, method: str) -> list[Any]:
        items, cursor = await fetch_page(connected, method, None)
        for _ in range(self.host.limits.max_pages - 1):
            if not cursor or len(cursor) > MAX_CURSOR_CHARS:
                break
            more, cursor = await fetch_page(connected, method, cursor)
            items += more
        return items

    def public_uri(self, label: str, uri: str) -> str:
        """What clients of the gateway call ``label``'s resource ``uri``: as it is where it is kept, else
        ``upstream://LABEL/URI``."""
        names = self.upstream_names
        if names is not None and (names.keeps_uri(label, uri) or names.uri_owner(uri) == label):
            return uri
        return gateway_uri(label, uri)

    def _upstream_uri(self, uri: str) -> bool:
        """Whether ``uri`` names an upstream's resource: ``upstream://LABEL/URI``, or a kept URI."""
        names = self.upstream_names
        return split_uri(uri) is not None or (names is not None and names.uri_owner(uri) is not None)

    # -- the hook ----------------------------------------------------------------------------------

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        method = ctx.method
        if method in _FORWARDED and ctx.request_id is not None:  # a request method sent as a notification: not ours
            return await self._answer(ctx, call_next)
        if method == "subscriptions/listen":
            return await self._listen(ctx, call_next)
        if method == "initialize":
            return self._declare(await call_next(ctx), legacy=True)
        if method == "server/discover":
            return self._declare(await call_next(ctx), legacy=False)
        if method == "notifications/initialized" and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.legacy.remember(ctx.session)
        return await call_next(ctx)

    async def _answer(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        method, version = ctx.method, ctx.protocol_version
        params: dict[str, Any] = dict(ctx.params) if isinstance(ctx.params, dict) else {}
        await self.refresh_names()
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str) or not self._upstream_uri(uri):
                return await call_next(ctx)  # not ours: the server's own resources (or its error)
        try:
            parse_client_request(method, version, params or None)
        except KeyError:
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=method) from None
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else "params"
            what = errors[0]["msg"] if errors else "invalid"
            raise invalid(f"invalid {method} params: {where}: {what}") from None
        caller = self.caller(ctx)
        result: dict[str, Any]
        if method in ("resources/subscribe", "resources/unsubscribe"):
            # one upstream subscription serves every subscriber: it is sent for none of them in particular
            await self._subscription(ctx, caller, str(params.get("uri")), subscribe=method == "resources/subscribe")
            result = {}
        else:
            with on_behalf_of(ctx.session.client_capabilities):  # the caller's capabilities, as a tool call's
                result = await self._forwarded(caller, method, params)
        # an upstream's prompts, resource texts and descriptions enter a model's context: no forged origin tag
        return serialize_server_result(method, version, {"resultType": "complete", **neutralise_in(result)})

    async def _forwarded(self, caller: Caller, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method in _KINDS:
            return await self._list(caller, method, params.get("cursor"))
        if method == "prompts/get":
            return await self._get_prompt(caller, params)
        if method == "resources/read":
            return await self._read(caller, params["uri"])
        return await self._complete(caller, params)

    # -- lists -------------------------------------------------------------------------------------

    async def _list(self, caller: Caller, method: str, cursor: Any) -> dict[str, Any]:
        """One page: the first upstream page with an entry for ``caller`` (after any upstream skipped or
        empty, at most :data:`MAX_FETCHES_PER_PAGE` upstream pages in all), and the cursor of what follows.

        A page left empty (an upstream whose resources are all re-published skills, or none the caller
        may see) is passed over: clients and the conformance suite take an empty first page for "none".
        """
        capability, key = _KINDS[method]
        labels = self._labels(capability)
        index, upstream_cursor, page = 0, None, 0
        if isinstance(cursor, str):
            label, upstream_cursor, page = _decode_cursor(cursor)
            index = next((i for i, known in enumerate(labels) if known >= label), len(labels))
            if index < len(labels) and labels[index] != label:
                upstream_cursor, page = None, 0  # that upstream is gone: go on with the next one
        limits = self.host.limits
        cache = {"ttlMs": 0, "cacheScope": "private"}
        fetched = 0
        while index < len(labels):
            label = labels[index]
            connected = self.host.sessions.get(label)
            if connected is None:  # gone while an earlier upstream was asked
                index, upstream_cursor, page = index + 1, None, 0
                continue
            try:
                items, next_cursor = await fetch_page(connected, method, upstream_cursor)
            except Exception as exc:  # one upstream's trouble must not hide the others
                logger.warning("%s of %r failed: %s", method, label, connected.explain(exc))
                index, upstream_cursor, page = index + 1, None, 0
                continue
            fetched += 1
            kept = [item for item in (self._entry(caller, label, key, i) for i in items) if item is not None]
            kept = kept[: limits.max_entries]
            if next_cursor and page + 1 < limits.max_pages and len(next_cursor) <= MAX_CURSOR_CHARS:
                index, upstream_cursor, page = index, next_cursor, page + 1
            else:
                if next_cursor:
                    logger.warning(
                        "%s of %r stopped after %d pages (the cap) or at an oversized cursor", method, label, page
                    )
                index, upstream_cursor, page = index + 1, None, 0
            following = _encode_cursor(labels[index], upstream_cursor, page) if index < len(labels) else None
            if not kept and following is not None and fetched < MAX_FETCHES_PER_PAGE:
                continue
            out: dict[str, Any] = {key: kept, **cache}
            if following is not None:
                out["nextCursor"] = following
            return out
        return {key: [], **cache}

    def _entry(self, caller: Caller, label: str, key: str, item: Any) -> dict[str, Any] | None:
        """One upstream entry as the gateway lists it to ``caller``, or ``None`` when it is not theirs to see."""
        entry: dict[str, Any] = item.model_dump(by_alias=True, mode="json", exclude_none=True)
        names = self.upstream_names
        if key == "prompts":
            name = entry.get("name")
            if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or not self.admits(caller, label, name):
                return None
            if names is None or not names.keeps_prompt(label, name):
                entry["name"] = prompt_name(label, name)
        else:
            field = "uri" if key == "resources" else "uriTemplate"
            uri = entry.get(field)
            if not isinstance(uri, str) or len(uri) > MAX_URI_CHARS or not self.admits(caller, label, uri):
                return None
            if self.skills_republished and uri.startswith(_SKILL_PREFIX):
                return None  # re-published, verified, as skill://LABEL/...
            if names is None or not names.keeps_uri(label, uri, template=key != "resources"):
                entry[field] = gateway_uri(label, uri)
        return with_origin(entry, label)

    # -- prompts -----------------------------------------------------------------------------------

    def _prompt(self, caller: Caller, name: str) -> tuple[Connected, str]:
        names = self.upstream_names
        owner = names.prompt_owner(name) if names is not None else None
        split = (owner, name) if owner is not None else split_prompt_name(name)
        if split is None or len(split[1]) > MAX_NAME_CHARS:
            raise invalid(f"unknown prompt {shorten(name)!r}: prompts are named LABEL__NAME, as prompts/list shows")
        label, upstream = split
        if not self.admits(caller, label, upstream):
            raise invalid(f"unknown prompt {shorten(name)!r}")  # as if absent: the policy does not admit it
        connected = self._connected(label)
        if not declares(connected, "prompts"):
            raise invalid(f"unknown prompt {shorten(name)!r}: {label!r} serves no prompts")
        return connected, upstream

    async def _get_prompt(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        connected, name = self._prompt(caller, str(params["name"]))
        arguments = params.get("arguments") or {}
        if len(arguments) > MAX_PROMPT_ARGUMENTS:
            raise invalid(f"a prompt takes at most {MAX_PROMPT_ARGUMENTS} arguments")
        if any(len(k) > MAX_NAME_CHARS or len(str(v)) > MAX_ARGUMENT_CHARS for k, v in arguments.items()):
            raise invalid(
                f"a prompt argument's name is at most {MAX_NAME_CHARS} characters, its value {MAX_ARGUMENT_CHARS}"
            )
        result = await answer(connected, connected.client.get_prompt(name, {k: str(v) for k, v in arguments.items()}))
        out = with_origin(_dump(result), connected.label)
        out["messages"] = [self._message(connected.label, m) for m in out.get("messages", [])]
        return out

    def _message(self, label: str, message: dict[str, Any]) -> dict[str, Any]:
        """A prompt message whose resource links and embedded resources name the gateway's URIs."""
        content = message.get("content")
        if not isinstance(content, dict):
            return message
        return {**message, "content": self._content(label, content)}

    def link_uri(self, label: str, uri: str) -> str:
        """Where a client reads, through the gateway, a resource that upstream ``label`` names as ``uri``.

        An upstream's skill files are where the gateway re-publishes them (``skill://LABEL/...``, see
        :mod:`skilldeck.gateway._republish`); any other resource is forwarded (``upstream://LABEL/URI``).
        """
        if self.skills_republished and uri.startswith(_SKILL_PREFIX) and "/" not in label:
            return f"{_SKILL_PREFIX}{label}/{uri[len(_SKILL_PREFIX) :]}"
        return self.public_uri(label, uri)

    def tool_result(self, result: dict[str, Any]) -> dict[str, Any]:
        """A proxied ``tools/call`` result whose resource links and embedded resources name the gateway's URIs.

        The upstream is the one the result's ``_meta`` names (the gateway stamps every proxied result
        with it); its URIs mean nothing to a client of the gateway, which reads them here instead.
        """
        label = (result.get("_meta") or {}).get(ORIGIN_META)
        content = result.get("content")
        if not isinstance(label, str) or not isinstance(content, list):
            return result
        return {**result, "content": [self._content(label, c) if isinstance(c, dict) else c for c in content]}

    def _content(self, label: str, content: dict[str, Any]) -> dict[str, Any]:
        if content.get("type") == "resource_link" and isinstance(content.get("uri"), str):
            return {**content, "uri": self.link_uri(label, content["uri"])}
        resource = content.get("resource")
        if content.get("type") == "resource" and isinstance(resource, dict) and isinstance(resource.get("uri"), str):
            return {**content, "resource": {**resource, "uri": self.link_uri(label, resource["uri"])}}
        return content

    # -- resources ---------------------------------------------------------------------------------

    def _resource(self, caller: Caller, uri: str) -> tuple[Connected, str]:
        split = split_uri(uri) if len(uri) <= MAX_URI_CHARS else None
        names = self.upstream_names
        if split is None and names is not None and len(uri) <= MAX_URI_CHARS:
            owner = names.uri_owner(uri)
            split = (owner, uri) if owner is not None else None
        if split is None:
            raise invalid(f"unknown resource {shorten(uri)!r}: upstream resources are upstream://LABEL/URI")
        label, upstream = split
        if not self.admits(caller, label, upstream) or (self.skills_republished and upstream.startswith(_SKILL_PREFIX)):
            raise invalid(f"unknown resource {shorten(uri)!r}")
        connected = self._connected(label)
        if not declares(connected, "resources"):
            raise invalid(f"unknown resource {shorten(uri)!r}: {label!r} serves no resources")
        return connected, upstream

    async def _read(self, caller: Caller, uri: str) -> dict[str, Any]:
        connected, upstream = self._resource(caller, uri)
        result = await answer(connected, connected.client.read_resource(upstream, cache_mode="bypass"))
        out = with_origin(_dump(result), connected.label)
        out["contents"] = [
            {**c, "uri": uri if c["uri"] == upstream else self.public_uri(connected.label, c["uri"])}
            if isinstance(c.get("uri"), str)
            else c
            for c in out.get("contents", [])
        ]
        out["cacheScope"], out["ttlMs"] = "private", 0
        return out

    # -- completions -------------------------------------------------------------------------------

    async def _complete(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        ref = params["ref"]
        upstream_ref: PromptReference | ResourceTemplateReference
        if ref.get("type") == "ref/prompt":
            connected, name = self._prompt(caller, str(ref.get("name")))
            upstream_ref = PromptReference(type="ref/prompt", name=name)
        else:
            connected, template = self._resource(caller, str(ref.get("uri")))
            upstream_ref = ResourceTemplateReference(type="ref/resource", uri=template)
        argument = params["argument"]
        context = (params.get("context") or {}).get("arguments") or None
        values = [str(argument.get("name", "")), str(argument.get("value", ""))]
        values += [str(v) for v in (context or {}).values()] + list(context or {})
        if len(context or {}) > MAX_PROMPT_ARGUMENTS or any(len(v) > MAX_ARGUMENT_CHARS for v in values):
            raise invalid(
                f"completion arguments are at most {MAX_PROMPT_ARGUMENTS}, each at most {MAX_ARGUMENT_CHARS} characters"
            )
        if not declares(connected, "completions"):
            return {"completion": {"values": []}}
        result = await answer(
            connected,
            connected.client.complete(
                upstream_ref,
                {"name": values[0], "value": values[1]},
                {str(k): str(v) for k, v in context.items()} if context else None,
            ),
        )
        # (the SDK refuses an upstream's completion of more than the protocol's 100 values)
        return {"completion": dict(_dump(result).get("completion") or {"values": []})}

    # -- subscriptions -----------------------------------------------------------------------------

    async def _subscription(
        self, ctx: ServerRequestContext[Any, Any], caller: Caller, uri: str, *, subscribe: bool
    ) -> None:
        """``resources/subscribe`` or ``unsubscribe`` of a legacy connection."""
        connection = self.legacy.remember(ctx.session)
        target = self._subscribable(caller, uri)
        if subscribe:
            await self.subscribed.subscribe(target, connection)
        else:
            await self.subscribed.unsubscribe(target, connection)

    def _subscribable(self, caller: Caller, uri: str) -> tuple[Connected, str]:
        connected, upstream = self._resource(caller, uri)
        resources = connected.client.server_capabilities.resources
        if resources is None or not resources.subscribe:
            raise invalid(f"{connected.label!r} offers no resource subscriptions (resources.subscribe)")
        return connected, upstream

    async def _listen(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """A 2026-07-28 listen stream: its filter's gateway URIs are subscribed upstream while it is open.

        The filter passed on to the stream (and so its acknowledgment) keeps only the gateway URIs
        that could be subscribed for this caller: a URI the policy hides from them, of an upstream
        without subscriptions, or over the limits is not honored, and its updates never reach the
        stream even while another client subscribes to it.
        """
        await self.refresh_names()
        params = ctx.params if isinstance(ctx.params, dict) else {}
        notifications = params.get("notifications")
        listed = notifications.get("resourceSubscriptions") if isinstance(notifications, dict) else None
        uris: list[Any] = listed if isinstance(listed, list) else []
        stream = object()
        targets = self._listen_targets(self.caller(ctx), uris)
        refused = await self.subscribed.subscribe_all(list(targets.values()), stream)
        for target, why in refused:
            logger.debug("listen: %s not subscribed: %s", shorten(target[1]), why.error.message)
        failed = {id(target) for target, _ in refused}
        subscribed = {uri: target for uri, target in targets.items() if id(target) not in failed}
        held = list(subscribed.values())
        kept = [uri for uri in uris if not isinstance(uri, str) or not self._upstream_uri(uri) or uri in subscribed]
        if len(kept) != len(uris):
            ctx = replace(ctx, params=_narrowed(params, kept))
        try:
            return await call_next(ctx)
        finally:
            # The stream usually ends by cancellation: the upstreams are still told, within a bound.
            with anyio.move_on_after(UNSUBSCRIBE_SECONDS, shield=True):
                await self.subscribed.unsubscribe_all(held, stream)

    def _listen_targets(self, caller: Caller, uris: list[Any]) -> dict[str, tuple[Connected, str]]:
        """The upstream resource of each gateway URI of a listen filter that ``caller`` may subscribe to."""
        targets: dict[str, tuple[Connected, str]] = {}
        for uri in uris:
            if not isinstance(uri, str) or not self._upstream_uri(uri):
                continue  # not an upstream's: the gateway's own (re-published skills), or invalid
            try:
                targets[uri] = self._subscribable(caller, uri)
            except MCPError as exc:  # not subscribable: the stream is still served, without its updates
                logger.debug("listen: %s not subscribed: %s", shorten(uri), exc.error.message)
        return targets

    # -- changes -----------------------------------------------------------------------------------

    async def relay_change(self, reasons: Iterable[str]) -> None:
        """An upstream said its prompts or resources changed: tell every client (both eras)."""
        reasons = frozenset(reasons)
        if {"prompts", "resources"} & reasons:
            self._snapshot = None  # rebuilt on next use
        if "prompts" in reasons:
            await self.subscriptions.publish(PromptsListChanged())
        if "resources" in reasons:
            await self.subscriptions.publish(ResourcesListChanged())
        for key, session in self.legacy.items():
            if "prompts" in reasons:
                await tell(self.legacy, key, session.send_prompt_list_changed())
            if "resources" in reasons:
                await tell(self.legacy, key, session.send_resource_list_changed())

    # -- errors and capabilities -------------------------------------------------------------------

    @staticmethod
    def _declare(result: HandlerResult, *, legacy: bool) -> HandlerResult:
        """Prompts, resources (with subscriptions) and completions, in ``initialize`` and ``server/discover``."""
        if not isinstance(result, dict) or not isinstance(result.get("capabilities"), dict):
            return result
        capabilities = dict(result["capabilities"])
        if legacy:
            capabilities["prompts"] = {**dict(capabilities.get("prompts") or {}), "listChanged": True}
            resources = dict(capabilities.get("resources") or {})
            capabilities["resources"] = {**resources, "listChanged": True, "subscribe": True}
        capabilities["completions"] = dict(capabilities.get("completions") or {})
        return {**result, "capabilities": capabilities}
