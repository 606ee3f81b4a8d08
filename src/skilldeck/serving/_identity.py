"""One request's identity, worked out once: who is asking, on which connection, for which activation.

Both the skills server and the gateway answer a request for a :class:`~skilldeck.serving._policy.Caller`
built from the verified access token (never from ``_meta``), with the request's locale hint for
wording: :func:`caller_of` is that step, the only one. The gateway needs more of the same request —
the legacy connection it came on, the activation key it loads into and calls from, the log level its
client set — and :func:`identify` works all of it out in one pass (remembering a legacy connection
once), into a :class:`RequestIdentity` the request then carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skilldeck.serving._clients import MAX_CONVERSATION_CHARS, client_key
from skilldeck.serving._legacy import LegacyConnections
from skilldeck.serving._policy import HINTS_PREFIX, Caller, Policy, caller_for

__all__ = ["CONVERSATION_META_KEY", "RequestIdentity", "caller_of", "identify", "is_legacy", "locale_hint"]

CONVERSATION_META_KEY: Final = HINTS_PREFIX + "conversation"
"""Request ``_meta`` key a 2026-07-28 client may send to keep activations of conversations apart."""


def is_legacy(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the request came on a 2025-11-25 (legacy) connection."""
    return ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS


def _meta(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    meta: Any = ctx.meta or {}
    return meta if isinstance(meta, dict) else {}


def locale_hint(ctx: ServerRequestContext[Any, Any]) -> object:
    """The request's ``_meta["dev.skilldeck/locale"]`` hint (wording only; never read for permissions)."""
    return _meta(ctx).get(HINTS_PREFIX + "locale")


def caller_of(policy: Policy | None, ctx: ServerRequestContext[Any, Any]) -> Caller:
    """Who the request is answered for under ``policy``: the verified token, else the policy's default identity."""
    return caller_for(policy, get_access_token(), locale_hint(ctx))


def _conversation_refusal(meta: dict[str, Any]) -> str | None:
    """Why a 2026-07-28 request's conversation id cannot be used, or ``None`` (none named, or a usable one).

    An unusable id is refused rather than ignored: ignoring it would answer the request from the
    caller's shared (no conversation) activation, which the client asked to be kept apart from.
    """
    if CONVERSATION_META_KEY not in meta:
        return None
    value = meta[CONVERSATION_META_KEY]
    if isinstance(value, str) and 0 < len(value) <= MAX_CONVERSATION_CHARS and value.isprintable():
        return None
    return (
        f"_meta[{CONVERSATION_META_KEY!r}] must be a printable string of 1 to {MAX_CONVERSATION_CHARS} "
        "characters; nothing was done. Send a shorter id, or none to use your shared activation."
    )


@dataclass(frozen=True)
class RequestIdentity:
    """Who one request is answered for, and where its state lives (see :func:`identify`)."""

    caller: Caller
    client: str
    """The activation key (:func:`~skilldeck.serving._clients.client_key`): what it loaded, what it may call."""
    connection: int | None = None
    """The legacy connection's key in the process's :class:`LegacyConnections` (``None`` on 2026-07-28)."""
    log_level: str | None = None
    """Which log messages the client is sent: on a legacy connection the least severe level it set with
    ``logging/setLevel`` (``debug`` until it does); on 2026-07-28 the level the request asked for in
    ``_meta`` (``None``: it asked for none)."""
    refusal: str | None = None
    """Why the request cannot be answered as it is (a 2026-07-28 request naming an unusable conversation id)."""

    @property
    def legacy(self) -> bool:
        """Whether the request came on a legacy (2025-11-25) connection."""
        return self.connection is not None


def identify(ctx: ServerRequestContext[Any, Any], policy: Policy | None, legacy: LegacyConnections) -> RequestIdentity:
    """The identity of the request behind ``ctx``: its caller, activation key, connection and log level.

    A legacy request's connection is remembered in ``legacy`` (once) and keys its activation: one
    per live connection. A 2026-07-28 request's activation is the caller's, kept apart per
    conversation when the request names one (``_meta["dev.skilldeck/conversation"]``); an unusable
    conversation id is noted in :attr:`RequestIdentity.refusal`.
    """
    caller = caller_of(policy, ctx)
    access = get_access_token()  # the token caller_of read: it keys the activation when nothing else names the caller
    who = {"client_id": caller.client_id, "token": access.token if access is not None else None}
    if is_legacy(ctx):
        connection, record = legacy.connection(ctx.session)
        client = client_key(f"session:{connection}", caller.subject, **who)
        return RequestIdentity(caller, client, connection, record.log_level or "debug")
    meta = _meta(ctx)
    kind = "http" if ctx.request is not None else "local"
    level = meta.get(LOG_LEVEL_META_KEY)
    return RequestIdentity(
        caller,
        client_key(kind, caller.subject, meta.get(CONVERSATION_META_KEY), **who),
        log_level=level if isinstance(level, str) else None,
        refusal=_conversation_refusal(meta),
    )
