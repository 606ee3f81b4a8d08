"""The Agent Skills format: ``SKILL.md`` frontmatter, skill manifests and ``skill://`` URIs. Pure, no I/O.

Its modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.skill`` beyond its public names: its face to them.
- ``_beneath``: Opening and reading files below a root folder without following links out of it.
- ``_frontmatter``: ``SKILL.md`` frontmatter: split, parse, validate, render.
- ``_manifest``: Skill entries and manifests: the ``Skill`` / ``SkillResource`` shapes of the Skills
  extension.
- ``_pack``: The skill pack: a folder of skills read into memory, for the server and the host alike.
- ``_static``: What a skill pack holds in memory once read: skills with their files' bytes, and directory
  listings.
- ``_tags``: Content that cannot open or close a ``<skill-content>`` origin tag, however the tag is spelt.
- ``_uri``: ``skill://`` URIs and file types.
- ``_workers``: Worker processes that read runs of a big pack's top folders, and the columns their skills
  come back as.
"""

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
