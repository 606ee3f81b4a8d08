"""What sibling packages may use of ``skilldeck.gateway`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

if TYPE_CHECKING:
    from skilldeck.gateway._activation import ActivationStore, client_key
    from skilldeck.gateway._audiences import audience_lines
    from skilldeck.gateway._discovery import Source
    from skilldeck.gateway._meta import (
        FIND,
        MAX_FIND_LIMIT,
        MAX_ID_CHARS,
        MAX_LOAD_IDS,
        MAX_PATH_CHARS,
        MAX_QUERY_CHARS,
        META,
        READ_SKILL_FILE,
    )
    from skilldeck.gateway._metrics import GatewayMetrics
    from skilldeck.gateway._names import tool_collisions
    from skilldeck.gateway._redis_store import RedisActivationStore
    from skilldeck.gateway._service import AnonymousLearning

_WHERE = {
    "ActivationStore": "skilldeck.gateway._activation",
    "AnonymousLearning": "skilldeck.gateway._service",
    "audience_lines": "skilldeck.gateway._audiences",
    "client_key": "skilldeck.gateway._activation",
    "FIND": "skilldeck.gateway._meta",
    "GatewayMetrics": "skilldeck.gateway._metrics",
    "MAX_FIND_LIMIT": "skilldeck.gateway._meta",
    "MAX_ID_CHARS": "skilldeck.gateway._meta",
    "MAX_LOAD_IDS": "skilldeck.gateway._meta",
    "MAX_PATH_CHARS": "skilldeck.gateway._meta",
    "MAX_QUERY_CHARS": "skilldeck.gateway._meta",
    "META": "skilldeck.gateway._meta",
    "READ_SKILL_FILE": "skilldeck.gateway._meta",
    "RedisActivationStore": "skilldeck.gateway._redis_store",
    "Source": "skilldeck.gateway._discovery",
    "tool_collisions": "skilldeck.gateway._names",
}

__all__ = [
    "FIND",
    "MAX_FIND_LIMIT",
    "MAX_ID_CHARS",
    "MAX_LOAD_IDS",
    "MAX_PATH_CHARS",
    "MAX_QUERY_CHARS",
    "META",
    "READ_SKILL_FILE",
    "ActivationStore",
    "AnonymousLearning",
    "GatewayMetrics",
    "RedisActivationStore",
    "Source",
    "audience_lines",
    "client_key",
    "tool_collisions",
]


__getattr__ = lazy_names(__name__, _WHERE)
