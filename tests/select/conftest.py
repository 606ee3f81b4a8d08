"""A small hand-built catalog for the selection tests."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import numpy as np
import pytest

from skilldeck.select import CardSet, build_cards, parse_snapshot
from skilldeck.select._cards import Card
from skilldeck.select._encoders import load_encoder
from skilldeck.select._rank import semantic_text


def _tool(name: str, description: str, **params: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
        },
    }


CATALOG = {
    "servers": [
        {
            "label": "weather",
            "description": "Weather forecasts and alerts",
            "tools": [
                _tool("get_forecast", "Get the weather forecast for a city", city="City name"),
                _tool("get_alerts", "Severe weather alerts for a region", region="Region code"),
            ],
        },
        {
            "label": "stocks",
            "description": "Stock market data",
            "tools": [
                _tool("get_stock_price", "Current stock price for a ticker symbol", ticker="Ticker symbol, e.g. AAPL"),
                _tool("get_company_news", "Latest news articles about a listed company", ticker="Ticker symbol"),
                _tool("get_dividends", "Dividend history of a stock", ticker="Ticker symbol"),
            ],
        },
        {
            "label": "files",
            "description": "Read and write files on the local file system",
            "tools": [
                _tool("write_file", "Write text content to a file at a path", path="Where to write"),
                _tool("read_file", "Read the contents of a file", path="Which file"),
                _tool("list_directory", "List the files in a directory", path="Directory"),
            ],
        },
        {
            "label": "charts",
            "description": "Chart generation",
            "tools": [
                _tool("generate_bar_chart", "Generate a bar chart from tabular data", data="Rows to plot"),
                _tool("generate_line_chart", "Generate a line chart for a time series", data="Points to plot"),
            ],
        },
        {
            "label": "maps",
            "description": "Maps and routing",
            "tools": [
                _tool("geocode_address", "Turn a street address into latitude and longitude", address="Address"),
                _tool("find_route", "Driving, cycling or walking route between two places", origin="Start"),
            ],
        },
        {
            "label": "pdf",
            "description": "PDF utilities",
            "tools": [_tool("merge_pdfs", "Merge several PDF documents into one")],
        },
        {
            "label": "hot-lists",
            "description": "热点榜单聚合服务",
            "tools": [_tool("get-weibo-trending", "获取微博热搜榜单，展示当下最热门的话题")],
        },
    ]
}


@pytest.fixture
def cardset() -> CardSet:
    return build_cards(parse_snapshot(CATALOG))


@pytest.fixture
def skill_card() -> Card:
    return Card(
        kind="skill",
        server="stocks",
        name="portfolio-report",
        description="Write a weekly portfolio report from prices and dividends",
        uri="skill://portfolio-report/SKILL.md",
        tools=(("stocks", "get_stock_price"), ("stocks", "get_dividends")),
    )


@pytest.fixture(scope="module")
def livemcpbench() -> tuple[CardSet, Any, np.ndarray]:
    """LiveMCPBench's 70 servers (the demo's snapshot), the default encoder and the cards' vectors."""
    snapshot = resources.files("skilldeck.demo") / "data" / "livemcpbench-snapshot.json"
    cards = build_cards(parse_snapshot(json.loads(snapshot.read_text(encoding="utf-8"))))
    encoder = load_encoder("minilm")
    return cards, encoder, encoder.encode([semantic_text(c) for c in cards.cards])
