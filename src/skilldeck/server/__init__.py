"""The server side: publish Agent Skills over the MCP Skills extension.

``catalog``, ``dynamic`` and ``service`` are sans-I/O (folders are read by
:mod:`skilldeck.skill._pack`); ``extension``, ``middleware``, ``notifier`` and ``app`` adapt to the MCP SDK.

Its other modules (private; a sibling package uses what ``__all__`` lists):

- ``_audience``: The catalog one caller sees: admitted skills, rendered for them, with their own digests.
- ``_connections``: Bounds on the HTTP connections an outsider can hold open: how many, and how long a
  request may take to arrive.
- ``_console``: What ``skilldeck serve --console`` shows: the catalog each viewer may list, and the policy's
  decisions on calls.
- ``_disconnects``: A client that leaves in the middle of sending its request is not an error of the
  server's.
- ``_health``: ``GET /healthz`` and ``GET /readyz``: what a load balancer or an orchestrator asks a server
  over HTTP.
- ``_jwks``: Where a token verifier's keys come from: a JWKS file that is re-read when it changes, or a URL
  fetched with bounds.
- ``_redis_bus``: A ``SubscriptionBus`` over Redis pub/sub: change events reach every replica's listeners
  (``skilldeck[redis]``).
- ``_remote``: Remote skills: served here, held elsewhere — the entry is known, the bytes are fetched when
  read.
- ``_request_ids``: A legacy (2025-11-25) request whose ``id`` is not a string or an integer is answered
  ``-32600``, not dropped.
- ``_resumable``: Resumable SSE streams for legacy (2025-11-25) sessions: a bounded event store kept per
  session.
- ``_scoping``: Change events scoped to the skills they concern, so a listener hears only what its caller
  may see.
- ``_sessions``: Bounded legacy (2025-11-25) sessions on streamable HTTP: a full table evicts, it does not
  refuse.
- ``_shutdown``: Stopping an HTTP server on SIGTERM (or Ctrl-C) within a bound, whatever its clients hold
  open.
- ``_single_body``: A legacy (2025-11-25) request whose SSE stream carries nothing but its response is
  answered with one JSON body.
- ``_state_keys``: The request-state keys of replicas that share Redis, kept in step when Redis forgets
  them.
- ``_talent``: Solon AI remote skills ("talents"): one skill of the pack, answered the way Solon's client
  asks.
- ``_tokens``: Bearer tokens for a skills server over HTTP: JWTs verified against a JWKS, as an SDK
  ``TokenVerifier``.
"""

from skilldeck.server._app import create_server, serve_http, serve_stdio, watch_and_reload
from skilldeck.server._catalog import Catalog, CatalogDiff
from skilldeck.server._dynamic import DynamicSkill, SkillRequest
from skilldeck.server._extension import EXTENSION_ID, SkillsExtension, SkillsMiddleware
from skilldeck.serving._policy import Policy, load_policy
from skilldeck.skill._pack import DirectorySource, LoadResult, StaticSkill

__all__ = [
    "EXTENSION_ID",
    "Catalog",
    "CatalogDiff",
    "DirectorySource",
    "DynamicSkill",
    "LoadResult",
    "Policy",
    "SkillRequest",
    "SkillsExtension",
    "SkillsMiddleware",
    "StaticSkill",
    "create_server",
    "load_policy",
    "serve_http",
    "serve_stdio",
    "watch_and_reload",
]
