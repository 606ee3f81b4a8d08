"""A request sent upstream on behalf of a client declares that client's capabilities, not the host's.

On 2026-07-28 a client declares its capabilities on every request (``_meta``
``io.modelcontextprotocol/clientCapabilities``), and a server decides from them what it may ask: a
tool that needs sampling answers a client without it ``-32021`` instead of running, and one that
asks through ``input_required`` asks only for what the client declared. The gateway's host
declares ``sampling``, ``elicitation`` and ``roots`` on every upstream session (so that it can
relay such questions), and the SDK stamps those on every request the session sends. A proxied
call must carry its caller's instead: :func:`on_behalf_of` names them for the requests the current
task sends, and :func:`declare_on_behalf` makes a session send them.

Only the kinds the host relays (``sampling``, ``elicitation``, ``roots``) are replaced: each is
declared when the caller declared it (as the caller declared it) and the host declared it too, and
left out otherwise, so the upstream is never told of a capability the caller lacks. What else the
host declares (extensions it handles itself) is kept. A 2025-11-25 upstream session declared its
capabilities once, at its handshake, for every caller; it carries none per request, and the relay
refuses what the caller cannot answer instead (see :mod:`skilldeck.gateway._relay`).

A stop-gap for the SDK: ``docs/sdk-workarounds.md#on-behalf`` says what it corrects and what change
to the SDK would retire it; ``tests/sdk`` pins the SDK behaviour it relies on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from mcp.shared.dispatcher import CallOptions
from mcp_types import CLIENT_CAPABILITIES_META_KEY, ClientCapabilities

__all__ = ["RELAYED_CAPABILITIES", "declare_on_behalf", "on_behalf_of", "relayed_capabilities"]

RELAYED_CAPABILITIES = ("sampling", "elicitation", "roots")
"""The client capabilities whose requests the host relays to the client it serves a call for."""

_CALLER: ContextVar[dict[str, Any] | None] = ContextVar("skilldeck_upstream_on_behalf_of", default=None)
"""The capabilities (as JSON) of the client the current task sends upstream requests for; ``None``: the host's own."""


@contextmanager
def on_behalf_of(capabilities: ClientCapabilities | None) -> Iterator[None]:
    """While the block runs, requests this task sends on a :func:`declare_on_behalf` session declare
    ``capabilities`` (``None``: a caller that declared none) in place of the host's relayed kinds."""
    declared = capabilities.model_dump(by_alias=True, mode="json", exclude_none=True) if capabilities else {}
    token = _CALLER.set(declared)
    try:
        yield
    finally:
        _CALLER.reset(token)


def relayed_capabilities(own: Mapping[str, Any], caller: Mapping[str, Any]) -> dict[str, Any]:
    """``own`` (the host's declaration) with each relayed kind replaced by the caller's, when both declared it."""
    kept = {key: value for key, value in own.items() if key not in RELAYED_CAPABILITIES}
    return kept | {key: caller[key] for key in RELAYED_CAPABILITIES if key in caller and key in own}


class _OnBehalf:
    """A session's dispatcher, sending each request with the capabilities of the client it is sent for.

    The SDK stamps the session's own capabilities on a request just before handing it to the
    dispatcher; this replaces them there, while :func:`on_behalf_of` names a caller. Everything else
    is the wrapped dispatcher's.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        caller = _CALLER.get()
        meta = params.get("_meta") if params is not None else None
        if caller is not None and params is not None and isinstance(meta, Mapping):
            own = meta.get(CLIENT_CAPABILITIES_META_KEY)
            if isinstance(own, Mapping):
                declared = relayed_capabilities(own, caller)
                params = {**params, "_meta": {**meta, CLIENT_CAPABILITIES_META_KEY: declared}}
        result: dict[str, Any] = await self._inner.send_raw_request(method, params, opts)
        return result


def declare_on_behalf(session: Any) -> None:
    """Make ``session`` (an SDK ``ClientSession``) declare, on each request, the capabilities :func:`on_behalf_of` names.

    The SDK offers no per-request way to declare other capabilities than the session's (its stamp
    overwrites any given in ``_meta``), so the session's dispatcher, which every request passes
    through after the stamp, is wrapped once, when the session opens.
    """
    if not isinstance(session._dispatcher, _OnBehalf):
        session._dispatcher = _OnBehalf(session._dispatcher)
