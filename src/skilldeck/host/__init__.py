"""The host side: connect to many MCP servers, keep their skills apart by origin, load them verified.

``registry``, ``verify`` and ``loader`` are the sans-I/O core (the loader reaches the network
only through a :class:`SkillIndex`); ``connect`` (with ``transports``, each under the host's limits,
and ``faults``, how a server's fault is worded), ``discover``, ``wire`` and ``index`` adapt the MCP
SDK; ``approvals`` and ``cache`` own the host's files.
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
