"""skilldeck: MCP capability discovery with Agent Skills.

The public API, re-exported here (imported lazily, so ``import skilldeck`` stays cheap):

* serving: :class:`SkillsExtension`, :class:`DirectorySource`, :class:`DynamicSkill`,
  :func:`create_server`, :class:`Policy` / :func:`load_policy`;
* hosting: :class:`Host`, :class:`ServerSpec`, :func:`load_config`, :class:`ApprovalStore`,
  :class:`ContentCache`, :class:`HostWatcher`;
* selecting: :func:`build_cards`, :class:`Selector`, :class:`ToolGate` (and :func:`skilldeck.ask.ask`);
* the gateway: :class:`GatewayService`, :func:`create_gateway`;
* errors: :class:`SkilldeckError` and its family in :mod:`skilldeck.errors`.
"""

from __future__ import annotations

from skilldeck._faces import lazy_names
from skilldeck.errors import (
    EntryError,
    FrontmatterError,
    NotServedError,
    PeerError,
    SkilldeckError,
    SkillError,
    SkillLimitError,
    SourceError,
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skilldeck")
    except PackageNotFoundError:  # a source tree on sys.path without an install
        return "0+unknown"


__version__ = _version()
"""The installed distribution's version (what ``skilldeck --version`` and ``serverInfo.version`` say)."""

_LAZY = {
    "SkillsExtension": "skilldeck.server",
    "DirectorySource": "skilldeck.server",
    "DynamicSkill": "skilldeck.server",
    "create_server": "skilldeck.server",
    "Policy": "skilldeck.server",
    "load_policy": "skilldeck.server",
    "Host": "skilldeck.host",
    "ServerSpec": "skilldeck.host",
    "load_config": "skilldeck.host",
    "ApprovalStore": "skilldeck.host",
    "ContentCache": "skilldeck.host",
    "HostWatcher": "skilldeck.host",
    "build_cards": "skilldeck.select",
    "Selector": "skilldeck.select",
    "ToolGate": "skilldeck.select",
    "GatewayService": "skilldeck.gateway",
    "create_gateway": "skilldeck.gateway",
}

__all__ = [
    "ApprovalStore",
    "ContentCache",
    "DirectorySource",
    "DynamicSkill",
    "EntryError",
    "FrontmatterError",
    "GatewayService",
    "Host",
    "HostWatcher",
    "NotServedError",
    "PeerError",
    "Policy",
    "Selector",
    "ServerSpec",
    "SkillError",
    "SkillLimitError",
    "SkilldeckError",
    "SkillsExtension",
    "SourceError",
    "ToolGate",
    "__version__",
    "build_cards",
    "create_gateway",
    "create_server",
    "load_config",
    "load_policy",
]


__getattr__ = lazy_names("skilldeck", _LAZY)
