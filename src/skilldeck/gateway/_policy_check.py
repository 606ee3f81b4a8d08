"""Whether a gateway policy names what its upstreams serve: a typo must not widen access.

A rule whose id matches nothing never applies, so an ``admit:`` meant for ``docs/pdf-forms`` but
written for ``docs/pdf-form`` would leave the skill open to everyone. Every id the policy names
is therefore checked against the catalog of a configured upstream (the same names as
``skilldeck serve --policy`` checks, :meth:`~skilldeck.serving._policy.Policy.names`):

* a rule's key (``skills:``) must be a skill (``LABEL/NAME``), prompt (``LABEL/PROMPT``),
  resource (``LABEL/URI``, or a URI one of the upstream's templates expands to), resource
  template (``LABEL/URI-TEMPLATE``) or ``LABEL/*`` of that upstream;
* a tool (a rule's ``tools:``, ``public_tools``) must be ``LABEL/TOOL`` of that upstream, or in
  ``public_tools`` ``LABEL/*`` (every tool of it).

An id whose label is no configured upstream, or whose upstream is connected and serves no such
thing, is an error (one line per id, with the closest known id as a suggestion). An id of an
upstream that is down is *pending*: it is checked when that upstream is listed, and if it still
matches nothing then, the upstream is kept out of service (fail closed) rather than served under
a rule that does not apply.

:func:`check_policy` decides over the ids each connected upstream offers (:class:`UpstreamIds`);
:func:`upstream_ids` gathers them, asking an upstream for its prompts and resources only when a
rule of the policy is not one of its skills.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from skilldeck._suggest import did_you_mean
from skilldeck.gateway._forward import declares, fetch_page
from skilldeck.gateway._service import tool_id
from skilldeck.host import Connected, Host, Registry
from skilldeck.host._api import list_server
from skilldeck.serving._api import Policy, PolicyName

__all__ = ["PolicyCheck", "UpstreamIds", "check_policy", "label_of", "pending_names", "upstream_ids"]

RULE_KINDS = "skill, prompt, resource or resource template"
_EXPANSION = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class UpstreamIds:
    """What one connected upstream offers, by gateway id (``LABEL/...``)."""

    label: str
    rules: frozenset[str] = frozenset()
    """Skills, prompts, resources and templates, and ``LABEL/*``."""
    tools: frozenset[str] = frozenset()
    templates: tuple[re.Pattern[str], ...] = ()
    """The upstream's resource templates, as patterns an expanded ``LABEL/URI`` matches."""

    def knows(self, name: PolicyName) -> bool:
        if name.kind == "tool":  # public_tools may name every tool of the upstream: LABEL/*
            return name.name in self.tools or (name.where == "public_tools" and name.name == f"{self.label}/*")
        return name.name in self.rules or any(t.fullmatch(name.name) for t in self.templates)

    def known(self, name: PolicyName) -> frozenset[str]:
        return self.tools if name.kind == "tool" else self.rules


@dataclass
class PolicyCheck:
    """The outcome: errors (ids that match nothing), and ids waiting for their upstream to connect."""

    errors: list[str] = field(default_factory=list)
    pending: dict[str, list[PolicyName]] = field(default_factory=dict)

    def warnings(self) -> list[str]:
        """One line per pending id: not checked yet, and when it will be."""
        return [
            f"{name.where}: {name.name!r} not checked: upstream {label!r} is unavailable; "
            "it is checked when the upstream connects, and the upstream is kept out of service if it matches nothing"
            for label, names in sorted(self.pending.items())
            for name in names
        ]


def label_of(name: str) -> str:
    return name.partition("/")[0] if "/" in name else ""


def pending_names(policy: Policy, labels: Collection[str]) -> dict[str, list[PolicyName]]:
    """The ids of ``policy`` that name one of ``labels`` (upstreams not admitted yet), by label."""
    pending: dict[str, list[PolicyName]] = {}
    for name in policy.names():
        if label_of(name.name) in labels:
            pending.setdefault(label_of(name.name), []).append(name)
    return pending


def check_policy(policy: Policy, labels: Collection[str], ids: Mapping[str, UpstreamIds]) -> PolicyCheck:
    """Check every id of ``policy`` against the configured ``labels`` and the connected upstreams' ``ids``.

    Only the upstreams in ``ids`` are checked; the others of ``labels`` get their ids pending.
    """
    check = PolicyCheck(errors=list(policy.route_problems()))
    everything = [i for one in ids.values() for i in (*one.rules, *one.tools)]
    for name in policy.names():
        label = label_of(name.name)
        if label not in labels:
            check.errors.append(
                f"{name.where}: {name.name!r} names no configured upstream (ids are LABEL/NAME, "
                f"the label one of {', '.join(sorted(labels))}){did_you_mean(name.name, everything)}"
            )
        elif label not in ids:
            check.pending.setdefault(label, []).append(name)
        elif not ids[label].knows(name):
            check.errors.append(name.unmatched(ids[label].known(name), rule_is=f"{RULE_KINDS} of {label!r}"))
    return check


async def upstream_ids(host: Host, label: str, policy: Policy | None = None, *, fresh: bool = False) -> UpstreamIds:
    """The ids ``label`` (connected) offers; its prompts and resources are listed only when a rule of
    ``policy`` for it is none of its skills (every page, under the host's listing caps).

    Its skills and tools are those of the host's registry, or with ``fresh`` a listing read now
    and kept apart from the registry (so nothing of an upstream not yet admitted is served).
    """
    connected = host.sessions.get(label)
    skills, tools = await _skill_and_tool_ids(host, label, connected if fresh else None)
    rules = {*skills, f"{label}/*"}
    wanted = policy is not None and any(
        n.kind == "rule" and label_of(n.name) == label and n.name not in rules for n in policy.names()
    )
    templates: list[re.Pattern[str]] = []
    if wanted and connected is not None:
        for method, kind, key in (
            ("prompts/list", "prompts", "name"),
            ("resources/list", "resources", "uri"),
            ("resources/templates/list", "resources", "uriTemplate"),
        ):
            if not declares(connected, kind):
                continue
            cursor: str | None = None
            for _ in range(host.limits.max_pages):
                items, cursor = await fetch_page(connected, method, cursor)
                for item in items[: host.limits.max_entries]:
                    value = item.model_dump(by_alias=True).get(key)
                    if isinstance(value, str):
                        rules.add(f"{label}/{value}")
                        if key == "uriTemplate":
                            templates.append(_template_pattern(label, value))
                if not cursor:
                    break
    return UpstreamIds(label, frozenset(rules), tools, tuple(templates))


async def _skill_and_tool_ids(host: Host, label: str, fresh: Connected | None) -> tuple[set[str], frozenset[str]]:
    """The skill and tool ids of ``label``: the host's registry's, or a listing read now on ``fresh``."""
    if fresh is None:
        return {host.skill_id(r) for r in host.skills if r.label == label}, frozenset(
            tool_id(label, t.name) for t in host.tools(label)
        )
    listing = await list_server(fresh, host.limits)
    registry = Registry()
    registry.set_tools(label, listing.tools or [])
    registry.add_listing(label, listing.entries or [])
    skills = {registry.qualified_name(r) for r in registry.skills if r.label == label}
    return skills, frozenset(tool_id(label, t.name) for t in registry.tools(label))


def _template_pattern(label: str, template: str) -> re.Pattern[str]:
    """``LABEL/`` and the template, each ``{expression}`` standing for one or more characters."""
    parts = _EXPANSION.split(template)
    return re.compile(re.escape(f"{label}/") + ".+".join(re.escape(p) for p in parts))
