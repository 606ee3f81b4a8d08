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

import fnmatch
import itertools
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from skilldeck._documents import load_document
from skilldeck._suggest import did_you_mean
from skilldeck._validation import Model, parse
from skilldeck.errors import PolicyError, shorten

__all__ = [
    "HINTS_PREFIX",
    "MAX_CLAIM_PATH",
    "MAX_CLAIM_WARNINGS",
    "Caller",
    "ClaimPath",
    "Match",
    "Policy",
    "PolicyError",
    "PolicyName",
    "RegistryRules",
    "Route",
    "SkillPolicy",
    "caller_for",
    "caller_from_claims",
    "claim_value",
    "load_policy",
    "parse_policy",
    "render_template",
]

_log = logging.getLogger(__name__)

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


ClaimPath = str | tuple[str, ...]
"""Where a token carries a value: a claim's name, or the keys down to it through nested claims.

A name is looked up as a top-level claim first; only when no claim has that exact name and the name
holds a dot is it read as a path (``realm_access.roles``: Keycloak's realm roles). A tuple is always a
path (``("resource_access", "my.app", "roles")``, for keys that hold dots themselves)."""

MAX_CLAIM_WARNINGS = 32
"""Kinds of misfit between tokens and a policy's ``claims`` logged, once each, per policy."""

MAX_CLAIM_PATH = 8
"""Keys a claim path may have (identity providers nest roles at most three deep)."""


def claim_value(claims: Mapping[str, Any], path: ClaimPath) -> Any:
    """The value at ``path`` in ``claims``; ``None`` when a key is missing or a step is not an object."""
    if isinstance(path, str):
        if path in claims or "." not in path:
            return claims.get(path)
        path = tuple(path.split("."))
    value: Any = claims
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def shown_claim(path: ClaimPath) -> str:
    """``path`` as a policy file writes it."""
    return path if isinstance(path, str) else ".".join(path)


def _scalar(value: Any) -> str | None:
    """A role or a tenant as a string: a string, or a number (the tenant ``42`` is ``"42"``); else ``None``."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _kind(value: Any) -> str:
    """What JSON calls ``value``'s type."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else "a list" if isinstance(value, list) else "a value"


def _roles_from(value: Any, path: ClaimPath) -> tuple[frozenset[str], str | None]:
    """The roles a claim's value holds, and why some or all were not taken (``None`` when all were).

    A string holds space-separated roles; a list holds one role per item. An object is never read as
    roles: its keys are not roles (Keycloak's ``resource_access`` maps client ids to objects that hold
    them)."""
    if value is None:
        return frozenset(), None
    if isinstance(value, str):
        return frozenset(value.split()), None
    if isinstance(value, list):
        roles = [role for role in map(_scalar, value) if role is not None]
        if len(roles) == len(value):
            return frozenset(roles), None
        return frozenset(roles), f"the claim {shown_claim(path)!r} holds items that are not strings; they are not roles"
    why = f"the claim {shown_claim(path)!r} is {_kind(value)}, not a list of roles or a space-separated string"
    if isinstance(value, Mapping) and (inside := _roles_elsewhere(value)) is not None:
        why += f" (to read the list inside it: claims: {{roles: {shown_claim(path)}.{inside}}})"
    return frozenset(), why + "; the caller has no roles"


_ROLE_KEYS = ("roles", "groups")
"""The names identity providers give a list of roles: ``roles`` (Keycloak's ``realm_access.roles``,
Entra ID) and ``groups`` (Okta)."""

_ROLES_SEARCH_KEYS = 256
"""Keys of a token looked at, at most, for a list of roles the policy does not name (once per request
whose roles claim is missing: a bound on what a large token costs)."""


