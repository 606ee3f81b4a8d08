"""Card vectors cached by content, and the five-view fusion of servers (vectorised, checked against a loop)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skilldeck.select import CardSet, Ranker, Selector, default_calibration
from skilldeck.select._cards import Card
from skilldeck.select._vectors import VectorCache

# -- the vector cache -------------------------------------------------------------------------------


class CountingEncoder:
    """Deterministic vectors from a hash of the text; counts what it is asked to encode."""

    name = "counting"
    fingerprint = "counting-v1"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen.extend(texts)
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(8).astype(np.float32) for t in texts]
        out = np.stack(rows) if rows else np.zeros((0, 8), dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_card_vectors_are_cached_by_content_so_a_restart_encodes_only_what_changed(
    cardset: CardSet, tmp_path: Path
) -> None:
    cache = tmp_path / "vectors"
    first = CountingEncoder()
    ranker = Ranker(cardset.cards, encoder=first, cache_dir=cache)
    n_servers = len(ranker.server_labels)
    assert len(first.seen) == len(cardset.cards) + n_servers  # cold: every card and server text
    again = CountingEncoder()
    restarted = Ranker(cardset.cards, encoder=again, cache_dir=cache)
    assert again.seen == []  # warm restart: nothing encoded
    assert restarted.vectors is not None
    assert ranker.vectors is not None
    assert np.array_equal(restarted.vectors.cards, ranker.vectors.cards)
    question = "Do I need an umbrella tomorrow?"
    assert restarted.rank(question).servers == ranker.rank(question).servers
    # a re-list where one tool's description changed: that card alone is encoded again
    changed = [
        Card(**{**c.__dict__, "description": c.description + " (now with hourly data)"})
        if c.name == "get_forecast"
        else c
        for c in cardset.cards
    ]
    relisted = CountingEncoder()
    Ranker(changed, encoder=relisted, cache_dir=cache)
    assert len(relisted.seen) == 1
    assert "hourly data" in relisted.seen[0]


def test_a_cold_start_encodes_cards_and_server_texts_in_one_call_and_writes_the_cache_once(
    cardset: CardSet, tmp_path: Path
) -> None:
    class CallCounting(CountingEncoder):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def encode(self, texts):
            self.calls += 1
            return super().encode(texts)

    enc = CallCounting()
    ranker = Ranker(cardset.cards, encoder=enc, cache_dir=tmp_path)
    # one encoder call (so one batched run of the model, and one cache read and write) for every
    # card and server text; the cache then holds them all
    assert enc.calls == 1
    assert ranker.cache is not None
    assert ranker.cache.encoded == len(cardset.cards) + len(ranker.server_labels)
    with np.load(ranker.cache.path_for(enc.fingerprint)) as data:
        assert len(data["keys"]) == len(cardset.cards) + len(ranker.server_labels)
    tmp_files = [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    assert tmp_files == []


def test_nothing_is_written_without_a_cache_dir_and_an_unreadable_file_is_replaced(
    cardset: CardSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Selector(cardset, encoder=CountingEncoder())
    assert list(tmp_path.iterdir()) == []
    cache = VectorCache(tmp_path / "c")
    path = cache.path_for(CountingEncoder.fingerprint)
    path.parent.mkdir()
    path.write_bytes(b"not an npz file")
    enc = CountingEncoder()
    Ranker(cardset.cards, encoder=enc, cache_dir=tmp_path / "c")
    assert len(enc.seen) > 0  # re-encoded, not crashed
    enc2 = CountingEncoder()
    Ranker(cardset.cards, encoder=enc2, cache_dir=tmp_path / "c")
    assert enc2.seen == []  # and the file was rewritten whole


def test_the_cache_keeps_at_most_max_entries_rows(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, max_entries=5)
    enc = CountingEncoder()
    first = cache.encode(enc, [f"text {i}" for i in range(4)])
    cache.encode(enc, [f"other {i}" for i in range(4)])
    with np.load(cache.path_for(enc.fingerprint)) as data:
        assert len(data["keys"]) == 5  # the 4 asked for last, then 1 older row
    enc.seen.clear()
    again = cache.encode(enc, ["text 0", "other 3"])
    assert enc.seen == ["text 0"] or enc.seen == []  # at most the dropped rows are encoded again
    assert np.allclose(again[0], first[0])


def test_a_cache_without_a_folder_keeps_rows_in_memory_within_max_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cache = VectorCache(None, max_entries=5)
    enc = CountingEncoder()
    first = cache.encode(enc, [f"text {i}" for i in range(4)])
    assert cache.missing(enc, ["text 0", "text 3", "new"]) == ["new"]
    enc.seen.clear()
    again = cache.encode(enc, ["text 3", "new"])
    assert enc.seen == ["new"]  # only what it had not seen
    assert np.allclose(again[0], first[3])
    cache.encode(enc, ["a", "b"])
    # 5 rows at most: the 2 asked for last, then the 3 newest of the rest ("text 3", "new", "text 0")
    assert cache.missing(enc, ["a", "b", "new", *(f"text {i}" for i in range(4))]) == ["text 1", "text 2"]
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere


def test_a_key_whose_digest_ends_in_zero_bytes_is_found_again(tmp_path: Path) -> None:
    # numpy's fixed-width byte strings drop trailing NULs: a digest ending in 0x00 must still match
    import hashlib

    text = next(f"text {i}" for i in range(100_000) if hashlib.sha256(f"text {i}".encode()).digest()[-1] == 0)
    cache = VectorCache(tmp_path)
    enc = CountingEncoder()
    cache.encode(enc, [text, "another"])
    enc.seen.clear()
    cache.encode(enc, [text, "another"])
    assert enc.seen == []
    assert cache.encoded == 0


def test_an_encoder_without_a_fingerprint_is_not_cached(cardset: CardSet, tmp_path: Path) -> None:
    class Anonymous(CountingEncoder):
        fingerprint = ""

    Ranker(cardset.cards, encoder=Anonymous(), cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


# -- fusion ---------------------------------------------------------------------------------------


def _zscore(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / x.std() if x.std() > 1e-12 else np.zeros_like(x)


def _reference_fused(ranker: Ranker, cardset: CardSet, question: str, q: np.ndarray) -> np.ndarray:
    """The five views of every server, computed one server at a time, z-scored and summed."""
    cards = cardset.cards
    lexical = Ranker(cards, schemas=cardset.tools)
    lex = dict(lexical.rank(question, limit=None).servers)
    raw = lexical.index.cards.scores(lexical.query_terms(question))
    views: list[list[float]] = [[], [], [], [], []]
    assert ranker.vectors is not None
    for k, s in enumerate(ranker.server_labels):
        own = [i for i, c in enumerate(cards) if c.server == s]
        cos = sorted((float(ranker.vectors.cards[i] @ q) for i in own), reverse=True)
        centroid = np.mean([ranker.vectors.cards[i] for i in own], axis=0)
        views[0].append(lex[s])  # 1. the lexical server score
        views[1].append(max(raw[i] for i in own))  # 2. its best BM25F card
        views[2].append(float(np.mean(cos[:2])))  # 3. mean of its two best card cosines
        views[3].append(float(centroid @ q / np.linalg.norm(centroid)))  # 4. cosine to its centroid
        views[4].append(float(ranker.vectors.labels[k] @ q))  # 5. its "label: description" text
    return sum((_zscore(np.asarray(v, dtype=float)) for v in views), np.zeros(len(ranker.server_labels)))


QUESTIONS = [
    "plot the stock price of Apple as a bar chart",
    "Do I need an umbrella in Oslo tomorrow?",
    "write the forecast to a file",
]


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_vectorised_fusion_matches_a_plain_loop_over_servers(cardset: CardSet, question: str) -> None:
    enc = CountingEncoder()
    ranker = Ranker(cardset.cards, encoder=enc, schemas=cardset.tools)
    q = enc.encode([question])[0]
    fused = _reference_fused(ranker, cardset, question, q)
    ranking = ranker.rank(question, limit=None)
    unit = ranking.units[0]
    best = ranker.server_labels.index(unit.server)
    assert unit.fused == pytest.approx(fused[best], abs=1e-4)
    assert unit.fused_margin == pytest.approx(fused[best] - np.delete(fused, best).max(), abs=1e-4)
    assert ranker.server_labels[int(np.argmax(fused))] == ranking.servers[0][0]


@pytest.mark.parametrize("question", QUESTIONS)
def test_under_fusion_the_decision_describes_the_card_it_chose(cardset: CardSet, question: str) -> None:
    enc = CountingEncoder()
    selector = Selector(cardset, encoder=enc)
    ranker = selector.ranker
    q = enc.encode([question])[0]
    fused = _reference_fused(ranker, cardset, question, q)
    decision = selector.decide(question)
    chosen = decision.ranked[0].card
    k = ranker.server_labels.index(chosen.server)
    assert ranker.vectors is not None
    assert decision.servers[0][0] == chosen.server == ranker.server_labels[int(np.argmax(fused))]
    assert decision.features["fused"] == pytest.approx(fused[k], abs=1e-4)
    assert decision.features["label_semantic"] == pytest.approx(float(ranker.vectors.labels[k] @ q), abs=1e-5)
    assert decision.features["semantic"] == pytest.approx(
        max(0.0, float(ranker.vectors.cards[cardset.cards.index(chosen)] @ q)), abs=1e-5
    )
    assert decision.confidence == pytest.approx(selector.calibration.confidence(decision.features))
    assert chosen.server in decision.reason or decision.abstain


def test_with_an_encoder_each_confident_job_still_adds_its_capability(cardset: CardSet) -> None:
    from skilldeck.select._encoders import load_encoder

    question = "Get the latest stock price of Apple, then plot the prices as a bar chart and save it to /tmp/apple.md"
    lexical = Selector(cardset).decide(question)
    encoder = load_encoder("minilm")
    # the default calibration, or the same one passed explicitly (as the benchmark does)
    for calibration in (None, default_calibration(True)):
        decision = Selector(cardset, encoder=encoder, calibration=calibration).decide(question)
        assert not decision.abstain
        # the jobs are ranked lexically (only the whole question is encoded): the lexical model judges them
        assert len(decision.chosen) == len(lexical.chosen) > 1
        assert {c.server for c in decision.chosen} == {c.server for c in lexical.chosen}


def test_the_confidence_reads_the_weakest_implied_need(cardset: CardSet) -> None:
    enc = CountingEncoder()
    selector = Selector(cardset, encoder=enc)
    ranker = selector.ranker
    needs = ["read and write files in a local folder", "get the current date and time"]
    found = [ranker.need_unit(need) for need in needs]  # each need's own best card (test_needs.py says which)
    assert all(u is not None for u in found)
    decision = selector.decide("Save the forecast for next week to /tmp/forecast.md")
    assert [n["need"] for n in decision.needs if n.get("implied")] == needs
    # the lowest over the two needs of each cosine of the need's own best card and its server
    assert decision.features["implied_semantic"] == pytest.approx(min(u.semantic for u in found))
    assert decision.features["implied_server_semantic"] == pytest.approx(min(u.server_semantic for u in found))
    assert decision.features["implied_label_semantic"] == pytest.approx(min(u.label_semantic for u in found))
    assert decision.confidence == pytest.approx(selector.calibration.confidence(decision.features))
    plain = selector.decide("Do I need an umbrella in Oslo?")
    assert not any(k.startswith("implied_") for k in plain.features)
    # a question that implies no need reads the calibration's defaults (the in-scope average) instead
    cal = selector.calibration
    assert set(cal.defaults) == {"implied_semantic", "implied_server_semantic", "implied_label_semantic"}
    assert plain.confidence == pytest.approx(cal.confidence({**plain.features, **cal.defaults}))
    assert plain.confidence != pytest.approx(cal.confidence({**plain.features, **dict.fromkeys(cal.defaults, 0.0)}))


def test_the_needs_of_one_question_are_encoded_in_one_encoder_call(cardset: CardSet) -> None:
    class CallCounting(CountingEncoder):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[list[str]] = []

        def encode(self, texts):
            self.calls.append(list(texts))
            return super().encode(texts)

    enc = CallCounting()
    selector = Selector(cardset, encoder=enc)
    enc.calls.clear()
    needs = ["weather forecast for Berlin", "latest stock price of Apple", "draw a bar chart of the sales"]
    together = selector.decide(needs)
    assert enc.calls == [needs]  # one call for the three needs, not one per need
    # and each need's shortlist is the one it gets when asked alone
    fresh = Selector(cardset, encoder=CountingEncoder())
    own = [entry for entry in together.needs if not entry.get("implied")]
    assert [entry["ranked"] for entry in own] == [fresh.decide(need).needs[0]["ranked"] for need in needs]
