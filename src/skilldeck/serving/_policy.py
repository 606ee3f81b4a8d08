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
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from skilldeck._documents import load_document
from skilldeck._suggest import did_you_mean
from skilldeck._validation import Model, parse
from skilldeck.errors import PolicyError

__all__ = [
    "HINTS_PREFIX",
    "Caller",
    "Match",
    "Policy",
    "PolicyError",
    "PolicyName",
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


class _Claims(Model):
    tenant: Any = "tenant"
    roles: Any = "roles"


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


class _Policy(Model):
    expected = "a mapping with 'skills' (and optionally 'public_tools', 'default_identity', 'claims', 'locales')"
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
        tenant_claim=str(claims.tenant),
        roles_claim=str(claims.roles),
        locales=tuple(doc.locales),
    )
