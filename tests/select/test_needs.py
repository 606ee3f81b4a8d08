"""Several needs per question: needs a question implies (rule-made), needs a caller gives, the select CLI."""

from __future__ import annotations

import copy
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skilldeck.cli import main
from skilldeck.select import CardSet, Ranker, Selector, build_cards, parse_snapshot
from skilldeck.select._config import SMALL_CATALOG_SERVERS
from skilldeck.select._rank import IMPLIED_SLOT, implied_needs

from .conftest import CATALOG, _tool

FILES_NEED = "read and write files in a local folder"
TIME_NEED = "get the current date and time"
MEMORY_NEED = "remember facts about people and things in a knowledge graph memory"
CLOCK_NEED = "get the current time and date in a timezone"
WEB_NEED = "fetch the content of a web page at a URL"


@pytest.mark.parametrize(
    ("question", "needs"),
    [
        ("Summarise the news and save it to /tmp/out.md", [FILES_NEED]),
        ("Put the table in report.xlsx", [FILES_NEED]),
        ("Read C:\\data\\prices.csv", [FILES_NEED]),
        ("What does https://example.org/a say?", ["fetch the content of a web page at a URL"]),
        ("How much is 17 * 23?", ["calculate a math expression"]),
        ("Tell me a joke about cats", []),
        ("What is 2^10, and 17 - 3?", ["calculate a math expression"]),
        ("Version 2.0 of the stock API", []),  # a version number is not arithmetic, nor a file
        ("What happened on 2024-05-01 and on 5/1/2024?", []),  # nor is a date
        ("Train tickets from Beijing to Shanghai next Wednesday", [TIME_NEED]),
        ("Find homestays in Paris, I want to stay tomorrow", [TIME_NEED]),
        ("Analyze the last 24h of BTC", [TIME_NEED]),
        ("What happened 3 days ago? Save it to notes.md", [FILES_NEED, TIME_NEED]),
        ("Tell me the price of the stock right now", []),  # fresh data, not the clock
        ("Find the latest papers on web agents and today's news", []),
        # arithmetic in words
        ("what is 17 plus 25", ["calculate a math expression"]),
        ("add 42 and 58", ["calculate a math expression"]),
        ("sum 3.5 and 4", ["calculate a math expression"]),
        ("add 2 files to the commit", []),  # a count of things, not a sum
        ("add 5 to the shopping list", []),
        ("add two numbers", []),  # no numbers: the ranking's to read
        # a fact to remember or recall, in the words people use (not "entity" nor "knowledge graph")
        ("remember that Alice likes tea", [MEMORY_NEED]),
        ("don't forget I'm allergic to peanuts", [MEMORY_NEED]),
        ("keep in mind that my birthday is in May", [MEMORY_NEED]),
        ("make a note that the meeting moved to Friday", [MEMORY_NEED]),
        ("what do you remember about Alice", [MEMORY_NEED]),
        ("forget everything you know about Bob", [MEMORY_NEED]),
        ("forget it", []),  # not a fact to drop
        ("Remembrance Day parades in London", []),  # a word that starts alike
        ("a note on the scale of C major", []),
        # the clock itself asked about (a leading need), not a date relative to today
        ("what's today's date", [CLOCK_NEED]),
        ("what day is it in Auckland", [CLOCK_NEED]),
        ("what day of the week is it today", [CLOCK_NEED]),
        ("is it morning in Sydney right now", [CLOCK_NEED]),
        ("what's the time in Paris right now", [CLOCK_NEED]),
        ("get the current time in a timezone", [CLOCK_NEED]),
        ("set an alarm for 7am", []),  # a clock time to act at, not the clock asked about
        ("create a calendar event for Monday at 10", []),
        ("what time does the pharmacy close", []),
        ("is it going to rain in Sydney", []),
        ("what's the current price of bitcoin", []),
        # a web page named without its URL
        ("what does the python.org homepage say", [WEB_NEED]),
        ("read the article at this link", [WEB_NEED]),
        ("scrape the text of a website", [WEB_NEED]),
        ("what's on the Hacker News front page right now", [WEB_NEED]),
        ("open www.example.org", [WEB_NEED]),
        ("summarize this YouTube video", []),
        ("find papers on web agents", []),
        ("post this on Twitter", []),
    ],
)
def test_implied_needs_are_found_by_general_rules(question: str, needs: list[str]) -> None:
    assert implied_needs(question) == needs


