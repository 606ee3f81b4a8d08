"""A BERT encoder's forward pass in numpy: all-MiniLM-L6-v2's sentence vectors without onnxruntime. Pure.

The model is six identical layers over 384-wide token vectors::

    x = LayerNorm(word[id] + position[i] + token_type[0])
    per layer:  q, k, v = x Wq + bq, x Wk + bk, x Wv + bv          (12 heads of 32)
                a = softmax(q k^T / sqrt(32) + mask) v              (padding keys masked out)
                x = LayerNorm(x + a Wo + bo)
                x = LayerNorm(x + GELU(x Wi + bi) Wout + bout)      (1536 wide; GELU with erf)
    sentence = the mean of x over the text's tokens (padding left out)

:class:`Bert` holds the weights as float32 (``Wq``, ``Wk``, ``Wv`` side by side, so a layer's
projections are one matrix product; the ``1 / sqrt(32)`` folded into ``Wq``); the word embedding
table stays int8 with its per-row scale and only the rows a batch uses are dequantised. numpy has
no ``erf``, so :func:`gelu` uses ``erfc(z) ~ t P(t) exp(-z^2)``, ``t = 1 / (1 + p z)``, ``z = |x| / sqrt(2)``,
with ``p`` and a degree-5 polynomial ``P`` fitted against ``math.erfc`` (``bench/selection/erf_fit.py``
refits them and prints the error: at most 8.3e-9 in float64 arithmetic; evaluated in float32, as
here, float32 rounding dominates, a few units of 1e-7 at most).

One question's pass is about 85% matrix products (single-threaded OpenBLAS, near the core's peak, and
reading the 42 MB of float32 weights from memory each time); the rest is kept cheap: every layer
writes into buffers made once per call (``out=``, in place, float32 throughout), the twelve heads'
products of attention are batched matrix products over views of the one Q/K/V product (no loop over
heads, no copies), row sums and means are matrix-vector products rather than reductions along a
short axis, and a run of ``4k + 3`` tokens gets one padding token (:meth:`Bert.padded_length`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ERF_COEFFICIENTS", "ERF_P", "FFN_ROWS", "Bert", "Layer", "from_quantised", "gelu", "normal_cdf"]

ERF_P = 0.39
ERF_COEFFICIENTS = (
    0.23532543150434213,
    0.09138708202909979,
    0.6495627196063466,
    -0.6354043898621395,
    0.8866668983236092,
    -0.22753774330808973,
)
"""``erfc(z) ~ t (a1 + a2 t + ... + a6 t^5) exp(-z^2)`` for ``z >= 0``, ``t = 1 / (1 + ERF_P z)``: our own
fit (``bench/selection/erf_fit.py``), largest error of erf 8.3e-9 in float64 arithmetic."""

FFN_ROWS = 256
"""Token rows per block of the feed-forward part (256 x 1536 float32 = 1.5 MB: about a core's cache)."""

# with z = |x| / sqrt(2): t = 1 / (1 + ERF_P z) = 1 / (1 + _P_X |x|), and erfc(z) / 2 = t Q(t) exp(-x^2 / 2)
_P_X = ERF_P / math.sqrt(2.0)
_HALF_COEFFICIENTS = tuple(0.5 * c for c in ERF_COEFFICIENTS)


def normal_cdf(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF, ``(1 + erf(x / sqrt(2))) / 2``, element-wise in ``x``'s float type.

    ``Phi(x) = 1/2 + sign(x) (1/2 - erfc(|x| / sqrt(2)) / 2)``: about 25 array passes and one exp,
    no branches (a masked ``where`` costs more than all of them together)."""
    dtype = x.dtype.type
    t = np.abs(x)
    t *= dtype(_P_X)
    t += dtype(1.0)
    np.reciprocal(t, out=t)
    tail = np.full_like(t, _HALF_COEFFICIENTS[-1])
    for c in _HALF_COEFFICIENTS[-2::-1]:
        tail *= t
        tail += dtype(c)
    tail *= t
    gauss = np.square(x)
    gauss *= dtype(-0.5)
    np.exp(gauss, out=gauss)
    tail *= gauss  # erfc(|x| / sqrt(2)) / 2: the CDF's distance from 0 or 1
    np.subtract(dtype(0.5), tail, out=tail)
    np.copysign(tail, x, out=tail)
    tail += dtype(0.5)
    return tail


def gelu(x: np.ndarray) -> np.ndarray:
    """``x * Phi(x)``: BERT's exact (erf) GELU (:func:`gelu_in_place` on a copy)."""
    out = np.array(x, copy=True)
    return gelu_in_place(out, np.empty_like(out))


def gelu_in_place(x: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """``x * Phi(x)`` written over ``x`` (returned); ``scratch``, of ``x``'s shape and type, is overwritten.

    :func:`normal_cdf`'s steps, finished as ``x / 2 + |x| (1/2 - erfc(|x| / sqrt(2)) / 2)`` (the same
    value for either sign of ``x``): fewer passes than ``x * Phi(x)``, no allocation but one."""
    dtype = x.dtype.type
    a = np.abs(x, out=scratch)
    t = np.multiply(a, dtype(_P_X))
    t += dtype(1.0)
    np.reciprocal(t, out=t)
    tail = np.multiply(t, dtype(_HALF_COEFFICIENTS[-1]))
    for c in _HALF_COEFFICIENTS[-2::-1]:
        tail += dtype(c)
        tail *= t
    gauss = np.multiply(a, dtype(-0.5), out=t)
    gauss *= a
    np.exp(gauss, out=gauss)
    tail *= gauss  # erfc(|x| / sqrt(2)) / 2
    np.subtract(dtype(0.5), tail, out=tail)
    tail *= a
    x *= dtype(0.5)
    x += tail
    return x


def _layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm of each row of the 2-d ``x``, written over ``x`` (returned).

    The row means and variances are matrix-vector products with a column of ``1 / width`` (one BLAS
    call each: a reduction along a short last axis costs several times more in numpy)."""
    width = x.shape[-1]
    dtype = x.dtype.type
    share = np.full(width, 1.0 / width, dtype=x.dtype)
    x -= (x @ share)[:, None]
    var = np.square(x) @ share
    var += dtype(eps)
    np.sqrt(var, out=var)
    np.reciprocal(var, out=var)
    x *= var[:, None]
    x *= gain
    x += bias
    return x


def _softmax_rows(scores: np.ndarray) -> None:
    """Softmax along the last axis of ``scores`` (..., n), in place.

    The largest score of all is taken off before ``exp`` rather than each row's own (one reduction
    instead of one per row of a short axis, several times cheaper); softmax is the same for any
    shift. Only when a row's sum comes out below ``1e-30`` -- a row whose own largest score lies
    ~70 or more below the overall largest, so its terms would lose precision or vanish -- are the
    rows shifted each by their own largest score instead. The row sums are one matrix-vector
    product with a column of ones (a sum along a short last axis costs several times more)."""
    n = scores.shape[-1]
    flat = scores.reshape(-1, n)  # a view: ``scores`` is contiguous
    shifted = flat - flat.max()
    np.exp(shifted, out=shifted)
    ones = np.ones(n, dtype=scores.dtype)
    sums = shifted @ ones
    if float(sums.min()) < 1e-30:
        np.subtract(flat, flat.max(axis=-1, keepdims=True), out=shifted)
        np.exp(shifted, out=shifted)
        sums = shifted @ ones
    np.divide(shifted, sums[:, None], out=flat)


@dataclass(frozen=True)
class Layer:
    """One transformer layer's weights (float32, ``x W`` orientation: inputs along the rows)."""

    qkv: np.ndarray
    """(width, 3 * width): Wq (scaled by 1/sqrt(head size)), Wk, Wv side by side."""
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    ln1_gain: np.ndarray
    ln1_bias: np.ndarray
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    ln2_gain: np.ndarray
    ln2_bias: np.ndarray


class Bert:
    """A BERT encoder with mean pooling.

    Args:
        word_q: (vocabulary, width) int8 word embeddings; ``word_scale`` (vocabulary, 1) their row scales.
        position: (max positions, width) float32 position embeddings.
        token_type: float32 embedding of token type 0 (width,).
        ln_gain, ln_bias: the embeddings' LayerNorm.
        layers: the transformer layers.
        heads: attention heads (width divisible by it).
        eps: LayerNorm epsilon.
        pad: run texts of ``4k + 3`` tokens with one padding token more (see :meth:`padded_length`);
            the vectors are the same either way (to float32 rounding).
    """

    def __init__(
        self,
        *,
        word_q: np.ndarray,
        word_scale: np.ndarray,
        position: np.ndarray,
        token_type: np.ndarray,
        ln_gain: np.ndarray,
        ln_bias: np.ndarray,
        layers: Sequence[Layer],
        heads: int,
        eps: float = 1e-12,
        pad: bool = True,
    ) -> None:
        width = position.shape[1]
        if word_q.shape[1] != width or width % heads:
            raise ValueError(f"embedding widths {word_q.shape[1]} / {width} do not fit {heads} heads")
        self.word_q = word_q
        self.word_scale = np.ascontiguousarray(word_scale, dtype=np.float32).reshape(-1, 1)
        self.position = position
        self.token_type = token_type
        self.ln_gain, self.ln_bias = ln_gain, ln_bias
        self.layers = list(layers)
        self.heads = heads
        self.width = width
        self.eps = eps
        self.max_positions = position.shape[0]
        self.pad = pad

    def token_vectors(self, ids: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        """Last layer's token vectors (batch, tokens, width) for ``ids`` (batch, tokens), 1 = real token in ``mask``."""
        batch, length = ids.shape
        if length > self.max_positions:
            raise ValueError(f"{length} tokens; the model takes at most {self.max_positions}")
        width, heads = self.width, self.heads
        size = width // heads
        rows = batch * length
        x = self.word_q[ids].astype(np.float32)
        x *= self.word_scale[ids]
        x += self.position[:length]
        x += self.token_type
        x = _layer_norm(x.reshape(rows, width), self.ln_gain, self.ln_bias, self.eps)
        # padding keys get -1e30 before the softmax, so they weigh 0 (a text always has real tokens)
        key_bias = None
        if mask is not None and not mask.all():
            key_bias = np.where(mask[:, None, None, :] > 0, np.float32(0.0), np.float32(-1e30))
        # every layer writes into the same buffers: no allocation per product
        qkv = np.empty((rows, 3 * width), dtype=np.float32)
        scores = np.empty((batch, heads, length, length), dtype=np.float32)
        context = np.empty((batch, length, heads, size), dtype=np.float32)
        context_heads = context.transpose(0, 2, 1, 3)  # (batch, heads, tokens, size): a view of the same memory
        attended = np.empty((rows, width), dtype=np.float32)
        ffn_out = np.empty((rows, width), dtype=np.float32)
        inner = self.layers[0].up.shape[1] if self.layers else 0
        hidden = np.empty((min(rows, FFN_ROWS), inner), dtype=np.float32)
        scratch = np.empty_like(hidden)
        for layer in self.layers:
            np.matmul(x, layer.qkv, out=qkv)
            qkv += layer.qkv_bias
            # (batch, tokens, 3, heads, size) -> three (batch, heads, tokens, size) views
            q, k, v = qkv.reshape(batch, length, 3, heads, size).transpose(2, 0, 3, 1, 4)
            np.matmul(q, k.transpose(0, 1, 3, 2), out=scores)
            if key_bias is not None:
                scores += key_bias
            _softmax_rows(scores)
            np.matmul(scores, v, out=context_heads)
            np.matmul(context.reshape(rows, width), layer.out, out=attended)
            attended += layer.out_bias
            attended += x
            x = _layer_norm(attended, layer.ln1_gain, layer.ln1_bias, self.eps)  # x is `attended` now
            # the feed-forward part by blocks of rows: each block's 1536-wide GELU input stays in the
            # CPU's cache between the products (a whole batch's would be tens of MB, read ~25 times)
            for start in range(0, rows, FFN_ROWS):
                part = x[start : start + FFN_ROWS]
                n = len(part)
                h = np.matmul(part, layer.up, out=hidden[:n])
                h += layer.up_bias
                gelu_in_place(h, scratch[:n])
                down = np.matmul(h, layer.down, out=ffn_out[start : start + FFN_ROWS])
                down += layer.down_bias
                down += part
            # x is `ffn_out` now, which the next layer reads until its own LayerNorm is written to `attended`
            x = _layer_norm(ffn_out, layer.ln2_gain, layer.ln2_bias, self.eps)
        return x.reshape(batch, length, width)

    def pooled(self, ids: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Sentence vectors (batch, width): the mean of each text's token vectors, padding left out."""
        batch, length = ids.shape
        padded = self.padded_length(length)
        if padded > length:  # a few padding tokens make every product a faster size (see padded_length)
            wider = np.zeros((batch, padded), dtype=ids.dtype)
            wider[:, :length] = ids
            real = np.zeros((batch, padded), dtype=np.int8)
            real[:, :length] = 1 if mask is None else mask
            ids, mask = wider, real
        tokens = self.token_vectors(ids, mask)
        if mask is None:
            return tokens.mean(axis=1)
        weights = mask.astype(np.float32)
        summed = np.einsum("btw,bt->bw", tokens, weights)
        return summed / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)

    def padded_length(self, length: int) -> int:
        """How many tokens a run of ``length`` tokens is computed with: one more when that makes it a
        multiple of 4 (and ``pad`` is on).

        Measured with numpy's OpenBLAS (``bench/selection/encoder_speed.py rows``: all 24 products
        of a pass, 8 to 72 rows), a run of ``4k + 3`` rows costs about 0.5 ms more than one of
        ``4k + 4`` (its kernel seems to take the rows left over from blocks of 16 in smaller blocks,
        each with its own cost); padding further, to multiples of 8 or 16, costs more than it saves.
        Elsewhere the one extra row costs about 1/30 of a question at most."""
        return length + 1 if self.pad and length % 4 == 3 and length < self.max_positions else length


def from_quantised(
    initializers: Mapping[str, np.ndarray], matrices: Sequence[str], *, prefix: str, heads: int, eps: float = 1e-12
) -> Bert:
    """A :class:`Bert` from a graph's initializers: int8 ``<m>_q`` matrices with ``<m>_scale`` column scales.

    ``matrices`` names each layer's six weight matrices in order (query, key, value, attention
    output, intermediate, output); biases and LayerNorms are read by their BERT names under ``prefix``
    (``<prefix>embeddings.…``, ``<prefix>encoder.layer.<i>.…``).
    """
    w = initializers

    def f32(name: str) -> np.ndarray:
        return np.ascontiguousarray(w[name], dtype=np.float32)

    def dequantised(name: str) -> np.ndarray:
        return np.ascontiguousarray(w[f"{name}_q"].astype(np.float32) * w[f"{name}_scale"].astype(np.float32))

    if len(matrices) % 6:
        raise ValueError(f"{len(matrices)} weight matrices: six per layer expected")
    emb = f"{prefix}embeddings."
    position = w[f"{emb}position_embeddings.weight_q"].astype(np.float32) * w[f"{emb}position_embeddings.weight_scale"]
    token_type = f32(f"{emb}token_type_embeddings.weight")[0]
    layers: list[Layer] = []
    for i in range(len(matrices) // 6):
        q, k, v, o, up, down = matrices[6 * i : 6 * i + 6]
        base = f"{prefix}encoder.layer.{i}."
        width = w[f"{q}_q"].shape[0]
        scale = np.float32(1.0 / math.sqrt(width // heads))
        qkv = np.concatenate([dequantised(q) * scale, dequantised(k), dequantised(v)], axis=1)
        qkv_bias = np.concatenate(
            [
                f32(f"{base}attention.self.query.bias") * scale,
                f32(f"{base}attention.self.key.bias"),
                f32(f"{base}attention.self.value.bias"),
            ]
        )
        layers.append(
            Layer(
                qkv=np.ascontiguousarray(qkv),
                qkv_bias=qkv_bias,
                out=dequantised(o),
                out_bias=f32(f"{base}attention.output.dense.bias"),
                ln1_gain=f32(f"{base}attention.output.LayerNorm.weight"),
                ln1_bias=f32(f"{base}attention.output.LayerNorm.bias"),
                up=dequantised(up),
                up_bias=f32(f"{base}intermediate.dense.bias"),
                down=dequantised(down),
                down_bias=f32(f"{base}output.dense.bias"),
                ln2_gain=f32(f"{base}output.LayerNorm.weight"),
                ln2_bias=f32(f"{base}output.LayerNorm.bias"),
            )
        )
    return Bert(
        word_q=w[f"{emb}word_embeddings.weight_q"],
        word_scale=w[f"{emb}word_embeddings.weight_scale"],
        position=np.ascontiguousarray(position, dtype=np.float32),
        token_type=token_type,
        ln_gain=f32(f"{emb}LayerNorm.weight"),
        ln_bias=f32(f"{emb}LayerNorm.bias"),
        layers=layers,
        heads=heads,
        eps=eps,
    )
