"""Write the background document frequencies the ranker ships (``src/skilldeck/select/background-df.json``).

They come from the LiveMCPBench reference catalog (70 servers, 527 tools), tokenised exactly as
the ranker tokenises cards and servers, so adding them to a catalog's own counts gives IDF values
— and BM25 strengths — on the same scale whatever the catalog's size. Run from the repo root::

    .venv/bin/python bench/selection/background.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from skilldeck.select._cards import build_cards
from skilldeck.select._rank import BM25Index
from skilldeck.select._snapshot import load_snapshot

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ablation import AblationConfig, AblationRanker  # noqa: E402

OUT = HERE.parent.parent / "src" / "skilldeck" / "select" / "background-df.json"


def main() -> None:
    cards = build_cards(
        load_snapshot(HERE.parent.parent / "src" / "skilldeck" / "demo" / "data" / "livemcpbench-snapshot.json")
    )
    ranker = AblationRanker(cards.cards, schemas=cards.tools, ablation=AblationConfig(background=False))

    def table(index: BM25Index) -> dict[str, object]:
        df = index.document_frequencies
        return {"n": index.n, "df": {t: int(df[i]) for t, i in sorted(index.vocab.items())}}

    data = {
        "source": "LiveMCPBench tools.json (70 servers, 527 tools; Apache-2.0), tokenised by skilldeck.select._rank",
        "cards": table(ranker.index.cards),
        "servers": table(ranker.index.servers),
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(data['cards']['df'])} card terms)")


if __name__ == "__main__":
    main()
