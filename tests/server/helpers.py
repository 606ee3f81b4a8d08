"""Small builders for skill folders in tests."""

from __future__ import annotations

from pathlib import Path


def write_skill(
    root: Path,
    skill_path: str,
    description: str = "A test skill.",
    files: dict[str, bytes | str] | None = None,
    *,
    frontmatter_extra: str = "",
) -> Path:
    """Create ``root/skill_path/SKILL.md`` (name = last segment) plus ``files``; return the folder."""
    folder = root / skill_path
    folder.mkdir(parents=True, exist_ok=True)
    name = skill_path.rsplit("/", 1)[-1]
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{frontmatter_extra}---\n# {name}\n"
    )
    for rel, content in (files or {}).items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return folder
