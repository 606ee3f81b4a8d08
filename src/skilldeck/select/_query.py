"""Reading a question: the words its file paths imply, its jobs, and the needs it implies. Pure rules, no model."""

from __future__ import annotations

import re

__all__ = ["ARITHMETIC", "IMPLIED_NEEDS", "IMPLIED_SLOT", "LEADING_NEEDS", "implied_needs", "path_words", "split_jobs"]

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
_SAVE = re.compile(r"\b(?:save|saved|saving|store|write|export|output|generate|create|draft|make)\b", re.I)
_READ = re.compile(r"\b(?:read|open|load|under|in my|from|analy[sz]e|compare)\b", re.I)


def path_words(question: str) -> str:
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
ARITHMETIC = re.compile(
    r"\d\s*[+*×÷^]\s*\d|\d\s+[-/]\s+\d|\b(?:calculate|compute)\b"
    r"|\d\s+(?:plus|minus|times|divided by|multiplied by)\s+-?\d"
    r"|\b(?:add|sum|multiply|subtract)\s+(?:up\s+)?-?\d[\d.,]*\s+(?:and|to|by|from)\s+-?\d",
    re.IGNORECASE,
)
"""Arithmetic in a question: 17*23, 2^10, 17 - 3, 10 / 2, 17 plus 25, add 42 and 58, calculate (a date
such as 2024-05-01 or 5/1/2024 is not, nor "add 2 files to the commit")."""
IMPLIED_NEEDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_LOCAL_FILE, "read and write files in a local folder"),
    # a URL, a domain name, or a web page named as such ("the article at this link", "the homepage")
    (
        re.compile(
            r"\bhttps?://\S+|\bwww\.\S+|\b[a-z0-9][a-z0-9-]*\.(?:com|org|net|io|dev|edu|gov)\b|"
            r"\b(?:web ?pages?|web ?sites?|home ?page|front page|landing page|this link|that link|the link)\b",
            re.IGNORECASE,
        ),
        "fetch the content of a web page at a URL",
    ),
    (ARITHMETIC, "calculate a math expression"),
    (
        re.compile(
            r"\b(?:remember|(?:don'?t|do not|never) forget|keep in mind|make a note|save a note|take a note|"
            r"note (?:that|down)|recall what|forget (?:everything|what|all)|what do you (?:know|remember)|"
            r"you know about)\b",
            re.IGNORECASE,
        ),
        "remember facts about people and things in a knowledge graph memory",
    ),
    # the clock itself asked about: what time or day it is, today's date, whether it is morning there
    (
        re.compile(
            r"\bwhat(?:'s| is) (?:the )?(?:time|date)\b|\bwhat (?:time|day)(?: of the week)? is it\b|"
            r"\b(?:today'?s|the current|current) (?:date|time)\b|"
            r"\bis it (?:morning|afternoon|evening|night|daytime|dark|late) (?:in|at|there|now|right now)\b",
            re.IGNORECASE,
        ),
        "get the current time and date in a timezone",
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
(the work has to be read or saved somewhere), a URL (or a domain name, or a web page named as such:
"the python.org homepage", "the article at this link"), arithmetic, a fact to remember or recall about a
person or a thing ("remember that Alice likes tea", "what do you know about Bob": tools that keep
such facts describe a "knowledge graph" and "entities", words a person never says), the clock
itself ("what's today's date", "what day is it in Auckland", "is it morning in Sydney"), a date relative
to today (the work needs to know what day it is). Plain "today", "now", "current" and "latest" are left out: most
questions that say them need fresh data, not the clock."""
LEADING_NEEDS = frozenset(need for _, need in IMPLIED_NEEDS[:5])
"""The implied needs that name the very thing the question is about (a file, a URL, a sum, a fact to
remember, the clock itself): in a small catalog their server goes first. A date relative to today ("rain tomorrow") does not: the clock is
seldom what such a question is for."""
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
