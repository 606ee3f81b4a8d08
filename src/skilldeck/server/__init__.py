"""The server side: publish Agent Skills over the MCP Skills extension.

``catalog``, ``dynamic`` and ``service`` are sans-I/O (folders are read by
:mod:`skilldeck.skill._pack`); ``extension``, ``middleware``, ``notifier`` and ``app`` adapt to the MCP SDK.

Its other modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.server`` beyond its public names: its face to them.
- ``_audience``: The catalog one caller sees: admitted skills, rendered for them, with their own digests.
- ``_console``: What ``skilldeck serve --console`` shows: the catalog each viewer may list, and the policy's
  decisions on calls.
- ``_remote``: Remote skills: served here, held elsewhere — the entry is known, the bytes are fetched when
  read.
- ``_talent``: Solon AI remote skills ("talents"): one skill of the pack, answered the way Solon's client
  asks.
"""

from skilldeck.server._app import create_server, serve_http, serve_stdio, watch_and_reload
from skilldeck.server._catalog import Catalog, CatalogDiff
from skilldeck.server._dynamic import DynamicSkill, SkillRequest
from skilldeck.server._extension import EXTENSION_ID, SkillsExtension, SkillsMiddleware
from skilldeck.server._remote import RemoteSkill, RemoteSource
from skilldeck.server._talent import enable_talent
from skilldeck.serving._api import AuditLog, Caller, JwtVerifier, Policy, load_policy, run_http
from skilldeck.skill._api import DirectorySource, LoadResult, StaticSkill

__all__ = [
    "EXTENSION_ID",
    "AuditLog",
    "Caller",
    "Catalog",
    "CatalogDiff",
    "DirectorySource",
    "DynamicSkill",
    "JwtVerifier",
    "LoadResult",
    "Policy",
    "RemoteSkill",
    "RemoteSource",
    "SkillRequest",
    "SkillsExtension",
    "SkillsMiddleware",
    "StaticSkill",
    "create_server",
    "enable_talent",
    "load_policy",
    "run_http",
    "serve_http",
    "serve_stdio",
    "watch_and_reload",
]