def _roles_elsewhere(claims: Mapping[str, Any], depth: int = 3) -> str | None:
    """The dotted path of a list named ``roles`` or ``groups`` in ``claims``, the shallowest first,
    ``depth`` keys deep at most, looking at :data:`_ROLES_SEARCH_KEYS` keys in all; else ``None``. The
    path is cut at 200 characters: its keys are the issuer's text, and it goes into a log line."""
    level: list[tuple[str, Mapping[str, Any]]] = [("", claims)]
    budget = _ROLES_SEARCH_KEYS
    for _ in range(depth):
        deeper: list[tuple[str, Mapping[str, Any]]] = []
        for prefix, claims_here in level:
            for key, value in itertools.islice(claims_here.items(), budget):
                budget -= 1
                if key in _ROLE_KEYS and isinstance(value, list):
                    return shorten(prefix + key, 200)
                if isinstance(value, Mapping):
                    deeper.append((f"{prefix}{key}.", value))
            if budget <= 0:
                return None
        level = deeper
    return None


def caller_from_claims(
    *,
    subject: str | None,
    client_id: str | None,
    scopes: Iterable[str],
    claims: Mapping[str, Any] | None,
    tenant_claim: ClaimPath = "tenant",
    roles_claim: ClaimPath = "roles",
    locale: str = "en",
    warn: Callable[[str], None] | None = None,
) -> Caller:
    """A :class:`Caller` from a verified token's fields.

    The tenant and the roles are read at their claim paths (:data:`ClaimPath`): the roles from a list
    or a space-separated string, the tenant from a string or a number. A value of another shape gives
    no tenant or no roles, never its keys or its ``repr``, and ``warn`` is told why, naming the claim.
    """
    claims = claims or {}
    roles, why = _roles_from(claim_value(claims, roles_claim), roles_claim)
    tenant_value = claim_value(claims, tenant_claim)
    tenant = _scalar(tenant_value)
    if warn is not None:
        if why is not None:
            warn(why)
        if tenant_value is not None and tenant is None:
            warn(
                f"the claim {shown_claim(tenant_claim)!r} is {_kind(tenant_value)}, not a string or a number; "
                "the caller has no tenant"
            )
    return Caller(
        subject=subject,
        client_id=client_id,
        tenant=tenant,
        roles=roles,
        scopes=frozenset(scopes),
        authenticated=True,
        locale=locale,
    )


def caller_for(policy: Policy | None, token: Any, locale_hint: object = None) -> Caller:
    """Who a request is answered for: the verified token (an ``AccessToken``-like object), else the
    policy's default identity. Only a locale the policy lists is honoured: the hint is anyone's."""
    locale = policy.locale_for(locale_hint) if policy else "en"
    if token is not None:
        caller = caller_from_claims(
            subject=token.subject,
            client_id=token.client_id,
            scopes=token.scopes,
            claims=token.claims,
            tenant_claim=policy.tenant_claim if policy else "tenant",
            roles_claim=policy.roles_claim if policy else "roles",
            locale=locale,
            warn=policy.warn_once if policy else None,
        )
        if policy is not None:
            policy.missing_claims(token.claims or {})
        return caller
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

    def conditions(self) -> list[Match]:
        """Every condition of the rule: admission, routes and variables."""
        return [*self.admit, *(m for m, _ in self.routes), *(m for m, _ in self.variables)]

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


REGISTRY_TYPES = ("npm", "pypi", "oci")
"""The package registry types a policy's ``registry.registry_types`` may name (those skilldeck runs)."""


@dataclass(frozen=True)
class RegistryRules:
    """A gateway policy's ``registry:`` section: who may add servers from a catalog, and which.

    Under a policy nobody may add a server unless ``add`` admits the caller; ``namespaces`` (globs on
    the server name, ``io.github.modelcontextprotocol/*``), ``registry_types`` and ``remote_hosts``
    (globs on the host) narrow what may be added, each only when given.
    """

    add: tuple[Match, ...] = ()
    """Callers who may add (any match); empty: nobody."""
    namespaces: tuple[str, ...] = ()
    registry_types: frozenset[str] = frozenset()
    remote_hosts: tuple[str, ...] = ()

    def may_add(self, caller: Caller) -> bool:
        return any(m.matches(caller) for m in self.add)

    def name_allowed(self, name: str) -> bool:
        return not self.namespaces or any(fnmatch.fnmatchcase(name, p) for p in self.namespaces)

    def type_allowed(self, registry_type: str) -> bool:
        return not self.registry_types or registry_type in self.registry_types

    def host_allowed(self, host: str) -> bool:
        return not self.remote_hosts or any(fnmatch.fnmatchcase(host.lower(), p.lower()) for p in self.remote_hosts)


