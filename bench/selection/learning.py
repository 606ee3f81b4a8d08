"""Selection that learns from use: LiveMCPBench with a usage history, before and after.

Run from the repository root::

    .venv/bin/python bench/selection/learning.py                # ~10 min on 2 vCPUs
    .venv/bin/python bench/selection/learning.py --sweep        # the history weights' grid (ranking only)
    .venv/bin/python bench/selection/learning.py --history-update   # one recorded use on 10,000 cards
    .venv/bin/python bench/selection/learning.py --no-speed & .venv/bin/python bench/selection/learning.py --speed-only

A *past use* of a task is its question recorded on each card it led to: the gold tools of the task
(``Annotator Metadata.Tools``; a tool several servers list counts on each), as the gateway's ledger
records a question whose ``find`` led to a ``load`` and a successful ``call``. At most 20 past
questions per card are kept (the newest, as the ledger does). Settings, each measured with the
default selector (int8 MiniLM, five-view fusion):

* ``none``: no history (today's figures);
* ``halves``: the tasks of one half (``livemcpbench.py``: by SHA-256 of the task id) as past uses,
  every task of the other half measured; both directions;
* ``dense``: every other task's question and two variants of it (its first sentence; the question
  without a deterministic ~15% of its words), so each card holds up to 20 past questions; every
  task measured with its own question left out of the history.

Each measured question is also asked out of scope (the catalog without its gold servers, the
history of the cards that remain kept), as in ``run.py``. Abstention is reported with the shipped
calibration and with one refitted with history in place: L2 logistic regression on half A's rows
(without history, and with the history of half B), L2 chosen by 5-fold cross-validation grouped by
task, threshold keeping 90% of half A's in-scope questions; half B is the held-out report.

Callers: a past question is trusted (:class:`~skilldeck.select.Taught`) when two distinct callers
taught its card, or when the audience has a single caller. ``halves`` and ``dense`` take each task
as a different caller (a card is trusted when two tasks or more taught it); ``halves_one_caller``
is the same history in a single-user audience (every card trusted).

Poisoning: for each task, one caller floods an unrelated card (of a server the question does not
need, the card of the catalog with the lowest cosine and no shared term) with 20 crafted uses --
the question itself and 19 variants -- on top of the ``halves`` history, in an audience of several
callers (so not trusted); how far that card and its server move in the question's ranking is the
figure (``poisoning``). ``poisoning_trusted``: the same uses trusted (two colluding callers, or the
audience's only caller, poisoning only itself).

Dense history of real questions (``bfcl.py``): bfcl-eval's live questions, every function a
single-tool server, each measured question ranked with up to 5 and 20 of its function's other
questions (never itself) on every card (``bfcl_dense``; ``pip install --no-deps bfcl-eval`` first,
else skipped).

Speed: ``find``/decide p50 on the 10,000-card synthetic catalog (``synth.py``) without a history
and with a full ledger (20 past questions on every card), side by side in one run, alternating.

Reading one recorded use (``--history-update``, ~1 min): :func:`history_update`, written to
``bench/results/selection_history_update.json``.

Writes ``bench/results/selection_learning.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import bfcl  # noqa: E402
from calibrate import auroc, choose_l2, fit_logistic, threshold_keeping  # noqa: E402
from livemcpbench import Task, load_catalog, load_tasks, snapshot_json  # noqa: E402
from run import DEFAULT_DATA, KEEP, Memo, features_matrix, load_semantic, mean, pct, server_metrics  # noqa: E402
from synth import synthesize  # noqa: E402

from skilldeck.select import CardSet, RankConfig, Selector, Taught, build_cards, parse_snapshot  # noqa: E402
from skilldeck.select._decide import FEATURES, HISTORY_FEATURES, Calibration, default_calibration  # noqa: E402
from skilldeck.select._rank import semantic_text  # noqa: E402

OUT = REPO / "bench" / "results" / "selection_learning.json"
UPDATE_OUT = REPO / "bench" / "results" / "selection_history_update.json"
PER_CARD = 20
"""Past questions kept per card (the ledger's default)."""
TARGETS = {"recall@5_halves": 0.86, "p50_ratio_full_ledger_10k": 1.5}

History = Mapping[str, Sequence[str]]


# --- histories -----------------------------------------------------------------------------------


def gold_keys(task: Task, cards: CardSet) -> list[str]:
    """The keys of the cards a task's question led to: its gold tools, on each server that lists them."""
    present = {c.key for c in cards.cards}
    keys = [f"tool:{server}:{r.tool}" for r in task.tool_requirements for server in sorted(r.servers)]
    return [k for k in dict.fromkeys(keys) if k in present]


def variants(question: str, seed: str) -> list[str]:
    """The question, its first sentence, and the question without a deterministic ~15% of its words."""
    first = re.split(r"(?<=[.?!])\s+", question, maxsplit=1)[0]
    rng = random.Random(seed)
    words = question.split()
    dropped = " ".join(w for w in words if rng.random() > 0.15) or question
    return list(dict.fromkeys([question, first, dropped]))


def history_of(uses: Sequence[tuple[str, list[str], str]], one_caller: bool = False) -> History:
    """Each card's past questions from (question, card keys, caller) uses in time order, the newest
    ``PER_CARD`` kept, trusted (:class:`~skilldeck.select.Taught`) as the ledger says: taught by two
    distinct callers or more, or every use by one caller (``one_caller``: a single-user audience)."""
    out: dict[str, list[str]] = {}
    callers: dict[str, list[str]] = {}
    for question, keys, caller in uses:
        for key in keys:
            past, who = out.setdefault(key, []), callers.setdefault(key, [])
            if question in past:
                who.pop(past.index(question))
                past.remove(question)  # an exact repeat collapses into the newest
            past.append(question)
            who.append(caller)
            del past[:-PER_CARD], who[:-PER_CARD]
    return {key: Taught(past, one_caller or len(set(callers[key])) > 1) for key, past in out.items()}


def uses_of(tasks: Sequence[Task], cards: CardSet, dense: bool = False) -> list[tuple[str, list[str], str]]:
    """Every task's uses: its question (with ``dense``, and two variants) on its gold cards, the task its caller."""
    out: list[tuple[str, list[str], str]] = []
    for task in tasks:
        keys = gold_keys(task, cards)
        for q in variants(task.question, task.task_id) if dense else [task.question]:
            out.append((q, keys, task.task_id))
    return out


# --- measuring -----------------------------------------------------------------------------------


class Bench:
    """The catalog, its vectors and the tasks, and one selector per catalog kept between measurements."""

    def __init__(self, cards: CardSet, tasks: list[Task], encoder: Any, vectors: np.ndarray) -> None:
        self.cards, self.tasks, self.encoder, self.vectors = cards, tasks, encoder, vectors
        self.index = {c.key: i for i, c in enumerate(cards.cards)}

    def selector(
        self,
        removed: frozenset[str] = frozenset(),
        history: Mapping[str, Sequence[str]] | None = None,
        config: RankConfig | None = None,
        calibration: Calibration | None = None,
    ) -> Selector:
        keep = [c for c in self.cards.cards if c.server not in removed]
        sub = CardSet(cards=keep, tools={k: v for k, v in self.cards.tools.items() if k not in removed})
        vectors = self.vectors[[self.index[c.key] for c in keep]]
        return Selector(
            sub,
            encoder=self.encoder,
            vectors=vectors,
            config=config,
            history=history,
            calibration=calibration,
            history_calibration=calibration,
        )

    def measure(
        self,
        setting: str,
        history_for: Callable[[Task], History],
        config: RankConfig | None = None,
        twins: bool = True,
    ) -> list[dict[str, Any]]:
        """One row per task: ranking metrics, and the in-scope and out-of-scope features."""
        full = self.selector(config=config)
        rows = []
        for task in self.tasks:
            history = history_for(task)
            full.set_history(history)
            d = full.decide(task.question)
            servers = [s for s, _ in d.servers]
            tools = [(s.card.server, s.card.name) for s in d.ranked if s.card.kind == "tool"]
            row: dict[str, Any] = {
                "task_id": task.task_id,
                "half": task.half,
                "setting": setting,
                "history_size": sum(len(v) for v in history.values()),
                "history_matched": d.history,
                "top5": servers[:5],
                "features_in": d.features,
                "confidence_in": d.confidence,
                **server_metrics(task, servers, tools),
            }
            if twins:
                out = self.selector(task.gold_servers, history, config).decide(task.question)
                row["features_out"] = out.features
                row["confidence_out"] = out.confidence
            rows.append(row)
        return rows


def ranking_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for half in ("A", "B", "all"):
        chosen = [r for r in rows if half == "all" or r["half"] == half]
        out[half] = {k: round(mean([r[k] for r in chosen]), 4) for k in ("hit@1", "recall@3", "recall@5")}
        out[half]["tool_recall@5"] = round(mean([r["tool_recall@5"] for r in chosen]), 4)
        out[half]["n"] = len(chosen)
    return out


def abstention(
    rows: list[dict[str, Any]], cal: Calibration, half: str | None, decided: bool = False
) -> dict[str, float]:
    """How well ``cal`` tells in-scope questions from their out-of-scope twins; with ``decided``, the
    confidences the selector decided with (``cal``'s model, plus what a like past question adds:
    :attr:`~skilldeck.select.RankConfig.history_neighbour_confidence`), not ``cal``'s of the features."""
    chosen = [r for r in rows if half is None or r["half"] == half]
    if decided:
        conf_in = [r["confidence_in"] for r in chosen]
        conf_out = [r["confidence_out"] for r in chosen]
    else:
        conf_in = [cal.confidence(r["features_in"]) for r in chosen]
        conf_out = [cal.confidence(r["features_out"]) for r in chosen]
    at_90 = threshold_keeping(conf_in, KEEP)  # the operating point that keeps 90% of these in-scope questions
    return {
        "auroc": round(auroc(conf_in, conf_out), 4),
        "false_accept": round(mean([float(c >= cal.threshold) for c in conf_out]), 4),
        "in_scope_kept": round(mean([float(c >= cal.threshold) for c in conf_in]), 4),
        "false_accept_at_90_kept": round(mean([float(c >= at_90) for c in conf_out]), 4),
        "n": len(chosen),
    }


def defaults_of(rows: list[dict[str, Any]], names: list[str]) -> dict[str, float]:
    """As ``run.feature_defaults``, but a history feature a question lacks is 0 (no history), not a mean."""
    out: dict[str, float] = {}
    for n in names:
        if n in HISTORY_FEATURES:
            continue
        present = [r["features_in"][n] for r in rows if n in r["features_in"]]
        if present and len(present) < len(rows):
            out[n] = round(mean(present), 6)
    return out


def refit(rows: list[dict[str, Any]], half: str) -> Calibration:
    """The history-aware calibration fitted on ``half``'s rows (every setting given), grouped by task."""
    names = [*FEATURES, *HISTORY_FEATURES]
    fit_rows = [r for r in rows if r["half"] == half]
    defaults = defaults_of(fit_rows, names)
    x = features_matrix([r["features_in"] for r in fit_rows] + [r["features_out"] for r in fit_rows], names, defaults)
    y = np.array([1.0] * len(fit_rows) + [0.0] * len(fit_rows))
    groups = [r["task_id"] for r in fit_rows] * 2
    l2 = choose_l2(x, y, groups)
    w, b = fit_logistic(x, y, l2=l2)
    cal = Calibration(weights=dict(zip(names, map(float, w), strict=True)), bias=b, threshold=0.5, defaults=defaults)
    # the threshold keeps 90% of the half's in-scope questions that had a history
    kept = [cal.confidence(r["features_in"]) for r in fit_rows if r["setting"] != "none"]
    return replace(cal, threshold=threshold_keeping(kept, KEEP), metrics={"l2": l2})


# --- a dense history of real questions (bfcl-eval) -----------------------------------------------


def bfcl_dense(
    encoder: Any, data: Path, pasts: Sequence[int], config: RankConfig | None = None, base: bool = True
) -> dict[str, Any]:
    """BFCL's live questions (``bfcl.py``): every function a single-tool server, each measured question
    ranked without a history and with up to ``past`` of its function's other questions on every card."""
    b = bfcl.load(data)
    cards = build_cards(parse_snapshot({"servers": [{**s, "skills": []} for s in b.servers]}))
    vectors = encoder.encode([semantic_text(c) for c in cards.cards])
    bench = Bench(cards, b.tasks, encoder, vectors)
    key = {c.server: c.key for c in cards.cards}
    shipped = default_calibration(True)
    out: dict[str, Any] = {
        "source": "bfcl-eval (Apache-2.0): BFCL_v4_live_simple + BFCL_v4_live_multiple",
        "servers": len(b.servers),
        "measured_questions": len(b.tasks),
        "measured_functions": len({next(iter(t.gold_servers)) for t in b.tasks}),
    }

    def history(past: int, sure: bool) -> Callable[[Task], History]:
        def of(task: Task) -> History:
            return {
                key[label]: Taught([q for q in qs if q != task.question][:past], sure)
                for label, qs in b.questions.items()
                if past
            }

        return of

    # untrusted: each past question a different caller's, one each; trusted: one user's history (as the halves')
    for past, sure in [(0, False)] * base + [(p, s) for p in pasts for s in (False, True)]:
        name = f"past={past}" + (", trusted" if sure else "")
        rows = bench.measure(name, history(past, sure), config)
        ranked = ranking_summary(rows)["all"]
        out[name] = {
            **{k: ranked[k] for k in ("hit@1", "recall@5", "n")},
            "history_size": mean([r["history_size"] for r in rows]),
            **{
                k: v
                for k, v in abstention(rows, shipped, None, decided=True).items()
                if k in ("auroc", "false_accept_at_90_kept")
            },
        }
        print(f"[bfcl {name}]", out[name], flush=True)
    return out


# --- poisoning -----------------------------------------------------------------------------------


def place(ranking: Any, key: str, server: str) -> tuple[int, int, float]:
    """A card's rank, its server's rank and the card's score in a full ranking."""
    ranked = [s.card.key for s in ranking.scored]
    score = next(s.score for s in ranking.scored if s.card.key == key)
    return ranked.index(key) + 1, [label for label, _ in ranking.servers].index(server) + 1, score


def poisoning(
    bench: Bench, halves: Callable[[Task], History], config: RankConfig | None = None, trusted: bool = False
) -> dict[str, Any]:
    """One caller's 20 crafted uses on an unrelated card, for each task's question (module docstring);
    ``trusted``: as if two callers taught them (or the audience's only caller)."""
    full = bench.selector(config=config)
    ranker = full.ranker
    cards = bench.cards.cards
    moves: list[dict[str, Any]] = []
    for task in bench.tasks:
        base_history = halves(task)
        ranker.set_history(base_history)
        before = ranker.rank(task.question, limit=None)
        cos = bench.vectors @ bench.encoder.encode([task.question])[0]
        shared = {s.card.key for s in before.scored if s.lexical > 0}
        candidates = [
            i
            for i, c in enumerate(cards)
            if c.server not in task.gold_servers and c.key not in shared and c.kind == "tool"
        ]
        target = cards[min(candidates, key=lambda i: float(cos[i]))]
        crafted = [task.question] + [f"{variants(task.question, str(n))[-1]} ({n})" for n in range(PER_CARD - 1)]
        ranker.set_history({**base_history, target.key: Taught(crafted, trusted)})
        after = ranker.rank(task.question, limit=None)
        card_before, server_before, _ = place(before, target.key, target.server)
        card_after, server_after, score_after = place(after, target.key, target.server)
        moves.append(
            {
                "task_id": task.task_id,
                "card": target.key,
                "card_rank": [card_before, card_after],
                "server_rank": [server_before, server_after],
                "score_after": round(score_after, 4),
                "top_score_after": round(after.scored[0].score, 4),
                "top1_taken": after.scored[0].card.key == target.key,
                "first_server_kept": after.servers[0][0] == before.servers[0][0],
                "recall@5": [
                    server_metrics(task, [label for label, _ in r.servers], [])["recall@5"] for r in (before, after)
                ],
            }
        )
    ratios = [m["score_after"] / m["top_score_after"] for m in moves if m["top_score_after"] > 0]
    return {
        "crafted_per_card": PER_CARD,
        "n": len(moves),
        "top1_taken": sum(m["top1_taken"] for m in moves),
        "first_server_kept": sum(m["first_server_kept"] for m in moves),
        "server_in_top5_after": sum(m["server_rank"][1] <= 5 for m in moves),
        "server_rank_median": [
            statistics.median(m["server_rank"][0] for m in moves),
            statistics.median(m["server_rank"][1] for m in moves),
        ],
        "server_rank_best_after": min(m["server_rank"][1] for m in moves),
        "card_rank_best_after": min(m["card_rank"][1] for m in moves),
        "card_score_over_top_max": round(max(ratios), 4),
        "card_score_over_top_median": round(statistics.median(ratios), 4),
        "recall@5_before_after": [round(mean([m["recall@5"][k] for m in moves]), 4) for k in (0, 1)],
        "tasks": moves,
    }


# --- speed ---------------------------------------------------------------------------------------


def speed(servers: list[dict[str, Any]], tasks: list[Task], encoder_name: str, reps: int) -> dict[str, Any]:
    """p50 of decide on 10,000 cards without a history and with 20 past questions on every card, alternating.

    Two ways, interleaved question by question: ``encoded``, a new question as ``find`` meets it (the
    question and the jobs it is split into encoded by the encoder, its query cache off); ``cached``,
    the same question asked again (its vectors from a cache: the ranking alone, where the history's
    cost is the largest share). Catalog and past-question vectors come from a warm cache in both,
    as the gateway's vector cache holds them."""
    big = build_cards(parse_snapshot(synthesize(servers, 10_000)))
    bare = load_semantic(encoder_name, True, cache_size=0)
    memo = Memo(load_semantic(encoder_name, True))
    base_cards = build_cards(parse_snapshot(snapshot_json(servers)))
    base = dict(
        zip((c.name for c in base_cards.cards), memo.encode([semantic_text(c) for c in base_cards.cards]), strict=True)
    )
    vectors = np.stack([base.get(c.name, next(iter(base.values()))) for c in big.cards])
    pool = [v for t in tasks for v in variants(t.question, t.task_id)]
    rng = random.Random(3)
    history = {c.key: rng.sample(pool, PER_CARD) for c in big.cards}
    memo.encode(pool)  # the past questions' vectors, as a warm vector cache would hold them

    class Switched:
        """While ``fresh`` is set, every text is encoded by the bare encoder (a question met for the first
        time); otherwise texts come from the memo (the catalog, the past questions, a repeated question)."""

        name = bare.name
        fresh = False

        def encode(self, texts: list[str]) -> np.ndarray:
            return bare.encode(texts) if self.fresh else memo.encode(texts)

    encoder = Switched()
    t0 = time.perf_counter()
    plain = Selector(big, encoder=encoder, vectors=vectors)
    build_plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    learned = Selector(big, encoder=encoder, vectors=vectors, history=history)
    build_learned = time.perf_counter() - t0
    t0 = time.perf_counter()
    learned.set_history({**history, big.cards[0].key: [tasks[0].question, *history[big.cards[0].key][1:]]})
    swap = time.perf_counter() - t0
    # one user's ledger (a desktop's stdio gateway): every card's questions trusted, so their own vectors
    # are kept too, for the like question nearest the question
    t0 = time.perf_counter()
    trusted = Selector(big, encoder=encoder, vectors=vectors, history={k: Taught(v, True) for k, v in history.items()})
    build_trusted = time.perf_counter() - t0
    questions = [t.question for t in tasks]
    for q in questions[:5]:
        plain.decide(q)
        learned.decide(q)
        trusted.decide(q)
    series = [
        (f"{name}/{how}", sel, how)
        for how in ("encoded", "cached")
        for name, sel in (("none", plain), ("full_ledger", learned), ("trusted_ledger", trusted))
    ]
    times: dict[str, list[float]] = {key: [] for key, _, _ in series}
    for _ in range(reps):
        for q in questions:
            for key, sel, how in series:
                encoder.fresh = how == "encoded"
                t = time.perf_counter()
                sel.decide(q)
                times[key].append((time.perf_counter() - t) * 1000)
    p50 = {k: round(pct(v, 50), 3) for k, v in times.items()}
    return {
        "cards": len(big.cards),
        "past_questions": sum(len(v) for v in history.values()),
        "distinct_past_questions": len(pool),
        "build_s": {
            "none": round(build_plain, 2),
            "full_ledger": round(build_learned, 2),
            "trusted_ledger": round(build_trusted, 2),
        },
        "set_history_s": round(swap, 3),
        "p50_ms": p50,
        "p95_ms": {k: round(pct(v, 95), 3) for k, v in times.items()},
        "p50_ratio": {how: round(p50[f"full_ledger/{how}"] / p50[f"none/{how}"], 3) for how in ("encoded", "cached")},
        "added_ms": {how: round(p50[f"full_ledger/{how}"] - p50[f"none/{how}"], 3) for how in ("encoded", "cached")},
        "trusted_p50_ratio": {
            how: round(p50[f"trusted_ledger/{how}"] / p50[f"none/{how}"], 3) for how in ("encoded", "cached")
        },
        "calls": {k: len(v) for k, v in times.items()},
    }


# --- one recorded use on a full ledger ----------------------------------------------------------

DIM = 384


class HashingEncoder:
    """A deterministic stand-in for an encoder: each text's vector from its SHA-256, normalised."""

    name = "hashing-384"

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out


def history_update(
    servers: list[dict[str, Any]], tasks: list[Task], cards: int, uses: int, reps: int
) -> dict[str, Any]:
    """How long a ranker takes to read one recorded use, on a ``cards``-card catalog with a full ledger
    (``--history-update``): the synthetic catalog of ``synth.py``, 20 past questions on every card,
    indexed whole (``whole_history_s``); then one recorded use at a time -- a card's oldest question
    replaced by a new one, as the ledger does -- read by :meth:`~skilldeck.select.Selector.set_history`
    (the whole history, compared card by card with the one indexed) or by
    :meth:`~skilldeck.select.Selector.update_history` (the card that changed only, as the gateway
    does): ``per_use_ms``; last, ``decide`` p50 over the 95 questions with that history. Vectors come
    from a deterministic hashing encoder, so the figures are the index's own work (with MiniLM one new
    question's encoding is added, about 10 ms on one core)."""
    big = build_cards(parse_snapshot(synthesize(servers, cards)))
    pool = [v for t in tasks for v in variants(t.question, t.task_id)]
    rng = random.Random(3)
    history = {c.key: rng.sample(pool, PER_CARD) for c in big.cards}
    encoder = HashingEncoder()
    vectors = encoder.encode([c.name for c in big.cards])
    result: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.python_version()}, {os.cpu_count()} CPUs",
        "cards": len(big.cards),
        "past_questions": sum(len(v) for v in history.values()),
        **_updates(Selector(big, encoder=encoder, vectors=vectors), big, history, tasks, uses, reps, False),
    }
    # one user's ledger: every card trusted, so the trusted questions' own vectors are kept and updated too
    result["trusted"] = _updates(Selector(big, encoder=encoder, vectors=vectors), big, history, tasks, uses, reps, True)
    return result


