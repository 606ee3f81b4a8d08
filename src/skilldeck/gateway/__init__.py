"""The gateway: one MCP server in front of many, disclosing their tools skill by skill.

* :mod:`~skilldeck.gateway.meta` — the four meta-tools as a client sees them (pure data);
* :mod:`~skilldeck.gateway.activation` — what each client has loaded (pure);
* :mod:`~skilldeck.gateway.service` — find, load, read, call over a connected host, per caller;
* :mod:`~skilldeck.gateway.server` — the ``MCPServer`` and middleware that put it on the wire.
"""

from skilldeck.gateway.activation import Activation, ActivationTable
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
]
