"""Catalogs of servers not installed yet: registry discovery behind ``find``, added only with a person's consent.

* :mod:`~skilldeck.catalog._entries` — a registry's ``server.json`` entries, read within bounds (pure);
* :mod:`~skilldeck.catalog._launch` — what adding one would run, exactly, and how it is shown (pure);
* :mod:`~skilldeck.catalog._consent` — who may add, the form a person answers, what the answer decides (pure);
* :mod:`~skilldeck.catalog._search` — the catalog ranked for a question, and the cards ``find`` shows (pure);
* :mod:`~skilldeck.catalog._fetch` — reading a registry (the generic registry API) or a registry file, and the cache;
* :mod:`~skilldeck.catalog._added` — ``$SKILLDECK_HOME/added.json``, the servers a person added;
* :mod:`~skilldeck.catalog._runtimes` — ``npx``, ``uvx``, ``docker`` on the PATH, and a PyPI package's own venv.

See ``docs/registry.md``.

Its other modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.catalog`` beyond its public names: its face to them.
"""

from skilldeck.catalog._added import AddedServers
from skilldeck.catalog._consent import cli_command, consent_form, decide, policy_refusal
from skilldeck.catalog._entries import CatalogEntry, CatalogLimits, Input, Package, Remote, read_entry, read_page
from skilldeck.catalog._fetch import OFFICIAL_REGISTRY, CatalogCache, RegistryClient, read_registry_file, registry_url
from skilldeck.catalog._launch import Launch, Runtimes, choose
from skilldeck.catalog._runtimes import find_runtimes
from skilldeck.catalog._search import CatalogIndex, catalog_card
from skilldeck.errors import AddRefused, RegistryError, ServerEntryError

__all__ = [
    "OFFICIAL_REGISTRY",
    "AddRefused",
    "AddedServers",
    "CatalogCache",
    "CatalogEntry",
    "CatalogIndex",
    "CatalogLimits",
    "Input",
    "Launch",
    "Package",
    "RegistryClient",
    "RegistryError",
    "Remote",
    "Runtimes",
    "ServerEntryError",
    "catalog_card",
    "choose",
    "cli_command",
    "consent_form",
    "decide",
    "find_runtimes",
    "policy_refusal",
    "read_entry",
    "read_page",
    "read_registry_file",
    "registry_url",
]