def _updates(
    selector: Selector,
    big: CardSet,
    history: dict[str, list[str]],
    tasks: list[Task],
    uses: int,
    reps: int,
    trusted: bool,
) -> dict[str, Any]:
    """:func:`history_update`'s figures for one selector, the history ``trusted`` or not."""

    def taught(past: list[str]) -> list[str]:
        return Taught(past, True) if trusted else past

    t0 = time.perf_counter()
    selector.set_history(
        {k: taught(v) for k, v in history.items()}
    )  # the whole history, as when the catalog is indexed
    whole = time.perf_counter() - t0
    per_use: dict[str, list[float]] = {"set_history": [], "update_history": []}
    for i in range(2 * uses):
        card = big.cards[(i * 997) % len(big.cards)].key
        history = {**history, card: [f"{tasks[i % len(tasks)].question} ({i})", *history[card][:-1]]}
        t0 = time.perf_counter()
        if i % 2:  # as the gateway reads a recorded use: the card that changed only
            selector.update_history({card: taught(history[card])})
            per_use["update_history"].append((time.perf_counter() - t0) * 1000)
        else:  # the whole history, compared card by card with the one indexed
            selector.set_history({k: taught(v) for k, v in history.items()})
            per_use["set_history"].append((time.perf_counter() - t0) * 1000)
    questions = [t.question for t in tasks]
    decide = []
    for _ in range(reps):
        for question in questions:
            t0 = time.perf_counter()
            selector.decide(question)
            decide.append((time.perf_counter() - t0) * 1000)
    return {
        "whole_history_s": round(whole, 2),
        "per_use_ms": {
            way: {"p50": round(statistics.median(times), 1), "max": round(max(times), 1), "uses": len(times)}
            for way, times in per_use.items()
        },
        "decide_p50_ms": round(statistics.median(decide), 2),
    }


