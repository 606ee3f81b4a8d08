"""What ``skilldeck gateway --check`` prints, and the checks of ``--pin`` and ``--grant``.

:func:`identities` are the callers a policy tells apart: the default identity (stdio, or HTTP
without a token when no token is required), a token with no tenant, roles or scopes, and one caller
per distinct condition the policy writes (``admit:`` and ``routes:`` ``when:``), holding exactly
what that condition asks for. :func:`audience_lines` says, for each, how many skills and tools of
each upstream it would be offered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from skilldeck._suggest import did_you_mean
from skilldeck.gateway._service import GatewayService
from skilldeck.host import Host
from skilldeck.serving._api import Caller, Match, Policy

__all__ = ["audience_lines", "flag_warnings", "identities"]


def _conditions(policy: Policy) -> list[Match]:
    seen: list[Match] = []
    for rule in policy.skills.values():
        for match in (*rule.admit, *(condition for condition, _ in rule.routes)):
            if match != Match() and match not in seen:
                seen.append(match)
    return seen


def _describe(match: Match) -> str:
    parts = [
        f"{what}={','.join(sorted(values))}"
        for what, values in (("tenant", match.tenants), ("roles", match.roles), ("scopes", match.scopes))
        if values is not None
    ]
    return " ".join(parts)


def identities(policy: Policy | None) -> list[tuple[str, Caller]]:
    """The callers ``policy`` tells apart, each with a name to print (see the module docs)."""
    if policy is None:
        return [("anyone (no policy)", Caller())]
    default = policy.default_identity
    found = [
        (f"default identity (subject {default.subject}; stdio, or no token)", default),
        ("a token with no tenant, roles or scopes", Caller(authenticated=True, locale=default.locale)),
    ]
    for match in _conditions(policy):
        caller = Caller(
            tenant=min(match.tenants) if match.tenants else None,
            roles=match.roles or frozenset(),
            scopes=match.scopes or frozenset(),
            authenticated=True,
            locale=default.locale,
        )
        found.append((f"a token with {_describe(match)}", caller))
    return found


def audience_lines(service: GatewayService) -> list[str]:
    """Per identity, the skills and tools of each connected upstream it would be offered."""
    labels = sorted(service.upstreams.connected)
    lines = []
    for name, caller in identities(service.policy):
        cards = service.index_for(caller).cards.cards
        skills = Counter(c.server for c in cards if c.kind == "skill")
        tools = Counter(c.server for c in cards if c.kind == "tool")
        counts = "; ".join(f"{label}: {skills[label]} skills, {tools[label]} tools" for label in labels)
        lines.append(f"{name}: {counts or 'no upstream connected'}")
    for label, failure in sorted(service.upstreams.failures.items()):
        lines.append(f"unavailable [{label}]: {failure.reason}")
    return lines


def flag_warnings(
    pins: Iterable[tuple[str, str]], grants: Iterable[tuple[str, str]], host: Host, labels: Sequence[str]
) -> list[str]:
    """``--pin`` and ``--grant`` entries naming an upstream not configured, or a tool it does not list."""
    warnings = []
    for label, tool in pins:
        if label not in labels:
            warnings.append(f"--pin {label}/{tool}: no upstream is labelled {label!r}{did_you_mean(label, labels)}")
        elif label not in host.sessions:
            warnings.append(f"--pin {label}/{tool}: not checked: upstream {label!r} is unavailable")
        else:
            names = [t.name for t in host.tools(label)]
            if tool not in names:
                warnings.append(f"--pin {label}/{tool}: {label!r} lists no such tool{did_you_mean(tool, names)}")
    for grant in grants:
        for label in grant:
            if label not in labels:
                warnings.append(
                    f"--grant {grant[0]}:{grant[1]}: no upstream is labelled {label!r}{did_you_mean(label, labels)}"
                )
    return warnings
