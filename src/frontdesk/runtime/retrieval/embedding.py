"""Embedding for retrieval: what text stands for a chunk, embedding in batches, and unit-length vectors."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from frontdesk.runtime.retrieval.documents import Chunk
from frontdesk.runtime.retrieval.progress import EMBED, ProgressCallback, report

if TYPE_CHECKING:
    from frontdesk.nlu.embeddings import Embedder

# Texts are embedded this many at a time; progress is reported after every batch.
EMBED_BATCH_SIZE = 32


def embedding_text(chunk: Chunk) -> str:
    """What a chunk's vector is computed from: its title (when it adds something) and its text."""
    if chunk.title and chunk.title not in chunk.text:
        return f"{chunk.title}\n{chunk.text}"
    return chunk.text


def as_unit_rows(vectors: object, rows: int) -> np.ndarray:
    """`vectors` as a float32 (rows, d) array with L2-normalised rows; ValueError when it is not one."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != rows or (rows and array.shape[1] == 0):
        raise ValueError(f"expected {rows} embedding rows, got an array of shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("the embeddings contain NaN or infinite values")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0)


def embed_texts(
    embedder: Embedder, texts: list[str], on_progress: ProgressCallback | None = None, label: str = ""
) -> np.ndarray:
    """Embed `texts` in batches, as unit rows; `on_progress` hears ("embed", done, total, label) before
    the first batch and after each one."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    parts: list[np.ndarray] = []
    done = 0
    report(on_progress, EMBED, done, len(texts), label)
    for first in range(0, len(texts), EMBED_BATCH_SIZE):
        batch = texts[first : first + EMBED_BATCH_SIZE]
        parts.append(as_unit_rows(embedder.encode(batch), len(batch)))
        done += len(batch)
        report(on_progress, EMBED, done, len(texts), label)
    return np.concatenate(parts, axis=0)
