"""Context-aware skills: who a caller is, and what each skill shows and grants them. Pure.

Three hooks per skill, decided on the server for the authenticated caller:

* **admission** — is this skill offered to this caller at all?
* **instructions** — the ``SKILL.md`` (and other text files) rendered for the caller:
  ``{{ name }}`` placeholders are filled from the policy's variables for the caller's tenant and
  roles (and ``{{ tenant }}``, ``{{ locale }}``).
* **tool routing** — ``all`` of the skill's tools, only ``some`` of them, or ``none``
  (instruction-only). ``tools/list`` shows only tools an admitted route grants, and ``tools/call``
  of anything else is refused before it runs.

Identity comes only from the verified access token (subject, client id, scopes and claims such
as tenant and roles); on stdio, where there is no token, the policy's default identity applies.
Request ``_meta`` hints (under ``dev.skilldeck/``) may shape wording — the locale, one of the
policy's ``locales`` — but are never read for permissions.

Rendered skills are served as **per-audience static variants**, each with its own digests,
rather than as ``"dynamic"``: every caller with the same tenant, roles and scopes receives the
same bytes, so hosts keep full digest verification and content-bound approvals (a dynamic skill
would force every host to opt in to unverifiable content).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from skilldeck._documents import load_document
from skilldeck.errors import PolicyError

__all__ = [
    "HINTS_PREFIX",
    "Caller",
    "Match",
    "Policy",
    "PolicyError",
    "Route",
    "SkillPolicy",
    "caller_for",
    "caller_from_claims",
    "load_policy",
    "parse_policy",
    "render_template",
]

HINTS_PREFIX = "dev.skilldeck/"
"""Reverse-DNS prefix of the request ``_meta`` hints skilldeck reads (e.g. ``dev.skilldeck/locale``)."""

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_LOCALE_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,3}")
"""A BCP 47 language tag (the common subset)."""


@dataclass(frozen=True)
class Caller:
    """The caller a request is answered for. Built from the verified token, never from ``_meta``."""

    subject: str | None = None
    client_id: str | None = None
    tenant: str | None = None
    roles: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    authenticated: bool = False
    locale: str = "en"
    """A presentation hint (from ``_meta``): may change wording, never permissions."""

    @property
    def audience(self) -> tuple[Any, ...]:
        """What permissions and rendering depend on: callers with equal audiences see the same catalog."""
        return (self.tenant, tuple(sorted(self.roles)), tuple(sorted(self.scopes)), self.locale)


def caller_from_claims(
    *,
    subject: str | None,
    client_id: str | None,
    scopes: Iterable[str],
    claims: Mapping[str, Any] | None,
    tenant_claim: str = "tenant",
    roles_claim: str = "roles",
    locale: str = "en",
) -> Caller:
    """A :class:`Caller` from a verified token's fields (roles may be a list or a space-separated string)."""
    claims = claims or {}
    roles_value = claims.get(roles_claim, [])
    roles = roles_value.split() if isinstance(roles_value, str) else [str(r) for r in roles_value or []]
    tenant = claims.get(tenant_claim)
    return Caller(
        subject=subject,
        client_id=client_id,
        tenant=str(tenant) if tenant is not None else None,
        roles=frozenset(roles),
        scopes=frozenset(scopes),
        authenticated=True,
        locale=locale,
    )


def caller_for(policy: Policy | None, token: Any, locale_hint: object = None) -> Caller:
    """Who a request is answered for: the verified token (an ``AccessToken``-like object), else the
    policy's default identity. Only a locale the policy lists is honoured: the hint is anyone's."""
    locale = policy.locale_for(locale_hint) if policy else "en"
    if token is not None:
        return caller_from_claims(
            subject=token.subject,
            client_id=token.client_id,
            scopes=token.scopes,
            claims=token.claims,
            tenant_claim=policy.tenant_claim if policy else "tenant",
            roles_claim=policy.roles_claim if policy else "roles",
            locale=locale,
        )
    identity = policy.default_identity if policy else Caller()
    return replace(identity, locale=locale)


@dataclass(frozen=True)
class Match:
    """A condition on the caller: every listed dimension must match (any value within it)."""

    tenants: frozenset[str] | None = None
    roles: frozenset[str] | None = None
    scopes: frozenset[str] | None = None

    def matches(self, caller: Caller) -> bool:
        if self.tenants is not None and caller.tenant not in self.tenants:
            return False
        if self.roles is not None and not (self.roles & caller.roles):
            return False
        return not (self.scopes is not None and not (self.scopes & caller.scopes))


Route = Literal["all", "none"] | frozenset[str]
"""Tool routing: every tool of the skill, none (instruction-only), or this set of tool names."""