def _finance_catalog() -> dict[str, Any]:
    """The test catalog plus servers that all outrank 'files' for a finance question: a large catalog
    (more than SMALL_CATALOG_SERVERS servers)."""
    catalog = copy.deepcopy(CATALOG)
    topics = ["market news", "equity research", "stock screener", "earnings calendar", "analyst", "ipo calendar"]
    for i, topic in enumerate(topics):
        catalog["servers"].append(
            {
                "label": f"finance-{i}",
                "description": f"Stock {topic} for listed companies",
                "tools": [_tool(f"get_{i}_stock_{topic.replace(' ', '_')}", f"Stock {topic} of a company by ticker")],
            }
        )
    assert len(catalog["servers"]) > SMALL_CATALOG_SERVERS
    return catalog


@pytest.fixture
def finance_heavy() -> CardSet:
    return build_cards(parse_snapshot(_finance_catalog()))


def test_an_implied_need_gives_its_best_server_a_place_in_the_first_five(finance_heavy: CardSet) -> None:
    ranker = Ranker(finance_heavy.cards, schemas=finance_heavy.tools)
    question = "Give me the stock price and company news for AAPL and put everything in notes.md"
    plain = [label for label, _ in ranker.rank(question, implied=False).servers]
    assert plain.index("files") > IMPLIED_SLOT  # without the rule, the file server is out of the top five
    ranking = ranker.rank(question)
    servers = [label for label, _ in ranking.servers]
    assert servers.index("files") == IMPLIED_SLOT
    assert ranking.implied == [(FILES_NEED, "files")]
    assert servers[:IMPLIED_SLOT] == [s for s in plain if s != "files"][:IMPLIED_SLOT]  # the rest keeps its order
    scores = [score for _, score in ranking.servers]
    assert scores == sorted(scores, reverse=True)


def test_two_implied_needs_both_keep_a_place_in_the_first_five() -> None:
    catalog = _finance_catalog()
    catalog["servers"].append(
        {
            "label": "clock",
            "description": "Current time and date in any timezone",
            "tools": [_tool("get_current_time", "Get the current date and time in a timezone")],
        }
    )
    cards = build_cards(parse_snapshot(catalog))
    ranker = Ranker(cards.cards, schemas=cards.tools)
    question = "Give me the stock price and company news for AAPL for next week and put everything in notes.md"
    plain = [label for label, _ in ranker.rank(question, implied=False).servers]
    assert plain.index("files") > IMPLIED_SLOT
    assert plain.index("clock") > IMPLIED_SLOT
    ranking = ranker.rank(question)
    servers = [label for label, _ in ranking.servers]
    assert ranking.implied == [(FILES_NEED, "files"), (TIME_NEED, "clock")]
    # the second need's server does not push the first one's out of the first five
    assert servers[IMPLIED_SLOT - 1 : IMPLIED_SLOT + 1] == ["files", "clock"]
    assert servers[: IMPLIED_SLOT - 1] == plain[: IMPLIED_SLOT - 1]
    scores = [score for _, score in ranking.servers]
    assert scores == sorted(scores, reverse=True)


def _small_catalog(size: int) -> dict[str, Any]:
    """The finance catalog cut to ``size`` servers, 'files' and 'clock' among them."""
    catalog = _finance_catalog()
    catalog["servers"].append(
        {
            "label": "clock",
            "description": "Current time and date in any timezone",
            "tools": [_tool("get_current_time", "Get the current date and time in a timezone")],
        }
    )
    keep = [s for s in catalog["servers"] if s["label"] in ("files", "clock")]
    rest = [s for s in catalog["servers"] if s["label"] not in ("files", "clock")]
    catalog["servers"] = [*rest[: size - len(keep)], *keep]
    return catalog


@pytest.mark.parametrize(
    ("size", "first_for_a_file"), [(SMALL_CATALOG_SERVERS, True), (SMALL_CATALOG_SERVERS + 1, False)]
)
def test_in_a_small_catalog_a_file_the_question_names_puts_its_server_first(size: int, first_for_a_file: bool) -> None:
    cards = build_cards(parse_snapshot(_small_catalog(size)))
    ranker = Ranker(cards.cards, schemas=cards.tools)
    assert len(ranker.server_labels) == size
    question = "Give me the stock price and company news for AAPL and put everything in notes.md"
    assert ranker.rank(question, implied=False).servers[0][0] != "files"
    servers = [label for label, _ in ranker.rank(question).servers]
    assert (servers[0] == "files") is first_for_a_file, servers
    assert "files" in servers[: IMPLIED_SLOT + 1]


def test_in_a_small_catalog_a_date_keeps_the_fifth_place() -> None:
    cards = build_cards(parse_snapshot(_small_catalog(SMALL_CATALOG_SERVERS)))
    ranker = Ranker(cards.cards, schemas=cards.tools)
    question = "Give me the stock price and company news for AAPL for next week"
    plain = [label for label, _ in ranker.rank(question, implied=False).servers]
    servers = [label for label, _ in ranker.rank(question).servers]
    assert plain.index("clock") > IMPLIED_SLOT
    assert servers.index("clock") == IMPLIED_SLOT, servers  # the clock is seldom what the question is for


