"""Retrieval for `kb agent`s: loading their sources, chunking, FAQ matching and hybrid (BM25 + embedding) search."""

from __future__ import annotations

import importlib
from typing import Any

# The public names and the module that owns each; imported on first use, so that importing one
# light module (fetch, progress) does not load numpy and the search libraries.
_OWNERS = {
    "Chunk": "documents",
    "Document": "documents",
    "Fetcher": "fetch",
    "FetchError": "fetch",
    "FetchedPage": "fetch",
    "HttpFetcher": "fetch",
    "NoFetcher": "fetch",
    "default_fetcher": "fetch",
    "ProgressCallback": "progress",
    "load_source": "sources",
    "chunk_documents": "chunking",
    "faq_similarity": "lexical",
    "light_stem": "lexical",
    "embed_texts": "embedding",
    "KnowledgeIndex": "index",
    "Passage": "index",
    "fuse_scores": "index",
    "default_cache_dir": "cache",
}

__all__ = [
    "Chunk",
    "Document",
    "FetchError",
    "FetchedPage",
    "Fetcher",
    "HttpFetcher",
    "KnowledgeIndex",
    "NoFetcher",
    "Passage",
    "ProgressCallback",
    "chunk_documents",
    "default_cache_dir",
    "default_fetcher",
    "embed_texts",
    "faq_similarity",
    "fuse_scores",
    "light_stem",
    "load_source",
]


def __getattr__(name: str) -> Any:
    owner = _OWNERS.get(name)
    if owner is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{owner}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_OWNERS])
