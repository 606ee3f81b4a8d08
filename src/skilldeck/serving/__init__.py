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
* :mod:`~skilldeck.serving._tracing` — OpenTelemetry spans of the gateway's decisions (no-op without a provider).

Nothing here imports :mod:`skilldeck.server` or :mod:`skilldeck.gateway`.

Its other modules (private; a sibling package uses what ``__all__`` lists):

- ``_clients``: Which activation a client's request belongs to: its key, worked out the same way for every
  request.
"""