@dataclass(frozen=True)
class SkillPolicy:
    """What one skill shows and grants, rule by rule (first matching rule wins)."""

    admit: tuple[Match, ...] = ()
    """Callers the skill is offered to (any match); empty means everyone."""
    tools: tuple[str, ...] = ()
    """The skill's tools (the set ``all`` means)."""
    routes: tuple[tuple[Match, Route], ...] = ()
    """(condition, route); no matching rule means ``none``. No rules at all means ``all``."""
    variables: tuple[tuple[Match, Mapping[str, str]], ...] = ()
    """(condition, values) for ``{{ name }}`` placeholders; every matching rule contributes, later wins."""
    instruction_only: bool = False
    """Offered even when it routes no tools to the caller."""

    def admits(self, caller: Caller) -> bool:
        return not self.admit or any(m.matches(caller) for m in self.admit)

    def route(self, caller: Caller) -> frozenset[str]:
        if not self.routes:
            return frozenset(self.tools)
        for condition, route in self.routes:
            if condition.matches(caller):
                if route == "all":
                    return frozenset(self.tools)
                if route == "none":
                    return frozenset()
                return frozenset(route) & frozenset(self.tools)
        return frozenset()

    def values(self, caller: Caller) -> dict[str, str]:
        merged: dict[str, str] = {}
        for condition, values in self.variables:
            if condition.matches(caller):
                merged.update(values)
        return merged


@dataclass(frozen=True)
class Policy:
    """The declarative policy of a server: per-skill rules, public tools, and the stdio identity."""

    skills: Mapping[str, SkillPolicy] = field(default_factory=dict)
    public_tools: frozenset[str] = frozenset()
    """Tools every caller may list and call, whatever skills they see."""
    default_identity: Caller = field(default_factory=Caller)
    tenant_claim: str = "tenant"
    roles_claim: str = "roles"
    locales: tuple[str, ...] = ("en",)
    """The locales a ``dev.skilldeck/locale`` hint may pick; the first is the default.

    The hint comes from anyone, and every locale is one more rendered variant of the catalog,
    so only these are honoured: any other hint is answered in the default locale.
    """

    def skill(self, name: str) -> SkillPolicy | None:
        return self.skills.get(name)

    def locale_for(self, hint: object) -> str:
        """The configured locale ``hint`` names (case-insensitively), else the default (the first one)."""
        if isinstance(hint, str):
            wanted = hint.lower()
            for locale in self.locales:
                if locale.lower() == wanted:
                    return locale
        return self.locales[0]

    def validate_against(self, skill_names: Iterable[str], tool_names: Iterable[str]) -> None:
        """Refuse a policy that names skills or tools the server does not serve.

        Raises:
            PolicyError: listing every unknown name and where it appears.
        """
        skills, tools = set(skill_names), set(tool_names)
        problems = [f"skills.{name}: no such skill is served" for name in self.skills if name not in skills]
        for name, rule in self.skills.items():
            problems += [f"skills.{name}.tools: no such tool {t!r}" for t in rule.tools if t not in tools]
            for i, (_, route) in enumerate(rule.routes):
                if isinstance(route, frozenset):
                    problems += [
                        f"skills.{name}.routes[{i}]: {t!r} is not one of the skill's tools"
                        for t in sorted(route - set(rule.tools))
                    ]
        problems += [f"public_tools: no such tool {t!r}" for t in sorted(self.public_tools - tools)]
        if problems:
            raise PolicyError("policy names what the server does not serve: " + "; ".join(problems))


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """A policy from a YAML (or JSON) file, read with safe loading.

    Raises:
        PolicyError: the file is missing, not YAML, or not a valid policy (naming the field).
    """
    return load_document(path, parse_policy, PolicyError, what="policy", yaml_syntax=True)


