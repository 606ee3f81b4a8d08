"""The encoder's own WordPiece tokenizer: the same token ids as ``tokenizers`` on MiniLM's tokenizer.json."""

from __future__ import annotations

import json
import unicodedata
from importlib import resources
from pathlib import Path

import pytest

from skilldeck.select import build_cards, load_snapshot
from skilldeck.select._rank import semantic_text, server_text
from skilldeck.select._wordpiece import WordPiece

REPO = Path(__file__).resolve().parents[2]
TOKENIZER = resources.files("skilldeck.select") / "minilm" / "tokenizer.json"
SNAPSHOT = REPO / "src" / "skilldeck" / "demo" / "data" / "livemcpbench-snapshot.json"
TASKS = REPO / "bench" / "selection" / "data" / "livemcpbench" / "tasks.json"

TORTURE = [
    "",
    "   ",
    "Hello, World!",
    "search_jobs(query='Java', location=\"Costa Rica\")",
    "café naïve résumé Ångström façade Øre",
    "İstanbul ISTANBUL ıi",  # Turkish dotted/dotless i
    "STRASSE Straße ß ẞ",
    "ΣΊΣΥΦΟΣ σίσυφος ΟΔΟΣ",  # capital sigma, word-final too
    "東京の天気を教えて 北京天气预报 서울 날씨",
    "𠀀𪜀𫝀𫠠𬺰 CJK extensions",
    "emoji 😀👍🏽 🇩🇪 ❤️ family 👨‍👩‍👧",
    "zero\u200bwidth\u200djoiner\ufeffbom",
    "ctrl\x00nul\x07bell\x1bescape\x7fdel\x0bvt\x0cff\x1cfs\x85nel",
    "tabs\tnew\nlines\r\nand\u00a0nbsp\u2003em\u3000ideographic\u2028line",
    "full-width ＡＢＣ１２３ and ｶﾀｶﾅ",
    "math ∑∫√∞ ≤≥ ± × ÷ and 1/2 ½ x²",
    "money $100 €50 £3 ¥7 ₹9 and 50%",
    "quotes «guillemets» „low“ ‘single’ — dashes – ‐ …",
    "[CLS] [SEP] [PAD] [MASK] [UNK] inside text, [cls] lower, [CLS][SEP]glued",
    "combining: e\u0301 a\u0308 n\u0303 and precomposed é ä ñ",
    "hangul jamo \u1100\u1161\u11a8 vs 각",
    "arabic مرحبا hebrew שלום thai สวัสดี devanagari नमस्ते",
    "supercalifragilisticexpialidocious " + "x" * 99 + " " + "y" * 100 + " " + "z" * 101,
    "/root/ppt/apple.pptx https://example.com/a?b=c&d=e#frag user@example.com",
    "camelCaseWord snake_case_word kebab-case-word",
    "\ue000 private use \U0010fffd",
    "replacement \ufffd char",
]


def _reference() -> object:
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed (pip install -e '.[test]')")
    with resources.as_file(TOKENIZER) as path:
        tk = tokenizers.Tokenizer.from_file(str(path))
    tk.no_padding()
    tk.enable_truncation(256)
    return tk


@pytest.fixture(scope="module")
def wordpiece() -> WordPiece:
    with resources.as_file(TOKENIZER) as path:
        return WordPiece(path, max_length=256)


def _texts() -> list[str]:
    cards = build_cards(load_snapshot(SNAPSHOT))
    texts = [semantic_text(c) for c in cards.cards]
    about: dict[str, str] = {}
    for card in cards.cards:
        about.setdefault(card.server, card.server_description)
    texts += [server_text(label, description) for label, description in about.items()]
    texts += [str(t["Question"]) for t in json.loads(TASKS.read_text(encoding="utf-8"))]
    return texts


def test_token_ids_equal_tokenizers_on_the_benchmark_texts_and_unicode_edge_cases(wordpiece: WordPiece) -> None:
    tk = _reference()
    texts = _texts()
    assert len(texts) > 527 + 95
    for text in [*texts, *TORTURE]:
        expected = tk.encode(text).ids  # type: ignore[attr-defined]
        assert wordpiece.ids(text) == expected, text


def test_every_code_point_tokenizes_as_in_tokenizers_unless_unicode_changed_it(wordpiece: WordPiece) -> None:
    # tokenizers' character tables are older than Python's: a character assigned or re-categorised
    # since then may differ; every other one must not (the check of the changes is Unicode 3.2's data)
    tk = _reference()
    old = unicodedata.ucd_3_2_0
    points = [cp for cp in [*range(0x20, 0x10000), *range(0x10000, 0x30000, 7)] if not 0xD800 <= cp < 0xE000]
    texts = [f"ab{chr(cp)}cd {chr(cp)} x{chr(cp)}" for cp in points]
    expected = tk.encode_batch(texts)  # type: ignore[attr-defined]
    unexplained = []
    for cp, text, reference in zip(points, texts, expected, strict=True):
        if reference.ids != wordpiece.ids(text):
            c = chr(cp)
            changed = old.category(c) != unicodedata.category(c) or old.decomposition(c) != unicodedata.decomposition(c)
            if not changed:
                unexplained.append(hex(cp))
    assert unexplained == []


def test_special_tokens_truncation_and_unknown_words(wordpiece: WordPiece) -> None:
    cls, sep, unk, mask = (wordpiece.special[t] for t in ("[CLS]", "[SEP]", "[UNK]", "[MASK]"))
    assert wordpiece.ids("") == [cls, sep]
    assert wordpiece.ids("[MASK]") == [cls, mask, sep]  # verbatim special tokens are kept, not split
    assert wordpiece.ids("[mask]") != [cls, mask, sep]  # only verbatim
    assert wordpiece.ids("x" * 101) == [cls, unk, sep]  # longer than 100 characters: one [UNK]
    assert wordpiece.ids("ab\u0fffcd") == [cls, unk, sep]  # a piece not in the vocabulary: the whole word
    long = wordpiece.ids("word " * 1000)
    assert len(long) == 256
    assert long[0] == cls
    assert long[-1] == sep
    with resources.as_file(TOKENIZER) as path:
        short = WordPiece(path, max_length=8)
    assert len(short.ids("one two three four five six seven eight nine")) == 8