# --- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DEFAULT_DATA, help="LiveMCPBench folder (relative paths: from the repo root)")
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--sweep", action="store_true", help="the history weights' grid on the halves (ranking only)")
    ap.add_argument(
        "--no-speed", action="store_true", help="skip the 10,000-card latency (a figure already in --output is kept)"
    )
    ap.add_argument("--speed-only", action="store_true", help="only the 10,000-card latency, written into --output")
    ap.add_argument("--no-bfcl", action="store_true", help="skip the dense history of bfcl-eval's questions")
    ap.add_argument(
        "--history-update",
        action="store_true",
        help="only the time to read one recorded use on 10,000 cards (writes selection_history_update.json)",
    )
    ap.add_argument("--reps", type=int, default=2, help="latency repetitions over the 95 questions")
    ap.add_argument("--output", default=str(OUT))
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not data.is_absolute():
        data = (REPO / data).resolve()
    started = time.perf_counter()
    servers = load_catalog(data)
    tasks = load_tasks(data, servers)
    if args.history_update:
        result = history_update(servers, tasks, 10_000, uses=20, reps=args.reps)
        result["load_average"] = list(os.getloadavg())
        if UPDATE_OUT.exists():  # the measurement of the design before, kept beside the new one
            kept = json.loads(UPDATE_OUT.read_text(encoding="utf-8")).get("before")
            if kept:
                result["before"] = kept
        UPDATE_OUT.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
        return 0
    out = Path(args.output)
    if args.speed_only:
        figure = speed(servers, tasks, args.encoder, args.reps)
        figure["load_avg"] = list(os.getloadavg())
        results = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
        results["speed_10k"] = figure
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(json.dumps(figure, indent=1))
        return 0
    cards = build_cards(parse_snapshot(snapshot_json(servers)))
    encoder = Memo(load_semantic(args.encoder, True))
    vectors = encoder.encode([semantic_text(c) for c in cards.cards])
    bench = Bench(cards, tasks, encoder, vectors)
    by_half = {h: [t for t in tasks if t.half == h] for h in ("A", "B")}
    half_history = {h: history_of(uses_of(by_half[h], cards)) for h in ("A", "B")}
    one_caller = {h: history_of(uses_of(by_half[h], cards), one_caller=True) for h in ("A", "B")}

    def none(task: Task) -> History:
        return {}

    def halves(task: Task) -> History:
        return half_history["B" if task.half == "A" else "A"]

    def halves_one_caller(task: Task) -> History:
        return one_caller["B" if task.half == "A" else "A"]

    def dense(task: Task) -> History:
        return history_of(uses_of([t for t in tasks if t.task_id != task.task_id], cards, dense=True))

    if args.sweep:
        grid = []
        for hw in (0.5, 1.0, 2.0):
            for hs in (0.0, 0.5, 1.0):
                for sw in (0.0, 1.0):
                    for floor in (0.25, 0.5):
                        config = RankConfig(
                            history_weight=hw,
                            history_server_weight=hs,
                            history_semantic_weight=sw,
                            history_cap_floor=floor,
                        )
                        summary = ranking_summary(bench.measure("halves", halves, config, twins=False))
                        grid.append({"weight": hw, "server": hs, "semantic": sw, "floor": floor, **summary})
                        print(hw, hs, sw, floor, summary["A"], summary["B"], flush=True)
        print(json.dumps(grid, indent=1))
        return 0

    rows: dict[str, list[dict[str, Any]]] = {}
    settings = (("none", none), ("halves", halves), ("halves_one_caller", halves_one_caller), ("dense", dense))
    for setting, fn in settings:
        print(f"[{setting}] measuring ...", flush=True)
        rows[setting] = bench.measure(setting, fn)
    shipped = default_calibration(True)
    fits = {h: refit(rows["none"] + rows["halves"], h) for h in ("A", "B")}
    results: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": list(os.getloadavg())},
        "targets": TARGETS,
        "rank_config": {k: v for k, v in RankConfig().__dict__.items() if k.startswith("history")},
        "per_card": PER_CARD,
        "history_sizes": {h: sum(len(v) for v in half_history[h].values()) for h in ("A", "B")},
        "ranking": {s: ranking_summary(r) for s, r in rows.items()},
        "abstention": {
            s: {
                "shipped, as decided": {h: abstention(r, shipped, h, decided=True) for h in ("A", "B")},
                "shipped (no history features)": {h: abstention(r, shipped, h) for h in ("A", "B")},
                "refit fit A -> report B": abstention(r, fits["A"], "B"),
                "refit fit B -> report A": abstention(r, fits["B"], "A"),
            }
            for s, r in rows.items()
        },
        "refit": {h: fits[h].to_json() for h in ("A", "B")},
    }
    print("poisoning ...", flush=True)
    results["poisoning"] = poisoning(bench, halves)
    results["poisoning_trusted"] = poisoning(bench, halves, trusted=True)
    bfcl_data = bfcl.data_dir()
    if not args.no_bfcl and bfcl_data is not None:
        print("dense history of real questions (bfcl-eval) ...", flush=True)
        results["bfcl_dense"] = bfcl_dense(encoder, bfcl_data, (5, 20))
    if not args.no_speed:
        print("speed at 10,000 cards ...", flush=True)
        results["speed_10k"] = speed(servers, tasks, args.encoder, args.reps)
    elif out.exists():  # measured apart (--speed-only): kept
        kept = json.loads(out.read_text(encoding="utf-8")).get("speed_10k")
        if kept:
            results["speed_10k"] = kept
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["machine"]["load_avg_end"] = list(os.getloadavg())
    results["tasks"] = {s: r for s, r in rows.items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    show = {k: v for k, v in results.items() if k not in ("tasks", "refit")}
    for name in ("poisoning", "poisoning_trusted"):
        show[name] = {k: v for k, v in results[name].items() if k != "tasks"}
    print(json.dumps(show, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
