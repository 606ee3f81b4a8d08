"""The gateway: one MCP server in front of many, disclosing their tools skill by skill.

* :mod:`~skilldeck.gateway.meta` — the four meta-tools as a client sees them (pure data);
* :mod:`~skilldeck.gateway.activation` — what each client has loaded (pure);
* :mod:`~skilldeck.gateway.service` — find, load, read, call over a connected host, per caller;
* :mod:`~skilldeck.gateway.republish` — every upstream's skills, re-published under ``skill://LABEL/``;
* :mod:`~skilldeck.gateway.server` — the ``MCPServer`` and middleware that put it on the wire;
* :mod:`~skilldeck.gateway.app` — following upstream changes and serving stdio or HTTP.
"""

from skilldeck.gateway.activation import Activation, ActivationTable
from skilldeck.gateway.app import follow_upstreams, run_gateway
from skilldeck.gateway.meta import META_TOOLS
from skilldeck.gateway.server import GatewayMiddleware, create_gateway
from skilldeck.gateway.service import DecisionLog, GatewayService

__all__ = [
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