@dataclass(frozen=True)
class Policy:
    """The declarative policy of a server: per-skill rules, public tools, and the stdio identity."""

    skills: Mapping[str, SkillPolicy] = field(default_factory=dict)
    public_tools: frozenset[str] = frozenset()
    """Tools every caller may list and call, whatever skills they see; at a gateway ``LABEL/*`` stands for
    every tool of that upstream (:attr:`public_labels`). A tool neither public nor routed by an admitted
    skill's rule is hidden: under a policy, tools are denied unless granted."""
    default_identity: Caller = field(default_factory=Caller)
    tenant_claim: ClaimPath = "tenant"
    roles_claim: ClaimPath = "roles"
    locales: tuple[str, ...] = ("en",)
    """The locales a ``dev.skilldeck/locale`` hint may pick; the first is the default.

    The hint comes from anyone, and every locale is one more rendered variant of the catalog,
    so only these are honoured: any other hint is answered in the default locale.
    """
    registry: RegistryRules = field(default_factory=RegistryRules)
    """A gateway's ``registry:`` section: who may add servers from its catalogs, and which."""
    _warned: set[str] = field(default_factory=set, init=False, compare=False, repr=False)

    def warn_once(self, why: str, detail: str = "") -> None:
        """Log ``why`` (a verified token's claims do not fit :attr:`tenant_claim` or :attr:`roles_claim`)
        the first time it happens under this policy: once per ``why``, and at most
        :data:`MAX_CLAIM_WARNINGS` of them, so a misconfigured claim is said without a line per request.
        ``detail`` (what this one token shows) is said with it but does not make it another kind."""
        if why in self._warned or len(self._warned) >= MAX_CLAIM_WARNINGS:
            return
        self._warned.add(why)
        _log.warning("the policy's claims do not fit this token: %s%s (said once)", why, detail)

    @cached_property
    def public_labels(self) -> frozenset[str]:
        """The upstreams (at a gateway) every tool of which is public: ``LABEL/*`` in :attr:`public_tools`."""
        return frozenset(t[:-2] for t in self.public_tools if t.endswith("/*") and t[:-2] and "/" not in t[:-2])

    @cached_property
    def conditions_on(self) -> frozenset[str]:
        """The dimensions (``tenants``, ``roles``, ``scopes``) some condition of this policy names."""
        matches = [m for rule in self.skills.values() for m in rule.conditions()]
        return frozenset(d for d in ("tenants", "roles", "scopes") if any(getattr(m, d) for m in matches))

    def missing_claims(self, claims: Mapping[str, Any]) -> None:
        """Say once when a token lacks the tenant or roles claim this policy's conditions depend on.

        A token may lack them for a good reason (a user of no tenant), so this is a hint, said once per
        policy: the first such token's claim names go with it, since a claim named wrongly in ``claims``
        (``tenant`` where the provider writes ``org_id``) otherwise shows only as callers who see nothing."""
        for dimension, path in (("tenants", self.tenant_claim), ("roles", self.roles_claim)):
            if dimension not in self.conditions_on or claim_value(claims, path) is not None:
                continue
            if dimension == "roles" and (elsewhere := _roles_elsewhere(claims)) is not None:
                self.warn_once(
                    f"this token has no claim {shown_claim(path)!r} but carries roles at {elsewhere} "
                    f"(to read them: claims: {{roles: {elsewhere}}})"
                )
                continue
            names = [shorten(str(name), 40) for name in itertools.islice(claims, 24)]
            more = ", ..." if len(claims) > len(names) else ""
            self.warn_once(
                f"a token has no claim {shown_claim(path)!r}, so the policy's {dimension} conditions match "
                "nothing of it; if the provider puts it elsewhere, name that in the policy's claims",
                f" (this token's claims: {', '.join(names)}{more})",
            )

    def skill(self, name: str) -> SkillPolicy | None:
        """The rule written for ``name`` exactly (see :meth:`rule_for` for a gateway's ids)."""
        return self.skills.get(name)

    def rule_for(self, skill_id: str) -> SkillPolicy | None:
        """The rule that decides skill ``skill_id``: its own, else, for a gateway's ``LABEL/NAME``, ``LABEL/*``.

        ``LABEL/*`` covers every skill, prompt and resource of that upstream without a rule of its own.
        """
        found = self.skills.get(skill_id)
        if found is None and "/" in skill_id:
            found = self.skills.get(skill_id.split("/", 1)[0] + "/*")
        return found

    def locale_for(self, hint: object) -> str:
        """The configured locale ``hint`` names (case-insensitively), else the default (the first one)."""
        if isinstance(hint, str):
            wanted = hint.lower()
            for locale in self.locales:
                if locale.lower() == wanted:
                    return locale
        return self.locales[0]

    def names(self) -> list[PolicyName]:
        """Every skill (rule key) and tool the policy names, with where it names it, in file order."""
        found = [PolicyName(f"skills.{name}", name, "rule") for name in self.skills]
        for name, rule in self.skills.items():
            found += [PolicyName(f"skills.{name}.tools", t, "tool") for t in rule.tools]
        found += [PolicyName("public_tools", t, "tool") for t in sorted(self.public_tools)]
        return found

    def route_problems(self) -> list[str]:
        """Routes that name a tool their own skill does not list (wrong whatever the server serves)."""
        problems: list[str] = []
        for name, rule in self.skills.items():
            for i, (_, route) in enumerate(rule.routes):
                if isinstance(route, frozenset):
                    problems += [
                        f"skills.{name}.routes[{i}]: {t!r} is not one of the skill's tools"
                        for t in sorted(route - set(rule.tools))
                    ]
        return problems

    def validate_against(self, skill_names: Iterable[str], tool_names: Iterable[str]) -> None:
        """Refuse a policy that names skills or tools the server does not serve.

        Raises:
            PolicyError: listing every unknown name and where it appears.
        """
        known = {"rule": set(skill_names), "tool": set(tool_names)}
        problems = [n.unmatched(known[n.kind]) for n in self.names() if n.name not in known[n.kind]]
        problems += self.route_problems()
        if problems:
            raise PolicyError("policy names what the server does not serve: " + "; ".join(problems))


