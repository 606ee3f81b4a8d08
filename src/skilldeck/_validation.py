"""Outside input parsed one way: pydantic models, and one error that names where and what to do.

Each document skilldeck reads (a policy, a server configuration, a catalog snapshot, a skill entry
from a server) is described by :class:`Model` subclasses: strict types (``"true"`` is not
``true``, ``"10"`` is not ``10``), unknown keys refused unless the format is open. A field's
``description`` (or a model's ``expected``) says what belongs there; :func:`parse` turns the first
problem pydantic finds into the caller's own error type, for example::

    skills.orders.routes[0].allow: expected 'all', 'none' or a list of tool names
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

__all__ = ["Model", "parse", "where"]

M = TypeVar("M", bound=BaseModel)
E = TypeVar("E", bound=Exception)


class Model(BaseModel):
    """Base of the parsing models: strict, immutable, and unknown keys refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    expected: ClassVar[str] = ""
    """What a value of this model looks like, for the message when something else stands there."""


def parse(model: type[M], data: object, error: Callable[[str], E], *, at: str = "") -> M:
    """``data`` validated as ``model``; else ``error`` raised with a message naming where (after ``at``).

    Raises:
        ``error(message)``: the first problem found, as ``<location>: <what is wrong and what is expected>``.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(explain(model, exc.errors(include_url=False), at=at)) from None


def where(at: str, *parts: str | int) -> str:
    """A location in the document: ``servers.docs.args[2]`` from ``("servers", "docs", "args", 2)``."""
    text = at
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f"{'.' if text else ''}{part}"
    return text


def explain(model: type[BaseModel], errors: Sequence[ErrorDetails], *, at: str = "") -> str:
    """One message for the first problem of ``errors`` (reported by validating ``model``)."""
    first = errors[0]
    walked = _walk(model, first["loc"])
    if walked.tag is not None:  # a union: report the alternative that got furthest
        prefix = first["loc"][: walked.tag]
        first = max((e for e in errors if e["loc"][: walked.tag] == prefix), key=lambda e: len(e["loc"]))
        walked = _walk(model, first["loc"])
    path = where(at, *walked.path)
    kind, message = first["type"], first["msg"]
    if kind == "extra_forbidden":
        key, path = walked.path[-1], where(at, *walked.path[:-1])
        allowed = ", ".join(sorted(walked.keys))
        text = f"unknown {'' if path else 'top-level '}key {key!r}" + (f" (expected {allowed})" if allowed else "")
    elif kind == "missing":
        key, path = walked.path[-1], where(at, *walked.path[:-1])
        text = f"{key!r} is required" + (f" ({walked.hint})" if walked.hint else "")
    elif kind == "value_error":
        text = message.removeprefix("Value error, ")  # our own validators' words
    elif walked.hint:
        text = f"expected {walked.hint}"
    else:
        text = message[0].lower() + message[1:]
    return f"{path}: {text}" if path else text


class _Walked:
    def __init__(self) -> None:
        self.path: list[str | int] = []
        self.hint = ""
        self.keys: tuple[str, ...] = ()
        self.tag: int | None = None


def _walk(model: type[BaseModel], loc: Sequence[str | int]) -> _Walked:
    """Follow ``loc`` through the model's types: the location as written, the hint, the keys allowed."""
    out = _Walked()
    current: Any = model
    for index, part in enumerate(loc):
        current = _bare(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            out.hint = current.__dict__.get("expected", "") or out.hint
            out.keys = tuple(_keys(current))
            field = current.model_fields.get(part) if isinstance(part, str) else None
            out.path.append(part)
            if field is None:  # an unknown key
                return out
            out.hint = field.description or ""
            current = field.annotation
            continue
        origin = get_origin(current)
        if origin in (Union, types.UnionType):
            options = [a for a in get_args(current) if a is not type(None)]
            if len(options) > 1 and isinstance(part, str):
                out.tag = out.tag if out.tag is not None else index
                current = next((a for a in options if _tag_of(a) == part), Any)
                continue
            current = options[0]
            current = _bare(current)
            origin = get_origin(current)
        out.path.append(part)
        args = get_args(current) if origin in (list, dict) else ()
        current = args[-1] if args else Any
    current = _bare(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        out.hint = current.__dict__.get("expected", "") or out.hint
        out.keys = tuple(_keys(current))
    return out


def _bare(annotation: Any) -> Any:
    """``X`` out of ``Annotated[X, ...]`` and ``X | None``."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation = get_args(annotation)[0]
        elif get_origin(annotation) in (Union, types.UnionType):
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return annotation
            annotation = options[0]
        else:
            return annotation


def _tag_of(annotation: Any) -> str:
    """The name pydantic gives a union's alternative in an error's location (``literal['all','none']``)."""
    bare = _bare(annotation)
    if get_origin(bare) is Literal:
        return "literal[" + ",".join(repr(a) for a in get_args(bare)) + "]"
    if isinstance(bare, type) and not get_args(bare):
        return bare.__name__
    origin, args = get_origin(bare), get_args(bare)
    return f"{origin.__name__}[{','.join(_tag_of(a) for a in args)}]" if origin else str(bare)


def _keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)
