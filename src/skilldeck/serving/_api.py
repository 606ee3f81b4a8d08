"""What sibling packages may use of ``skilldeck.serving`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

if TYPE_CHECKING:
    from skilldeck.serving._audit import GRANTED, NOT_GRANTED, AuditLog
    from skilldeck.serving._clients import MAX_CONVERSATION_CHARS, client_key, per_connection
    from skilldeck.serving._connections import (
        DEFAULT_HTTP_LIMITS,
        DEFAULT_MAX_CONNECTIONS,
        DEFAULT_REQUEST_TIMEOUT,
        DEFAULT_SHUTDOWN_TIMEOUT,
        DEFAULT_STREAM_SHARE,
        HttpLimits,
    )
    from skilldeck.serving._console import CatalogView, Console, SkillRow, ToolRow, UpstreamRow, console_url
    from skilldeck.serving._counts import refusal_code
    from skilldeck.serving._health import Readiness
    from skilldeck.serving._identity import (
        CONVERSATION_META_KEY,
        RequestIdentity,
        caller_of,
        identify,
        is_legacy,
        locale_hint,
    )
    from skilldeck.serving._legacy import LegacyConnections
    from skilldeck.serving._metrics import LATENCY_BUCKETS, ReadAtScrape, Series, ServingMetrics, gauge, serve_metrics
    from skilldeck.serving._policy import (
        Caller,
        Match,
        Policy,
        PolicyName,
        RegistryRules,
        caller_for,
        load_policy,
        render_template,
    )
    from skilldeck.serving._redis_bus import MAX_SETTLE, RedisSubscriptionBus, shared_state_key
    from skilldeck.serving._runner import (
        bind,
        collect_less_often,
        collector_paused,
        drop_idle_tracing,
        event_loop_options,
        freeze_startup_heap,
        request_state_security,
        run_http,
    )
    from skilldeck.serving._scoping import LISTENING_CALLER, ScopedBus, scoped_events
    from skilldeck.serving._sessions import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT
    from skilldeck.serving._shutdown import ShutdownReport
    from skilldeck.serving._state_keys import KeyRing, sync_state_keys
    from skilldeck.serving._tokens import JwtVerifier
    from skilldeck.serving._tracing import (
        annotate,
        annotate_audit,
        configure_from_environment,
        honour_http_trace_context,
        span,
        traced,
    )

_WHERE = {
    "annotate": "skilldeck.serving._tracing",
    "annotate_audit": "skilldeck.serving._tracing",
    "AuditLog": "skilldeck.serving._audit",
    "bind": "skilldeck.serving._runner",
    "Caller": "skilldeck.serving._policy",
    "caller_for": "skilldeck.serving._policy",
    "caller_of": "skilldeck.serving._identity",
    "CatalogView": "skilldeck.serving._console",
    "client_key": "skilldeck.serving._clients",
    "collect_less_often": "skilldeck.serving._runner",
    "collector_paused": "skilldeck.serving._runner",
    "configure_from_environment": "skilldeck.serving._tracing",
    "Console": "skilldeck.serving._console",
    "console_url": "skilldeck.serving._console",
    "CONVERSATION_META_KEY": "skilldeck.serving._identity",
    "DEFAULT_HTTP_LIMITS": "skilldeck.serving._connections",
    "DEFAULT_MAX_CONNECTIONS": "skilldeck.serving._connections",
    "DEFAULT_MAX_SESSIONS": "skilldeck.serving._sessions",
    "DEFAULT_REQUEST_TIMEOUT": "skilldeck.serving._connections",
    "DEFAULT_SESSION_IDLE_TIMEOUT": "skilldeck.serving._sessions",
    "DEFAULT_SHUTDOWN_TIMEOUT": "skilldeck.serving._connections",
    "DEFAULT_STREAM_SHARE": "skilldeck.serving._connections",
    "drop_idle_tracing": "skilldeck.serving._runner",
    "event_loop_options": "skilldeck.serving._runner",
    "freeze_startup_heap": "skilldeck.serving._runner",
    "gauge": "skilldeck.serving._metrics",
    "GRANTED": "skilldeck.serving._audit",
    "honour_http_trace_context": "skilldeck.serving._tracing",
    "HttpLimits": "skilldeck.serving._connections",
    "identify": "skilldeck.serving._identity",
    "is_legacy": "skilldeck.serving._identity",
    "JwtVerifier": "skilldeck.serving._tokens",
    "KeyRing": "skilldeck.serving._state_keys",
    "LATENCY_BUCKETS": "skilldeck.serving._metrics",
    "LegacyConnections": "skilldeck.serving._legacy",
    "LISTENING_CALLER": "skilldeck.serving._scoping",
    "load_policy": "skilldeck.serving._policy",
    "locale_hint": "skilldeck.serving._identity",
    "Match": "skilldeck.serving._policy",
    "MAX_CONVERSATION_CHARS": "skilldeck.serving._clients",
    "MAX_SETTLE": "skilldeck.serving._redis_bus",
    "NOT_GRANTED": "skilldeck.serving._audit",
    "per_connection": "skilldeck.serving._clients",
    "Policy": "skilldeck.serving._policy",
    "PolicyName": "skilldeck.serving._policy",
    "ReadAtScrape": "skilldeck.serving._metrics",
    "Readiness": "skilldeck.serving._health",
    "RedisSubscriptionBus": "skilldeck.serving._redis_bus",
    "refusal_code": "skilldeck.serving._counts",
    "RegistryRules": "skilldeck.serving._policy",
    "render_template": "skilldeck.serving._policy",
    "request_state_security": "skilldeck.serving._runner",
    "RequestIdentity": "skilldeck.serving._identity",
    "run_http": "skilldeck.serving._runner",
    "scoped_events": "skilldeck.serving._scoping",
    "ScopedBus": "skilldeck.serving._scoping",
    "Series": "skilldeck.serving._metrics",
    "serve_metrics": "skilldeck.serving._metrics",
    "ServingMetrics": "skilldeck.serving._metrics",
    "shared_state_key": "skilldeck.serving._redis_bus",
    "ShutdownReport": "skilldeck.serving._shutdown",
    "SkillRow": "skilldeck.serving._console",
    "span": "skilldeck.serving._tracing",
    "sync_state_keys": "skilldeck.serving._state_keys",
    "ToolRow": "skilldeck.serving._console",
    "traced": "skilldeck.serving._tracing",
    "UpstreamRow": "skilldeck.serving._console",
}

__all__ = [
    "CONVERSATION_META_KEY",
    "DEFAULT_HTTP_LIMITS",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "DEFAULT_STREAM_SHARE",
    "GRANTED",
    "LATENCY_BUCKETS",
    "LISTENING_CALLER",
    "MAX_CONVERSATION_CHARS",
    "MAX_SETTLE",
    "NOT_GRANTED",
    "AuditLog",
    "Caller",
    "CatalogView",
    "Console",
    "HttpLimits",
    "JwtVerifier",
    "KeyRing",
    "LegacyConnections",
    "Match",
    "Policy",
    "PolicyName",
    "ReadAtScrape",
    "Readiness",
    "RedisSubscriptionBus",
    "RegistryRules",
    "RequestIdentity",
    "ScopedBus",
    "Series",
    "ServingMetrics",
    "ShutdownReport",
    "SkillRow",
    "ToolRow",
    "UpstreamRow",
    "annotate",
    "annotate_audit",
    "bind",
    "caller_for",
    "caller_of",
    "client_key",
    "collect_less_often",
    "collector_paused",
    "configure_from_environment",
    "console_url",
    "drop_idle_tracing",
    "event_loop_options",
    "freeze_startup_heap",
    "gauge",
    "honour_http_trace_context",
    "identify",
    "is_legacy",
    "load_policy",
    "locale_hint",
    "per_connection",
    "refusal_code",
    "render_template",
    "request_state_security",
    "run_http",
    "scoped_events",
    "serve_metrics",
    "shared_state_key",
    "span",
    "sync_state_keys",
    "traced",
]


__getattr__ = lazy_names(__name__, _WHERE)
