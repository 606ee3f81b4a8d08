"""Content that cannot open or close a ``<skill-content>`` origin tag, however the tag is spelt. Pure.

What a skill's server sends enters a model's context inside a tag that names its origin and whether
it was verified (:meth:`skilldeck.host._loader.LoadedSkill.tagged`). A server that could write that
tag into its own content could close the real one early and open a forged ``verified="true"`` one.
A model, or a lenient HTML-ish parser, reads a tag generously: other cases, any run of spaces,
dashes, dots, underscores or invisible characters between the letters, full-width or small angle
brackets, letters from other scripts that look the same (Cyrillic ``ѕ``, Greek ``κ``), styled
letters (``𝐬𝐤𝐢𝐥𝐥``), ``1``/``|``/``I`` for ``l`` and ``0`` for ``o``.

:func:`neutralise_tags` escapes the bracket of every such spelling (``<`` becomes ``&lt;``). Each
character after a bracket is folded (compatibility decomposition, accents dropped, case folded,
look-alikes mapped to the Latin letter they imitate); characters that fold to nothing are skipped
as separators; another bracket ends the look. The bracket is escaped when the letters so read spell
``skill`` then ``content``. Ordinary angle brackets (``a < b``, ``<div>``, ``<skill>``) are left alone.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

__all__ = ["DESCRIPTIVE_KEYS", "neutralise_in", "neutralise_tags"]

DESCRIPTIVE_KEYS = frozenset({"description", "title", "text", "message", "systemPrompt", "instructions"})
"""The keys of MCP objects whose strings are prose a model reads (a tool's or prompt's description, a
content block's or resource's text, an elicitation's message, a sampling request's system prompt), as
opposed to names, URIs and values a program matches."""

_OPENERS = "<\ufe64\uff1c\u2039\u3008\u27e8\u2329"
"""``<`` and the brackets a reader could take for it (small, full-width, single guillemet, angle brackets)."""
_CLOSERS = ">\ufe65\uff1e\u203a\u3009\u27e9\u232a"
_BRACKETS = frozenset(_OPENERS + _CLOSERS)
_LOOKALIKES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "с": "c", "е": "e", "і": "l", "ј": "j", "к": "k", "ӏ": "l", "о": "o", "р": "p",
        "ѕ": "s", "т": "t", "х": "x", "у": "y", "ԁ": "d", "һ": "h", "п": "n", "ո": "n",
        # Greek
        "α": "a", "ε": "e", "ι": "l", "κ": "k", "ν": "v", "ο": "o", "τ": "t", "ϲ": "c", "η": "n",
        # Latin look-alikes compatibility decomposition keeps
        "ı": "l", "ĸ": "k", "ɩ": "l", "ǀ": "l",
        # letters a reader takes for each other: i, l, 1, | and ! as one (so every i-like above is l); o and 0
        "i": "l", "1": "l", "|": "l", "!": "l", "0": "o",
    }
)  # fmt: skip
_LOOK_AHEAD = 256
"""Characters read after a bracket at most (separators included)."""


@lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    """The Latin letters and digits ``char`` reads as ("" for a separator: space, dash, mark, invisible)."""
    out = []
    for part in unicodedata.normalize("NFKD", char):
        if unicodedata.combining(part):
            continue
        for c in part.casefold().translate(_LOOKALIKES):
            if c.isascii() and c.isalnum():
                out.append(c)
            elif c.isalnum():
                out.append("?")  # a letter of another script: not part of the tag's name
    return "".join(out)


_TARGET = "".join(_fold(c) for c in "skillcontent")


def _spelling(unsure: str) -> re.Pattern[str]:
    """A bracket, then (past ASCII separators) ASCII letters that spell the tag's name, where any character
    matching ``unsure`` may stand for the rest of it (``""``: none may)."""
    ascii_chars = [chr(c) for c in range(128) if chr(c) not in _BRACKETS]
    separator = "[" + re.escape("".join(c for c in ascii_chars if not _fold(c))) + "]*"
    ahead = ""
    for letter in reversed(_TARGET):
        spelt = "[" + re.escape("".join(c for c in ascii_chars if _fold(c) == letter)) + "]"
        ahead = f"{separator}(?:{unsure}|{spelt}{ahead})" if unsure else f"{separator}{spelt}{ahead}"
    return re.compile(f"[{re.escape(_OPENERS)}](?={ahead})")


_ASCII_SPELLING = _spelling("")
"""The tag's name in ASCII letters: escaped at once."""
_OPENER = _spelling("[^\\x00-\\x7f]")
"""Brackets worth folding what follows: the name's ASCII letters up to its end or up to a non-ASCII
character, which only folding can judge. ``<div>``, ``</p>``, ``<skill>`` and ``a < b`` are passed
over by the regular expression alone."""


def _spells_tag(text: str, start: int) -> bool:
    """Whether the characters from ``start`` read as ``skill-content`` (see the module docs)."""
    matched = 0
    for index in range(start, min(len(text), start + _LOOK_AHEAD)):
        char = text[index]
        if char in _BRACKETS:
            return False
        folded = _fold(char)
        if not folded:
            continue  # a separator
        if not _TARGET.startswith(folded[: len(_TARGET) - matched], matched):
            return False
        matched += len(folded)
        if matched >= len(_TARGET):
            return True
    return False


def neutralise_tags(text: str) -> str:
    """``text`` with the bracket of every spelling of a ``skill-content`` tag escaped (see the module docs)."""
    out = []
    last = 0
    for found in _OPENER.finditer(text):
        index = found.start()
        if _ASCII_SPELLING.match(text, index) or _spells_tag(text, index + 1):
            out.append(text[last:index])
            out.append("&lt;")
            last = index + 1
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def neutralise_in(value: Any, keys: frozenset[str] | None = DESCRIPTIVE_KEYS) -> Any:
    """A copy of the JSON value ``value`` with :func:`neutralise_tags` applied to its strings: those under one of
    ``keys`` at any depth (every string when ``keys`` is ``None``). Unchanged parts are shared, not copied."""
    if isinstance(value, str):
        return neutralise_tags(value) if keys is None else value
    if isinstance(value, list):
        items = [neutralise_in(v, keys) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        out = {
            k: (neutralise_tags(v) if isinstance(v, str) and (keys is None or k in keys) else neutralise_in(v, keys))
            for k, v in value.items()
        }
        return value if all(out[k] is value[k] for k in value) else out
    return value
