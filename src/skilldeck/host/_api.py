"""What sibling packages may use of ``skilldeck.host`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

if TYPE_CHECKING:
    from skilldeck.host._backoff import Backoff
    from skilldeck.host._config import DEFAULT_TIMEOUT, spec_for_target
    from skilldeck.host._connect import DEFAULT_MAX_MESSAGE_BYTES, connect_once
    from skilldeck.host._credentials import default_store, skilldeck_home
    from skilldeck.host._discover import list_server
    from skilldeck.host._faults import request_error
    from skilldeck.host._oauth import LOGIN_TIMEOUT, login, logout
    from skilldeck.host._on_behalf import on_behalf_of
    from skilldeck.host._verify import verify_bytes, verify_skill_md
    from skilldeck.host._watch import CatalogChange
    from skilldeck.host._wire import SkillsWire, declared_skills_settings

_WHERE = {
    "Backoff": "skilldeck.host._backoff",
    "CatalogChange": "skilldeck.host._watch",
    "connect_once": "skilldeck.host._connect",
    "declared_skills_settings": "skilldeck.host._wire",
    "DEFAULT_MAX_MESSAGE_BYTES": "skilldeck.host._connect",
    "default_store": "skilldeck.host._credentials",
    "DEFAULT_TIMEOUT": "skilldeck.host._config",
    "list_server": "skilldeck.host._discover",
    "login": "skilldeck.host._oauth",
    "LOGIN_TIMEOUT": "skilldeck.host._oauth",
    "logout": "skilldeck.host._oauth",
    "on_behalf_of": "skilldeck.host._on_behalf",
    "request_error": "skilldeck.host._faults",
    "skilldeck_home": "skilldeck.host._credentials",
    "SkillsWire": "skilldeck.host._wire",
    "spec_for_target": "skilldeck.host._config",
    "verify_bytes": "skilldeck.host._verify",
    "verify_skill_md": "skilldeck.host._verify",
}

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_TIMEOUT",
    "LOGIN_TIMEOUT",
    "Backoff",
    "CatalogChange",
    "SkillsWire",
    "connect_once",
    "declared_skills_settings",
    "default_store",
    "list_server",
    "login",
    "logout",
    "on_behalf_of",
    "request_error",
    "skilldeck_home",
    "spec_for_target",
    "verify_bytes",
    "verify_skill_md",
]


__getattr__ = lazy_names(__name__, _WHERE)