@dataclass(frozen=True)
class PolicyName:
    """One name a policy uses: a rule's key (a skill, or at a gateway also a prompt, resource or
    ``LABEL/*``) or a tool, and where in the policy it stands."""

    where: str
    name: str
    kind: Literal["rule", "tool"]

    def unmatched(self, known: Iterable[str], *, rule_is: str = "skill") -> str:
        """The line saying this name matches nothing served, with the closest of ``known`` as a suggestion."""
        hint = did_you_mean(self.name, known)
        if self.kind == "rule":
            return f"{self.where}: no such {rule_is} is served{hint}"
        return f"{self.where}: no such tool {self.name!r}{hint}"


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


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, str) else value


def _empty_as_none(value: object) -> object:
    return value or None  # ``key:`` with nothing after it, or an empty mapping or list, means the default


def _value(value: object) -> object:
    if isinstance(value, bool):  # YAML true/false read back as the JSON words, not Python's
        return "true" if value else "false"
    return str(value) if isinstance(value, int | float) else value


_Names = Annotated[list[str], BeforeValidator(_one_or_many)]
_NAMES = "a name or a list of names"


class _Match(Model):
    expected = "a mapping with tenants, roles or scopes"
    tenant: _Names | None = Field(default=None, description=_NAMES)
    tenants: _Names | None = Field(default=None, description=_NAMES)
    role: _Names | None = Field(default=None, description=_NAMES)
    roles: _Names | None = Field(default=None, description=_NAMES)
    scope: _Names | None = Field(default=None, description=_NAMES)
    scopes: _Names | None = Field(default=None, description=_NAMES)

    def build(self) -> Match:
        def pick(one: list[str] | None, many: list[str] | None) -> frozenset[str] | None:
            chosen = one if one is not None else many
            return None if chosen is None else frozenset(chosen)

        return Match(pick(self.tenant, self.tenants), pick(self.role, self.roles), pick(self.scope, self.scopes))


