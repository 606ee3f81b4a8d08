"""Registry discovery measured: catalog search quality, what ``find`` adds, its latency, and a catalog's refresh.

The catalog is the official MCP Registry's seed (471 entries, converted to the registry API's
shape: ``bench/registry/data``) plus the four servers that install here; the questions are
``bench/registry/questions.json``: 66 asked in people's words, each meant for one catalog server
nothing configured serves, and 10 the configured skills (``examples/skills``) answer.

1. **Catalog search**: the catalog ranked alone (:class:`~skilldeck.catalog._search.CatalogIndex`,
   select's ranker), lexical and with the default encoder (MiniLM, fused): the share of questions
   whose server is the first catalog card (Hit@1) and among the three ``find`` shows (Hit@3).
   Every way of running is taken as available (npx, uvx, docker), so every addable entry may be offered.
2. **Through the gateway**: one ``GatewayService`` over ``examples/skills`` (in process) and a
   :class:`~skilldeck.gateway._discovery.Discovery` holding the catalog, as ``find`` answers a
   client: the share of the 66 out-of-scope questions answered weakly (abstain or low confidence),
   the share of those weak answers that gained catalog cards, and the share whose server is among
   them; for the 10 in-scope questions, how many gained catalog cards (a sure answer gains none).
3. **Latency**: ``find`` for the out-of-scope questions on the same gateway with a catalog of
   5,000 entries (the seed's entries under 5,000 names) and without one, side by side, question by
   question, each repeated; the p50 of each and of the difference (the target: under 20 ms added),
   and of the difference on the first pass alone. The catalog's ranker shares ``find``'s encoder,
   whose cache holds the question's vector once ``find`` encoded it: what the catalog adds is
   ranking 5,000 entries, not a second encoding (later passes find the question cached for both).
4. **Refresh**: a registry of 5,000 entries (``bench/registry/server.py`` behind httpx2's ASGI
   transport, so no socket is timed) read in full (50 pages of 100) and again with ``updated_since``
   (nothing changed), and the index built over it; seconds, bytes, and the Python heap's peak
   (``tracemalloc``) while reading and indexing.

Run from the repository root::

    .venv/bin/python bench/registry_catalog.py            # about 2 minutes on 2 cores
    .venv/bin/python bench/registry_catalog.py --quick    # fewer repetitions

Writes ``bench/results/registry_catalog.json`` and prints a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2

from skilldeck.catalog import CatalogIndex, RegistryClient, Runtimes, choose, read_page
from skilldeck.catalog._entries import CatalogEntry, CatalogLimits
from skilldeck.catalog._search import MAX_CATALOG_CARDS
from skilldeck.gateway._discovery import Discovery, Source
from skilldeck.gateway._service import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.select._encoders import default_encoder
from skilldeck.select._vectors import VectorCache
from skilldeck.server import create_server
from skilldeck.serving._policy import Caller

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "registry" / "data"
RESULTS = HERE / "results" / "registry_catalog.json"
EVERYWHERE = Runtimes(npx="npx", uvx="uvx", container="docker", python=sys.executable, venvs="/venvs")
"""Every runtime taken as present: every entry skilldeck could run may be offered."""
LARGE = 5_000


def snapshot() -> list[dict[str, Any]]:
    return json.loads((DATA / "seed-2025-05-16.json").read_text()) + json.loads((DATA / "installable.json").read_text())


def questions() -> dict[str, Any]:
    return json.loads((HERE / "registry" / "questions.json").read_text())


def offer(entry: CatalogEntry) -> Any:
    return choose(entry, EVERYWHERE)[0]


def larger(entries: Sequence[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """``size`` API entries: those of ``entries`` a reader keeps, then copies of them under other names
    (``io.github.copyN-owner/server``)."""
    kept = {e.name for e in read_page(list(entries)).entries}
    entries = [raw for raw in entries if raw["server"].get("name") in kept]
    out: list[dict[str, Any]] = []
    copy = 0
    while len(out) < size:
        for raw in entries:
            if len(out) >= size:
                break
            server = dict(raw["server"])
            if copy:
                namespace, _, short = server["name"].partition("/")
                server["name"] = f"{namespace.replace('io.github.', f'io.github.copy{copy}-')}/{short}"
            out.append({**raw, "server": server})
        copy += 1
    return out


def search_quality(
    entries: list[CatalogEntry], asked: list[dict[str, str]], encoder: Any, cache: VectorCache
) -> dict[str, Any]:
    index = CatalogIndex(entries, encoder=encoder, cache=cache)
    started = time.perf_counter()
    index.ranker.wait()
    ready = time.perf_counter() - started
    ranks: list[int | None] = []
    for item in asked:
        found = [f.entry.name for f in index.search(item["question"], offer, limit=10)]
        ranks.append(found.index(item["server"]) + 1 if item["server"] in found else None)
    index.close()
    total = len(asked)
    return {
        "questions": total,
        "hit_at_1": round(sum(r == 1 for r in ranks) / total, 3),
        "hit_at_3": round(sum(r is not None and r <= MAX_CATALOG_CARDS for r in ranks) / total, 3),
        "mrr_at_10": round(sum(1 / r for r in ranks if r) / total, 3),
        "vectors_ready_s": round(ready, 2),
        "missed": [
            item["question"] for item, r in zip(asked, ranks, strict=True) if r is None or r > MAX_CATALOG_CARDS
        ],
    }


def deck_host() -> Host:
    server, _ = create_server(REPO / "examples" / "skills")
    return Host([ServerSpec("deck", InProcessServer(server))])


def discovery_over(service: GatewayService, entries: list[CatalogEntry], home: str) -> Discovery:
    discovery = Discovery(
        [Source("bench", "file")], service=service, home=home, runtimes=EVERYWHERE, report=lambda *_: None
    )
    discovery.catalogs["bench"] = entries
    discovery._reindex()  # the catalog given directly: no registry to read
    assert discovery.index is not None
    discovery.index.ranker.wait()
    return discovery


def through_gateway(service: GatewayService, discovery: Discovery, asked: dict[str, Any]) -> dict[str, Any]:
    caller, rows = Caller(), []
    for item in asked["out_of_scope"]:
        found = service.find(caller, "bench", item["question"])
        discovery.offer(caller, "bench", item["question"], found)
        cards = [c["name"] for c in found.get("catalog", [])]
        rows.append((bool(found["abstain"] or found.get("low_confidence")), bool(cards), item["server"] in cards))
    sure = 0
    in_scope_with_cards = 0
    for question in asked["in_scope"]:
        found = service.find(caller, "bench", question)
        discovery.offer(caller, "bench", question, found)
        sure += not (found["abstain"] or found.get("low_confidence"))
        in_scope_with_cards += bool(found.get("catalog"))
    weak = [r for r in rows if r[0]]
    return {
        "out_of_scope": len(rows),
        "weak_share": round(len(weak) / len(rows), 3),
        "weak_with_catalog_cards_share": round(sum(r[1] for r in weak) / max(1, len(weak)), 3),
        "intended_among_catalog_cards_share": round(sum(r[2] for r in rows) / len(rows), 3),
        "in_scope": len(asked["in_scope"]),
        "in_scope_sure": sure,
        "in_scope_with_catalog_cards": in_scope_with_cards,
    }


def latency(service: GatewayService, discovery: Discovery, asked: list[str], reps: int) -> dict[str, Any]:
    caller = Caller()
    alone: list[float] = []
    with_catalog: list[float] = []
    added: list[float] = []
    first_pass: list[float] = []
    for rep in range(reps):
        for question in asked:  # side by side, question by question
            started = time.perf_counter()
            service.find(caller, "bench", question)
            first = time.perf_counter() - started
            started = time.perf_counter()
            found = service.find(caller, "bench", question)
            discovery.offer(caller, "bench", question, found)
            second = time.perf_counter() - started
            alone.append(first)
            with_catalog.append(second)
            added.append(second - first)
            if rep == 0:  # the question new to the encoder's cache: find encodes it, the catalog reuses it
                first_pass.append(second - first)

    def ms(values: list[float], q: float = 0.5) -> float:
        ordered = sorted(values)
        return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {
        "samples": len(alone),
        "find_p50_ms": ms(alone),
        "find_with_catalog_p50_ms": ms(with_catalog),
        "added_p50_ms": ms(added),
        "added_p90_ms": ms(added, 0.9),
        "added_p50_first_pass_ms": ms(first_pass),
        "ratio_p50": round(statistics.median(with_catalog) / statistics.median(alone), 2),
    }


def registry_app() -> Any:
    spec = importlib.util.spec_from_file_location("bench_registry_server", HERE / "registry" / "server.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def refresh(entries: list[dict[str, Any]], encoder: Any, cache: VectorCache) -> dict[str, Any]:
    app = registry_app().Registry(entries)
    transport = httpx2.ASGITransport(app=app)
    client = RegistryClient("http://registry.bench/ok", limits=CatalogLimits(), transport=transport)
    tracemalloc.start()
    full = await client.servers()
    _, read_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    index = CatalogIndex(full.entries, encoder=None)
    built = time.perf_counter() - started
    _, index_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    since = max(e.updated_at for e in full.entries)
    again = await client.servers(updated_since=since, held=len(full.entries))
    index.close()
    return {
        "entries_served": len(entries),
        "entries_read": len(full.entries),
        "skipped": len(full.skipped),
        "pages": full.pages,
        "bytes": full.bytes,
        "full_s": round(full.seconds, 3),
        "incremental_s": round(again.seconds, 4),
        "incremental_entries": len(again.entries),
        "lexical_index_build_s": round(built, 3),
        "heap_peak_read_mib": round(read_peak / 2**20, 1),
        "heap_peak_index_mib": round(index_peak / 2**20, 1),
    }


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 repetitions of the latency questions instead of 10")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    asked = questions()
    raw = snapshot()
    entries = read_page(raw).entries
    encoder, notice = default_encoder()
    if notice:
        print(f"warning: {notice}", file=sys.stderr)
    out: dict[str, Any] = {
        "benchmark": "registry_catalog",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python", *sys.argv]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "catalog": {
            "entries_served": len(raw),
            "entries_read": len(entries),
            "offerable": sum(1 for e in entries if offer(e)),
        },
    }
    with tempfile.TemporaryDirectory() as home:
        cache = VectorCache(Path(home) / "vectors")
        out["search"] = {
            "lexical": search_quality(entries, asked["out_of_scope"], None, cache),
            "semantic": search_quality(entries, asked["out_of_scope"], encoder, cache),
        }
        large = read_page(larger(raw, LARGE), limits=CatalogLimits()).entries
        out["gateway"] = {}
        out["latency"] = {}
        for mode, enc in (("lexical", None), ("semantic", encoder)):
            async with deck_host() as host:
                service = GatewayService(host, encoder=enc, cache_dir=Path(home) / "gateway-vectors")
                service.index_for(Caller()).selector.ranker.wait()
                out["gateway"][mode] = through_gateway(service, discovery_over(service, entries, home), asked)
                big = discovery_over(service, large, home)
                out["latency"][mode] = {
                    "catalog_entries": len(big.index or []),
                    **latency(service, big, [q["question"] for q in asked["out_of_scope"]], 3 if args.quick else 10),
                }
        out["refresh"] = await refresh(larger(raw, LARGE), encoder, cache)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=1) + "\n")
    for name in ("search", "gateway", "latency"):
        for mode, figures in out[name].items():
            shown = {k: v for k, v in figures.items() if k != "missed"}
            print(f"{name} {mode}: {json.dumps(shown)}")
    print(f"refresh: {json.dumps(out['refresh'])}")
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
