"""How the gateway names what its upstreams serve: by label (the default), or by the upstream's own names.

``--names label`` (the default): an upstream's tools and prompts are ``LABEL__NAME``, its resources
and templates ``upstream://LABEL/URI``: two upstreams never collide, and every name says where it goes.

``--names upstream``: an upstream's tool, prompt, resource URI or template keeps its own name where
no other connected upstream lists the same one, so a client written against that server works
unchanged through the gateway. The label form stays for what collides, and is always accepted
(a client may use either):

* a tool or prompt name listed by several upstreams, a tool named like one of the gateway's
  meta-tools (``find``, ``load``, ``read_skill_file``, ``call``: the meta-tool keeps its name), and
  a name that reads as the label form of another upstream's tool or prompt (``docs__search`` while
  ``docs`` lists ``search``) are ``LABEL__NAME``;
* a URI or template listed by several upstreams, an ``upstream://`` URI and a ``skill://`` one (the
  re-published skills' scheme) are ``upstream://LABEL/URI``; a template's expansion is read through
  the one upstream whose kept template matches it.

:class:`UpstreamNames` is one snapshot of what the upstreams list (every page, under the host's
listing caps); the forwarding rebuilds it when an upstream connects, goes, or says its prompts or
resources changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = ["NAMINGS", "Naming", "UpstreamNames", "kept_tool_names", "template_pattern", "tool_collisions"]

Naming: TypeAlias = Literal["label", "upstream"]
NAMINGS: tuple[Naming, ...] = ("label", "upstream")
SEPARATORS = ("/", "__")
"""What splits a tool's label form (``LABEL/TOOL``, ``LABEL__TOOL``): a kept name must not read as one."""
_EXPRESSION = re.compile(r"\{([+#./;?&]?)[^}]*\}")


def _reads_as_label_form(name: str, listed: Mapping[str, Iterable[str]]) -> bool:
    """Whether ``name`` splits into a connected label and a name that label lists (``docs__search``)."""
    for separator in SEPARATORS:
        head, found, tail = name.partition(separator)
        if found and head in listed and tail in set(listed[head]):
            return True
    return False


def kept_tool_names(listed: Mapping[str, Iterable[str]], reserved: Iterable[str]) -> frozenset[str]:
    """The tool names kept under ``--names upstream``: listed by one upstream only, none of ``reserved``
    (the meta-tools), and not readable as another tool's label form.

    ``listed``: label -> the names of the tools that upstream lists.
    """
    owners: dict[str, int] = {}
    for names in listed.values():
        for name in set(names):
            owners[name] = owners.get(name, 0) + 1
    taken = frozenset(reserved)
    return frozenset(
        name
        for name, count in owners.items()
        if count == 1 and name not in taken and not _reads_as_label_form(name, listed)
    )


def tool_collisions(listed: Mapping[str, Iterable[str]], reserved: Iterable[str]) -> list[str]:
    """Each tool name :func:`kept_tool_names` does not keep, with the labels listing it and why."""
    kept = kept_tool_names(listed, reserved)
    taken = frozenset(reserved)
    owners: dict[str, list[str]] = {}
    for label, names in listed.items():
        for name in set(names) - kept:
            owners.setdefault(name, []).append(label)
    found = []
    for name, labels in sorted(owners.items()):
        why = "a meta-tool's name" if name in taken else "listed by several" if len(labels) > 1 else "a label form"
        found.append(f"tool {name} ({', '.join(sorted(labels))}: {why})")
    return found


def template_pattern(template: str) -> re.Pattern[str] | None:
    """A pattern matching the expansions of an RFC 6570 URI template, or ``None`` when it has no expression.

    A simple expression (``{id}``) matches within one path segment, a reserved one (``{+path}``,
    ``{#frag}``) anything; the other operators (``{?q}``, ``{/seg}``...) match what they may expand to.
    """
    parts: list[str] = []
    end = 0
    for match in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[end : match.start()]))
        operator = match.group(1)
        parts.append({"": r"[^/?#]*", "+": r".*", "#": r"(?:#.*)?"}.get(operator, r"(?:[./;?&][^/]*)*"))
        end = match.end()
    if not parts:
        return None
    parts.append(re.escape(template[end:]))
    return re.compile("".join(parts))


@dataclass
class UpstreamNames:
    """Who lists each prompt name, resource URI and template (one snapshot; see the module docs)."""

    prompts: dict[str, set[str]] = field(default_factory=dict)
    """Prompt name -> the labels listing it."""
    resources: dict[str, set[str]] = field(default_factory=dict)
    """Resource URI -> the labels listing it."""
    templates: dict[str, set[str]] = field(default_factory=dict)
    """URI template -> the labels listing it."""
    reserved_schemes: tuple[str, ...] = ("upstream://", "skill://")
    """URIs in these schemes are always the gateway's own form (they would read as the gateway's)."""
    _prompts_of: dict[str, set[str]] | None = field(default=None, init=False, repr=False)
    """Label -> its prompt names (made once, on the first question after an :meth:`add`)."""

    def add(self, kind: Literal["prompts", "resources", "templates"], label: str, keys: Iterable[str]) -> None:
        table = getattr(self, kind)
        self._prompts_of = None
        for key in keys:
            table.setdefault(key, set()).add(label)

    def keeps_prompt(self, label: str, name: str) -> bool:
        """Whether ``label``'s prompt ``name`` is listed under its own name."""
        if self.prompts.get(name) != {label}:
            return False
        if self._prompts_of is None:
            self._prompts_of = {}
            for prompt, labels in self.prompts.items():
                for owner in labels:
                    self._prompts_of.setdefault(owner, set()).add(prompt)
        head, found, tail = name.partition("__")
        return not (found and tail in self._prompts_of.get(head, set()))

    def prompt_owner(self, name: str) -> str | None:
        """The label whose prompt is listed as ``name`` (its own name), or ``None``."""
        labels = self.prompts.get(name)
        if labels is None or len(labels) != 1:
            return None
        label = next(iter(labels))
        return label if self.keeps_prompt(label, name) else None

    def keeps_uri(self, label: str, uri: str, *, template: bool = False) -> bool:
        """Whether ``label``'s resource ``uri`` (or template) is listed as it is."""
        table = self.templates if template else self.resources
        return table.get(uri) == {label} and not uri.startswith(self.reserved_schemes)

    def uri_owner(self, uri: str) -> str | None:
        """The label a URI in its own form is read from: the one listing it, else the one whose kept template
        matches it; ``None`` when none (or several) do."""
        if uri.startswith(self.reserved_schemes):
            return None
        labels = self.resources.get(uri)
        if labels is not None:
            return next(iter(labels)) if len(labels) == 1 else None
        owners = {
            next(iter(labels))
            for template, labels in self.templates.items()
            if len(labels) == 1
            and self.keeps_uri(next(iter(labels)), template, template=True)
            and (pattern := template_pattern(template)) is not None
            and pattern.fullmatch(uri)
        }
        return owners.pop() if len(owners) == 1 else None

    def collisions(self) -> list[str]:
        """Each prompt, URI and template listed by several upstreams (what stays in the label form)."""
        found = []
        for kind, table in (("prompt", self.prompts), ("resource", self.resources), ("template", self.templates)):
            found += [f"{kind} {key} ({', '.join(sorted(labels))})" for key, labels in table.items() if len(labels) > 1]
        return sorted(found)
