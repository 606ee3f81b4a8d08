"""The host side: connect to many MCP servers, keep their skills apart by origin, load them verified.

``registry``, ``verify`` and ``loader`` are the sans-I/O core (the loader reaches the network
only through a :class:`SkillIndex`); ``connect`` (with ``transports``, each under the host's limits,
and ``faults``, how a server's fault is worded), ``discover``, ``wire`` and ``index`` adapt the MCP
SDK; ``approvals`` and ``cache`` own the host's files.

Its other modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.host`` beyond its public names: its face to them.
- ``_backoff``: When to try a lost server again: capped, jittered exponential backoff that resets after a
  stable period.
- ``_broken_request``: A request to an HTTP server whose connection breaks fails that request alone, not the
  session.
- ``_config``: Which servers to connect to, under which host-assigned labels.
- ``_credentials``: Where OAuth tokens and client registrations of remote servers are kept: the user's
  credential store.
- ``_host``: The host facade: connect, discover, load — the pieces of ``skilldeck.host`` wired together.
- ``_oauth``: OAuth 2.1 to remote MCP servers, through the SDK's client (``mcp.client.auth``).
- ``_on_behalf``: A request sent upstream on behalf of a client declares that client's capabilities, not the
  host's.
- ``_port``: The ``SkillIndex`` port: the only way the host core reaches an origin's entries and bytes.
- ``_stdio_guard``: A line guard between a stdio MCP server and the host: ``python stdio_guard.py MAX_LINE
  PARENT -- COMMAND ARGS``.
- ``_watch``: Progressive injection on the host: hear a server's catalog change, re-index that server at
  once.
"""

from skilldeck.errors import (
    AmbiguousName,
    BudgetExceeded,
    ConfigError,
    CrossOriginRead,
    DynamicSkillRefused,
    NotApproved,
    SkillChanged,
    UnknownSkill,
    VerificationError,
)
from skilldeck.host._approvals import ApprovalRequest, ApprovalStore, Approver
from skilldeck.host._cache import ContentCache
from skilldeck.host._config import (
    HttpServer,
    InProcessServer,
    ServerSpec,
    StdioServer,
    load_config,
    parse_config,
)
from skilldeck.host._connect import Connected, Connections, Failure
from skilldeck.host._discover import DiscoveryReport, ListingLimits, discover
from skilldeck.host._host import Host
from skilldeck.host._index import LocalIndex, SkillIndex, WireIndex
from skilldeck.host._loader import LoadedSkill, SkillLoader
from skilldeck.host._registry import Collision, Registry, SkillRecord, ToolRecord
from skilldeck.host._watch import HostWatcher

__all__ = [
    "AmbiguousName",
    "ApprovalRequest",
    "ApprovalStore",
    "Approver",
    "BudgetExceeded",
    "Collision",
    "ConfigError",
    "Connected",
    "Connections",
    "ContentCache",
    "CrossOriginRead",
    "DiscoveryReport",
    "DynamicSkillRefused",
    "Failure",
    "Host",
    "HostWatcher",
    "HttpServer",
    "InProcessServer",
    "ListingLimits",
    "LoadedSkill",
    "LocalIndex",
    "NotApproved",
    "Registry",
    "ServerSpec",
    "SkillChanged",
    "SkillIndex",
    "SkillLoader",
    "SkillRecord",
    "StdioServer",
    "ToolRecord",
    "UnknownSkill",
    "VerificationError",
    "WireIndex",
    "discover",
    "load_config",
    "parse_config",
]
