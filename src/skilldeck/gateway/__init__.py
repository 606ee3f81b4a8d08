"""The gateway: one MCP server in front of many, disclosing their tools skill by skill.

* :mod:`~skilldeck.gateway._meta` — the four meta-tools as a client sees them (pure data);
* :mod:`~skilldeck.gateway._activation` — what each client has loaded (pure);
* :mod:`~skilldeck.gateway._service` — find, load, read, call over a connected host, per caller;
* :mod:`~skilldeck.gateway._republish` — every upstream's skills, re-published under ``skill://LABEL/``;
* :mod:`~skilldeck.gateway._names` — upstream names by label (``LABEL__NAME``) or kept where they do not collide;
* :mod:`~skilldeck.gateway._server` — the ``MCPServer`` and middleware that put it on the wire;
* :mod:`~skilldeck.gateway._app` — following upstream changes and serving stdio or HTTP;
* :mod:`~skilldeck.gateway._build` — the composition root: a host, a service, its policy check and its MCP
  server, wired from typed options (:func:`build_gateway`);
* :mod:`~skilldeck.gateway._metrics` — the gateway's Prometheus metrics (``--metrics``).

Its other modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.gateway`` beyond its public names: its face to them.
- ``_add``: The ``add`` meta-tool on the wire: a person asked through MCP elicitation (form mode), in both
  eras.
- ``_audiences``: What ``skilldeck gateway --check`` prints, and the checks of ``--pin`` and ``--grant``.
- ``_console``: What the gateway's console page shows (``skilldeck gateway --console``): a
  :class:`~skilldeck.serving._console.ConsoleSource`.
- ``_discovery``: The gateway's catalogs: what ``find`` offers beyond the configured upstreams, and what
  ``add`` starts.
- ``_indexes``: Each audience's index of the catalog: the cards a caller may see, their ranker, and the gate
  their tools pass.
- ``_forward``: Resources, prompts and completions of the upstream servers, forwarded through the gateway by
  label.
- ``_ledger_view``: What one gateway's configuration makes of the usage ledger's cards.
- ``_policy_check``: Whether a gateway policy names what its upstreams serve: a typo must not widen access.
- ``_port``: The ``Upstreams`` port: the only way the gateway's decisions reach the upstream servers.
- ``_redis_store``: Activations in Redis, shared by gateway replicas behind a load balancer
  (``skilldeck[redis]``).
- ``_relay``: What an upstream asks while serving a proxied call, relayed to the client that made the call.
- ``_reload``: The configuration a running gateway serves under: checked at start, re-read on demand.
- ``_resource_listen``: The resources the gateway's clients subscribe to on a 2026-07-28 upstream: one
  ``subscriptions/listen`` stream.
- ``_shortlist``: The order of the cards ``find`` shows: what ties with the first card, then one card per
  server.
- ``_usage``: The gateway's usage recording: successful uses go into the usage ledger, and each ranker reads
  its audience's.
- ``_subscriptions``: Upstream resources subscribed to through the gateway: who holds which, within bounds,
  and their updates.
- ``_upstream_answers``: A request the gateway forwards to an upstream: the upstream's answer, or its error
  worded as the gateway's.
- ``_upstreams``: The gateway's upstream calls: the :class:`~skilldeck.gateway._port.Upstreams` port over a
  connected host.
"""

from skilldeck.gateway._activation import Activation, ActivationTable
from skilldeck.gateway._app import follow_upstreams, run_gateway
from skilldeck.gateway._build import Gateway, GatewayOptions, build_gateway
from skilldeck.gateway._meta import META_OUTPUT_SCHEMAS, META_TOOLS
from skilldeck.gateway._server import GatewayMiddleware, create_gateway
from skilldeck.gateway._service import DecisionLog, GatewayService

__all__ = [
    "META_OUTPUT_SCHEMAS",
    "META_TOOLS",
    "Activation",
    "ActivationTable",
    "DecisionLog",
    "Gateway",
    "GatewayMiddleware",
    "GatewayOptions",
    "GatewayService",
    "build_gateway",
    "create_gateway",
    "follow_upstreams",
    "run_gateway",
]
