"""What sibling packages may use of ``skilldeck.skill`` beyond its public names (see ``skilldeck._faces``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skilldeck._faces import lazy_names

if TYPE_CHECKING:
    from skilldeck.skill._frontmatter import TOOLS_METADATA_KEY, render_frontmatter, validate_name
    from skilldeck.skill._manifest import DYNAMIC, MAX_SKILL_BYTES, check_limits
    from skilldeck.skill._pack import (
        DirectoryChild,
        DirectorySource,
        LoadResult,
        Pack,
        SkillFile,
        StaticIndex,
        StaticSkill,
        children_of,
        first_per_path,
        load_all,
    )
    from skilldeck.skill._tags import DESCRIPTIVE_KEYS, neutralise_in, neutralise_tags
    from skilldeck.skill._uri import (
        DIRECTORY_MIME_TYPE,
        EXTENSION_ID,
        directory_uri,
        file_uri,
        is_text_mime_type,
        mime_type_for,
        skill_name_from_uri,
    )

_WHERE = {
    "check_limits": "skilldeck.skill._manifest",
    "children_of": "skilldeck.skill._pack",
    "DESCRIPTIVE_KEYS": "skilldeck.skill._tags",
    "DIRECTORY_MIME_TYPE": "skilldeck.skill._uri",
    "directory_uri": "skilldeck.skill._uri",
    "DirectoryChild": "skilldeck.skill._pack",
    "DirectorySource": "skilldeck.skill._pack",
    "DYNAMIC": "skilldeck.skill._manifest",
    "EXTENSION_ID": "skilldeck.skill._uri",
    "file_uri": "skilldeck.skill._uri",
    "first_per_path": "skilldeck.skill._pack",
    "is_text_mime_type": "skilldeck.skill._uri",
    "load_all": "skilldeck.skill._pack",
    "LoadResult": "skilldeck.skill._pack",
    "MAX_SKILL_BYTES": "skilldeck.skill._manifest",
    "mime_type_for": "skilldeck.skill._uri",
    "neutralise_in": "skilldeck.skill._tags",
    "neutralise_tags": "skilldeck.skill._tags",
    "Pack": "skilldeck.skill._pack",
    "render_frontmatter": "skilldeck.skill._frontmatter",
    "skill_name_from_uri": "skilldeck.skill._uri",
    "SkillFile": "skilldeck.skill._pack",
    "StaticIndex": "skilldeck.skill._pack",
    "StaticSkill": "skilldeck.skill._pack",
    "TOOLS_METADATA_KEY": "skilldeck.skill._frontmatter",
    "validate_name": "skilldeck.skill._frontmatter",
}

__all__ = [
    "DESCRIPTIVE_KEYS",
    "DIRECTORY_MIME_TYPE",
    "DYNAMIC",
    "EXTENSION_ID",
    "MAX_SKILL_BYTES",
    "TOOLS_METADATA_KEY",
    "DirectoryChild",
    "DirectorySource",
    "LoadResult",
    "Pack",
    "SkillFile",
    "StaticIndex",
    "StaticSkill",
    "check_limits",
    "children_of",
    "directory_uri",
    "file_uri",
    "first_per_path",
    "is_text_mime_type",
    "load_all",
    "mime_type_for",
    "neutralise_in",
    "neutralise_tags",
    "render_frontmatter",
    "skill_name_from_uri",
    "validate_name",
]


__getattr__ = lazy_names(__name__, _WHERE)
