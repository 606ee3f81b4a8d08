"""Ranking cards for a question: lexical BM25F always, semantic embeddings when installed. Pure.

What is indexed (every choice below was measured on LiveMCPBench; see ``bench/selection``):

* **Cards** (a tool, or a skill): a BM25F document with weighted fields -- the name as words
  (``search_jobs`` -> ``search jobs``), the description, the input schema's property names and
  descriptions when the schemas are known, and the server's label and description.
* **Servers**: one BM25F document per server holding all of its cards. A card's score mixes its
  own match with its server's, so a question phrased in one tool's words still ranks the server
  that holds the neighbouring tools it will need, and servers come out grouped.
* Skills also inherit the best score of the tools they name (a little discounted).

What is asked:

* the question, with file paths and extensions it mentions also read as words
  (``/root/ppt/apple.pptx`` -> ``powerpoint presentation slides file``) and a small stop list of
  request words ("please", "help me", ...);
* each job of a multi-job question (:func:`split_jobs`) on its own; each job's normalised ranking
  adds ``1 / n_jobs`` of itself to the question's, so every job can pull its own server up.

Text is tokenised without any catalog-specific rule: lower case, camelCase and snake_case split,
English stemming (``PyStemmer``), and runs of CJK characters as character bigrams (so Chinese
descriptions match Chinese questions; English questions against Chinese descriptions can only
match through tool names, which are nearly always English).

With an :class:`Encoder` (the default install's int8 MiniLM, :mod:`skilldeck.select.encoders`),
servers are ranked by **multi-view fusion**: five views per server, each z-scored across the
servers and summed --

1. the lexical server score above (its best card after the server mix, jobs and skills);
2. the best BM25F score of its cards;
3. the mean of the cosines of its two best cards;
4. the cosine to the centroid of its card vectors;
5. the cosine to its ``label: description`` text.

A card's score is then mostly its server's fused score (rescaled to [0, 1]) and a little its own (lexical
and cosine, half each), so cards come out grouped by server in the fused order. Card and server
vectors can be cached by content (:class:`~skilldeck.select.vectors.VectorCache`).
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, Protocol

import numpy as np

from skilldeck.select.cards import Card
from skilldeck.select.vectors import VectorCache

__all__ = [
    "BACKGROUND_CHUNK",
    "IMPLIED_NEEDS",
    "IMPLIED_SLOT",
    "VIEWS",
    "Encoder",
    "IndexingState",
    "RankConfig",
    "Ranker",
    "Ranking",
    "Scored",
    "Unit",
    "implied_needs",
    "semantic_text",
    "server_text",
    "split_jobs",
    "tokens",
]

VIEWS = ("lexical", "best_bm25", "top2_cosine", "centroid_cosine", "label_cosine")
"""The five per-server views fused when an encoder is given (see the module docstring)."""


class Encoder(Protocol):
    """Turns texts into L2-normalised vectors (rows)."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Scored:
    """A card with its score for one question (in [0, 1], higher is closer)."""

    card: Card
    score: float
    lexical: float
    semantic: float | None = None
    matched_terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class RankConfig:
    """The ranker's weights. The defaults are the measured best (``bench/selection/run.py --ablation``).

    The variants that were measured and not shipped (pseudo-relevance feedback, servers scored by
    their best card, reciprocal rank fusion, max-merged or unsplit jobs, no path words, ...) live in
    the benchmark (``bench/selection/ablation.py``), which overrides :class:`Ranker`'s hook methods."""

    k1: float = 1.2
    b: float = 0.75
    server_b: float = 0.5
    """BM25 length normalisation of server documents (cards use ``b``)."""
    name_weight: float = 2.0
    """BM25F weight of a card's name field (description = 1)."""
    params_weight: float = 0.3
    """Weight of the input schema's property names and descriptions (when schemas are given)."""
    server_field_weight: float = 0.3
    """Weight of the server's label and description inside each card's document."""
    server_mix: float = 0.5
    """A card's score = (1 - server_mix) * its own + server_mix * its server's."""
    semantic_weight: float = 0.5
    """Share of a card's cosine in its own score (when an encoder is given)."""
    fused_server_weight: float = 0.98
    """With an encoder: a card's score = this share of its server's fused score (in [0, 1]) + the rest of its
    own, so servers come out in fused order and each server's cards by their own score (chosen on half A)."""


# --- text -------------------------------------------------------------------------------------

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
_EXTENSIONS: dict[str, str] = {
    "md": "markdown text file",
    "markdown": "markdown text file",
    "txt": "text file",
    "log": "text log file",
    "doc": "word document",
    "docx": "word document",
    "ppt": "powerpoint presentation slides",
    "pptx": "powerpoint presentation slides",
    "xls": "excel spreadsheet workbook",
    "xlsx": "excel spreadsheet workbook",
    "csv": "csv table file",
    "pdf": "pdf document",
    "png": "image picture",
    "jpg": "image picture",
    "jpeg": "image picture",
    "gif": "image picture",
    "svg": "svg image",
    "wav": "audio file",
    "mp3": "audio file",
    "flac": "audio file",
    "mp4": "video file",
    "html": "html web page file",
    "json": "json file",
    "py": "python code file",
    "js": "javascript code file",
    "ts": "typescript code file",
    "tsx": "typescript react code file",
    "java": "java code file",
    "bib": "bibtex reference file",
}
_PATH = re.compile(r"(?:^|[\s(\"'`])(?:~|\.{1,2})?/[^\s\"'`)]+")
_FILE_EXT = re.compile(r"\b[\w\-]+\.([A-Za-z][A-Za-z0-9]{0,7})\b")

