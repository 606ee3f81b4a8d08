"""The variants ``everyday.py --ablation`` measures: each of this round's changes taken out, and card texts tried.

Each variant is a context manager that changes one thing for the duration of a run (module attributes
of the installed skilldeck, put back on exit), so the same harness, catalogs and questions measure it:

* ``no intent view``: ``RankConfig.intent_weight`` 0 (what a question asks to do is not held
  against the tools' annotations);
* ``no slot view``: ``RankConfig.slot_weight`` 0 (a clock time or URL the question gives, or a
  clock time it does not give, is not held against what the tools' required arguments need);
* ``no memory need``: a fact to remember or recall is not a need the question implies;
* ``no ties first``: the shortlist leads with one card per server, ties or not;
* ``large-catalog calibration``: a small catalog judged by the model fitted on 70 servers;
* ``file need fifth``: a file or URL the question names moves its server to the fifth place, as in a
  large catalog, not the first;
* ``card text + title`` / ``+ parameter names`` / ``server name and instructions``: what the encoder
  reads for a tool card and its server, measured and not shipped (docs/benchmarks/selection.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from skilldeck import ask
from skilldeck.gateway import _shortlist
from skilldeck.select import _decide, _query, _rank, _steps, _text
from skilldeck.select._cards import words

__all__ = ["VARIANTS"]


@contextlib.contextmanager
def _patched(target: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, old)


@contextlib.contextmanager
def shipped() -> Iterator[None]:
    yield


@contextlib.contextmanager
def _config(**changes: float) -> Iterator[None]:
    """Every Ranker built meanwhile takes its RankConfig with ``changes``."""
    init = _rank.Ranker.__init__

    def changed(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["config"] = replace(kwargs.get("config") or _rank.RankConfig(), **changes)
        init(self, *args, **kwargs)

    with _patched(_rank.Ranker, "__init__", changed):
        yield


def no_intent() -> contextlib.AbstractContextManager[None]:
    return _config(intent_weight=0.0)


def no_slots() -> contextlib.AbstractContextManager[None]:
    return _config(slot_weight=0.0)


@contextlib.contextmanager
def no_memory_need() -> Iterator[None]:
    memory = [need for _, need in _query.IMPLIED_NEEDS if "remember" in need]
    kept = tuple((pattern, need) for pattern, need in _query.IMPLIED_NEEDS if need not in memory)
    with _patched(_query, "IMPLIED_NEEDS", kept), _patched(_rank, "LEADING_NEEDS", _rank.LEADING_NEEDS - set(memory)):
        yield


@contextlib.contextmanager
def no_ties() -> Iterator[None]:
    with _patched(_shortlist, "TIE_MARGIN", -1.0):
        yield


@contextlib.contextmanager
def large_calibration() -> Iterator[None]:
    with _patched(_decide, "SMALL_CATALOG_SERVERS", 0):
        yield


@contextlib.contextmanager
def file_need_fifth() -> Iterator[None]:
    init = _rank.Ranker.__init__

    def large(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.small = False

    with _patched(_rank.Ranker, "__init__", large):
        yield


def _param_names(tool: Mapping[str, Any] | None, depth: int = 0) -> list[str]:
    schema = tool.get("inputSchema") if isinstance(tool, Mapping) and depth == 0 else tool
    if not isinstance(schema, Mapping) or depth > 3:
        return []
    found: list[str] = []
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, prop in props.items():
            found.append(words(str(name)))
            found += _param_names(prop, depth + 1)
    items = schema.get("items")
    if isinstance(items, Mapping):
        found += _param_names(items, depth + 1)
    return found


def _card_text(title: bool, params: bool) -> Callable[..., Any]:
    def semantic_text(self: Any, card: Any, tool: Mapping[str, Any] | None) -> str:
        name = _text.words_of(card.name)
        if title and tool and isinstance(tool.get("title"), str) and tool["title"].strip():
            name = tool["title"].strip()
        text = f"{_text.words_of(card.server)}: {name}: {card.description[:400]}"
        names = _param_names(tool) if params else []
        return f"{text} Parameters: {', '.join(names)[:300]}" if names else text

    return semantic_text


@contextlib.contextmanager
def card_title() -> Iterator[None]:
    with _patched(_steps.RankSteps, "semantic_text", _card_text(title=True, params=False)):
        yield


@contextlib.contextmanager
def card_params() -> Iterator[None]:
    with _patched(_steps.RankSteps, "semantic_text", _card_text(title=False, params=True)):
        yield


@contextlib.contextmanager
def server_self() -> Iterator[None]:
    def describe(host: Any, label: str) -> str:
        connected = host.sessions.get(label)
        info = connected.client.server_info if connected is not None else None
        if info is None:
            return ""
        text = " ".join((info.description or "").split())
        if not text:
            name = re.sub(r"[-_]+", " ", info.name or "")
            text = " ".join(p for p in (info.title or "", name) if p)
            instructions = " ".join((connected.client.instructions or "").split())
            if instructions:
                text = f"{text}. {instructions[:300]}"
        return text[: ask.MAX_SERVER_DESCRIPTION]

    with _patched(ask, "_self_description", describe):
        yield


VARIANTS: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "shipped": shipped,
    "no intent view": no_intent,
    "no slot view": no_slots,
    "no memory need": no_memory_need,
    "no ties first": no_ties,
    "large-catalog calibration": large_calibration,
    "file need fifth": file_need_fifth,
    "card text + tool title": card_title,
    "card text + parameter names": card_params,
    "server text: its name, title and instructions": server_self,
}
