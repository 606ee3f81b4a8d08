"""The catalog one caller sees: admitted skills, rendered for them, with their own digests. Pure.

:func:`catalog_for` derives, from the full catalog and a :class:`~skilldeck.serving._policy.Policy`,
the per-audience variant for a caller: skills the caller is not admitted to are absent (from
``skills/list``, ``skills/get``, ``resources/read`` and folder listings alike), text files are
rendered with the caller's variables, ``metadata["dev.skilldeck/tools"]`` (where the skill
declares it, dynamic skills included) names only the tools routed to the caller, and every
entry's digests are those of the bytes this caller is served. A skill whose tools are all denied
is hidden unless it is instruction-only on purpose. Remote skills (re-published from another
server) are admitted or not by their key, never rendered: their digests stay the origin's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from skilldeck.errors import SkillError
from skilldeck.server._catalog import Catalog
from skilldeck.server._dynamic import DynamicSkill
from skilldeck.server._remote import RemoteSkill
from skilldeck.serving._api import Caller, Policy, render_template
from skilldeck.skill import SKILL_MD, build_entry, parse_skill_md
from skilldeck.skill._api import TOOLS_METADATA_KEY, StaticSkill, is_text_mime_type, mime_type_for, render_frontmatter

__all__ = ["allowed_tools", "catalog_for", "offered"]


def _visible(policy: Policy, name: str, caller: Caller) -> bool:
    rule = policy.skill(name)
    if rule is None:
        return True
    if not rule.admits(caller):
        return False
    if rule.instruction_only or not rule.tools:
        return True
    return bool(rule.route(caller))


def offered(policy: Policy, name: str, caller: Caller) -> bool:
    """Whether skill ``name`` is offered to ``caller``: admitted, and routing them a tool unless instruction-only."""
    return _visible(policy, name, caller)


def allowed_tools(policy: Policy, skill_names: Iterable[str], caller: Caller) -> frozenset[str]:
    """Tools the caller may list and call: what the routes of their admitted skills grant, plus public tools."""
    granted: set[str] = set(policy.public_tools)
    for name in skill_names:
        rule = policy.skill(name)
        if rule is not None and _visible(policy, name, caller):
            granted |= rule.route(caller)
    return frozenset(granted)


def _render_skill(skill: StaticSkill, policy: Policy, caller: Caller, rendered: dict[str, bytes]) -> StaticSkill:
    """The caller's variant of one skill.

    ``rendered`` holds the bytes already decided for files of skills nested inside this one
    (full path -> bytes); they are used as they are, so a nested skill's file is the same bytes in
    its own manifest and in the enclosing skill's. This skill's own files are added to it.
    """
    rule = policy.skill(skill.entry.name)
    values = {"tenant": caller.tenant or "", "locale": caller.locale}
    if rule is not None:
        values.update(rule.values(caller))
    files: dict[str, bytes] = {}
    for rel, data in skill.files.items():
        full = f"{skill.skill_path}/{rel}"
        if full in rendered:
            files[rel] = rendered[full]
            continue
        files[rel] = data if rule is None else _render_file(rel, data, values, rule.route(caller))
        rendered[full] = files[rel]
    if files == dict(skill.files):
        return skill
    frontmatter = parse_skill_md(files[SKILL_MD].decode("utf-8")).frontmatter
    entry = build_entry(skill.skill_path, frontmatter, files)
    return StaticSkill(skill_path=skill.skill_path, entry=entry, files=files, origin=skill.origin)


def _render_file(rel: str, data: bytes, values: dict[str, str], routed: frozenset[str]) -> bytes:
    if not is_text_mime_type(mime_type_for(rel)):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    text = _render_skill_md(text, values, routed) if rel == SKILL_MD else render_template(text, values)
    return text.encode("utf-8")


def _routed_frontmatter(frontmatter: Mapping[str, Any], routed: frozenset[str] | None) -> dict[str, Any] | None:
    """``frontmatter`` with ``metadata["dev.skilldeck/tools"]`` narrowed to ``routed``; ``None`` without that key."""
    metadata = frontmatter.get("metadata")
    if routed is None or not isinstance(metadata, dict) or TOOLS_METADATA_KEY not in metadata:
        return None
    declared = str(metadata[TOOLS_METADATA_KEY]).split()
    kept = " ".join(t for t in declared if t.rpartition("/")[2] in routed)
    return {**frontmatter, "metadata": {**metadata, TOOLS_METADATA_KEY: kept}}


def _render_skill_md(text: str, values: dict[str, str], routed: frozenset[str] | None) -> str:
    parsed = parse_skill_md(text)
    head = text[: len(text) - len(parsed.body)]
    frontmatter = _routed_frontmatter(parsed.frontmatter, routed)
    if frontmatter is not None:
        head = f"---\n{render_frontmatter(frontmatter)}---\n"
    return head + render_template(parsed.body, values)


def _dynamic_variant(skill: DynamicSkill, policy: Policy, caller: Caller) -> DynamicSkill:
    """A dynamic skill as ``caller`` sees it: its tools metadata names only the tools routed to them.

    Its content is generated per request, so placeholders are the renderer's business; the entry,
    and the frontmatter written into every ``SKILL.md`` it renders, come from this variant.
    """
    rule = policy.skill(skill.name)
    frontmatter = None if rule is None else _routed_frontmatter(skill.frontmatter, rule.route(caller))
    if frontmatter is None or frontmatter == skill.frontmatter:
        return skill
    return skill.with_frontmatter(frontmatter)


def _without_hidden(skill: StaticSkill, hidden_paths: list[str]) -> StaticSkill:
    """Drop the files of hidden nested skills from an enclosing skill (they would leak otherwise)."""
    inner = [p[len(skill.skill_path) + 1 :] for p in hidden_paths if p.startswith(skill.skill_path + "/")]
    if not inner:
        return skill
    files = {rel: data for rel, data in skill.files.items() if not any(rel.startswith(h + "/") for h in inner)}
    frontmatter = parse_skill_md(files[SKILL_MD].decode("utf-8")).frontmatter
    return StaticSkill(skill.skill_path, build_entry(skill.skill_path, frontmatter, files), files, skill.origin)


def catalog_for(base: Catalog, policy: Policy, caller: Caller) -> Catalog:
    """The catalog variant served to ``caller``."""
    static: list[StaticSkill] = []
    problems: list[SkillError] = []
    hidden = [
        s.skill_path
        for e in base.entries
        if not _visible(policy, e.name, caller) and (s := base.static_skill(e.uri)) is not None
    ]
    visible = [
        s for e in base.entries if _visible(policy, e.name, caller) and (s := base.static_skill(e.uri)) is not None
    ]
    rendered: dict[str, bytes] = {}
    # innermost first, so an enclosing skill carries its nested skills' files exactly as they are served
    for skill in sorted(visible, key=lambda s: s.skill_path.count("/"), reverse=True):
        try:
            static.append(_render_skill(_without_hidden(skill, hidden), policy, caller, rendered))
        except SkillError as exc:  # a rendered variant over the limits, say: withheld, not half-served
            problems.append(exc)
    dynamic = [_dynamic_variant(d, policy, caller) for d in base.dynamic_skills if _visible(policy, d.name, caller)]
    return Catalog(static, dynamic, problems, _remote_variants(base.remote_skills, policy, caller))


def _remote_variants(skills: list[RemoteSkill], policy: Policy, caller: Caller) -> list[RemoteSkill]:
    """The remote skills ``caller`` is admitted to (by their key), as they came: same bytes, same digests.

    A remote skill is not rendered (its bytes are fetched from its origin and checked against the
    origin's digests), only admitted or not; a visible one that encloses a hidden one loses that
    one's files from its manifest, so they cannot be read through it.
    """
    kept: list[RemoteSkill] = []
    hidden: list[RemoteSkill] = []
    for skill in skills:
        rule = policy.rule_for(skill.policy_key)  # a gateway's LABEL/NAME falls back to LABEL/*
        (kept if rule is None or rule.admits(caller) else hidden).append(skill)
    if not hidden:
        return kept
    out: list[RemoteSkill] = []
    for skill in kept:
        inner = [h.root + "/" for h in hidden if h.skill_path.startswith(skill.skill_path + "/")]
        if inner and not isinstance(skill.entry.resources, str):
            resources = tuple(r for r in skill.entry.resources if not r.uri.startswith(tuple(inner)))
            skill = replace(skill, entry=replace(skill.entry, resources=resources))
        out.append(skill)
    return out
