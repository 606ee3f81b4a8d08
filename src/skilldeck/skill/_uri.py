"""``skill://`` URIs and file types. Pure functions, no I/O.

A skill file is addressed as ``skill://<skill-path>/<file-path>`` (Skills extension, "Resource
Mapping"). Each ``/``-separated segment is percent-encoded on the way in, so a file name with a
space or a ``#`` still yields a valid URI; the server then serves *exactly* the URIs it built
and nothing else, which leaves no room for ``..`` or ``%2e%2e`` tricks.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import quote, unquote

__all__ = [
    "DIRECTORY_MIME_TYPE",
    "EXTENSION_ID",
    "SCHEME",
    "SKILL_MD",
    "directory_uri",
    "file_uri",
    "is_text_mime_type",
    "mime_type_for",
    "parent_uri",
    "resolve_reference",
    "skill_name_from_uri",
    "skill_root_uri",
]

EXTENSION_ID = "io.modelcontextprotocol/skills"
"""The Skills extension's identifier, under which servers declare it and hosts look for it."""
SCHEME = "skill"
SKILL_MD = "SKILL.md"
DIRECTORY_MIME_TYPE = "inode/directory"

# RFC 3986 unreserved and sub-delims: valid in a reg-name and in a path segment.
_SAFE = "-._~!$&'()*+,;="

_MIME_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".rst": "text/x-rst",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
    ".bash": "text/x-shellscript",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".ts": "text/x-typescript",
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".xml": "application/xml",
    ".html": "text/html",
    ".htm": "text/html",
    ".css": "text/css",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".sql": "application/sql",
    ".ini": "text/plain",
    ".cfg": "text/plain",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
    ".zip": "application/zip",
    ".gz": "application/gzip",
    ".tar": "application/x-tar",
}

_TEXT_APPLICATION_TYPES = {
    "application/json",
    "application/jsonl",
    "application/yaml",
    "application/toml",
    "application/xml",
    "application/sql",
    "application/javascript",
    "image/svg+xml",
}


_UNCHANGED = re.compile(r"[A-Za-z0-9/" + re.escape(_SAFE) + r"]*")
"""A path made only of these is its own encoding (``quote`` leaves them as they are)."""


def _encode_path(path: str) -> str:
    if _UNCHANGED.fullmatch(path):
        return path
    return "/".join(quote(segment, safe=_SAFE) for segment in path.split("/"))


def file_uri(skill_path: str, file_path: str = SKILL_MD) -> str:
    """URI of ``file_path`` (``/``-separated, relative to the skill root) in the skill at ``skill_path``."""
    return f"{SCHEME}://{_encode_path(skill_path)}/{_encode_path(file_path)}"


def directory_uri(skill_path: str, dir_path: str = "") -> str:
    """URI of a directory inside a skill; the skill root itself when ``dir_path`` is empty (no trailing slash)."""
    root = f"{SCHEME}://{_encode_path(skill_path)}"
    return f"{root}/{_encode_path(dir_path)}" if dir_path else root


def skill_root_uri(skill_md_uri: str) -> str | None:
    """The skill's root directory URI for the URI of its ``SKILL.md`` (``None`` if it is not one)."""
    suffix = "/" + SKILL_MD
    if not skill_md_uri.endswith(suffix) or "://" not in skill_md_uri:
        return None
    root = skill_md_uri[: -len(suffix)]
    return root if root.split("://", 1)[1] else None


def skill_name_from_uri(skill_md_uri: str) -> str | None:
    """The skill name a ``SKILL.md`` URI carries: its last ``<skill-path>`` segment, decoded."""
    root = skill_root_uri(skill_md_uri)
    if root is None:
        return None
    return unquote(root.rsplit("/", 1)[-1].split("://", 1)[-1])


def parent_uri(uri: str) -> str | None:
    """The URI of the directory holding ``uri`` (``None`` at the scheme root)."""
    if "://" not in uri:
        return None
    scheme, rest = uri.split("://", 1)
    if "/" not in rest:
        return None
    return f"{scheme}://{rest.rsplit('/', 1)[0]}"


def resolve_reference(skill_md_uri: str, reference: str) -> str | None:
    """Resolve a relative reference in a ``SKILL.md`` against the skill root, as a filesystem would.

    Returns ``None`` for references that are absolute, carry a scheme, or climb out of the skill
    root: those are never files of the skill.
    """
    root = skill_root_uri(skill_md_uri)
    if root is None or not reference or "://" in reference or reference.startswith(("/", "\\")):
        return None
    if "\\" in reference:
        return None
    normalized = posixpath.normpath(unquote(reference))
    if normalized in (".", "") or normalized == ".." or normalized.startswith("../"):
        return None
    return f"{root}/{_encode_path(normalized)}"


def mime_type_for(file_path: str) -> str:
    """The MIME type skilldeck announces for a skill file, by its name."""
    name = posixpath.basename(file_path)
    if name == SKILL_MD:
        return "text/markdown"
    return _MIME_TYPES.get(posixpath.splitext(name)[1].lower(), "application/octet-stream")


def is_text_mime_type(mime_type: str) -> bool:
    """Whether content of this type is served as text (when it is valid UTF-8) rather than as a blob."""
    return mime_type.startswith("text/") or mime_type in _TEXT_APPLICATION_TYPES
