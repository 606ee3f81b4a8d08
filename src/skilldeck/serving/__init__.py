"""What the skills server (:mod:`skilldeck.server`) and the gateway (:mod:`skilldeck.gateway`) both use.

One layer under both, so each thing is written once:

* :mod:`~skilldeck.serving._identity` — one request's identity (the caller from its verified token,
  its legacy connection, its activation key, its log level), worked out once per request;
* :mod:`~skilldeck.serving._legacy` — the table of live legacy (2025-11-25) connections, one per process;
* :mod:`~skilldeck.serving._policy` — who a caller is and what each skill shows and grants them;
* :mod:`~skilldeck.serving._audit` — the trail of tool calls a policy decided;
* :mod:`~skilldeck.serving._console` — the ``--console`` page: each viewer's view, and decisions live.
* :mod:`~skilldeck.serving._counts` — what the HTTP bounds hold and how often each acted;
* :mod:`~skilldeck.serving._metrics` — Prometheus metrics of either server, served by ``--metrics``;
* :mod:`~skilldeck.serving._tracing` — OpenTelemetry spans of the gateway's decisions (no-op without a provider);
* :mod:`~skilldeck.serving._runner` — the HTTP plumbing: an ``MCPServer`` run over streamable HTTP behind the
  connection bounds, bounded legacy sessions, resumable streams, health probes and a graceful stop (the
  modules below), with the bearer-token verifier and the Redis bus replicas share.

Nothing here imports :mod:`skilldeck.server` or :mod:`skilldeck.gateway`.

Its other modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.serving`` beyond its public names: its face to them.
- ``_clients``: Which activation a client's request belongs to: its key, worked out the same way for every
  request.
- ``_connections``: Bounds on the HTTP connections an outsider can hold open: how many, and how long a
  request may take to arrive.
- ``_disconnects``: A client that leaves in the middle of sending its request is not an error of the
  server's.
- ``_health``: ``GET /healthz`` and ``GET /readyz``: what a load balancer or an orchestrator asks a server
  over HTTP.
- ``_jwks``: Where a token verifier's keys come from: a JWKS file that is re-read when it changes, or a URL
  fetched with bounds.
- ``_redis_bus``: A ``SubscriptionBus`` over Redis pub/sub: change events reach every replica's listeners
  (``skilldeck[redis]``).
- ``_request_ids``: A legacy (2025-11-25) request whose ``id`` is not a string or an integer is answered
  ``-32600``, not dropped.
- ``_resumable``: Resumable SSE streams for legacy (2025-11-25) sessions: a bounded event store kept per
  session.
- ``_runner``: Running an ``MCPServer`` over streamable HTTP: the bounded, resumable, health-probed app and
  its process.
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
- ``_tokens``: Bearer tokens for a skills server over HTTP: JWTs verified against a JWKS, as an SDK
  ``TokenVerifier``.
"""
