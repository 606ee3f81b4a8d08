"""The Agent Skills format: ``SKILL.md`` frontmatter, skill manifests and ``skill://`` URIs. Pure, no I/O."""

from skilldeck.skill._frontmatter import ParsedSkillMd, parse_skill_md, render_skill_md, validate_frontmatter
from skilldeck.skill._manifest import SkillEntry, SkillResource, build_entry, digest_of, entry_from_wire
from skilldeck.skill._uri import SCHEME, SKILL_MD, resolve_reference, skill_root_uri

__all__ = [
    "SCHEME",
    "SKILL_MD",
    "ParsedSkillMd",
    "SkillEntry",
    "SkillResource",
    "build_entry",
    "digest_of",
    "entry_from_wire",
    "parse_skill_md",
    "render_skill_md",
    "resolve_reference",
    "skill_root_uri",
    "validate_frontmatter",
]
