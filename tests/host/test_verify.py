"""Host-side verification: size before digest, then frontmatter field by field."""

from __future__ import annotations

import pytest

from skilldeck.host import SkillChanged
from skilldeck.host._verify import VerificationError, same_json, verify_bytes, verify_skill_md
from skilldeck.skill._manifest import digest_of

from .hostile import HostileServer, Skill, open_host

SKILL = b"---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\nSkill body.\n"
ENTRY_FM = {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"}
URI = "skill://pdf-processing/SKILL.md"


def test_matching_content_passes() -> None:
    verify_bytes(URI, SKILL, size=len(SKILL), digest=digest_of(SKILL))
    assert verify_skill_md(URI, SKILL, ENTRY_FM).endswith("Skill body.\n")


def test_size_is_checked_before_digest() -> None:
    longer = SKILL + b"extra bytes the entry did not account for\n"
    with pytest.raises(VerificationError) as info:
        verify_bytes(URI, longer, size=len(SKILL), digest=digest_of(longer), label="docs")
    assert info.value.check == "size"
    assert str(info.value).startswith("[docs] skill://pdf-processing/SKILL.md: size mismatch")


def test_tampered_digest_same_size() -> None:
    evil = SKILL.replace(b"Skill body.", b"Evil body!!")
    assert len(evil) == len(SKILL)
    with pytest.raises(VerificationError) as info:
        verify_bytes(URI, evil, size=len(SKILL), digest=digest_of(SKILL))
    assert info.value.check == "digest"


def test_frontmatter_discrepancy_names_the_fields() -> None:
    evil = SKILL.replace(b"Extract, fill, and assemble PDF documents", b"Exfiltrate credentials")
    with pytest.raises(VerificationError) as info:
        verify_skill_md(URI, evil, ENTRY_FM)
    assert info.value.check == "frontmatter"
    assert "description" in str(info.value)
    with pytest.raises(VerificationError, match="license"):
        verify_skill_md(URI, SKILL, {**ENTRY_FM, "license": "MIT"})
    with pytest.raises(VerificationError, match="cannot be parsed"):
        verify_skill_md(URI, b"no frontmatter", ENTRY_FM)


def test_strict_json_equality() -> None:
    assert same_json(1, 1.0)
    assert not same_json(True, 1)
    assert not same_json({"a": [True]}, {"a": [1]})
    assert not same_json("1", 1)
    assert not same_json(None, "")
    assert same_json({"m": {"k": ["v"]}}, {"m": {"k": ["v"]}})
    with pytest.raises(VerificationError):
        verify_skill_md(URI, SKILL.replace(b"---\nSkill", b"n: true\n---\nSkill"), {**ENTRY_FM, "n": 1})


@pytest.mark.anyio
async def test_refresh_that_only_changes_true_to_1_is_still_a_change() -> None:
    skill = Skill("flags", extra="strict: true\n")
    server = HostileServer(skill)
    server.files[skill.uri] = server.files[skill.uri].replace(b"A test skill.", b"A test skill!")  # tampered
    changed = dict(skill.entry())
    changed["frontmatter"] = {**changed["frontmatter"], "strict": 1}
    server.got[skill.uri] = changed
    async with open_host(("s", server)) as host:
        with pytest.raises(SkillChanged) as info:
            await host.load(host.registry.resolve("flags"))
    assert info.value.current is not None
    assert info.value.current.frontmatter["strict"] == 1


@pytest.mark.anyio
async def test_an_unchanged_refresh_leaves_the_plain_failure() -> None:
    skill = Skill("plain")
    server = HostileServer(skill)
    server.files[skill.uri] = server.files[skill.uri].replace(b"A test skill.", b"A test skill!")
    async with open_host(("s", server)) as host:
        with pytest.raises(VerificationError) as info:
            await host.load(host.registry.resolve("plain"))
    assert not isinstance(info.value, SkillChanged)
    assert info.value.check == "digest"


def test_nested_mappings_and_lists_compare_key_by_key_and_item_by_item() -> None:
    assert same_json({"m": {"k": ["v", 1]}}, {"m": {"k": ["v", 1.0]}})
    for a, b in [
        ({"m": {"k": "v"}}, {"m": {"k": "v", "extra": "x"}}),  # one more key, deep down
        ({"m": {"k": "v"}}, {"m": {}}),
        ({"m": {"k": ["v"]}}, {"m": {"k": ["v", "w"]}}),  # a list and its prefix
        (["v"], []),
        ({"m": {"k": "v"}}, {"m": ["k"]}),
    ]:
        assert not same_json(a, b), (a, b)
        assert not same_json(b, a), (b, a)


def test_a_field_only_the_fetched_skill_md_has_is_a_difference_as_is_one_only_the_entry_has() -> None:
    """Verification compares the union of both sides' fields: a field added to the served SKILL.md (an
    ``allowed-tools`` the entry never showed) fails it as one dropped from it does."""
    added = SKILL.replace(b"\n---\nSkill", b"\nallowed-tools: Bash\n---\nSkill")
    with pytest.raises(VerificationError, match=r"frontmatter differs from the entry in: allowed-tools$"):
        verify_skill_md(URI, added, ENTRY_FM)
    nested = SKILL.replace(b"\n---\nSkill", b'\nmetadata:\n  team: docs\n  tier: "1"\n---\nSkill')
    verify_skill_md(URI, nested, {**ENTRY_FM, "metadata": {"team": "docs", "tier": "1"}})
    with pytest.raises(VerificationError, match=r"frontmatter differs from the entry in: metadata$"):
        verify_skill_md(URI, nested, {**ENTRY_FM, "metadata": {"team": "docs"}})
    with pytest.raises(VerificationError, match=r"frontmatter differs from the entry in: metadata$"):
        verify_skill_md(URI, nested, {**ENTRY_FM, "metadata": {"team": "docs", "tier": "1", "owner": "x"}})
