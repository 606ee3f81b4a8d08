"""Dynamic skills: content generated per request, published with ``"resources": "dynamic"``.

A dynamic skill has fixed frontmatter (so its entry is stable and hosts can verify the
``SKILL.md`` they read against it) and a body, plus optional supporting files, rendered for each
request from a :class:`SkillRequest`. The frontmatter is written into every rendered ``SKILL.md``
by :func:`~skilldeck.skill._frontmatter.render_skill_md`, so entry and file never disagree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from skilldeck._awaitable import maybe_await
from skilldeck.errors import SourceError
from skilldeck.skill import SKILL_MD, SkillEntry, render_skill_md, validate_frontmatter
from skilldeck.skill._api import DYNAMIC, check_limits, file_uri

__all__ = ["BodyRenderer", "DynamicSkill", "FilesRenderer", "SkillRequest"]


@dataclass(frozen=True)
class SkillRequest:
    """What a renderer may know about the request it renders for.

    ``meta`` is the request's ``_meta`` object as sent by the client; treat it as untrusted
    hints (it may shape wording, never permissions).
    """

    protocol_version: str
    meta: Mapping[str, Any] = field(default_factory=dict)


BodyRenderer = Callable[[SkillRequest], "str | Awaitable[str]"]
FilesRenderer = Callable[[SkillRequest], "Mapping[str, str | bytes] | Awaitable[Mapping[str, str | bytes]]"]


class DynamicSkill:
    """A skill whose ``SKILL.md`` body (and optionally other files) is generated per request.

    Args:
        skill_path: where it is served, e.g. ``"reports/daily"``; the last segment is its name.
        description: the frontmatter ``description``.
        body: returns the markdown after the frontmatter, given the request.
        files: optionally returns supporting files (``/`` paths relative to the skill root).
        frontmatter: further frontmatter fields (``license``, ``metadata``, ...).

    Raises:
        SourceError: the path or frontmatter break the Agent Skills rules.
    """

    def __init__(
        self,
        skill_path: str,
        *,
        description: str,
        body: BodyRenderer,
        files: FilesRenderer | None = None,
        frontmatter: Mapping[str, Any] | None = None,
    ) -> None:
        skill_path = skill_path.strip("/")
        name = skill_path.rsplit("/", 1)[-1]
        fields: dict[str, Any] = {"name": name, "description": description, **(frontmatter or {})}
        try:
            validate_frontmatter(fields, directory_name=name, path=skill_path)
            render_skill_md(fields, "")  # proves the frontmatter round-trips through YAML
        except SourceError:
            raise
        except Exception as exc:
            raise SourceError(f"dynamic skill is not valid: {exc}", path=skill_path, rule="dynamic-skill") from exc
        self.skill_path = skill_path
        self.frontmatter = fields
        self._body = body
        self._files = files
        self.entry = SkillEntry(uri=file_uri(skill_path), frontmatter=fields, resources=DYNAMIC)

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    def with_frontmatter(self, frontmatter: Mapping[str, Any]) -> DynamicSkill:
        """The same skill (path, name, renderers) published with other frontmatter: a per-caller variant, say.

        Raises:
            SourceError: the frontmatter breaks the Agent Skills rules.
        """
        fields = {k: v for k, v in frontmatter.items() if k not in ("name", "description")}
        return DynamicSkill(
            self.skill_path,
            description=str(frontmatter.get("description", self.frontmatter["description"])),
            body=self._body,
            files=self._files,
            frontmatter=fields,
        )

    async def render(self, request: SkillRequest) -> dict[str, bytes]:
        """Every file of the skill for this request, ``SKILL.md`` included, as bytes.

        Raises:
            SkillLimitError: the rendered skill is over 512 files or 16 MiB.
        """
        body = await maybe_await(self._body(request))
        rendered: dict[str, bytes] = {SKILL_MD: render_skill_md(self.frontmatter, str(body)).encode("utf-8")}
        if self._files is not None:
            extra = await maybe_await(self._files(request))
            for path, content in extra.items():
                clean = path.strip("/")
                if not clean or clean == SKILL_MD or ".." in clean.split("/"):
                    raise SourceError(f"dynamic file path {path!r} is not allowed", path=self.skill_path)
                rendered[clean] = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        check_limits(self.skill_path, {p: len(d) for p, d in rendered.items()})
        return rendered