def _match(rule: _Match | None) -> Match:
    return rule.build() if rule is not None else Match()


class _RouteRule(Model):
    expected = "{when: ..., allow: all | none | [tools]}"
    when: _Match | None = None
    allow: Literal["all", "none"] | list[str] = Field(
        union_mode="left_to_right", description="'all', 'none' or a list of tool names"
    )


class _VariablesRule(Model):
    expected = "{when: ..., set: {name: value}}"
    when: _Match | None = None
    set: dict[Any, Annotated[str, BeforeValidator(_value)]] = Field(description="a mapping of names to values")


class _SkillRule(Model):
    expected = "a mapping of admit, tools, routes, variables, instruction_only"
    admit: Annotated[list[_Match | None], BeforeValidator(lambda v: v if isinstance(v, list) else [v])] = Field(
        default=[], description="a mapping with tenants, roles or scopes, or a list of them"
    )
    tools: _Names = Field(default=[], description=_NAMES)
    routes: Annotated[list[_RouteRule], BeforeValidator(lambda v: v or [])] = Field(
        default=[], description="a list of {when: ..., allow: all | none | [tools]}"
    )
    variables: Annotated[list[_VariablesRule], BeforeValidator(lambda v: v or [])] = Field(
        default=[], description="a list of {when: ..., set: {name: value}}"
    )
    instruction_only: bool = Field(default=False, description="true or false")

    def build(self) -> SkillPolicy:
        return SkillPolicy(
            admit=tuple(_match(m) for m in self.admit),
            tools=tuple(sorted(set(self.tools))),
            routes=tuple(
                (_match(r.when), r.allow if isinstance(r.allow, str) else frozenset(r.allow)) for r in self.routes
            ),
            variables=tuple((_match(v.when), {str(k): x for k, x in v.set.items()}) for v in self.variables),
            instruction_only=self.instruction_only,
        )


class _Identity(Model):
    subject: Any = "local"
    tenant: Any = None
    roles: _Names = Field(default=[], description=_NAMES)
    scopes: _Names = Field(default=[], description=_NAMES)


def _claim_path(value: object) -> ClaimPath:
    """``claims.tenant`` / ``claims.roles``: a claim's name (a dotted path when no claim has that name),
    or a list of keys down through nested claims."""
    if isinstance(value, str):
        keys = value.split(".")
        if not value or "" in keys:
            raise ValueError(f"{value!r} has an empty key; write the keys as a list, e.g. [realm_access, roles]")
    elif isinstance(value, list) and value and all(isinstance(key, str) and key for key in value):
        keys = value
    else:
        raise ValueError("must be a claim's name (realm_access.roles reads nested claims) or a list of keys")
    if len(keys) > MAX_CLAIM_PATH:
        raise ValueError(f"a claim path has at most {MAX_CLAIM_PATH} keys, not {len(keys)}")
    return value if isinstance(value, str) else tuple(value)


_Claim = Annotated[Any, AfterValidator(_claim_path)]
_CLAIM = "a claim's name, a dotted path (realm_access.roles) or a list of keys"


class _Claims(Model):
    tenant: _Claim = Field(default="tenant", description=_CLAIM)
    roles: _Claim = Field(default="roles", description=_CLAIM)


def _locales(tags: list[str]) -> list[str]:
    """``locales``: distinct BCP 47 tags (``en``, ``de-CH``), the default first."""
    seen: set[str] = set()
    for tag in tags:
        if not _LOCALE_TAG.fullmatch(tag):
            raise ValueError(f"{tag!r} is not a language tag such as en or de-CH")
        if tag.lower() in seen:
            raise ValueError(f"{tag!r} is listed twice")
        seen.add(tag.lower())
    return tags


