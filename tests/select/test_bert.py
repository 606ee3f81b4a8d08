"""The numpy forward pass's pieces: the ONNX weights reader, the erf used by GELU, the softmax."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from skilldeck.select._bert import ERF_COEFFICIENTS, ERF_P, _softmax_rows, gelu, normal_cdf
from skilldeck.select._onnx_weights import OnnxFormatError, read_initializers


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:  # a length-delimited field
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _scalar(number: int, value: int) -> bytes:  # a varint field
    return _varint(number << 3) + _varint(value)


def _tensor(name: str, dims: list[int], data_type: int, raw: bytes, *, packed: bool = True) -> bytes:
    dims_bytes = _field(1, b"".join(_varint(d) for d in dims)) if packed else b"".join(_scalar(1, d) for d in dims)
    return dims_bytes + _scalar(2, data_type) + _field(8, name.encode()) + _field(9, raw)


def _model(*tensors: bytes, extra_graph: bytes = b"") -> bytes:
    graph = _field(1, b"a node we skip") + b"".join(_field(5, t) for t in tensors) + extra_graph
    # ir_version (1), producer_name (2), opset_import (8) around the graph (7): all skipped
    return _scalar(1, 10) + _field(2, b"test") + _field(7, graph) + _field(8, _scalar(2, 17))


def test_the_reader_takes_raw_data_tensors_by_name_shape_and_type() -> None:
    weights = np.arange(6, dtype=np.int8).reshape(2, 3) - 3
    scale = np.array([[0.5], [0.25]], dtype=np.float32)
    ids = np.array([7, -1], dtype=np.int64)
    data = _model(
        _tensor("w_q", [2, 3], 3, weights.tobytes()),
        _tensor("w_scale", [2, 1], 1, scale.tobytes(), packed=False),
        _tensor("ids", [2], 7, ids.tobytes()),
        _tensor("scalar", [], 1, struct.pack("<f", 1.5)),
    )
    found = read_initializers(data)
    assert list(found) == ["w_q", "w_scale", "ids", "scalar"]
    assert found["w_q"].dtype == np.int8
    assert np.array_equal(found["w_q"], weights)
    assert found["w_scale"].dtype == np.float32
    assert np.array_equal(found["w_scale"], scale)
    assert np.array_equal(found["ids"], ids)
    assert found["scalar"].shape == ()
    assert float(found["scalar"]) == 1.5
    assert not found["w_q"].flags.writeable  # a view over the file's bytes, never changed by us


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_model(_tensor("w", [2, 3], 3, b"\x00" * 5)), r"tensor w has 5 bytes of raw_data for shape \(2, 3\)"),
        (_model(_tensor("w", [2], 99, b"\x00\x00")), "ONNX data type 99"),
        (_model(_tensor("w", [1], 1, b"\x00" * 4) + _scalar(14, 1)), "stored outside the model file"),
        (_model(_tensor("w", [1], 1, b"") + _field(4, b"\x00" * 4)), "typed-list data"),
        (_model(_tensor("w", [1], 3, b"\x01"), _tensor("w", [1], 3, b"\x02")), "two initializers are named 'w'"),
        (_model(_tensor("w", [1], 3, b"\x01"))[:-7], "past its message's end"),
        (_scalar(1, 10) + _varint(7 << 3 | 3), "wire type 3"),
        (_scalar(1, 10), "expected one graph in the model, found 0"),
        (b"\xff" * 11, "varint"),
    ],
    ids=[
        "short raw_data",
        "unknown type",
        "external data",
        "typed list",
        "duplicate",
        "truncated",
        "group",
        "no graph",
        "varint",
    ],
)
def test_the_reader_refuses_what_it_cannot_read_and_says_what(data: bytes, message: str) -> None:
    with pytest.raises(OnnxFormatError, match=message):
        read_initializers(data)


def test_the_erf_fit_is_within_its_stated_error() -> None:
    z = np.linspace(0.0, 9.0, 20_001)
    t = 1.0 / (1.0 + ERF_P * z)
    approx = 1.0 - sum(c * t ** (k + 1) for k, c in enumerate(ERF_COEFFICIENTS)) * np.exp(-(z**2))
    exact = np.array([math.erf(v) for v in z])
    assert float(np.abs(approx - exact).max()) < 1e-8


@pytest.mark.parametrize(("dtype", "bound"), [(np.float64, 1e-8), (np.float32, 5e-7)])
def test_gelu_is_the_erf_gelu(dtype: type[np.floating], bound: float) -> None:
    x = np.linspace(-12.0, 12.0, 48_001).astype(dtype)
    exact = np.array([0.5 * math.erfc(-float(v) / math.sqrt(2.0)) for v in x])
    cdf = normal_cdf(x)
    assert cdf.dtype == dtype
    assert float(np.abs(cdf - exact).max()) < bound
    assert float(np.abs(gelu(x) - x.astype(np.float64) * exact).max()) < 12 * bound
    # the tanh approximation is off by up to ~5e-4 here: far outside the bound
    tanh_gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    assert float(np.abs(tanh_gelu - x.astype(np.float64) * exact).max()) > 100 * bound


def test_softmax_rows_far_below_the_largest_score_keep_their_own_weights() -> None:
    # the overall largest score is taken off first; a row ~300 below it would then be all zeros (0/0)
    # unless it falls back to its own largest score. A -1e30 score (a padding key) weighs 0 either way.
    scores = np.array(
        [[[0.0, 1.0, 2.0, -1e30], [-300.0, -301.0, -299.5, -1e30]], [[5.0, 5.0, 5.0, 5.0], [1.0, -2.0, 0.5, 3.0]]],
        dtype=np.float32,
    )
    wide = scores.astype(np.float64)
    expected = np.exp(wide - wide.max(axis=-1, keepdims=True))
    expected /= expected.sum(axis=-1, keepdims=True)
    _softmax_rows(scores)
    assert scores.dtype == np.float32
    assert float(np.abs(scores - expected).max()) < 1e-7
    assert np.all(scores[0, :, 3] == 0.0)
    assert np.allclose(scores.sum(axis=-1), 1.0, atol=1e-6)
