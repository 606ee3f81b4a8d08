"""The server side: publish Agent Skills over the MCP Skills extension.

``catalog``, ``dynamic`` and ``service`` are sans-I/O (folders are read by
:mod:`skilldeck.skill._pack`); ``extension``, ``middleware``, ``notifier`` and ``app`` adapt to the MCP SDK.

Its other modules (private; a sibling package uses what ``__all__`` lists):

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
from skilldeck.serving._policy import Policy, load_policy
from skilldeck.skill._pack import DirectorySource, LoadResult, StaticSkill

__all__ = [
    "EXTENSION_ID",
    "Catalog",
    "CatalogDiff",
    "DirectorySource",
    "DynamicSkill",
    "LoadResult",
    "Policy",
    "SkillRequest",
    "SkillsExtension",
    "SkillsMiddleware",
    "StaticSkill",
    "create_server",
    "load_policy",
    "serve_http",
    "serve_stdio",
    "watch_and_reload",
]