def render_template(text: str, values: Mapping[str, str]) -> str:
    """Fill ``{{ name }}`` placeholders; unknown names are left as written."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


# -- parsing the YAML/JSON document -------------------------------------------------------------------


def _names(where: str, value: object) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset([value])
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    raise PolicyError(f"{where}: expected a name or a list of names")


def _match(where: str, raw: object) -> Match:
    if raw is None:
        return Match()
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{where}: expected a mapping with tenants, roles or scopes")
    unknown = set(raw) - {"tenant", "tenants", "role", "roles", "scope", "scopes"}
    if unknown:
        raise PolicyError(f"{where}: unknown condition {sorted(unknown)[0]!r} (use tenants, roles or scopes)")

    def pick(*keys: str) -> frozenset[str] | None:
        for key in keys:
            if key in raw:
                return _names(f"{where}.{key}", raw[key])
        return None

    return Match(tenants=pick("tenant", "tenants"), roles=pick("role", "roles"), scopes=pick("scope", "scopes"))


def _only(where: str, raw: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(raw) - allowed
    if unknown:
        raise PolicyError(f"{where}: unknown key {sorted(unknown)[0]!r} (expected {', '.join(sorted(allowed))})")


def _value(value: object) -> str:
    if isinstance(value, bool):  # YAML true/false read back as the JSON words, not Python's
        return "true" if value else "false"
    return str(value)


def _route(where: str, raw: object) -> Route:
    if raw in ("all", "none"):
        return raw
    if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        return frozenset(raw)
    raise PolicyError(f"{where}: 'allow' must be 'all', 'none' or a list of tool names")


def parse_policy(data: object) -> Policy:
    """A :class:`Policy` from its YAML/JSON form (see the README for a worked example).

    Raises:
        PolicyError: naming the field that is wrong.
    """
    if not isinstance(data, Mapping):
        raise PolicyError("a policy is a mapping with 'skills' (and optionally 'public_tools', 'default_identity')")
    unknown = set(data) - {"skills", "public_tools", "default_identity", "claims", "locales"}
    if unknown:
        raise PolicyError(f"unknown top-level key {sorted(unknown)[0]!r}")
    identity_raw = data.get("default_identity") or {}
    if not isinstance(identity_raw, Mapping):
        raise PolicyError("default_identity: expected a mapping")
    _only("default_identity", identity_raw, {"subject", "tenant", "roles", "scopes"})
    identity = Caller(
        subject=str(identity_raw.get("subject", "local")),
        tenant=str(identity_raw["tenant"]) if identity_raw.get("tenant") is not None else None,
        roles=_names("default_identity.roles", identity_raw.get("roles", [])),
        scopes=_names("default_identity.scopes", identity_raw.get("scopes", [])),
        authenticated=False,
    )
    claims = data.get("claims") or {}
    if not isinstance(claims, Mapping):
        raise PolicyError("claims: expected a mapping like {tenant: tenant, roles: roles}")
    _only("claims", claims, {"tenant", "roles"})
    skills: dict[str, SkillPolicy] = {}
    raw_skills = data.get("skills") or {}
    if not isinstance(raw_skills, Mapping):
        raise PolicyError("skills: expected a mapping of skill names to rules")
    for name, raw in raw_skills.items():
        where = f"skills.{name}"
        if not isinstance(raw, Mapping):
            raise PolicyError(f"{where}: expected a mapping")
        unknown = set(raw) - {"admit", "tools", "routes", "variables", "instruction_only"}
        if unknown:
            raise PolicyError(f"{where}: unknown key {sorted(unknown)[0]!r}")
        admit_raw = raw.get("admit", [])
        admit_list = admit_raw if isinstance(admit_raw, list) else [admit_raw]
        routes = []
        for i, rule in enumerate(raw.get("routes", []) or []):
            if not isinstance(rule, Mapping) or "allow" not in rule:
                raise PolicyError(f"{where}.routes[{i}]: expected {{when: ..., allow: all | none | [tools]}}")
            _only(f"{where}.routes[{i}]", rule, {"when", "allow"})
            routes.append(
                (
                    _match(f"{where}.routes[{i}].when", rule.get("when")),
                    _route(f"{where}.routes[{i}].allow", rule["allow"]),
                )
            )
        variables = []
        for i, rule in enumerate(raw.get("variables", []) or []):
            values = rule.get("set") if isinstance(rule, Mapping) else None
            if not isinstance(values, Mapping) or not all(isinstance(v, str | int | float) for v in values.values()):
                raise PolicyError(f"{where}.variables[{i}]: expected {{when: ..., set: {{name: value}}}}")
            _only(f"{where}.variables[{i}]", rule, {"when", "set"})
            variables.append(
                (_match(f"{where}.variables[{i}].when", rule.get("when")), {k: _value(v) for k, v in values.items()})
            )
        instruction_only = raw.get("instruction_only", False)
        if not isinstance(instruction_only, bool):
            raise PolicyError(f"{where}.instruction_only: expected true or false")
        skills[str(name)] = SkillPolicy(
            admit=tuple(_match(f"{where}.admit[{i}]", m) for i, m in enumerate(admit_list)),
            tools=tuple(sorted(_names(f"{where}.tools", raw.get("tools", [])))),
            routes=tuple(routes),
            variables=tuple(variables),
            instruction_only=instruction_only,
        )
    locales = _locales(data.get("locales", ["en"]))
    return Policy(
        skills=skills,
        public_tools=_names("public_tools", data.get("public_tools", [])),
        default_identity=replace(identity, locale=locales[0]),
        tenant_claim=str(claims.get("tenant", "tenant")),
        roles_claim=str(claims.get("roles", "roles")),
        locales=locales,
    )


def _locales(raw: object) -> tuple[str, ...]:
    """``locales``: a non-empty list of distinct BCP 47 tags (``en``, ``de-CH``), the default first."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(v, str) for v in raw):
        raise PolicyError("locales: expected a list of language tags such as [en, de-CH] (the first is the default)")
    seen: set[str] = set()
    for tag in raw:
        if not _LOCALE_TAG.fullmatch(tag):
            raise PolicyError(f"locales: {tag!r} is not a language tag such as en or de-CH")
        if tag.lower() in seen:
            raise PolicyError(f"locales: {tag!r} is listed twice")
        seen.add(tag.lower())
    return tuple(raw)
