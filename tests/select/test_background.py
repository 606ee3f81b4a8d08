"""Card vectors encoded in the background: the selector answers at once, lexically, and says so; the
semantic views join when every vector is ready; an interrupted start keeps what it encoded."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from skilldeck.select import CardSet, Selector
from skilldeck.select import _card_vectors as card_vectors_module
from skilldeck.select import _rank as rank_module
from skilldeck.select._encoders import MiniLMEncoder, load_encoder
from skilldeck.select._vectors import VectorCache

QUESTIONS = ["Do I need an umbrella in Oslo tomorrow?", "plot the stock price of Apple as a bar chart"]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEncoder:
    encoder = load_encoder("minilm")
    assert isinstance(encoder, MiniLMEncoder)
    return encoder


QUERY_TEXTS = frozenset([*QUESTIONS, *(need for _, need in rank_module.IMPLIED_NEEDS)])
"""What a decision encodes (a question, with the needs it implies in the same call); anything else is indexing."""


class Gated:
    """The real encoder, made to wait for ``gate`` on every call that encodes card or server texts
    (indexing), and to fail on call number ``fail_at`` of those (from 1); ``texts`` counts the texts of
    every call."""

    name = "minilm"

    def __init__(self, inner: MiniLMEncoder, *, fail_at: int | None = None) -> None:
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.gate = threading.Event()
        self.calls: list[int] = []
        self.texts = 0
        self.fail_at = fail_at

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        if not QUERY_TEXTS.issuperset(texts):
            self.calls.append(len(texts))
            if self.fail_at is not None and len(self.calls) == self.fail_at:
                raise RuntimeError("the encoder ran out of memory")
            assert self.gate.wait(60), "the test never opened the gate"
        return self.inner.encode(texts)


def test_the_selector_answers_lexically_at_once_and_semantically_when_the_vectors_are_ready(
    cardset: CardSet, minilm: MiniLMEncoder, tmp_path: Path
) -> None:
    encoder = Gated(minilm)
    selector = Selector(cardset, encoder=encoder, background=True, cache_dir=tmp_path)  # returns at once
    lexical = Selector(cardset)
    total = len(cardset.cards) + len(selector.ranker.server_labels)
    for question in QUESTIONS:
        early = selector.decide(question)
        plain = lexical.decide(question)
        # the lexical ranker's answer, judged by the lexical model, and it says so
        assert early.ranker == "lexical"
        assert [(s.card.key, s.score) for s in early.ranked] == [(s.card.key, s.score) for s in plain.ranked]
        assert early.confidence == pytest.approx(plain.confidence)
        assert early.abstain == plain.abstain
        assert early.reason == plain.reason + f" [lexical ranking: card vectors 0 of {total} encoded]"
        assert early.to_json()["indexing"] == {"encoded": 0, "total": total}
        assert early.to_json()["ranker"] == "lexical"
    assert not selector.ranker.semantic
    encoder.gate.set()
    assert selector.ranker.wait(120)
    assert selector.ranker.indexing.done == total
    # now the fused ranking, exactly as a selector that encoded everything before answering
    reference = Selector(cardset, encoder=minilm)
    for question in QUESTIONS:
        late, ready = selector.decide(question), reference.decide(question)
        assert late.ranker == ready.ranker == "semantic"
        assert "indexing" not in late.to_json()
        assert late.reason == ready.reason
        assert [s.card.key for s in late.ranked] == [s.card.key for s in ready.ranked]
        assert late.confidence == pytest.approx(ready.confidence, abs=1e-6)
        assert late.servers[0][0] == ready.servers[0][0]


def test_an_interrupted_start_keeps_the_vectors_it_encoded(
    cardset: CardSet, minilm: MiniLMEncoder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(card_vectors_module, "BACKGROUND_CHUNK", 4)  # a few texts per chunk, each stored as it is done
    total = len(cardset.cards) + len({c.server for c in cardset.cards})
    failing = Gated(minilm, fail_at=3)
    failing.gate.set()
    selector = Selector(cardset, encoder=failing, background=True, cache_dir=tmp_path)
    assert not selector.ranker.wait(120)  # the third chunk failed: the ranking stays lexical
    state = selector.ranker.indexing
    assert (state.done, state.total) == (8, total)
    assert state.error == "RuntimeError: the encoder ran out of memory"
    decision = selector.decide(QUESTIONS[0])
    assert decision.ranker == "lexical"
    assert decision.reason.endswith(
        "[lexical ranking: card vectors failed: RuntimeError: the encoder ran out of memory]"
    )
    # the two chunks done were stored: a restart encodes only the rest
    texts = [*(rank_module.semantic_text(c) for c in cardset.cards)]
    assert len(VectorCache(tmp_path).missing(minilm, texts)) == len(texts) - 8
    restarted = Gated(minilm)
    restarted.gate.set()
    again = Selector(cardset, encoder=restarted, background=True, cache_dir=tmp_path)
    assert again.ranker.indexing.done == 8  # known from the start
    assert again.ranker.wait(120)
    assert restarted.texts == total - 8  # the chunks still missing; then all of them read from the cache
    assert again.decide(QUESTIONS[0]).ranker == "semantic"


def test_a_warm_cache_is_semantic_from_the_first_answer(
    cardset: CardSet, minilm: MiniLMEncoder, tmp_path: Path
) -> None:
    Selector(cardset, encoder=minilm, cache_dir=tmp_path)  # fills the cache
    encoder = Gated(minilm)  # never opened: nothing may need encoding
    selector = Selector(cardset, encoder=encoder, background=True, cache_dir=tmp_path)
    assert selector.ranker.semantic
    assert encoder.texts == 0
    assert selector.decide(QUESTIONS[0]).ranker == "semantic"