def test_in_a_small_catalog_the_clock_asked_about_puts_its_server_first() -> None:
    """A question about the clock itself leads, where a date relative to today (above) only keeps the fifth place."""
    cards = build_cards(parse_snapshot(_small_catalog(SMALL_CATALOG_SERVERS)))
    ranker = Ranker(cards.cards, schemas=cards.tools)
    question = "what day is it for the stock market analysts in Auckland"
    assert ranker.rank(question, implied=False).servers[0][0] != "clock"
    ranking = ranker.rank(question)
    assert ranking.implied == [(CLOCK_NEED, "clock")]
    assert ranking.servers[0][0] == "clock", ranking.servers


def test_in_a_small_catalog_a_fact_to_remember_puts_the_memory_server_first() -> None:
    """People say "remember" and "keep in mind"; a memory server's tools say "entities" and "knowledge
    graph": the need the question implies, not its words, finds the server."""
    catalog = _small_catalog(SMALL_CATALOG_SERVERS - 1)
    catalog["servers"].append(
        {
            "label": "kg",
            "tools": [
                _tool("add_observations", "Add new observations to existing entities in the knowledge graph"),
                _tool("read_graph", "Read the entire knowledge graph"),
            ],
        }
    )
    cards = build_cards(parse_snapshot(catalog))
    ranker = Ranker(cards.cards, schemas=cards.tools)
    question = "keep in mind that my sister likes the stock market news"
    assert ranker.rank(question, implied=False).servers[0][0] != "kg"
    ranking = ranker.rank(question)
    assert ranking.implied == [(MEMORY_NEED, "kg")]
    assert ranking.servers[0][0] == "kg"


def test_needs_given_by_the_caller_are_each_ranked_judged_and_given_slots(cardset: CardSet) -> None:
    selector = Selector(cardset)
    needs = ["current stock price of the AAPL ticker", "plot a bar chart of the prices"]
    decision = selector.decide(needs)
    alone = [selector.decide(n) for n in needs]
    assert not decision.abstain
    assert [c.server for c in decision.chosen] == ["stocks", "charts"]
    assert decision.confidence == pytest.approx(alone[0].confidence)  # the first card chosen
    assert decision.features == alone[0].features
    # the shortlist takes each need's cards and servers in turn
    assert [s.card.key for s in decision.ranked[:2]] == [alone[0].ranked[0].card.key, alone[1].ranked[0].card.key]
    assert [label for label, _ in decision.servers[:2]] == ["stocks", "charts"]
    assert [n["need"] for n in decision.needs] == needs
    assert decision.needs[1]["ranked"][0]["server"] == "charts"
    assert ("stocks", "get_stock_price") in decision.tools
    assert any(server == "charts" for server, _ in decision.tools)
    assert "need 1" in decision.reason
    assert "need 2" in decision.reason
    with pytest.raises(ValueError, match="need"):
        selector.decide(["", "  "])
    with pytest.raises(ValueError, match="at most 8"):
        selector.decide([f"need {i}" for i in range(9)])


