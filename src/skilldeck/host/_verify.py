"""Verification of what a server sent against the entry it listed. Sans-I/O.

The Skills extension's host rules, in the order a careful host applies them: the size first
(cheap, and a mismatch is already a failure), then the SHA-256 digest, then — for a ``SKILL.md``
— the frontmatter, field by field against the entry's. Any failure means the bytes must not be
used; :class:`VerificationError` says which check failed and where.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skilldeck.errors import FrontmatterError, VerificationError
from skilldeck.skill import digest_of, parse_skill_md

__all__ = ["same_json", "verify_bytes", "verify_skill_md"]


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1`` (as Python's ``==`` would have it); ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def verify_bytes(uri: str, data: bytes, *, size: int, digest: str, label: str | None = None) -> None:
    """Check ``data`` against a listed ``{uri, digest, size}``: size before digest.

    Raises:
        VerificationError: ``check`` is ``"size"`` or ``"digest"``.
    """
    if len(data) != size:
        raise VerificationError(
            f"size mismatch: the entry lists {size} bytes, the server sent {len(data)}",
            uri=uri,
            check="size",
            label=label,
        )
    actual = digest_of(data)
    if actual != digest:
        raise VerificationError(
            f"digest mismatch: the entry lists {digest}, the content hashes to {actual}",
            uri=uri,
            check="digest",
            label=label,
        )


def verify_skill_md(uri: str, data: bytes, frontmatter: Mapping[str, Any], *, label: str | None = None) -> str:
    """Parse a fetched ``SKILL.md`` and compare its frontmatter field by field with the entry's.

    Returns the decoded text. Raises:
        VerificationError: ``check`` is ``"frontmatter"``, naming the differing fields.
    """
    try:
        text = data.decode("utf-8")
        parsed = parse_skill_md(text)
    except (UnicodeDecodeError, FrontmatterError) as exc:
        raise VerificationError(
            f"SKILL.md cannot be parsed: {exc}", uri=uri, check="frontmatter", label=label
        ) from None
    differing = sorted(
        key
        for key in set(parsed.frontmatter) | set(frontmatter)
        if key not in parsed.frontmatter
        or key not in frontmatter
        or not same_json(parsed.frontmatter[key], frontmatter[key])
    )
    if differing:
        raise VerificationError(
            "frontmatter differs from the entry in: " + ", ".join(differing), uri=uri, check="frontmatter", label=label
        )
    return text
