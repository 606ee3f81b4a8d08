"""The weights of an ONNX model file, read without ``onnx`` or ``onnxruntime``. Pure.

An ONNX file is one protocol-buffers message (``ModelProto``); its ``graph`` (field 7) holds the
``initializer`` tensors (field 5 of ``GraphProto``), each a ``TensorProto`` with ``dims`` (1),
``data_type`` (2), ``name`` (8) and, as every exporter writes them today, the values as little-endian
``raw_data`` (9). This module walks just those fields of the wire format and turns each
initializer into a read-only numpy array over the file's bytes (no copy); every other field is
skipped by its length. The reader is bounded: every length is checked against the bytes that
hold it, nesting is three levels deep at most, and a field it cannot read (a group, a wire type
that does not exist, tensors stored outside the file or as typed lists) is an :class:`OnnxFormatError`
that says what was found. It exists so the default encoder can run MiniLM's weights in numpy
(:mod:`skilldeck.select._bert`) from the digest-checked ``model.onnx`` it depends on.
"""

from __future__ import annotations

import numpy as np

__all__ = ["OnnxFormatError", "read_initializers"]

# TensorProto.DataType -> numpy dtype (little-endian), the types raw_data is read as
_DTYPES: dict[int, np.dtype[np.generic]] = {
    1: np.dtype("<f4"),  # FLOAT
    2: np.dtype("u1"),  # UINT8
    3: np.dtype("i1"),  # INT8
    5: np.dtype("<i2"),  # INT16
    6: np.dtype("<i4"),  # INT32
    7: np.dtype("<i8"),  # INT64
    9: np.dtype("?"),  # BOOL
    10: np.dtype("<f2"),  # FLOAT16
    11: np.dtype("<f8"),  # DOUBLE
}
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME, _TENSOR_RAW, _TENSOR_LOCATION = 1, 2, 8, 9, 14
_TENSOR_TYPED_DATA = frozenset({4, 5, 6, 7, 10, 11})  # float_data, int32_data, string_data, int64_data, ...
_MAX_DIMS = 8


class OnnxFormatError(ValueError):
    """The bytes are not an ONNX model this reader can take the weights from (the message says why)."""


def _varint(buf: memoryview, at: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= end:
            raise OnnxFormatError(f"a varint runs past its message at byte {at}")
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise OnnxFormatError(f"a varint longer than 10 bytes ends at byte {at}")


def _fields(buf: memoryview, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """Every field of the message in ``buf[start:end]``: (number, wire type, value or offset, length)."""
    out: list[tuple[int, int, int, int]] = []
    at = start
    while at < end:
        key, at = _varint(buf, at, end)
        number, wire = key >> 3, key & 7
        if wire == 0:  # varint
            value, at = _varint(buf, at, end)
            out.append((number, wire, value, 0))
        elif wire == 2:  # length-delimited
            length, at = _varint(buf, at, end)
            if length > end - at:
                raise OnnxFormatError(f"field {number} claims {length} bytes at byte {at}, past its message's end")
            out.append((number, wire, at, length))
            at += length
        elif wire in (1, 5):  # fixed 64 / 32 bits
            size = 8 if wire == 1 else 4
            if size > end - at:
                raise OnnxFormatError(f"field {number} runs past its message's end at byte {at}")
            out.append((number, wire, at, size))
            at += size
        else:
            raise OnnxFormatError(
                f"field {number} has wire type {wire} (a group, or not protocol buffers) at byte {at}"
            )
    return out


def _tensor(buf: memoryview, start: int, end: int) -> tuple[str, np.ndarray]:
    dims: list[int] = []
    dtype_code = 0
    name = ""
    raw: tuple[int, int] | None = None
    for number, wire, value, length in _fields(buf, start, end):
        if number == _TENSOR_DIMS:
            dims.extend(_dims(buf, wire, value, length))
            if len(dims) > _MAX_DIMS:
                raise OnnxFormatError(f"a tensor has more than {_MAX_DIMS} dimensions at byte {start}")
        elif number == _TENSOR_TYPE and wire == 0:
            dtype_code = value
        elif number == _TENSOR_NAME and wire == 2:
            name = bytes(buf[value : value + length]).decode("utf-8", "replace")
        elif number == _TENSOR_RAW and wire == 2:
            raw = (value, length)
        elif number == _TENSOR_LOCATION and wire == 0 and value != 0:
            raise OnnxFormatError(
                f"tensor {name or '?'} is stored outside the model file; only embedded weights are read"
            )
        elif number in _TENSOR_TYPED_DATA and length:
            raise OnnxFormatError(
                f"tensor {name or '?'} holds typed-list data, not raw_data; this reader takes raw_data"
            )
    return name, _array(buf, name, dtype_code, dims, raw if raw is not None else (start, 0))


def _dims(buf: memoryview, wire: int, value: int, length: int) -> list[int]:
    """The dimensions one ``dims`` field holds: one varint, or packed varints (other wire types: none)."""
    if wire == 0:
        return [value]
    dims: list[int] = []
    if wire == 2:  # packed
        at, stop = value, value + length
        while at < stop:
            dim, at = _varint(buf, at, stop)
            dims.append(dim)
    return dims


def _array(buf: memoryview, name: str, dtype_code: int, dims: list[int], raw: tuple[int, int]) -> np.ndarray:
    """A tensor's ``raw_data`` at ``raw`` (offset, length) as a read-only array of its type and shape."""
    dtype = _DTYPES.get(dtype_code)
    if dtype is None:
        raise OnnxFormatError(f"tensor {name or '?'} has ONNX data type {dtype_code}, which this reader does not take")
    count = 1
    for d in dims:
        count *= d
    offset, length = raw
    if length != count * dtype.itemsize:
        raise OnnxFormatError(
            f"tensor {name or '?'} has {length} bytes of raw_data for shape {tuple(dims)} of {dtype} "
            f"({count * dtype.itemsize} expected)"
        )
    return np.frombuffer(buf, dtype=dtype, count=count, offset=offset).reshape(dims)


def read_initializers(data: bytes) -> dict[str, np.ndarray]:
    """The graph's initializers of the ONNX model in ``data``, by name (read-only arrays over ``data``).

    Raises:
        OnnxFormatError: ``data`` is not an ONNX model with embedded ``raw_data`` weights.
    """
    buf = memoryview(data)
    graphs = [(value, length) for number, wire, value, length in _fields(buf, 0, len(buf)) if number == _MODEL_GRAPH]
    if len(graphs) != 1 or graphs[0][1] == 0:
        raise OnnxFormatError(f"expected one graph in the model, found {len(graphs)}")
    start, length = graphs[0]
    out: dict[str, np.ndarray] = {}
    for number, wire, value, size in _fields(buf, start, start + length):
        if number == _GRAPH_INITIALIZER and wire == 2:
            name, array = _tensor(buf, value, value + size)
            if name in out:
                raise OnnxFormatError(f"two initializers are named {name!r}")
            out[name] = array
    return out
