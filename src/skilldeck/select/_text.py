"""Text for the ranker: index terms (:func:`tokens`) and what is indexed and encoded for a card or a server.

Text is tokenised without any catalog-specific rule: lower case, camelCase and snake_case split,
English stemming (``PyStemmer``), and runs of CJK characters as character bigrams (so Chinese
descriptions match Chinese questions; English questions against Chinese descriptions can only
match through tool names, which are nearly always English).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from skilldeck.select._cards import Card

__all__ = ["card_fields", "schema_text", "semantic_text", "server_text", "tokens", "tokens_of_each", "words_of"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TOKEN = re.compile(r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _wordset(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
    now of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """
)
# words of the request itself, not of the job: they match tool prose ("helps you ...") by accident
_REQUEST = _wordset(
    """
    also based could give help kindly let like make may might must need please shall show sure tell thank thanks use using via want would
    """
)


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def _stem(words: list[str]) -> list[str]:
    stemmed: list[str] = _stemmer().stemWords(words)
    return stemmed


def _split(text: str, request_stopwords: bool) -> tuple[list[str], list[str]]:
    """``text``'s words to stem and its CJK bigrams (:func:`tokens` before stemming)."""
    text = _CAMEL.sub(" ", text).lower()
    words: list[str] = []
    cjk: list[str] = []
    for tok in _TOKEN.findall(text):
        if not tok[0].isascii():  # a run of CJK characters (the other alternative is ASCII only)
            cjk.extend(tok[i : i + 2] for i in range(max(1, len(tok) - 1)))
        elif len(tok) > 1 and not tok.isdigit() and tok not in _STOP:
            if request_stopwords and tok in _REQUEST:
                continue
            words.append(tok)
    return words, cjk


def tokens(text: str, *, request_stopwords: bool = False) -> list[str]:
    """Index terms of ``text``: lower case, camelCase/snake_case split, stop words out, stemmed; CJK as bigrams."""
    words, cjk = _split(text, request_stopwords)
    return _stem(words) + cjk


def tokens_of_each(texts: Sequence[str]) -> list[list[str]]:
    """:func:`tokens` of each of ``texts``, the words of all of them stemmed in one call."""
    split = [_split(text, False) for text in texts]
    stemmed = _stem([word for words, _ in split for word in words])
    out: list[list[str]] = []
    at = 0
    for words, cjk in split:
        out.append(stemmed[at : at + len(words)] + cjk)
        at += len(words)
    return out


def schema_text(tool: Mapping[str, Any] | None) -> str:
    """An MCP Tool's input-schema property names and descriptions, as one text."""
    schema = tool.get("inputSchema") if isinstance(tool, Mapping) else None
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return ""
    parts: list[str] = []
    for name, prop in props.items():
        parts.append(str(name))
        if isinstance(prop, Mapping) and isinstance(prop.get("description"), str):
            parts.append(prop["description"])
    return " ".join(parts)


def words_of(name: str) -> str:
    """A name as words: ``search_jobs`` -> ``search jobs`` (``_ - . /`` become spaces)."""
    return re.sub(r"[_\-./]+", " ", name)


def card_fields(card: Card) -> tuple[str, str, str]:
    """(name, description, server) texts of a card."""
    names = " ".join([words_of(card.name), *(words_of(t) for _, t in card.tools if t != card.name)])
    return names, card.description, f"{words_of(card.server)} {card.server_description}"


def semantic_text(card: Card) -> str:
    """What an encoder reads for a card: server, name as words, description (first 400 characters)."""
    return f"{words_of(card.server)}: {words_of(card.name)}: {card.description[:400]}"


def server_text(label: str, description: str, card_names: Sequence[str] = ()) -> str:
    """What an encoder reads for a server: ``label: description`` (its card names when it has no description)."""
    about = description.strip() or ", ".join(words_of(n) for n in card_names[:20])
    return f"{words_of(label)}: {about[:400]}"