def test_select_cli_takes_needs_and_reports_each_shortlist(
    cardset: CardSet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(CATALOG), encoding="utf-8")
    question = "Get the AAPL stock price and plot it as a bar chart"
    argv = ["select", "--catalog", str(catalog), "--lexical", "--json", "--query", question]
    assert main([*argv, "--need", "AAPL stock price", "--need", "bar chart of prices"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["query"] == question
    assert [n["need"] for n in line["needs"]] == ["AAPL stock price", "bar chart of prices"]
    assert [n["ranked"][0]["server"] for n in line["needs"]] == ["stocks", "charts"]
    assert len(line["ranked"]) >= 10
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": question, "needs": ["x"] * 9}) + "\n", encoding="utf-8")
    assert main(["select", "--catalog", str(catalog), "--lexical", "--queries", str(queries)]) == 1
    assert "at most 8 strings" in capsys.readouterr().err
    assert main([*argv, *(a for i in range(9) for a in ("--need", f"need {i}"))]) == 1
    assert "at most 8 --need" in capsys.readouterr().err


MATH_NEED = "calculate a math expression"


class _TopicEncoder:
    """Vectors that say whether a text is about arithmetic (one axis) or about something else (a hash of
    it on the other axes, the same in every process): the cosine of a card that sums to the arithmetic need is ~0.9, of any other
    card ~0."""

    name = "topic"
    fingerprint = "topic-v1"

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            digest = zlib.crc32(text.encode())  # not hash(): it changes with each process's PYTHONHASHSEED
            rng = np.random.default_rng(digest)
            row = np.zeros(16, dtype=np.float32)
            row[1:] = rng.standard_normal(15).astype(np.float32) * 0.1
            if any(w in text.lower() for w in ("math", "sum of", "plus")):
                row[0] = 1.0
            else:
                row[1 + digest % 15] += 1.0
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows)


def _math_catalog(filler_servers: int) -> CardSet:
    """A server whose one card sums numbers (in words no need shares: it matches the arithmetic need by
    meaning only) among many unrelated tools, a refunds server whose card shares the word 'calculate'
    with the need, and ``filler_servers`` unrelated ones."""
    servers: list[dict[str, Any]] = [
        {
            "label": "toolbox",
            "tools": [
                _tool("get_sum", "Returns the sum of two numbers", a="First number", b="Second number"),
                *(_tool(f"echo_{i}", f"Echoes message number {i} back") for i in range(8)),
            ],
        },
        {"label": "refunds", "tools": [_tool("refund_amount", "Calculate the refund owed on a returned order")]},
    ]
    servers += [
        {"label": f"other-{i}", "tools": [_tool(f"weather_{i}", f"Weather forecast for region {i}")]}
        for i in range(filler_servers)
    ]
    return build_cards(parse_snapshot({"servers": servers}))


@pytest.mark.parametrize(
    ("filler", "need_server"), [(SMALL_CATALOG_SERVERS - 2, "toolbox"), (SMALL_CATALOG_SERVERS - 1, "refunds")]
)
def test_in_a_small_catalog_an_implied_need_is_served_by_the_card_closest_in_meaning(
    filler: int, need_server: str
) -> None:
    """In a small catalog the server of a leading need goes first, so it is the server of the card that
    serves the need (by its cosine), not the one the fused views put first: a summing tool among eight
    echoes loses the views to a refunds card that shares the word 'calculate' (in a large catalog, where
    the need gets the fifth place, the views choose as before)."""
    cards = _math_catalog(filler)
    ranker = Ranker(cards.cards, encoder=_TopicEncoder(), schemas=cards.tools)
    assert ranker.small is (need_server == "toolbox")
    assert ranker.rank(MATH_NEED, implied=False).servers[0][0] == "refunds"  # the views' choice
    assert ranker.best_server(MATH_NEED) == need_server
    if ranker.small:
        card = ranker.best_card(MATH_NEED)
        assert card is not None
        assert card.name == "get_sum"
        ranking = ranker.rank("what is 17 plus 25")
        assert ranking.implied == [(MATH_NEED, "toolbox")]
        assert ranking.servers[0][0] == "toolbox"


class _Recording:
    """The default encoder, recording the texts of each call it gets."""

    def __init__(self) -> None:
        from skilldeck.select._encoders import load_encoder

        self.inner = load_encoder("minilm", cache_size=0)
        self.name, self.fingerprint = self.inner.name, self.inner.fingerprint
        self.calls: list[list[str]] = []

    def encode(self, texts: Any) -> Any:
        self.calls.append(list(texts))
        return self.inner.encode(texts)


def test_a_question_and_the_needs_it_implies_are_encoded_in_one_call(cardset: CardSet) -> None:
    encoder = _Recording()
    selector = Selector(cardset, encoder=encoder)
    encoder.calls.clear()  # the cards' vectors
    question = "Save the forecast for next week to forecast.md"
    decision = selector.decide(question)
    assert encoder.calls == [[question, FILES_NEED, TIME_NEED]]  # one run of the model, not three
    # the same decision as when each need is encoded on its own first
    separate = _Recording()
    other = Selector(cardset, encoder=separate)
    for need in (FILES_NEED, TIME_NEED):
        other.ranker.best_server(need)  # ranked, and remembered, on its own
    separate.calls.clear()
    again = other.decide(question)
    assert separate.calls == [[question]]
    assert decision.needs == again.needs
    assert decision.features == pytest.approx(again.features, abs=1e-5)
    # a need met once is remembered: the next question that implies it is encoded alone
    encoder.calls.clear()
    selector.decide("Write the forecast to notes.md")
    assert encoder.calls == [["Write the forecast to notes.md"]]
    # needs given by the caller: all of them and the needs they imply that are new, in one call
    fresh = Selector(cardset, encoder=encoder)
    encoder.calls.clear()
    needs = ["current stock price of the AAPL ticker", "plot a bar chart of next week's prices in chart.png"]
    fresh.decide(needs)
    assert encoder.calls == [[*needs, FILES_NEED, TIME_NEED]]