_stemmer: Any = None


def _stem(words: list[str]) -> list[str]:
    global _stemmer
    if _stemmer is None:
        import Stemmer

        _stemmer = Stemmer.Stemmer("english")
    stemmed: list[str] = _stemmer.stemWords(words)
    return stemmed


def tokens(text: str, *, request_stopwords: bool = False) -> list[str]:
    """Index terms of ``text``: lower case, camelCase/snake_case split, stop words out, stemmed; CJK as bigrams."""
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
    return _stem(words) + cjk


_SAVE = re.compile(r"\b(?:save|saved|saving|store|write|export|output|generate|create|draft|make)\b", re.I)
_READ = re.compile(r"\b(?:read|open|load|under|in my|from|analy[sz]e|compare)\b", re.I)


def _expand(question: str) -> str:
    """Words for the files a question mentions: ``save to /root/ppt/a.pptx`` -> ``file directory path
    write file powerpoint presentation slides``."""
    extra: list[str] = []
    if _PATH.search(question):
        extra.append("file directory path")
        if _SAVE.search(question):
            extra.append("write file")
        if _READ.search(question):
            extra.append("read file")
    for match in _FILE_EXT.finditer(question):
        words = _EXTENSIONS.get(match.group(1).lower())
        if words and words not in extra:
            extra.append(words)
    return " ".join(extra)


_CLAUSE = re.compile(
    r"[;.!?]\s+|,\s+(?:and\s+|then\s+)?|\s+(?:and then|then|and also|after that|finally|as well as)\s+|"
    r"\s+and\s+(?=(?:then\s+)?(?:save|write|create|generate|make|draw|plot|export|convert|send|put|store|"
    r"summari[sz]e|tell|give|show|list|find|get|read|check|compare|analy[sz]e|recommend|search|download|"
    r"remind|calculate|estimate)\b)",
    re.IGNORECASE,
)


_LOCAL_FILE = re.compile(
    r"(?:^|[\s(\"'`])(?:~|\.{1,2})?/[^\s\"'`)]+"  # a local path
    r"|\b[A-Za-z]:\\"  # a Windows drive
    r"|\b[\w\-]+\.(?:md|txt|csv|tsv|xlsx?|docx?|pptx?|pdf|json|ya?ml|png|jpe?g|gif|svg|html?|log)\b",  # a file name
    re.IGNORECASE,
)
IMPLIED_NEEDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_LOCAL_FILE, "read and write files in a local folder"),
    (re.compile(r"\bhttps?://\S+", re.IGNORECASE), "fetch the content of a web page at a URL"),
    # arithmetic: 17*23, 2^10, 17 - 3, 10 / 2 (a date such as 2024-05-01 or 5/1/2024 is not)
    (
        re.compile(r"\d\s*[+*×÷^]\s*\d|\d\s+[-/]\s+\d|\b(?:calculate|compute)\b", re.IGNORECASE),
        "calculate a math expression",
    ),
    # a date relative to today: tomorrow, next Wednesday, the last 24h, three days ago, ...
    (
        re.compile(
            r"\b(?:tomorrow|yesterday|tonight|near future|(?:next|this) (?:week|weekend|month|year|monday|tuesday|"
            r"wednesday|thursday|friday|saturday|sunday)|(?:last|past) \d+\s*(?:h|hours?|days?|weeks?)|"
            r"in \d+ days|\d+ days? ago)\b",
            re.IGNORECASE,
        ),
        "get the current date and time",
    ),
)
"""Needs a question implies without naming them, each found by a rule (no model): a file it mentions
(the work has to be read or saved somewhere), a URL, arithmetic, a date relative to today (the
work needs to know what day it is). Plain "today", "now", "current" and "latest" are left out: most
questions that say them need fresh data, not the clock."""
IMPLIED_SLOT = 4
"""An implied need's best server is moved up to this index of the server list (the fifth place) when
it is not already above it; a second one to the place before, and so on."""


def implied_needs(question: str) -> list[str]:
    """The needs ``question`` implies (:data:`IMPLIED_NEEDS`), as texts to rank."""
    return [need for pattern, need in IMPLIED_NEEDS if pattern.search(question)]


def split_jobs(question: str) -> list[str]:
    """Clauses of a question that could each be a job of their own (three words or more).

    Splits at sentence ends, commas, "then", "after that", ... and at "and" before a verb of a new
    job ("... and save it to"). Returns ``[]`` when the question holds fewer than two such clauses.
    """
    parts = [p.strip(" .,;:!?") for p in _CLAUSE.split(question) if p]
    jobs = [p for p in parts if len(p.split()) >= 3]
    return jobs if len(jobs) > 1 else []


# --- BM25F ------------------------------------------------------------------------------------


