"""Put the gateway in front of the MCP clients on this machine (``skilldeck clients``).

The core is pure: :mod:`~skilldeck.clients._catalog` says where each client keeps its servers,
:mod:`~skilldeck.clients._dialects` reads each client's entries in the gateway's terms,
:mod:`~skilldeck.clients._plan` works out the new text of each file, and the editors
(:mod:`~skilldeck.clients._jsonc`, :mod:`~skilldeck.clients._tomltext`,
:mod:`~skilldeck.clients._yamltext`) change only the entries they must. :mod:`~skilldeck.clients._state`
reads and writes the files, keeps the copies that ``disconnect`` restores, and records connections.

Its other modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.clients`` beyond its public names: its face to them.
- ``_checked``: The check every edit of another program's file passes before it may be written.
- ``_edits``: One face over the three editors: read a client's file, put or remove one entry, by the file's
  format.
"""

from skilldeck.clients._catalog import CLIENTS, SCOPES, Client, Location, client_named, default_upstreams, locate
from skilldeck.clients._plan import ConnectPlan, FileChange, Found, Move, plan_connect, servers_in

__all__ = [
    "CLIENTS",
    "SCOPES",
    "Client",
    "ConnectPlan",
    "FileChange",
    "Found",
    "Location",
    "Move",
    "client_named",
    "default_upstreams",
    "locate",
    "plan_connect",
    "servers_in",
]
