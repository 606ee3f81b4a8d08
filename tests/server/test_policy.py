"""Context-aware skills, pure part: parsing a policy, deciding per caller, and the catalog a caller sees.

The fixture pack ``fixtures/tenant-skills`` and its policy ``fixtures/tenant-policy.yaml`` are
shared with ``test_context_aware_http.py``: ``orders`` (tools routed by role, tenant variables,
an admin-only nested skill ``orders/escalation``), ``refund-audit`` (its one tool is routed to
administrators only, so it is hidden from everyone else) and ``style-guide`` (instruction-only).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from skilldeck.errors import NotServedError
from skilldeck.server._audience import allowed_tools, catalog_for
from skilldeck.server._catalog import Catalog
from skilldeck.serving._policy import (
    MAX_CLAIM_PATH,
    MAX_CLAIM_WARNINGS,
    Caller,
    Match,
    Policy,
    PolicyError,
    SkillPolicy,
    caller_for,
    caller_from_claims,
    claim_value,
    load_policy,
    parse_policy,
    render_template,
)
from skilldeck.skill._frontmatter import parse_skill_md
from skilldeck.skill._manifest import digest_of
from skilldeck.skill._pack import DirectorySource, load_all

from .helpers import write_skill

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PACK = FIXTURES / "tenant-skills"
POLICY_FILE = FIXTURES / "tenant-policy.yaml"
SERVER_TOOLS = ["lookup_order", "issue_refund", "cancel_order", "audit_refunds", "ping"]

USER_A = Caller(subject="alice", tenant="acme", roles=frozenset({"user"}), authenticated=True)
ADMIN_B = Caller(subject="bob", tenant="globex", roles=frozenset({"admin"}), authenticated=True)
STRANGER = Caller(subject="eve", tenant="initech", authenticated=True)

ORDERS = "skill://orders/SKILL.md"
ESCALATION = "skill://orders/escalation/SKILL.md"
AUDIT = "skill://refund-audit/SKILL.md"
STYLE = "skill://style-guide/SKILL.md"
TOOLS_KEY = "dev.skilldeck/tools"


def load_catalog(*roots: Path) -> Catalog:
    loaded = load_all([DirectorySource(*roots)])
    assert not loaded.problems, loaded.problems
    return Catalog(loaded.skills, (), loaded.problems)


@pytest.fixture(scope="module")
def base() -> Catalog:
    return load_catalog(PACK)


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(POLICY_FILE)


def text(catalog: Catalog, uri: str) -> str:
    found = catalog.static_file(uri)
    assert found is not None, uri
    return found.data.decode()


# -- parsing -------------------------------------------------------------------------------------------


def test_fixture_policy_parses_into_the_documented_model(policy: Policy) -> None:
    assert policy.tenant_claim == "tenant"
    assert policy.roles_claim == "roles"
    assert policy.public_tools == frozenset({"ping"})
    assert policy.default_identity == Caller(
        subject="local", tenant="acme", roles=frozenset({"user"}), authenticated=False
    )
    orders = policy.skill("orders")
    assert orders is not None
    assert orders.tools == ("cancel_order", "issue_refund", "lookup_order")  # sorted
    assert orders.routes == (
        (Match(roles=frozenset({"admin"})), "all"),
        (Match(roles=frozenset({"user"})), frozenset({"lookup_order", "issue_refund"})),
    )
    # Scalars become strings (``refund_limit: 100`` is an int in YAML).
    assert orders.variables[0] == (
        Match(tenants=frozenset({"acme"})),
        {"support_email": "help@acme.test", "refund_limit": "100"},
    )
    escalation = policy.skill("escalation")
    assert escalation is not None
    assert escalation.admit == (Match(roles=frozenset({"admin"})),)
    style = policy.skill("style-guide")
    assert style is not None
    assert style.instruction_only is True
    assert style.tools == ()
    assert policy.skill("nope") is None


def test_parse_accepts_singular_aliases_names_as_strings_and_custom_claims() -> None:
    policy = parse_policy(
        {
            "claims": {"tenant": "org", "roles": "groups"},
            "default_identity": {"tenant": "t1", "roles": "reader", "scopes": ["s1"]},
            "public_tools": "ping",
            "skills": {
                "x": {
                    "admit": [{"tenant": "t1", "role": "reader"}, {"scope": "s2"}],
                    "tools": "one",
                    "routes": [{"when": None, "allow": "none"}],
                    "variables": [{"set": {"k": 1.5}}],
                }
            },
        }
    )
    assert (policy.tenant_claim, policy.roles_claim) == ("org", "groups")
    assert policy.default_identity.roles == frozenset({"reader"})
    assert policy.default_identity.scopes == frozenset({"s1"})
    assert policy.default_identity.subject == "local"
    assert policy.public_tools == frozenset({"ping"})
    rule = policy.skills["x"]
    assert rule.admit == (
        Match(tenants=frozenset({"t1"}), roles=frozenset({"reader"})),
        Match(scopes=frozenset({"s2"})),
    )
    assert rule.tools == ("one",)
    assert rule.routes == ((Match(), "none"),)
    assert rule.variables == ((Match(), {"k": "1.5"}),)


def test_empty_policy_means_no_rules() -> None:
    policy = parse_policy({})
    assert policy.skills == {}
    assert policy.public_tools == frozenset()
    assert policy.default_identity.authenticated is False


BAD_POLICIES: list[tuple[Any, str]] = [
    ([], "expected a mapping with 'skills'"),
    ({"skill": {}}, "unknown top-level key 'skill'"),
    ({"default_identity": ["admin"]}, "default_identity: expected a mapping"),
    ({"default_identity": {"roles": 5}}, "default_identity.roles"),
    ({"default_identity": {"scopes": [1]}}, "default_identity.scopes"),
    ({"claims": ["tenant"]}, "claims: expected a mapping"),
    ({"skills": ["orders"]}, "skills: expected a mapping"),
    ({"skills": {"x": "all"}}, "skills.x: expected a mapping"),
    ({"skills": {"x": {"tool": ["a"]}}}, "skills.x: unknown key 'tool'"),
    ({"skills": {"x": {"admit": "admin"}}}, "skills.x.admit[0]: expected a mapping"),
    (
        {"skills": {"x": {"admit": [{}, {"group": "a"}]}}},
        "skills.x.admit[1]: unknown key 'group' (expected role, roles, scope, scopes, tenant, tenants)",
    ),
    ({"skills": {"x": {"admit": {"roles": 5}}}}, "skills.x.admit[0].roles"),
    ({"skills": {"x": {"admit": {"tenants": ["a", 2]}}}}, "skills.x.admit[0].tenants"),
    ({"skills": {"x": {"tools": 5}}}, "skills.x.tools"),
    (
        {"skills": {"x": {"routes": [{"when": {}}]}}},
        "skills.x.routes[0]: 'allow' is required ('all', 'none' or a list of tool names)",
    ),
    ({"skills": {"x": {"routes": ["all"]}}}, "skills.x.routes[0]"),
    ({"skills": {"x": {"routes": [{"allow": "some"}]}}}, "skills.x.routes[0].allow"),
    ({"skills": {"x": {"routes": [{"allow": ["a", 1]}]}}}, "skills.x.routes[0].allow"),
    ({"skills": {"x": {"routes": [{"allow": "all"}, {"when": "admin", "allow": "all"}]}}}, "skills.x.routes[1].when"),
    ({"skills": {"x": {"routes": [{"when": {"role": [1]}, "allow": "all"}]}}}, "skills.x.routes[0].when.role"),
    ({"skills": {"x": {"variables": [{"when": {}}]}}}, "skills.x.variables[0]"),
    ({"skills": {"x": {"variables": [{"set": {"k": ["v"]}}]}}}, "skills.x.variables[0]"),
    ({"skills": {"x": {"variables": [{"set": {}}, {"when": 3, "set": {}}]}}}, "skills.x.variables[1].when"),
    ({"skills": {"x": {"instruction_only": "yes"}}}, "skills.x.instruction_only"),
    ({"public_tools": 5}, "public_tools"),
    ({"claims": {"roles": 5}}, "claims.roles: must be a claim's name"),
    ({"claims": {"roles": []}}, "claims.roles: must be a claim's name"),
    ({"claims": {"tenant": ["org", ""]}}, "claims.tenant: must be a claim's name"),
    ({"claims": {"tenant": ["org", 1]}}, "claims.tenant: must be a claim's name"),
    ({"claims": {"roles": "realm_access..roles"}}, "claims.roles: 'realm_access..roles' has an empty key"),
    ({"claims": {"roles": ".roles"}}, "claims.roles: '.roles' has an empty key"),
    ({"claims": {"roles": ["k"] * 9}}, "claims.roles: a claim path has at most 8 keys, not 9"),
    ({"claims": {"roles": ".".join("k" * 9)}}, "claims.roles: a claim path has at most 8 keys, not 9"),
]


@pytest.mark.parametrize(("document", "field"), BAD_POLICIES, ids=[f for _, f in BAD_POLICIES])
def test_every_bad_field_is_refused_naming_it(document: Any, field: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(document)
    assert field in str(info.value)


# A misspelt key inside a nested mapping is dropped silently instead of refused. The worst case is
# a route rule: ``whn:`` instead of ``when:`` turns the rule's condition into "everyone", so an
# administrator-only ``allow: all`` is granted to every caller.
TYPO_POLICIES = [
    pytest.param(
        {"skills": {"x": {"tools": ["a"], "routes": [{"whn": {"roles": ["admin"]}, "allow": "all"}]}}},
        "skills.x.routes[0]",
        id="route-rule-typo-widens-to-everyone",
    ),
    pytest.param(
        {"skills": {"x": {"variables": [{"wen": {"tenants": ["a"]}, "set": {"k": "v"}}]}}},
        "skills.x.variables[0]",
        id="variables-rule-typo-applies-to-everyone",
    ),
    pytest.param({"default_identity": {"role": ["admin"]}}, "default_identity", id="default-identity-typo"),
    pytest.param({"claims": {"tenants": "org"}}, "claims", id="claims-typo"),
]


@pytest.mark.parametrize(("document", "field"), TYPO_POLICIES)
def test_unknown_keys_in_nested_rules_are_refused(document: Any, field: str) -> None:
    # Today: parse_policy(route-rule-typo).skills["x"].route(<any caller>) == {"a"}.
    with pytest.raises(PolicyError) as info:
        parse_policy(document)
    assert field in str(info.value)


def test_load_policy_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no such policy file"):
        load_policy(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("skills: [unclosed\n")
    with pytest.raises(PolicyError, match="not a readable YAML file") as info:
        load_policy(broken)
    assert str(broken) in str(info.value)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump({"skills": {"x": {"routes": [{"allow": "sometimes"}]}}}))
    with pytest.raises(PolicyError) as info:
        load_policy(wrong)
    assert str(wrong) in str(info.value)
    assert "skills.x.routes[0].allow" in str(info.value)


def test_load_policy_reads_json_too(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text('{"public_tools": ["ping"], "skills": {"x": {"instruction_only": true}}}')
    policy = load_policy(path)
    assert policy.public_tools == frozenset({"ping"})
    assert policy.skills["x"].instruction_only is True


def test_validate_against_accepts_what_the_server_serves(policy: Policy, base: Catalog) -> None:
    policy.validate_against([e.name for e in base.entries], SERVER_TOOLS)


def test_validate_against_lists_every_unknown_name(policy: Policy) -> None:
    bad = parse_policy(
        {
            "public_tools": ["ping", "pong"],
            "skills": {
                "orders": {"tools": ["lookup_order", "drop_tables"], "routes": [{"allow": ["lookup_order", "rm"]}]},
                "ghost": {"instruction_only": True},
            },
        }
    )
    with pytest.raises(PolicyError) as info:
        bad.validate_against(["orders", "style-guide"], SERVER_TOOLS)
    message = str(info.value)
    assert "skills.ghost: no such skill is served" in message
    assert "skills.orders.tools: no such tool 'drop_tables'" in message
    assert "skills.orders.routes[0]: 'rm' is not one of the skill's tools" in message
    assert "public_tools: no such tool 'pong'" in message
    assert "'lookup_order'" not in message
    # a near miss is named (SERVER_TOOLS has "ping"; "pong" is one letter off it), a far one is not
    assert "public_tools: no such tool 'pong' (did you mean 'ping'?)" in message
    assert "skills.ghost: no such skill is served;" in message or message.endswith(
        "skills.ghost: no such skill is served"
    )
    # An unknown tool also fails when the server has no tools at all.
    with pytest.raises(PolicyError, match="no such tool 'cancel_order'"):
        policy.validate_against(["orders", "escalation", "refund-audit", "style-guide"], [])


# -- deciding per caller ---------------------------------------------------------------------------------


def test_match_requires_every_listed_dimension_and_any_value_within_it() -> None:
    match = Match(tenants=frozenset({"acme", "globex"}), roles=frozenset({"admin", "owner"}))
    assert match.matches(ADMIN_B)
    assert match.matches(Caller(tenant="acme", roles=frozenset({"owner", "user"})))
    assert not match.matches(USER_A)  # right tenant, wrong role
    assert not match.matches(Caller(tenant="initech", roles=frozenset({"admin"})))  # right role, wrong tenant
    assert not match.matches(Caller(roles=frozenset({"admin"})))  # no tenant at all
    assert Match().matches(STRANGER)
    assert not Match(roles=frozenset()).matches(ADMIN_B)  # an empty list matches nobody
    scoped = Match(scopes=frozenset({"orders:write"}))
    assert scoped.matches(Caller(scopes=frozenset({"orders:read", "orders:write"})))
    assert not scoped.matches(Caller(scopes=frozenset({"orders:read"})))


def test_admits_any_rule_and_empty_admits_everyone() -> None:
    assert SkillPolicy().admits(STRANGER)
    rule = SkillPolicy(admit=(Match(roles=frozenset({"admin"})), Match(tenants=frozenset({"acme"}))))
    assert rule.admits(ADMIN_B)
    assert rule.admits(USER_A)
    assert not rule.admits(STRANGER)


def test_route_three_states_first_match_wins_and_default_deny() -> None:
    tools = ("cancel_order", "issue_refund", "lookup_order")
    assert SkillPolicy(tools=tools).route(STRANGER) == frozenset(tools)  # no rules: all
    rule = SkillPolicy(
        tools=tools,
        routes=(
            (Match(roles=frozenset({"admin"})), "all"),
            (Match(roles=frozenset({"user"})), frozenset({"lookup_order", "not_a_tool_of_this_skill"})),
            (Match(tenants=frozenset({"acme"})), "all"),  # never reached by an acme user: first match wins
            (Match(tenants=frozenset({"globex"})), "none"),
        ),
    )
    assert rule.route(ADMIN_B) == frozenset(tools)
    assert rule.route(USER_A) == frozenset({"lookup_order"})  # only the skill's own tools
    assert rule.route(Caller(tenant="globex")) == frozenset()
    assert rule.route(STRANGER) == frozenset()  # no rule matches: none


def test_values_merge_every_matching_rule_later_wins() -> None:
    rule = SkillPolicy(
        variables=(
            (Match(), {"brand": "Generic", "limit": "10"}),
            (Match(tenants=frozenset({"acme"})), {"brand": "Acme"}),
            (Match(roles=frozenset({"admin"})), {"limit": "1000"}),
        )
    )
    assert rule.values(USER_A) == {"brand": "Acme", "limit": "10"}
    assert rule.values(Caller(tenant="acme", roles=frozenset({"admin"}))) == {"brand": "Acme", "limit": "1000"}
    assert rule.values(STRANGER) == {"brand": "Generic", "limit": "10"}


def test_caller_from_claims_reads_only_the_configured_claims() -> None:
    caller = caller_from_claims(
        subject="u1",
        client_id="app",
        scopes=["orders:read"],
        claims={"org": 42, "groups": "admin auditor", "tenant": "ignored", "roles": ["ignored"]},
        tenant_claim="org",
        roles_claim="groups",
        locale="fr",
    )
    assert caller == Caller(
        subject="u1",
        client_id="app",
        tenant="42",
        roles=frozenset({"admin", "auditor"}),
        scopes=frozenset({"orders:read"}),
        authenticated=True,
        locale="fr",
    )
    bare = caller_from_claims(subject=None, client_id="app", scopes=[], claims=None)
    assert bare.tenant is None
    assert bare.roles == frozenset()
    assert bare.authenticated is True


KEYCLOAK = {  # the shape of a Keycloak access token's role claims
    "realm_access": {"roles": ["admin", "offline_access"]},
    "resource_access": {"orders.app": {"roles": ["refunder"]}, "account": {"roles": ["view-profile"]}},
    "org": "acme",
}


def test_claim_paths_read_nested_claims_and_prefer_a_claim_named_exactly() -> None:
    assert claim_value(KEYCLOAK, "realm_access.roles") == ["admin", "offline_access"]
    assert claim_value(KEYCLOAK, ("resource_access", "orders.app", "roles")) == ["refunder"]  # a key with a dot
    assert claim_value(KEYCLOAK, "resource_access.orders.app.roles") is None  # as a string it is four keys
    namespaced = {"https://acme.test/roles": ["a"], "https://acme": {"test/roles": ["b"]}}  # Auth0's style
    assert claim_value(namespaced, "https://acme.test/roles") == ["a"]  # the exact name wins over the path
    assert claim_value(namespaced, ("https://acme", "test/roles")) == ["b"]
    for missing in ["roles", "realm_access.groups", "org.name", "realm_access.roles.admin", ("org",) * 2]:
        assert claim_value(KEYCLOAK, missing) is None, missing  # a missing key, or a step that is not an object
    policy = parse_policy({"claims": {"tenant": ["org"], "roles": ["k"] * MAX_CLAIM_PATH}})  # the bound itself
    assert (policy.tenant_claim, policy.roles_claim) == (("org",), ("k",) * MAX_CLAIM_PATH)
    keycloak = parse_policy({"claims": {"roles": "realm_access.roles"}})
    caller = caller_for(keycloak, _Token(KEYCLOAK))
    assert (caller.roles, caller.tenant) == (frozenset({"admin", "offline_access"}), None)


def test_a_claim_of_another_shape_gives_nothing_and_says_why() -> None:
    said: list[str] = []

    def caller(claims: dict[str, Any], roles: Any = "roles", tenant: Any = "tenant") -> Caller:
        said.clear()
        return caller_from_claims(
            subject="u",
            client_id=None,
            scopes=[],
            claims=claims,
            roles_claim=roles,
            tenant_claim=tenant,
            warn=said.append,
        )

    # an object's keys are not roles (before: every client id of resource_access became a "role")
    assert caller(KEYCLOAK, roles="resource_access").roles == frozenset()
    assert said == [
        "the claim 'resource_access' is an object, not a list of roles or a space-separated string "
        "(to read the list inside it: claims: {roles: resource_access.orders.app.roles}); the caller has no roles"
    ]
    assert caller({"roles": ["a", 3, {"b": 1}, True, None]}).roles == frozenset({"a", "3"})
    assert said == ["the claim 'roles' holds items that are not strings; they are not roles"]
    assert caller({"roles": 7}).roles == frozenset()
    assert said == [
        "the claim 'roles' is a number, not a list of roles or a space-separated string; the caller has no roles"
    ]
    for value, kind in [(["acme"], "a list"), ({"id": "acme"}, "an object"), (True, "a boolean")]:
        assert caller({"tenant": value}).tenant is None
        assert said == [f"the claim 'tenant' is {kind}, not a string or a number; the caller has no tenant"]
    assert caller({"tenant": 42, "roles": "a b"}) == Caller(
        subject="u", tenant="42", roles=frozenset({"a", "b"}), authenticated=True
    )
    assert said == []
    assert caller(KEYCLOAK).roles == frozenset()  # missing claims are the policy's to say (below)
    assert said == []


ROLE_AND_TENANT_RULES = {
    "skills": {"x": {"admit": {"roles": ["admin"]}, "variables": [{"when": {"tenant": "a"}, "set": {"k": "v"}}]}}
}


def _hints(claims: dict[str, Any], document: dict[str, Any] = ROLE_AND_TENANT_RULES) -> list[str]:
    """What a new policy of ``document`` says about a first token of ``claims`` (the log's words, each once)."""
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("skilldeck.serving._policy")
    logger.addHandler(handler)
    try:
        caller_for(parse_policy(document), _Token(claims))
    finally:
        logger.removeHandler(handler)
    prefix, suffix = "the policy's claims do not fit this token: ", " (said once)"
    assert all(line.startswith(prefix) and line.endswith(suffix) for line in said), said
    return [line.removeprefix(prefix).removesuffix(suffix) for line in said]


def test_a_missing_claim_the_policys_conditions_need_is_said_once_with_where_to_look() -> None:
    assert _hints(KEYCLOAK) == [  # the tenant is missing (its claims listed); the roles are elsewhere (the path)
        "a token has no claim 'tenant', so the policy's tenants conditions match nothing of it; if the provider "
        "puts it elsewhere, name that in the policy's claims (this token's claims: realm_access, resource_access, org)",
        "this token has no claim 'roles' but carries roles at realm_access.roles "
        "(to read them: claims: {roles: realm_access.roles})",
    ]
    assert _hints(KEYCLOAK, {"claims": {"tenant": "org"}, **ROLE_AND_TENANT_RULES}) == [
        "this token has no claim 'roles' but carries roles at realm_access.roles "
        "(to read them: claims: {roles: realm_access.roles})",
    ]
    assert _hints(KEYCLOAK, {"skills": {"x": {"admit": {"scopes": ["s"]}}}}) == []  # nothing depends on them
    assert _hints({"tenant": "a", "roles": []}) == []  # present, if empty: a caller with no roles
    many = {f"claim{i}": i for i in range(30)}
    assert _hints(many, {"skills": {"x": {"admit": {"tenant": "a"}}}}) == [
        "a token has no claim 'tenant', so the policy's tenants conditions match nothing of it; if the provider "
        f"puts it elsewhere, name that in the policy's claims (this token's claims: "
        f"{', '.join(f'claim{i}' for i in range(24))}, ...)"
    ]
    policy = parse_policy(ROLE_AND_TENANT_RULES)
    assert policy.conditions_on == frozenset({"roles", "tenants"})


def test_the_search_for_roles_elsewhere_is_shallowest_first_and_bounded() -> None:
    def suggested(claims: dict[str, Any]) -> str | None:
        said = [line for line in _hints(claims, {"skills": {"x": {"admit": {"roles": ["a"]}}}}) if "carries" in line]
        return said[0].split(" carries roles at ")[1].split(" ")[0] if said else None

    assert suggested({"a": {"b": {"roles": ["x"]}}, "c": {"groups": ["y"]}}) == "c.groups"
    assert suggested({"a": {"b": {"c": {"roles": ["x"]}}}}) is None  # deeper than three keys
    filler = {f"k{i}": {"n": i} for i in range(255)}  # each object is searched a level down too
    assert suggested({**filler, "groups": ["y"]}) == "groups"  # the 256th key looked at
    assert suggested({**filler, "k255": 0, "groups": ["y"]}) is None  # the 257th is not
    # a key's name is the issuer's text: the path quoted is cut at 200 characters ("k" * 194 + ".roles" is 200)
    assert suggested({"k" * 194: {"roles": ["x"]}}) == "k" * 194 + ".roles"
    assert suggested({"k" * 195: {"roles": ["x"]}}) == "k" * 195 + ".rol\u2026"


@dataclass
class _Token:
    claims: dict[str, Any]
    subject: str = "u"
    client_id: str | None = None
    scopes: tuple[str, ...] = ()


def test_a_misfit_is_logged_once_per_policy_and_kind_up_to_a_bound(caplog: pytest.LogCaptureFixture) -> None:
    first, second = parse_policy({}), parse_policy({"claims": {"tenant": "org"}})
    with caplog.at_level("WARNING", logger="skilldeck.serving._policy"):
        for _ in range(3):
            caller_for(first, _Token({"roles": {"x": 1}}))
            caller_for(second, _Token({"roles": {"x": 1}}))
        caller_for(None, _Token({"roles": {"x": 1}}))  # no policy: roles decide nothing, nothing is said
    lines = [r.getMessage() for r in caplog.records]
    assert lines == 2 * [
        "the policy's claims do not fit this token: the claim 'roles' is an object, "
        "not a list of roles or a space-separated string; the caller has no roles (said once)"
    ]
    caplog.clear()
    with caplog.at_level("WARNING", logger="skilldeck.serving._policy"):
        for n in range(MAX_CLAIM_WARNINGS + 5):  # kinds of misfit (here: claims named differently)
            first.warn_once(f"kind {n}")
    assert len(caplog.records) == MAX_CLAIM_WARNINGS - 1  # the object above was the first kind
    assert (
        caplog.records[-1]
        .getMessage()
        .startswith(f"the policy's claims do not fit this token: kind {MAX_CLAIM_WARNINGS - 2} ")
    )


def test_audience_is_what_rendering_depends_on_not_who() -> None:
    alice, carol = USER_A, Caller(subject="carol", client_id="other", tenant="acme", roles=frozenset({"user"}))
    assert alice.audience == carol.audience
    assert alice.audience != ADMIN_B.audience
    assert alice.audience != Caller(tenant="acme", roles=frozenset({"user"}), locale="de").audience


def test_render_template_fills_known_names_and_keeps_the_rest() -> None:
    assert render_template("Hi {{name}}, {{ tenant }} / {{  missing }}", {"name": "A", "tenant": "t"}) == (
        "Hi A, t / {{  missing }}"
    )
    assert render_template("{{ 1bad }} {{a-b}}", {"a": "x"}) == "{{ 1bad }} {{a-b}}"


# -- the catalog one caller sees --------------------------------------------------------------------------


def test_admission_hides_a_skill_everywhere_including_inside_its_enclosing_skill(base: Catalog, policy: Policy) -> None:
    assert ESCALATION in {e.uri for e in base.entries}
    base_orders = base.get(ORDERS)
    assert isinstance(base_orders.resources, tuple)
    assert ESCALATION in {r.uri for r in base_orders.resources}  # the enclosing skill lists it when unfiltered

    view = catalog_for(base, policy, USER_A)
    assert [e.uri for e in view.entries] == [ORDERS, STYLE]
    for uri in (ESCALATION, AUDIT):
        with pytest.raises(NotServedError):
            view.get(uri)
        assert view.static_file(uri) is None
    orders = view.get(ORDERS)
    assert isinstance(orders.resources, tuple)
    assert [r.uri for r in orders.resources] == [ORDERS, "skill://orders/references/faq.md"]
    assert all("escalation" not in f.uri and "refund-audit" not in f.uri for f in view.files)
    assert [c.name for c in view.directory_children("skill://orders")] == ["SKILL.md", "references"]
    assert not view.is_directory("skill://orders/escalation")
    assert not view.is_directory("skill://refund-audit")
    with pytest.raises(NotServedError):
        view.directory_children("skill://orders/escalation")

    admin = catalog_for(base, policy, ADMIN_B)
    assert [e.uri for e in admin.entries] == [ORDERS, ESCALATION, AUDIT, STYLE]
    admin_orders = admin.get(ORDERS)
    assert isinstance(admin_orders.resources, tuple)
    assert ESCALATION in {r.uri for r in admin_orders.resources}
    assert "escalation" in [c.name for c in admin.directory_children("skill://orders")]


def test_variables_are_rendered_into_the_body_and_text_files(base: Catalog, policy: Policy) -> None:
    user = catalog_for(base, policy, USER_A)
    body = text(user, ORDERS)
    assert "# Orders for acme" in body
    assert "refunds up to 100." in body
    assert "help@acme.test" in body
    assert "{{" not in body
    assert "help@acme.test" in text(user, "skill://orders/references/faq.md")
    assert "# Style guide for Acme" in text(user, STYLE)
    assert "Locale: en." in text(user, STYLE)

    admin = catalog_for(base, policy, ADMIN_B)
    assert "# Orders for globex" in text(admin, ORDERS)
    assert "refunds up to 5000." in text(admin, ORDERS)
    assert "desk@globex.test" in text(admin, ESCALATION)
    assert "Locale: fr." in text(catalog_for(base, policy, Caller(tenant="globex", locale="fr")), STYLE)

    # A caller no variable rule matches still gets the built-ins; other placeholders stay as written.
    no_tenant = text(catalog_for(base, policy, Caller(roles=frozenset({"user"}))), ORDERS)
    assert "# Orders for \n" in no_tenant
    assert "{{ refund_limit }}" in no_tenant
    initech = text(catalog_for(base, policy, Caller(tenant="initech", roles=frozenset({"user"}))), ORDERS)
    assert "# Orders for initech" in initech
    assert "{{ support_email }}" in initech
    # The frontmatter is never templated.
    assert parse_skill_md(body).frontmatter["description"] == base.get(ORDERS).frontmatter["description"]


def test_tools_metadata_names_only_the_routed_tools(base: Catalog, policy: Policy) -> None:
    assert base.get(ORDERS).frontmatter["metadata"][TOOLS_KEY] == "lookup_order issue_refund cancel_order"
    user = catalog_for(base, policy, USER_A).get(ORDERS)
    assert user.frontmatter["metadata"][TOOLS_KEY] == "lookup_order issue_refund"
    admin = catalog_for(base, policy, ADMIN_B).get(ORDERS)
    assert admin.frontmatter["metadata"][TOOLS_KEY] == "lookup_order issue_refund cancel_order"
    audit = catalog_for(base, policy, ADMIN_B).get(AUDIT)
    assert audit.frontmatter["metadata"][TOOLS_KEY] == "audit_refunds"
    # Rendering writes our own key only: `io.modelcontextprotocol/` metadata keys are reserved for MCP extensions.
    for variant in (user, admin, audit):
        assert not [k for k in variant.frontmatter["metadata"] if k.startswith("io.modelcontextprotocol/")]


@pytest.mark.parametrize(
    "caller",
    [USER_A, ADMIN_B, STRANGER, Caller(tenant="globex", roles=frozenset({"user"}), locale="de")],
    ids=["user-a", "admin-b", "stranger", "user-b-de"],
)
def test_digests_and_sizes_are_those_of_the_bytes_served(base: Catalog, policy: Policy, caller: Caller) -> None:
    view = catalog_for(base, policy, caller)
    assert view.entries
    for entry in view.entries:
        assert isinstance(entry.resources, tuple)
        for resource in entry.resources:
            served = view.static_file(resource.uri)
            assert served is not None, resource.uri
            assert resource.digest == digest_of(served.data), resource.uri
            assert resource.size == len(served.data), resource.uri
        assert parse_skill_md(text(view, entry.uri)).frontmatter == entry.frontmatter
    if caller is not STRANGER:  # a stranger has no route into `orders`, so it is hidden from them
        rendered = view.get(ORDERS)
        assert isinstance(rendered.resources, tuple)
        original = base.get(ORDERS)
        assert isinstance(original.resources, tuple)
        assert rendered.resources[0].digest != original.resources[0].digest  # a variant, not the file on disk


def test_same_audience_same_bytes(base: Catalog, policy: Policy) -> None:
    carol = Caller(subject="carol", client_id="other-app", tenant="acme", roles=frozenset({"user"}))
    assert [e.to_wire() for e in catalog_for(base, policy, USER_A).entries] == [
        e.to_wire() for e in catalog_for(base, policy, carol).entries
    ]


def test_instruction_only_skill_is_visible_with_no_tools(base: Catalog, policy: Policy) -> None:
    for caller in (USER_A, ADMIN_B, STRANGER):
        assert STYLE in {e.uri for e in catalog_for(base, policy, caller).entries}
    # It grants nothing: a stranger (no route matches any other skill) gets only the public tools.
    assert allowed_tools(policy, [e.name for e in base.entries], STRANGER) == frozenset({"ping"})


def test_a_skill_whose_tools_are_all_denied_is_hidden_unless_instruction_only(tmp_path: Path) -> None:
    write_skill(tmp_path, "denied")
    write_skill(tmp_path, "on-purpose")
    write_skill(tmp_path, "unruled")
    base = load_catalog(tmp_path)
    policy = parse_policy(
        {
            "skills": {
                "denied": {"tools": ["t1"], "routes": [{"when": {"roles": ["admin"]}, "allow": "all"}]},
                "on-purpose": {"tools": ["t2"], "instruction_only": True, "routes": [{"allow": "none"}]},
            }
        }
    )
    user_view = catalog_for(base, policy, USER_A)
    assert [e.name for e in user_view.entries] == ["on-purpose", "unruled"]
    assert [e.name for e in catalog_for(base, policy, ADMIN_B).entries] == ["denied", "on-purpose", "unruled"]
    # A skill the policy does not name is served unchanged (no placeholders in it).
    assert user_view.get("skill://unruled/SKILL.md") == base.get("skill://unruled/SKILL.md")
    assert allowed_tools(policy, ["denied", "on-purpose", "unruled"], USER_A) == frozenset()
    assert allowed_tools(policy, ["denied", "on-purpose", "unruled"], ADMIN_B) == frozenset({"t1"})


def test_hidden_enclosing_skill_leaves_a_visible_nested_skill_alone(tmp_path: Path) -> None:
    write_skill(tmp_path, "outer", files={"notes.md": "outer notes"})
    write_skill(tmp_path, "outer/inner", files={"inner.md": "inner notes"})
    base = load_catalog(tmp_path)
    policy = parse_policy({"skills": {"outer": {"admit": {"roles": ["admin"]}}}})
    view = catalog_for(base, policy, USER_A)
    assert [e.uri for e in view.entries] == ["skill://outer/inner/SKILL.md"]
    assert view.static_file("skill://outer/notes.md") is None
    assert view.static_file("skill://outer/SKILL.md") is None
    assert [c.name for c in view.directory_children("skill://outer")] == ["inner"]


def test_allowed_tools_are_the_routes_of_admitted_skills_plus_public(base: Catalog, policy: Policy) -> None:
    names = [e.name for e in base.entries]
    assert allowed_tools(policy, names, USER_A) == frozenset({"lookup_order", "issue_refund", "ping"})
    assert allowed_tools(policy, names, ADMIN_B) == frozenset(SERVER_TOOLS)
    # Only skills actually served count: a rule for a skill that is gone grants nothing.
    assert allowed_tools(policy, ["style-guide"], ADMIN_B) == frozenset({"ping"})
    # A route cannot grant through a skill the caller is not admitted to.
    gated = parse_policy({"skills": {"x": {"admit": {"tenants": ["globex"]}, "tools": ["t"]}}})
    assert allowed_tools(gated, ["x"], USER_A) == frozenset()
    assert allowed_tools(gated, ["x"], ADMIN_B) == frozenset({"t"})


def test_nested_skill_under_a_policy_serves_exactly_its_digested_bytes(tmp_path: Path) -> None:
    outer = write_skill(tmp_path, "orders", frontmatter_extra="metadata:\n  dev.skilldeck/tools: lookup_order\n")
    inner = outer / "refunds"
    inner.mkdir()
    (inner / "SKILL.md").write_text(
        "---\nname: refunds\ndescription: d\nmetadata:\n  dev.skilldeck/tools: lookup_order cancel_order\n"
        "---\nMail {{ support_email }}\n"
    )
    policy = parse_policy(
        {
            "skills": {
                "refunds": {
                    "tools": ["lookup_order", "cancel_order"],
                    "routes": [{"when": {"roles": ["user"]}, "allow": ["lookup_order"]}],
                    "variables": [{"when": {"tenants": ["acme"]}, "set": {"support_email": "help@acme.test"}}],
                }
            }
        }
    )
    loaded = DirectorySource(tmp_path).load()
    variant = catalog_for(Catalog(loaded.skills), policy, Caller(tenant="acme", roles=frozenset({"user"})))
    for entry in variant.entries:
        assert not isinstance(entry.resources, str)
        for resource in entry.resources:  # every listed digest is the digest of what is served
            served = variant.static_file(resource.uri)
            assert served is not None
            assert digest_of(served.data) == resource.digest, resource.uri
    text = variant.static_file("skill://orders/refunds/SKILL.md").data.decode()  # type: ignore[union-attr]
    assert "help@acme.test" in text
    assert "cancel_order" not in text