class _Index:
    """BM25 over weighted bags of terms, in flat numpy arrays (postings sorted by term)."""

    def __init__(
        self,
        docs: Sequence[Mapping[str, float]],
        k1: float,
        b: float,
        background: tuple[int, Mapping[str, int]] | None = None,
    ) -> None:
        self.n = len(docs)
        lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
        avg = float(lengths.mean()) if self.n and lengths.mean() > 0 else 1.0
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        for i, doc in enumerate(docs):
            for term, count in doc.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                tfs.append(count)
        self.vocab = vocab
        r = np.array(rows, dtype=np.int32)
        c = np.array(cols, dtype=np.int32)
        tf = np.array(tfs, dtype=np.float64)
        df = np.bincount(c, minlength=len(vocab)).astype(np.float64)
        self.document_frequencies = df
        n = float(self.n)
        if background is not None:
            bg_n, bg_df = background
            terms = sorted(vocab, key=vocab.__getitem__)
            df = df + np.array([bg_df.get(t, 0) for t in terms], dtype=np.float64)
            n += bg_n
        self.idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * lengths[r] / avg) if len(r) else np.zeros(0)
        w = self.idf[c] * tf * (k1 + 1.0) / (tf + norm) if len(r) else np.zeros(0)
        order = np.argsort(c, kind="stable")
        self.docs = r[order]
        self.weights = w[order]
        self.ptr = np.concatenate([[0], np.cumsum(np.bincount(c, minlength=len(vocab)))]).astype(np.int64)

    def scores(self, query: Mapping[str, float]) -> np.ndarray:
        ids = [(self.vocab[t], w) for t, w in query.items() if t in self.vocab]
        if not ids or self.n == 0:
            return np.zeros(self.n)
        if len(ids) == 1:
            ((t, qw),) = ids
            out = np.zeros(self.n)
            out[self.docs[self.ptr[t] : self.ptr[t + 1]]] = qw * self.weights[self.ptr[t] : self.ptr[t + 1]]
            return out
        docs = np.concatenate([self.docs[self.ptr[t] : self.ptr[t + 1]] for t, _ in ids])
        weights = np.concatenate([qw * self.weights[self.ptr[t] : self.ptr[t + 1]] for t, qw in ids])
        return np.bincount(docs, weights=weights, minlength=self.n)


BACKGROUND_FILE = "background-df.json"


@functools.lru_cache(maxsize=1)
def _background() -> tuple[tuple[int, dict[str, int]], tuple[int, dict[str, int]]] | None:
    """The shipped background document frequencies: (cards n, df) and (servers n, df)."""
    path = resources.files("skilldeck.select") / BACKGROUND_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return (int(data["cards"]["n"]), dict(data["cards"]["df"])), (
        int(data["servers"]["n"]),
        dict(data["servers"]["df"]),
    )


def _bag(fields: Iterable[tuple[list[str], float]]) -> dict[str, float]:
    bag: dict[str, float] = {}
    for terms, weight in fields:
        if weight <= 0:
            continue
        for term, count in Counter(terms).items():
            bag[term] = bag.get(term, 0.0) + weight * count
    return bag


def _schema_text(tool: Mapping[str, Any] | None) -> str:
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


def _words_of(name: str) -> str:
    return re.sub(r"[_\-./]+", " ", name)


def _card_fields(card: Card) -> tuple[str, str, str]:
    """(name, description, server) texts of a card."""
    names = " ".join([_words_of(card.name), *(_words_of(t) for _, t in card.tools if t != card.name)])
    return names, card.description, f"{_words_of(card.server)} {card.server_description}"


def semantic_text(card: Card) -> str:
    """What an encoder reads for a card: server, name as words, description (first 400 characters)."""
    return f"{_words_of(card.server)}: {_words_of(card.name)}: {card.description[:400]}"


def server_text(label: str, description: str, card_names: Sequence[str] = ()) -> str:
    """What an encoder reads for a server: ``label: description`` (its card names when it has no description)."""
    about = description.strip() or ", ".join(_words_of(n) for n in card_names[:20])
    return f"{_words_of(label)}: {about[:400]}"


def _zscore(x: np.ndarray) -> np.ndarray:
    sd = float(x.std())
    return (x - float(x.mean())) / sd if sd > 1e-12 else np.zeros_like(x)


# --- ranking ----------------------------------------------------------------------------------


BACKGROUND_CHUNK = 256
"""Texts per encoder call (and cache write) at least when card vectors are encoded in the background."""


@dataclass(frozen=True)
class IndexingState:
    """How many of the catalog's texts (cards and server labels) have vectors, of how many."""

    done: int
    total: int
    error: str | None = None
    """Why encoding stopped (the ranking then stays lexical)."""
    cached: int = 0
    """How many of them the vector cache held at the start (``done - cached`` were encoded here)."""

    def to_json(self) -> dict[str, Any]:
        """``{"encoded", "total"}`` and, when encoding stopped, ``"error"``: how a decision reports it."""
        out: dict[str, Any] = {"encoded": self.done, "total": self.total}
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class Unit:
    """What one query unit (the whole question, or one of its jobs) found, in catalog-independent terms.

    Everything is told about one card -- the unit's best card after ranking, which is what a
    decision chooses -- and that card's server, so a confidence built on it rests on the choice."""

    text: str
    terms: tuple[str, ...]
    """The unit's own terms (expansions left out)."""
    card: int
    """Index of its best card (for the whole question: the top-ranked card)."""
    server: str
    """The server of that card."""
    lexical: float
    """Raw BM25 of that card (a skill: at least that of the best tool it names)."""
    server_lexical: float
    """Raw BM25 of that card's server's document."""
    coverage: float
    """Share of ``terms`` found in that server's document."""
    idf_coverage: float
    """IDF-weighted share of ``terms`` found in the top three servers' documents together."""
    matched: tuple[str, ...]
    """``terms`` found in that server's document."""
    semantic: float | None = None
    """Cosine similarity of that card (``None`` without an encoder)."""
    server_semantic: float | None = None
    """Cosine similarity of the centroid of that card's server (``None`` without an encoder)."""
    fused: float | None = None
    """The fused score (sum of five z-scores) of that card's server (``None`` without an encoder)."""
    fused_margin: float | None = None
    """That fused score minus the best fused score of any other server."""
    agreement: float | None = None
    """Share of the five views that rank that card's server first."""
    label_semantic: float | None = None
    """Cosine similarity of that card's server's ``label: description`` text."""


