"""Entries, digests, limits and skill:// URIs."""

from __future__ import annotations

import hashlib

import pytest

from skilldeck.errors import SkillLimitError
from skilldeck.skill._manifest import (
    MAX_RESOURCES_PER_SKILL,
    MAX_SKILL_BYTES,
    SkillEntry,
    build_entry,
    check_limits,
    digest_of,
)
from skilldeck.skill._uri import (
    directory_uri,
    file_uri,
    is_text_mime_type,
    mime_type_for,
    parent_uri,
    resolve_reference,
    skill_name_from_uri,
    skill_root_uri,
)


def test_digest_format() -> None:
    assert digest_of(b"abc") == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert len(digest_of(b"")) == len("sha256:") + 64


def test_build_entry_lists_every_file_skill_md_first() -> None:
    files = {"templates/b.md": b"bb", "SKILL.md": b"---\n", "a.py": b"a"}
    entry = build_entry("acme/billing/refunds", {"name": "refunds", "description": "d"}, files)
    assert entry.uri == "skill://acme/billing/refunds/SKILL.md"
    assert not isinstance(entry.resources, str)
    assert [r.uri for r in entry.resources] == [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://acme/billing/refunds/a.py",
        "skill://acme/billing/refunds/templates/b.md",
    ]
    assert [r.size for r in entry.resources] == [4, 1, 2]
    assert entry.resources[2].digest == digest_of(b"bb")
    wire = entry.to_wire()
    assert wire["frontmatter"] == {"name": "refunds", "description": "d"}
    assert wire["resources"][0] == {"uri": entry.uri, "digest": digest_of(b"---\n"), "size": 4}


def test_dynamic_entry_wire_form() -> None:
    entry = SkillEntry(
        uri="skill://r/daily/SKILL.md", frontmatter={"name": "daily", "description": "d"}, resources="dynamic"
    )
    assert entry.to_wire()["resources"] == "dynamic"
    assert entry.is_dynamic


def test_limits_name_the_skill_and_the_limit() -> None:
    check_limits("ok", {f"f{i}": 1 for i in range(MAX_RESOURCES_PER_SKILL)})
    with pytest.raises(SkillLimitError) as files:
        check_limits("big", {f"f{i}": 1 for i in range(MAX_RESOURCES_PER_SKILL + 1)})
    assert files.value.rule == "limit-files"
    assert "big" in str(files.value)
    assert "512" in str(files.value)
    check_limits("ok", {"a": MAX_SKILL_BYTES})
    with pytest.raises(SkillLimitError) as size:
        check_limits("heavy", {"a": MAX_SKILL_BYTES, "b": 1})
    assert size.value.rule == "limit-size"
    assert "heavy" in str(size.value)
    assert "16 MiB" in str(size.value)


def test_uris_percent_encode_segments() -> None:
    assert file_uri("pdf-forms", "templates/eu invoice#1.md") == "skill://pdf-forms/templates/eu%20invoice%231.md"
    assert directory_uri("pdf-forms") == "skill://pdf-forms"
    assert directory_uri("pdf-forms", "templates/regional") == "skill://pdf-forms/templates/regional"
    assert skill_root_uri("skill://acme/billing/refunds/SKILL.md") == "skill://acme/billing/refunds"
    assert skill_root_uri("skill://acme/notes.md") is None
    assert skill_root_uri("skill:///SKILL.md") is None
    assert skill_name_from_uri("skill://acme/billing/refunds/SKILL.md") == "refunds"
    assert skill_name_from_uri("skill://git-workflow/SKILL.md") == "git-workflow"
    assert parent_uri("skill://a/b/c.md") == "skill://a/b"
    assert parent_uri("skill://a") is None


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("references/GUIDE.md", "skill://acme/billing/refunds/references/GUIDE.md"),
        ("./examples/email.md", "skill://acme/billing/refunds/examples/email.md"),
        ("a/../b.md", "skill://acme/billing/refunds/b.md"),
        ("../other/SKILL.md", None),
        ("%2e%2e/x", None),
        ("/etc/passwd", None),
        ("file:///etc/passwd", None),
        ("skill://evil/SKILL.md", None),
        ("..\\x", None),
        ("", None),
    ],
)
def test_relative_references_resolve_against_the_skill_root(reference: str, expected: str | None) -> None:
    assert resolve_reference("skill://acme/billing/refunds/SKILL.md", reference) == expected


def test_mime_types() -> None:
    assert mime_type_for("SKILL.md") == "text/markdown"
    assert mime_type_for("scripts/x.py") == "text/x-python"
    assert mime_type_for("assets/logo.PNG") == "image/png"
    assert mime_type_for("data.bin") == "application/octet-stream"
    assert is_text_mime_type("application/json")
    assert not is_text_mime_type("application/pdf")
