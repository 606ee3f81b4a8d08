"""BERT WordPiece tokenisation for all-MiniLM-L6-v2, in plain Python over the shipped vocabulary.

It reproduces what ``tokenizers`` does with MiniLM's own ``tokenizer.json`` (``BertNormalizer``
with lower case and accents stripped, ``BertPreTokenizer``, ``WordPiece`` with ``##``, the
``[CLS] … [SEP]`` template, the special tokens matched verbatim in the raw text), so the encoder
needs neither ``tokenizers`` nor the ``huggingface_hub`` stack it pulls in. The token ids are
checked against ``tokenizers`` on the benchmark's tool texts, questions and a list of Unicode edge
cases (``tests/select/test_wordpiece.py``, run where ``tokenizers`` is installed).

Steps, as ``tokenizers`` takes them:

1. split out the special tokens (``[CLS]``, ``[SEP]``, ``[PAD]``, ``[MASK]``, ``[UNK]``) where the
   text holds them verbatim;
2. normalise each other piece: drop NUL, U+FFFD and control/format/unassigned/private-use
   characters (tab, newline and carriage return excepted), turn whitespace into spaces, put spaces
   around CJK ideographs, decompose (NFD) and drop non-spacing marks, lower-case;
3. split at whitespace, and isolate every punctuation character (Unicode ``P*``, and ASCII
   symbols such as ``$ + < = > ^ ` | ~``);
4. cut each word greedily into the longest vocabulary pieces (continuations prefixed ``##``); a
   word with a piece not in the vocabulary, or longer than 100 characters, is ``[UNK]``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

__all__ = ["WordPiece"]

_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_REMOVED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


class WordPiece:
    """MiniLM's tokenizer: ``encode`` turns texts into token ids, ``[CLS] … [SEP]``, cut at ``max_length``.

    Args:
        tokenizer_json: the model's ``tokenizer.json`` (its ``model.vocab`` and ``added_tokens`` are read).
        max_length: most ids per text, the two special ones included.
    """

    def __init__(self, tokenizer_json: str | Path, *, max_length: int = 256) -> None:
        data = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
        model = data["model"]
        if model.get("type") != "WordPiece":
            raise ValueError(f"{tokenizer_json} is not a WordPiece tokenizer")
        self.vocab: dict[str, int] = {str(k): int(v) for k, v in model["vocab"].items()}
        self.prefix = str(model.get("continuing_subword_prefix", "##"))
        self.max_word = int(model.get("max_input_chars_per_word", 100))
        self.unk = self.vocab[str(model.get("unk_token", "[UNK]"))]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]
        self.max_length = max_length
        special = {str(t["content"]): int(t["id"]) for t in data.get("added_tokens", []) if t.get("special")}
        self.special = special
        # longest first, so that a special token that starts another is not matched short
        names = sorted(special, key=len, reverse=True)
        self._special = re.compile("|".join(re.escape(n) for n in names)) if names else None
        self._words: dict[str, tuple[int, ...]] = {}

    # -- steps ---------------------------------------------------------------------------------

    @staticmethod
    def normalize(text: str) -> str:
        """``BertNormalizer``: clean, pad CJK, strip accents, lower-case."""
        if text.isascii():
            out = []
            for ch in text:
                o = ord(ch)
                if o < 32 or o == 127:
                    if ch in "\t\n\r":
                        out.append(" ")
                    continue  # other control characters are dropped
                out.append(ch)
            return "".join(out).lower()
        cleaned: list[str] = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD:
                continue
            if ch in "\t\n\r":
                cleaned.append(" ")
                continue
            if unicodedata.category(ch) in _REMOVED_CATEGORIES:
                continue
            if ch.isspace():
                cleaned.append(" ")
            elif _is_cjk(cp):
                cleaned.append(f" {ch} ")
            else:
                cleaned.append(ch)
        decomposed = unicodedata.normalize("NFD", "".join(cleaned))
        stripped = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
        # character by character, as tokenizers does: str.lower() would write a word-final capital
        # sigma as the final form (ς), tokenizers always as σ
        return stripped.replace("\u03a3", "\u03c3").lower()

    @staticmethod
    def pre_tokenize(text: str) -> list[str]:
        """``BertPreTokenizer``: words split at whitespace, each punctuation character on its own."""
        words: list[str] = []
        for chunk in text.split():
            start = 0
            for i, ch in enumerate(chunk):
                if _is_punct(ch):
                    if i > start:
                        words.append(chunk[start:i])
                    words.append(ch)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def word_ids(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match WordPiece ids of one normalised word (remembered)."""
        found = self._words.get(word)
        if found is not None:
            return found
        ids: list[int] = []
        if len(word) > self.max_word:
            ids = [self.unk]
        else:
            start = 0
            while start < len(word):
                end = len(word)
                piece_id = None
                while start < end:
                    piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                    piece_id = self.vocab.get(piece)
                    if piece_id is not None:
                        break
                    end -= 1
                if piece_id is None:
                    ids = [self.unk]
                    break
                ids.append(piece_id)
                start = end
        result = tuple(ids)
        if len(self._words) < 200_000:
            self._words[word] = result
        return result

    def _text_ids(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in self.pre_tokenize(self.normalize(text)):
            ids.extend(self.word_ids(word))
        return ids

    def ids(self, text: str) -> list[int]:
        """``[CLS]``, the text's ids, ``[SEP]``: at most ``max_length`` in all (the text cut at its end)."""
        ids: list[int] = []
        if self._special is None:
            ids = self._text_ids(text)
        else:
            at = 0
            for match in self._special.finditer(text):
                ids.extend(self._text_ids(text[at : match.start()]))
                ids.append(self.special[match.group()])
                at = match.end()
            ids.extend(self._text_ids(text[at:]))
        return [self.cls, *ids[: max(0, self.max_length - 2)], self.sep]

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`ids` of each text."""
        return [self.ids(t) for t in texts]
