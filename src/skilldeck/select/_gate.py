"""The tool gate: the only way a model's tool call reaches a server. Pure.

A call passes only if (1) the server listed the tool, (2) the tool is in the active set (the
tools the chosen skill needs), and (3) the arguments validate against the tool's
``inputSchema``. Every refusal happens before anything is sent, with an error that lists what is
available. The caller then sends the call on the same session that listed the tool.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from skilldeck.errors import GateRefused, InvalidArguments, ToolNotActive, ToolNotListed
from skilldeck.select._project import tool_function_name

__all__ = ["ToolGate"]


class ToolGate:
    """Listed tools per server, and the active set a call must be in.

    Args:
        listed: label -> tool name -> MCP ``Tool`` object, as the servers listed them.
        active: the ``(label, name)`` pairs the current skill needs.
    """

    def __init__(
        self, listed: Mapping[str, Mapping[str, Mapping[str, Any]]], active: Iterable[tuple[str, str]] = ()
    ) -> None:
        self._listed = {label: dict(tools) for label, tools in listed.items()}
        self._active: set[tuple[str, str]] = set()
        self._validators: dict[tuple[str, str], tuple[Any, Any]] = {}
        """(label, tool) -> (the input schema, its validator): built once per schema, not per call."""
        self.activate(active)

    def with_active(self, active: Iterable[tuple[str, str]]) -> ToolGate:
        """A gate over the same listing and validators (shared, not copied) with its own active set.

        For a service that checks calls of many clients against one listing: the view costs what
        its active set does, not what the listing does. Re-list on the gate it came from.
        """
        view = copy.copy(self)
        view.activate(active)
        return view

    @property
    def active(self) -> list[tuple[str, str]]:
        return sorted(self._active)

    def activate(self, tools: Iterable[tuple[str, str]]) -> None:
        """Replace the active set (only listed tools can be active)."""
        wanted = set(tools)
        unknown = sorted(f"{label}/{name}" for label, name in wanted if name not in self._listed.get(label, {}))
        if unknown:
            raise ToolNotListed(f"cannot activate tools no server listed: {', '.join(unknown)}")
        self._active = wanted

    def update_listing(self, label: str, tools: Iterable[Mapping[str, Any]]) -> None:
        """A server re-listed its tools: tools that disappeared leave the active set too."""
        self._listed[label] = {str(t["name"]): t for t in tools}
        self._active = {(lbl, name) for lbl, name in self._active if lbl != label or name in self._listed[label]}

    def resolve(self, name: str, label: str | None = None) -> tuple[str, str]:
        """``(label, tool)`` for a name as the model wrote it (``tool``, ``label/tool`` or ``label__tool``).

        A tool whose own name holds ``/`` or ``__`` (``fs__read``) keeps it: the name is split only
        when the part after the label is a tool that server listed, or no server lists the whole name.
        A name as History B rendered it for an API (``files__docs_search`` for ``files``'s
        ``docs/search``: characters the APIs refuse replaced) is mapped back to the listed tool.
        """
        if label is None:
            splits = [name.partition(sep) for sep in ("/", "__") if sep in name]
            for head, _, tail in splits:
                if head in self._listed and tail in self._listed[head]:
                    return head, tail
            owners = [lbl for lbl, tools in self._listed.items() if name in tools]
            if not owners:
                rendered = self._rendered(name)
                if rendered is not None:
                    return rendered
                # a tool listed under the whole name (``fs__read``) is not ``fs``'s unlisted ``read``
                for head, _, tail in splits:
                    if head in self._listed:
                        return head, tail
            active_owners = [lbl for lbl in owners if (lbl, name) in self._active]
            if len(active_owners) == 1:
                return active_owners[0], name
            if len(owners) == 1:
                return owners[0], name
            if not owners:
                raise ToolNotListed(f"no server lists a tool named {name!r}; {self._available()}")
            raise GateRefused(
                f"{name!r} is listed by several servers ({', '.join(owners)}); qualify it as label/{name}"
            )
        return label, name

    def _rendered(self, name: str) -> tuple[str, str] | None:
        """The listed tool History B rendered as ``name`` (qualified or not), preferring active ones."""
        found = [
            (lbl, tool)
            for lbl, tools in self._listed.items()
            for tool in tools
            if name in (tool_function_name(lbl, tool), tool_function_name(lbl, tool, qualify=False))
        ]
        active = [pair for pair in found if pair in self._active]
        found = active or found
        if len(found) > 1:
            names = ", ".join(f"{lbl}/{tool}" for lbl, tool in sorted(found))
            raise GateRefused(f"{name!r} stands for several tools ({names}); call one as label/tool")
        return found[0] if found else None

    def check(self, name: str, arguments: Mapping[str, Any] | None, *, label: str | None = None) -> tuple[str, str]:
        """Refuse the call unless it is listed, active and well-formed; returns ``(label, tool)``.

        Raises:
            ToolNotListed, ToolNotActive, InvalidArguments: nothing may be sent.
        """
        label, tool = self.resolve(name, label)
        listed = self._listed.get(label, {})
        if tool not in listed:
            raise ToolNotListed(f"{label!r} never listed a tool named {tool!r}; {self._available()}")
        if (label, tool) not in self._active:
            raise ToolNotActive(f"{label}/{tool} is not in the active skill's tools; {self._available()}")
        self._validate(label, tool, listed[tool], dict(arguments or {}))
        return label, tool

    def _validator(self, label: str, tool: str, schema: Mapping[str, Any]) -> Any:
        import jsonschema

        cached = self._validators.get((label, tool))
        if cached is not None and cached[0] is schema:
            return cached[1]
        validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = validator_cls(schema)
        self._validators[(label, tool)] = (schema, validator)
        return validator

    def _available(self) -> str:
        active = ", ".join(f"{lbl}/{name}" for lbl, name in self.active) or "none"
        return f"active tools: {active}"

    def _validate(self, label: str, tool: str, definition: Mapping[str, Any], arguments: dict[str, Any]) -> None:
        import jsonschema

        schema = definition.get("inputSchema")
        if not isinstance(schema, Mapping):
            return
        try:
            validator = self._validator(label, tool, schema)
            errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
        except jsonschema.exceptions.SchemaError as exc:
            raise InvalidArguments(f"{label}/{tool} has an input schema that cannot be used: {exc.message}") from None
        except Exception as exc:
            raise InvalidArguments(
                f"{label}/{tool} has an input schema that cannot be used ({type(exc).__name__}); the call was not sent"
            ) from None
        if errors:
            detail = "; ".join(f"{'/'.join(str(p) for p in e.path) or '(arguments)'}: {e.message}" for e in errors[:5])
            raise InvalidArguments(f"arguments for {label}/{tool} do not match its input schema: {detail}")