_NAMESPACE = re.compile(r"[A-Za-z0-9.*?-]+/[A-Za-z0-9._*?-]+")
_HOST = re.compile(r"[A-Za-z0-9.*?-]+")


def _patterns(pattern: re.Pattern[str], what: str) -> Callable[[list[str]], list[str]]:
    def check(values: list[str]) -> list[str]:
        for value in values:
            if not pattern.fullmatch(value):
                raise ValueError(f"{value!r} is not {what}")
        return values

    return check


def _registry_types(values: list[str]) -> list[str]:
    for value in values:
        if value not in REGISTRY_TYPES:
            raise ValueError(f"{value!r} is not a registry type skilldeck runs ({', '.join(REGISTRY_TYPES)})")
    return values


class _Registry(Model):
    expected = "a mapping with add, namespaces, registry_types, remote_hosts"
    add: Annotated[list[_Match | None], BeforeValidator(lambda v: v if isinstance(v, list) else [v])] = Field(
        default=[], description="a mapping with tenants, roles or scopes, or a list of them"
    )
    namespaces: Annotated[
        _Names, AfterValidator(_patterns(_NAMESPACE, "a server name or a glob such as io.github.example/*"))
    ] = Field(default=[], description=_NAMES)
    registry_types: Annotated[_Names, AfterValidator(_registry_types)] = Field(
        default=[], description=f"a list of registry types ({', '.join(REGISTRY_TYPES)})"
    )
    remote_hosts: Annotated[_Names, AfterValidator(_patterns(_HOST, "a host name or a glob such as *.example.com"))] = (
        Field(default=[], description=_NAMES)
    )

    def build(self) -> RegistryRules:
        return RegistryRules(
            add=tuple(_match(m) for m in self.add if m is not None),
            namespaces=tuple(self.namespaces),
            registry_types=frozenset(self.registry_types),
            remote_hosts=tuple(self.remote_hosts),
        )


class _Policy(Model):
    expected = (
        "a mapping with 'skills' (and optionally 'public_tools', 'default_identity', 'claims', 'locales', 'registry')"
    )
    skills: Annotated[dict[Any, _SkillRule], BeforeValidator(lambda v: v or {})] = Field(
        default={}, description="a mapping of skill names to rules"
    )
    public_tools: _Names = Field(default=[], description=_NAMES)
    default_identity: Annotated[_Identity | None, BeforeValidator(_empty_as_none)] = Field(
        default=None, description="a mapping with subject, tenant, roles, scopes"
    )
    claims: Annotated[_Claims | None, BeforeValidator(_empty_as_none)] = Field(
        default=None, description="a mapping like {tenant: tenant, roles: roles}"
    )
    locales: Annotated[list[str], BeforeValidator(_one_or_many), Field(min_length=1), AfterValidator(_locales)] = Field(
        default=["en"], description="a list of language tags such as [en, de-CH] (the first is the default)"
    )
    registry: Annotated[_Registry | None, BeforeValidator(_empty_as_none)] = Field(
        default=None, description="a mapping with add, namespaces, registry_types, remote_hosts"
    )


def parse_policy(data: object) -> Policy:
    """A :class:`Policy` from its YAML/JSON form (see docs/context-aware-skills.md for a worked example).

    Raises:
        PolicyError: naming the field that is wrong.
    """
    doc = parse(_Policy, data, PolicyError)
    identity, claims = doc.default_identity or _Identity(), doc.claims or _Claims()
    return Policy(
        skills={str(name): rule.build() for name, rule in doc.skills.items()},
        public_tools=frozenset(doc.public_tools),
        default_identity=Caller(
            subject=str(identity.subject),
            tenant=str(identity.tenant) if identity.tenant is not None else None,
            roles=frozenset(identity.roles),
            scopes=frozenset(identity.scopes),
            authenticated=False,
            locale=doc.locales[0],
        ),
        tenant_claim=claims.tenant,
        roles_claim=claims.roles,
        locales=tuple(doc.locales),
        registry=doc.registry.build() if doc.registry is not None else RegistryRules(),
    )