@dataclass(frozen=True)
class _Evidence:
    """A query unit's raw scores over the whole catalog, before it is told about one card."""

    text: str
    terms: tuple[str, ...]
    card_raw: np.ndarray
    server_raw: np.ndarray
    card_sem: np.ndarray | None
    server_sem: np.ndarray | None
    idf_coverage: float
    fused: np.ndarray | None = None
    """Per server: the sum of the five views' z-scores (with an encoder)."""
    view_top: np.ndarray | None = None
    """Per view: the index of the server it ranks first."""
    label_sem: np.ndarray | None = None


@dataclass
class Ranking:
    """Everything one question's ranking produced."""

    question: str
    scored: list[Scored]
    """The best cards, best first (cut at the ``limit`` asked for)."""
    servers: list[tuple[str, float]]
    """Every server, best first, scored by its best card."""
    units: list[Unit] = field(default_factory=list)
    """``units[0]`` is the whole question; the rest are its jobs (:func:`split_jobs`)."""
    implied: list[tuple[str, str]] = field(default_factory=list)
    """(need, server) for each need the question implies (:func:`implied_needs`) and the server
    that need ranks first, which was given a place among the first :data:`IMPLIED_SLOT` + 1 servers."""
    implied_units: list[Unit] = field(default_factory=list)
    """For each of ``implied``: what that need's own ranking found, told about its best card (how well
    the catalog serves the need; the decision's confidence reads the weakest)."""
    semantic: bool = False
    """Whether the encoder's views were fused (``False``: lexical, e.g. while card vectors are encoded)."""
    indexing: IndexingState | None = None
    """How far the ranker's card vectors were when it ranked."""


