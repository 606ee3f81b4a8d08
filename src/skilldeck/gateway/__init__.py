"""The gateway: one MCP server in front of many, disclosing their tools skill by skill.

* :mod:`~skilldeck.gateway._meta` — the four meta-tools as a client sees them (pure data);
* :mod:`~skilldeck.gateway._activation` — what each client has loaded (pure);
* :mod:`~skilldeck.gateway._service` — find, load, read, call over a connected host, per caller;
* :mod:`~skilldeck.gateway._republish` — every upstream's skills, re-published under ``skill://LABEL/``;
* :mod:`~skilldeck.gateway._names` — upstream names by label (``LABEL__NAME``) or kept where they do not collide;
* :mod:`~skilldeck.gateway._server` — the ``MCPServer`` and middleware that put it on the wire;
* :mod:`~skilldeck.gateway._app` — following upstream changes and serving stdio or HTTP;
* :mod:`~skilldeck.gateway._metrics` — the gateway's Prometheus metrics (``--metrics``).
"""

from skilldeck.gateway._activation import Activation, ActivationTable
from skilldeck.gateway._app import follow_upstreams, run_gateway
from skilldeck.gateway._meta import META_OUTPUT_SCHEMAS, META_TOOLS
from skilldeck.gateway._server import GatewayMiddleware, create_gateway
from skilldeck.gateway._service import DecisionLog, GatewayService

__all__ = [
    "META_OUTPUT_SCHEMAS",
    "META_TOOLS",
    "Activation",
    "ActivationTable",
    "DecisionLog",
    "GatewayMiddleware",
    "GatewayService",
    "create_gateway",
    "follow_upstreams",
    "run_gateway",
]
