"""The server side: publish Agent Skills over the MCP Skills extension.

``catalog``, ``dynamic`` and ``service`` are sans-I/O (folders are read by
:mod:`skilldeck.skill._pack`); ``extension``, ``middleware``, ``notifier`` and ``app`` adapt to the MCP SDK.
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