class Ranker:
    """An index over cards.

    Args:
        cards: every card to choose from.
        encoder: an optional semantic encoder; ``None`` means lexical only.
        semantic_weight: the share of the semantic score in the mix (0..1); overrides ``config``.
        schemas: ``label -> tool name -> MCP Tool object`` (e.g. ``CardSet.tools``), to index
            input-schema property names and descriptions too.
        config: the ranking knobs (:class:`RankConfig`).
        vectors: precomputed card vectors (rows in card order, from ``encoder`` over
            :func:`semantic_text`), to skip encoding the catalog.
        cache_dir: a folder where card and server vectors are kept by content
            (:class:`~skilldeck.select.vectors.VectorCache`); ``None`` writes nothing.
        cache: a :class:`~skilldeck.select.vectors.VectorCache` to use instead of one on
            ``cache_dir`` (e.g. one kept in memory and shared by the rankers that follow a changing
            catalog, so each encodes only the cards that changed).
        background: encode the card vectors the cache lacks on a thread of their own, so the ranker
            answers at once: lexically (as without an encoder) until every vector is ready, then with
            the fused views (:attr:`semantic`, :attr:`indexing`, :meth:`wait`). Vectors all in the
            cache are read at once, as without ``background``.
    """

    def __init__(
        self,
        cards: Sequence[Card],
        *,
        encoder: Encoder | None = None,
        semantic_weight: float | None = None,
        schemas: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
        config: RankConfig | None = None,
        vectors: np.ndarray | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        background: bool = False,
        cache: VectorCache | None = None,
    ) -> None:
        config = config or RankConfig()
        if semantic_weight is not None:
            config = replace(config, semantic_weight=semantic_weight)
        self.config = config
        self.cards = list(cards)
        self.encoder = encoder
        self.semantic_weight = config.semantic_weight if encoder is not None else 0.0
        schemas = schemas or {}
        c = config
        self.server_labels: list[str] = list(dict.fromkeys(card.server for card in self.cards))
        self._labels = np.array(self.server_labels, dtype=object)  # indexable by an array of server ids
        server_id = {label: i for i, label in enumerate(self.server_labels)}
        self._card_server = np.array([server_id[card.server] for card in self.cards], dtype=np.int64)
        card_bags: list[dict[str, float]] = []
        self._card_terms: list[frozenset[str]] = []
        server_fields: list[list[tuple[list[str], float]]] = [[] for _ in self.server_labels]
        seen: dict[str, list[str]] = {}  # a server's text recurs in each of its cards: tokenised once

        def tok(text: str) -> list[str]:
            found = seen.get(text)
            if found is None:
                found = seen[text] = tokens(text)
            return found

        for card in self.cards:
            names, description, server = _card_fields(card)
            t_name, t_desc, t_server = tok(names), tok(description), tok(server)
            tool = schemas.get(card.server, {}).get(card.name) if card.kind == "tool" else None
            t_params = tok(_schema_text(tool)) if tool is not None and c.params_weight > 0 else []
            fields = [(t_name, c.name_weight), (t_desc, 1.0), (t_params, c.params_weight)]
            card_bags.append(_bag([*fields, (t_server, c.server_field_weight)]))
            self._card_terms.append(frozenset(t_name) | frozenset(t_desc) | frozenset(t_server))
            sid = server_id[card.server]
            if not server_fields[sid]:
                server_fields[sid].append((t_server, c.name_weight))
            server_fields[sid].extend(fields)
        self._card_bags = card_bags
        bg = self._background_frequencies()
        self._cards = _Index(card_bags, c.k1, c.b, bg[0] if bg else None)
        self._servers = _Index([_bag(f) for f in server_fields], c.k1, c.server_b, bg[1] if bg else None)
        self._server_terms = [frozenset(itertools.chain.from_iterable(terms for terms, _ in f)) for f in server_fields]
        # skills inherit from the tools they name: card index of each (server, tool)
        tool_index = {(card.server, card.name): i for i, card in enumerate(self.cards) if card.kind == "tool"}
        inherit = [
            (i, np.array([tool_index[t] for t in card.tools if t in tool_index], dtype=np.int64))
            for i, card in enumerate(self.cards)
            if card.kind == "skill"
        ]
        self._inherit = [(i, js) for i, js in inherit if len(js)]
        self._named = dict(self._inherit)
        self._best_for_need: dict[tuple[bool, str], Unit | None] = {}
        self._primed: dict[str, np.ndarray] = {}
        # cards grouped by server, for per-server maxima with reduceat
        self._group_order = np.argsort(self._card_server, kind="stable")
        self._group_starts = np.searchsorted(self._card_server[self._group_order], np.arange(len(self.server_labels)))
        # semantic vectors: per card, per server (the centroid of its cards) and of each server's text;
        # ``_vectors`` is set last, so a ranking that finds it set finds the others set too
        self._vectors: np.ndarray | None = None
        self._server_vectors: np.ndarray | None = None
        self._label_vectors: np.ndarray | None = None
        if cache is None and cache_dir is not None:
            cache = VectorCache(cache_dir)
        self.cache = cache if encoder is not None else None
        self.indexing = IndexingState(0, 0)
        """How far the card vectors are (see :meth:`wait`); ``total`` 0 without an encoder."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if encoder is not None and self.cards:
            about: dict[str, str] = {}
            card_names: dict[str, list[str]] = {}
            for card in self.cards:
                about.setdefault(card.server, card.server_description)
                card_names.setdefault(card.server, []).append(card.name)
            texts = [self._label_text(label, about[label], card_names[label]) for label in self.server_labels]
            if vectors is not None:
                self._set_vectors(vectors, self._encode(texts))
                return
            # cards and server texts in one list: one cache read, one write
            card_texts = [
                self._semantic_text(card, schemas.get(card.server, {}).get(card.name) if card.kind == "tool" else None)
                for card in self.cards
            ]
            both = [*card_texts, *texts]
            todo = self.cache.missing(encoder, both) if self.cache is not None else list(dict.fromkeys(both))
            cached = len(both) - len(todo)
            self.indexing = IndexingState(cached, len(both), cached=cached)
            if not background or not todo:
                found = self._encode(both)
                self._set_vectors(found[: len(self.cards)], found[len(self.cards) :])
                self.indexing = IndexingState(len(both), len(both), cached=cached)
                return
            self._thread = threading.Thread(
                target=self._index_in_background, args=(both, todo), name="skilldeck-card-vectors", daemon=True
            )
            self._thread.start()

    def _set_vectors(self, vectors: np.ndarray, label_vectors: np.ndarray) -> None:
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.shape[0] != len(self.cards):
            raise ValueError(f"{vecs.shape[0]} vectors for {len(self.cards)} cards")
        sums = np.zeros((len(self.server_labels), vecs.shape[1]), dtype=np.float32)
        np.add.at(sums, self._card_server, vecs)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        # per-server top-2 of card cosines: the cards sorted by server, and each card's group
        self._sorted_server = self._card_server[self._group_order]
        self._group_sizes = np.diff(np.append(self._group_starts, len(self.cards)))
        self._server_vectors = sums / np.where(norms > 0, norms, 1.0)
        self._label_vectors = np.ascontiguousarray(label_vectors, dtype=np.float32)
        self._vectors = vecs

    def _index_in_background(self, both: list[str], todo: list[str]) -> None:
        """Encode ``todo`` a chunk at a time (each chunk stored in the cache as it is done, so an
        interrupted start keeps what it encoded), then let the semantic views join."""
        done = cached = self.indexing.cached
        fresh: dict[str, np.ndarray] = {}
        chunk = max(BACKGROUND_CHUNK, len(todo) // 20)  # at most ~20 cache writes
        try:
            for start in range(0, len(todo), chunk):
                if self._stop.is_set():
                    return
                part = todo[start : start + chunk]
                vectors = self._encode(part)
                if self.cache is None:
                    fresh.update(zip(part, vectors, strict=True))
                done += len(part)
                self.indexing = IndexingState(done, len(both), cached=cached)
            # with a cache every text is in it now: read, not encoded
            found = self._encode(both) if self.cache is not None else np.stack([fresh[t] for t in both])
            self._set_vectors(found[: len(self.cards)], found[len(self.cards) :])
        except Exception as exc:  # the ranking stays lexical, and each decision says why
            self.indexing = IndexingState(done, len(both), f"{type(exc).__name__}: {exc}", cached)

    @property
    def semantic(self) -> bool:
        """Whether rankings fuse the encoder's views (an encoder, and every card vector ready)."""
        return self.encoder is not None and self._vectors is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the card vectors encoded in the background (if any); whether rankings are semantic now."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.semantic

    def close(self) -> None:
        """Stop encoding card vectors in the background after the chunk under way (the ranking stays lexical)."""
        self._stop.set()

    def _encode(self, texts: list[str]) -> np.ndarray:
        assert self.encoder is not None
        if self.cache is not None:
            return self.cache.encode(self.encoder, texts)
        return np.asarray(self.encoder.encode(texts), dtype=np.float32)

    # -- hooks: the shipped choice of each step (bench/selection/ablation.py overrides them) -----

    def _background_frequencies(self) -> tuple[tuple[int, Mapping[str, int]], tuple[int, Mapping[str, int]]] | None:
        """(cards, servers) background document frequencies added to the catalog's own for IDF.

        The shipped ones come from a 527-tool reference catalog, so that BM25 strengths -- and the
        confidence built on them -- mean the same on a 10-card catalog as on a 10,000-card one."""
        return _background()

    def _jobs(self, question: str) -> list[str]:
        """The jobs of a question, each ranked on its own (:func:`split_jobs`)."""
        return split_jobs(question)

    def _query_texts(self, question: str, jobs: list[str]) -> list[str]:
        """What the encoder reads per question: the whole question only (its jobs share its vector)."""
        return [question]

    def _card_scores(self, terms: dict[str, float]) -> np.ndarray:
        """Raw BM25F scores of every card for the query terms."""
        return self._cards.scores(terms)

    def _server_lexical(self, server_raw: np.ndarray, card_raw: np.ndarray) -> np.ndarray:
        """A server's lexical score: the BM25F score of its document (``card_raw`` is for variants)."""
        return server_raw

    def _fuse(self, lexical: np.ndarray, semantic: np.ndarray) -> np.ndarray:
        """Lexical and semantic scores (each in [0, 1]) mixed by ``semantic_weight``."""
        w = self.semantic_weight
        return (1 - w) * lexical + w * semantic

    def _label_text(self, label: str, description: str, card_names: list[str]) -> str:
        """What the encoder reads for a server's label view (:func:`server_text`)."""
        return server_text(label, description, card_names)

    def _view_weights(self) -> tuple[float, ...]:
        """Each view's weight in the fused sum of z-scores (:data:`VIEWS` order): equal."""
        return (1.0,) * len(VIEWS)

    def _combine_views(self, views: np.ndarray) -> np.ndarray:
        """The fused server score: each view (a row of ``views``) z-scored across servers, weighted, summed."""
        weights = self._view_weights()
        return sum((w * _zscore(v) for w, v in zip(weights, views, strict=True)), np.zeros(views.shape[1]))

    def _server_card_cosine(self, card_cos: np.ndarray) -> np.ndarray:
        """View 3: per server, the mean of its two best card cosines (its best one when it has one card)."""
        by_server = card_cos[self._group_order]
        best = np.maximum.reduceat(by_server, self._group_starts)
        is_best = by_server == best[self._sorted_server]
        ties = np.bincount(self._sorted_server[is_best], minlength=len(self.server_labels))
        second = np.maximum.reduceat(np.where(is_best, -np.inf, by_server), self._group_starts)
        second = np.where((ties >= 2) | ~np.isfinite(second), best, second)
        return (best + second) / 2.0

    def _cosines(self, qvec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The question's cosine to every card, every server's centroid and every server's label text."""
        assert self._vectors is not None
        assert self._server_vectors is not None
        assert self._label_vectors is not None
        # einsum, not BLAS: a threaded sgemv next to the encoder's own threads oversubscribes small machines
        return (
            np.einsum("ij,j->i", self._vectors, qvec).astype(np.float64),
            np.einsum("ij,j->i", self._server_vectors, qvec).astype(np.float64),
            np.einsum("ij,j->i", self._label_vectors, qvec).astype(np.float64),
        )

    def _semantic_text(self, card: Card, tool: Mapping[str, Any] | None) -> str:
        """What the encoder reads for a card (:func:`semantic_text`; ``tool``: its MCP Tool object, if known)."""
        return semantic_text(card)

    def _merge_job(self, mixed: np.ndarray, job: np.ndarray, n_jobs: int) -> None:
        """Add one job's ranking (peak-normalised, ``job.max() > 0``) into the question's, in place:
        each of ``n_jobs`` jobs adds ``1 / n_jobs`` of itself."""
        mixed += (1.0 / n_jobs) * job / job.max()

    # -- pieces ---------------------------------------------------------------------------------

    def query_terms(self, question: str) -> dict[str, float]:
        """The weighted terms a question asks for (its own words 1, words read from paths 0.5)."""
        terms = dict.fromkeys(tokens(question, request_stopwords=True), 1.0)
        for t in tokens(_expand(question)):
            terms.setdefault(t, 0.5)
        return terms

    def card_terms(self, card: int) -> frozenset[str]:
        """Every term of a card's document (name, description, server)."""
        return self._card_terms[card]

    def server_terms(self, label: str) -> frozenset[str]:
        """Every term of a server's document."""
        return self._server_terms[self.server_labels.index(label)]

    def _per_server_max(self, card_scores: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(card_scores[self._group_order], self._group_starts)

    def _unit(self, text: str, qvec: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, _Evidence]:
        """Score one query unit: (card scores, server scores), both in [0, 1], and its raw evidence."""
        terms = self.query_terms(text)
        card_raw = self._card_scores(terms)
        server_raw = self._servers.scores(terms)
        server_lex = self._server_lexical(server_raw, card_raw)
        card = card_raw / card_raw.max() if card_raw.max() > 0 else card_raw
        server = server_lex / server_lex.max() if server_lex.max() > 0 else server_lex
        card_sem = server_sem = None
        if qvec is not None and self._vectors is not None and self._server_vectors is not None:
            # einsum, not BLAS: a threaded sgemv next to the encoder's own threads oversubscribes small machines
            card_sem = np.clip(np.einsum("ij,j->i", self._vectors, qvec), 0.0, 1.0).astype(np.float64)
            server_sem = np.clip(np.einsum("ij,j->i", self._server_vectors, qvec), 0.0, 1.0).astype(np.float64)
            card, server = self._fuse(card, card_sem), self._fuse(server, server_sem)
        own = tuple(t for t, w in terms.items() if w >= 1.0)
        # IDF-weighted share of the question's terms that the top 3 servers hold between them;
        # a term no server holds weighs as much as the rarest possible term
        k = min(3, len(self.server_labels))
        top = np.argpartition(-server, k - 1)[:k] if len(self.server_labels) > k else range(len(self.server_labels))
        held = frozenset().union(*(self._server_terms[i] for i in top))
        rare = float(np.log(1.0 + (self._servers.n + 0.5) / 0.5))
        idf = [float(self._servers.idf[self._servers.vocab[t]]) if t in self._servers.vocab else rare for t in own]
        total = sum(idf)
        idf_coverage = sum(w for t, w in zip(own, idf, strict=True) if t in held) / total if total > 0 else 0.0
        evidence = _Evidence(text, own, card_raw, server_raw, card_sem, server_sem, idf_coverage)
        return card, server, evidence

    def _anchored(self, ev: _Evidence, card: int) -> Unit:
        """What a query unit found, told about one card (the one chosen) and that card's server.

        A skill's lexical and semantic strength is at least that of the best tool it names, as in
        the ranking (where it inherits that tool's score)."""
        named = self._named.get(card)
        lexical = float(ev.card_raw[card])
        semantic = None if ev.card_sem is None else float(ev.card_sem[card])
        if named is not None:
            lexical = max(lexical, float(ev.card_raw[named].max()))
            if ev.card_sem is not None and semantic is not None:
                semantic = max(semantic, float(ev.card_sem[named].max()))
        sid = int(self._card_server[card])
        server_terms = self._server_terms[sid]
        matched = tuple(t for t in ev.terms if t in server_terms)
        fused = margin = agreement = None
        if ev.fused is not None and ev.view_top is not None:
            fused = float(ev.fused[sid])
            others = np.delete(ev.fused, sid)
            margin = fused - float(others.max()) if len(others) else 0.0
            agreement = float(np.mean(ev.view_top == sid))
        return Unit(
            text=ev.text,
            terms=ev.terms,
            card=card,
            server=self.server_labels[sid],
            lexical=lexical,
            server_lexical=float(ev.server_raw[sid]),
            coverage=len(matched) / len(ev.terms) if ev.terms else 0.0,
            idf_coverage=ev.idf_coverage,
            matched=matched,
            semantic=semantic,
            server_semantic=None if ev.server_sem is None else float(ev.server_sem[sid]),
            fused=fused,
            fused_margin=margin,
            agreement=agreement,
            label_semantic=None if ev.label_sem is None else float(ev.label_sem[sid]),
        )

    def _fusion(
        self, mixed: np.ndarray, card: np.ndarray, ev: _Evidence, qvec: np.ndarray
    ) -> tuple[np.ndarray, _Evidence]:
        """Card scores from the five fused server views (module docstring), and the evidence told about them.

        ``mixed`` is the lexical card ranking (server mix, jobs, skills applied); ``card`` the
        question's own lexical card scores in [0, 1]."""
        card_cos, centroid_cos, label_cos = self._cosines(qvec)
        views = np.stack(
            [
                self._per_server_max(mixed),
                self._per_server_max(ev.card_raw),
                self._server_card_cosine(card_cos),
                centroid_cos,
                label_cos,
            ]
        )
        fused = self._combine_views(views)
        span = float(fused.max() - fused.min())
        fused01 = (fused - fused.min()) / span if span > 1e-12 else np.ones_like(fused)
        card_sem = np.clip(card_cos, 0.0, 1.0)
        own = self._fuse(card, card_sem)
        w = self.config.fused_server_weight
        out = w * fused01[self._card_server] + (1.0 - w) * own
        for i, named in self._inherit:
            out[i] = max(out[i], 0.9 * float(out[named].max()))
        evidence = replace(
            ev,
            card_sem=card_sem,
            server_sem=np.clip(centroid_cos, 0.0, 1.0),
            fused=fused,
            view_top=views.argmax(axis=1),
            label_sem=label_cos,
        )
        return out, evidence

    # -- the public face ------------------------------------------------------------------------

    def rank(self, question: str, *, limit: int | None = 50, implied: bool = True) -> Ranking:
        """Score every card for ``question``; keep the best ``limit`` (``None``: all); rank the servers.

        With ``implied``, each need the question implies (:func:`implied_needs`) moves its own best
        server up to the fifth place of the server list."""
        c = self.config
        n = len(self.cards)
        jobs = self._jobs(question)
        if n == 0:
            return Ranking(question, [], [])
        qvecs = None
        semantic = self.semantic  # read once: vectors finished in the background join at the next ranking
        if self.encoder is not None and semantic:
            texts = self._query_texts(question, jobs)
            primed = [self._primed.get(t) for t in texts]
            if all(v is not None for v in primed):
                qvecs = np.stack([v for v in primed if v is not None])
            else:
                # the needs it implies that no ranking has met yet go into the same encoder call (one
                # pass over the model's weights, not two); their own rankings, below, read them back
                fresh = self._unmet_needs([question]) if implied else []
                fresh = [need for need in fresh if need not in texts]
                vectors = np.asarray(self.encoder.encode([*texts, *fresh]), dtype=np.float32)
                qvecs = vectors[: len(texts)]
                if fresh:
                    self._primed = {**self._primed, **dict(zip(fresh, vectors[len(texts) :], strict=True))}
        card, server, evidence = self._unit(question, None)  # lexical; the encoder's views are fused below
        mixed = (1 - c.server_mix) * card + c.server_mix * server[self._card_server]
        jobs_found: list[Unit] = []
        for j, job in enumerate(jobs):
            jc, js, job_evidence = self._unit(job, None if qvecs is None or len(qvecs) < 2 else qvecs[j + 1])
            jm = (1 - c.server_mix) * jc + c.server_mix * js[self._card_server]
            jobs_found.append(self._anchored(job_evidence, int(np.argmax(jm))))  # told about the job's best card
            if jm.max() > 0:
                self._merge_job(mixed, jm, len(jobs))
        for i, named in self._inherit:  # a skill scores at least as well as the best tool it names (discounted)
            mixed[i] = max(mixed[i], 0.9 * float(mixed[named].max()))
        if qvecs is not None:
            mixed, evidence = self._fusion(mixed, card, evidence, qvecs[0])
        peak = mixed.max()
        if peak > 0:
            mixed = mixed / peak
        if limit is None or limit >= n:
            order = np.argsort(-mixed, kind="stable")
        else:
            top = np.argpartition(-mixed, limit)[:limit]
            order = top[np.argsort(-mixed[top], kind="stable")]
        terms = self.query_terms(question)
        card_raw = self._cards.scores(terms) if len(order) else np.zeros(0)
        sem = None if qvecs is None or self._vectors is None else np.einsum("ij,j->i", self._vectors[order], qvecs[0])
        # plain Python numbers in one conversion each, not one numpy scalar per card
        rows = order.tolist()
        scores, lexicals = mixed[order].tolist(), card_raw[order].tolist()
        sems: list[float | None] = [None] * len(rows) if sem is None else sem.tolist()
        scored = [
            Scored(
                card=self.cards[i],
                score=score,
                lexical=lexical,
                semantic=cosine,
                matched_terms=tuple(filter(self._card_terms[i].__contains__, terms)),
            )
            for i, score, lexical, cosine in zip(rows, scores, lexicals, sems, strict=True)
        ]
        server_best = self._per_server_max(mixed)
        s_order = np.argsort(-server_best, kind="stable")
        servers = list(zip(self._labels[s_order].tolist(), server_best[s_order].tolist(), strict=True))
        needs = self._implied(question, servers) if implied else []
        # the whole question is told about its top card: what a decision chooses
        top_card = int(order[0]) if len(order) else int(np.argmax(mixed))
        units = [self._anchored(evidence, top_card), *jobs_found]
        implied_units = [unit for unit in map(self._need_unit, (need for need, _ in needs)) if unit is not None]
        return Ranking(
            question, scored, servers, units, needs, implied_units, semantic=qvecs is not None, indexing=self.indexing
        )

    def prime(self, questions: Sequence[str]) -> None:
        """Encode several questions (the needs of one question) in one encoder call, with the needs
        they imply that no ranking has met yet; ranking each of them next reuses its vector. Only the
        last call's questions are kept."""
        if self.encoder is None or self._vectors is None:
            return
        texts = list(dict.fromkeys([*questions, *self._unmet_needs(questions)]))
        vectors = np.asarray(self.encoder.encode(texts), dtype=np.float32)
        self._primed = dict(zip(texts, vectors, strict=True))

    def _unmet_needs(self, questions: Sequence[str]) -> list[str]:
        """The needs ``questions`` imply whose semantic ranking is not remembered yet (nor their vector primed)."""
        needs = dict.fromkeys(need for q in questions for need in self._implied_needs(q))
        return [need for need in needs if (True, need) not in self._best_for_need and need not in self._primed]

    def _implied(self, question: str, servers: list[tuple[str, float]]) -> list[tuple[str, str]]:
        """Give each need the question implies one place among the first servers (in place)."""
        found: list[tuple[str, str]] = []
        for need in self._implied_needs(question):
            best = self.best_server(need)
            if best is not None:
                found.append((need, best))
        width = IMPLIED_SLOT + 1
        wanted = list(dict.fromkeys(best for _, best in found))[:width]
        top = servers[:width]
        moved = [label for label in wanted if all(label != t for t, _ in top)]
        if moved:
            # drop the last of the first places that no need asked for, one per server moved up
            head = list(top)
            for _ in moved:
                drop = max(i for i, (label, _) in enumerate(head) if label not in wanted)
                head.pop(drop)
            placed = {label for label, _ in head}.union(moved)
            floor = head[-1][1] if head else servers[0][1]
            reordered = [*head, *((label, floor) for label in moved)]
            # scores stay non-increasing: none above the entry before it. The rest keep their order, so
            # once one is at or below the entry before it, so is every one after it: only a few change
            rest = [e for e in servers if e[0] not in placed]
            at = 0
            while at < len(rest) and rest[at][1] > reordered[-1][1]:
                reordered.append((rest[at][0], reordered[-1][1]))
                at += 1
            reordered.extend(rest[at:])
            servers[:] = reordered
        return found

    def _implied_needs(self, question: str) -> list[str]:
        """Hook: the needs a question implies (:func:`implied_needs`)."""
        return implied_needs(question)

    def best_server(self, need: str) -> str | None:
        """The server a need's own ranking puts first (remembered: a rule-made need's text is fixed)."""
        unit = self._need_unit(need)
        return None if unit is None else unit.server

    def best_card(self, need: str) -> Card | None:
        """The card a need's own ranking puts first (``None``: nothing matched it)."""
        unit = self._need_unit(need)
        return None if unit is None else self.cards[unit.card]

    def _need_unit(self, need: str) -> Unit | None:
        """What a need's own ranking found, told about its best card (``None``: nothing matched it)."""
        key = (self.semantic, need)  # a need ranked lexically while vectors were encoded is ranked again
        if key not in self._best_for_need:
            ranking = self.rank(need, implied=False)
            top = ranking.scored[0].score if ranking.scored else 0.0
            unit = ranking.units[0] if top > 0 and ranking.units else None
            self._best_for_need[(ranking.semantic, need)] = unit
            return unit
        return self._best_for_need[key]

    def score(self, question: str, *, limit: int | None = None) -> list[Scored]:
        """Cards scored for ``question``, best first (all of them unless ``limit``)."""
        return self.rank(question, limit=limit).scored
