"""The on-disk cache of embedded knowledge indexes: keyed by everything the chunks and vectors depend on."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from frontdesk.ir.models import KnowledgeAgent, KnowledgeSource
from frontdesk.runtime.retrieval.chunking import chunk_documents
from frontdesk.runtime.retrieval.documents import Chunk, Document
from frontdesk.runtime.retrieval.embedding import as_unit_rows
from frontdesk.runtime.retrieval.fetch import Fetcher
from frontdesk.nlu.terms import BM25_TOKENIZER
from frontdesk.runtime.retrieval.progress import CACHED, report
from frontdesk.runtime.retrieval.sources import load_source, load_sources

if TYPE_CHECKING:
    from frontdesk.nlu.embeddings import Embedder
    from frontdesk.runtime.retrieval.index import KnowledgeIndex

# Version of the cache layout; files up to this size are identified by a hash of their content,
# bigger ones by size and modification time.
CACHE_FORMAT = 1
# Bump when document loading or chunking changes the text of the chunks (also part of the key):
# 2 = Markdown tables without their alignment padding.
CHUNK_TEXT_VERSION = 2
CONTENT_HASH_MAX_BYTES = 1024 * 1024


LEXICAL = "lexical"  # the cache's embedder name for an index searched by its words alone


def default_cache_dir(root: Path) -> Path:
    """Where the runtime keeps the embedded indexes of a program's knowledge agents."""
    return Path(root) / ".frontdesk" / "index"


def _file_fingerprint(path: Path, root: Path) -> list:
    """A file's identity for the cache key: its path and its content hash (or size and mtime when big)."""
    try:
        shown = path.relative_to(root).as_posix()
    except ValueError:
        shown = path.as_posix()
    try:
        status = path.stat()
        if status.st_size <= CONTENT_HASH_MAX_BYTES:
            return [shown, status.st_size, hashlib.sha256(path.read_bytes()).hexdigest()]
        return [shown, status.st_size, status.st_mtime_ns]
    except OSError as error:
        return [shown, "unreadable", error.errno]


def _local_fingerprint(source: KnowledgeSource, root: Path) -> list:
    """The files a local source reads (walked as the document loader walks them), fingerprinted."""
    if source.path is None:
        return ["unresolved"]
    path = root / source.path
    if path.is_dir():
        files: list[Path] = []
        for current, folders, names in os.walk(path, followlinks=False):
            folders[:] = sorted(f for f in folders if not f.startswith("."))
            files.extend(Path(current) / n for n in names if not n.startswith("."))
        files.sort(key=lambda p: p.relative_to(path).as_posix())
        return ["directory", *[_file_fingerprint(f, root) for f in files if f.is_file()]]
    if path.is_file():
        return ["file", _file_fingerprint(path, root)]
    return ["missing"]


PHRASE_CACHE_FORMAT = 1
_kept_phrases: dict[tuple[str, str], list[str]] = {}  # (phrase file, its key) -> phrases, this process


def kept_phrases(agent: KnowledgeAgent, root: Path, read: Callable[[], list[str]]) -> list[str]:
    """`read()` (the headings and questions of the agent's local documents, runtime/options.py), kept in the
    cache folder (`phrases-<agent>.json`) while those files stay the same: a new process does not read
    every document again to route its first message (a 10,000-passage knowledge base takes seconds)."""
    local = [source for source in agent.sources if source.kind != "url"]
    if not local:
        return []
    fingerprint = [PHRASE_CACHE_FORMAT,
                   [[s.kind, s.location, s.path, _local_fingerprint(s, Path(root))] for s in local]]
    key = hashlib.sha256(json.dumps(fingerprint, default=str).encode("utf-8")).hexdigest()[:16]
    path = default_cache_dir(root) / f"phrases-{_cache_folder_name(agent.name)}.json"
    memo = (str(path), key)
    if memo in _kept_phrases:
        return _kept_phrases[memo]
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("key") == key and isinstance(stored.get("phrases"), list):
            _kept_phrases[memo] = [str(p) for p in stored["phrases"]]
            return _kept_phrases[memo]
    except (OSError, ValueError, AttributeError):
        pass
    phrases = _kept_phrases[memo] = read()
    payload = json.dumps({"key": key, "phrases": phrases}, ensure_ascii=False).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, lambda handle: handle.write(payload))
    except OSError:  # a read-only program folder: read again next time
        pass
    return phrases


def _cache_key(
    agent: KnowledgeAgent,
    root: Path,
    embedder_name: str,
    max_chars: int,
    overlap: int,
    online: bool,
    fetched: dict[int, tuple[list[Document], list[str]]],
) -> str:
    """A hash of everything the cached chunks and vectors depend on."""
    sources = []
    for position, source in enumerate(agent.sources):
        entry: list = [source.kind, source.location, source.path]
        if position in fetched:
            entry.append([[d.source, d.title, d.text] for d in fetched[position][0]])
        elif source.kind == "url":
            entry.append("not fetched")
        else:
            entry.append(_local_fingerprint(source, root))
        sources.append(entry)
    payload = {
        "format": CACHE_FORMAT,
        "tokenizer": BM25_TOKENIZER,
        "chunk_text": CHUNK_TEXT_VERSION,
        "embedder": embedder_name,
        "chunking": [max_chars, overlap],
        "fetch_urls": online,  # whether web pages were fetched
        "sources": sources,
        "faq": [[entry.q, entry.a] for entry in agent.faq],
    }
    encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()[:16]


def _cache_folder_name(agent_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", agent_name) or "agent"


@dataclass
class _CachedIndex:
    chunks: list[Chunk]
    chunk_vectors: np.ndarray
    faq_vectors: np.ndarray
    problems: list[list[str] | None]
    retriever: Any = None  # the BM25 index (None: built again from the chunks)


_CACHE_FILES = ("chunks.json", "chunk_vectors.npy", "faq_vectors.npy")


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_cache(folder: Path, key: str, embedder_name: str, source_count: int, faq_count: int) -> _CachedIndex | None:
    """The cached index in `folder` if it is complete, intact and for `key`; None otherwise (never raises)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        if not (
            isinstance(manifest, dict)
            and manifest.get("format") == CACHE_FORMAT
            and manifest.get("key") == key
            and manifest.get("embedder") == embedder_name
        ):
            return None
        checksums = manifest.get("files")
        if not isinstance(checksums, dict):
            return None
        for name in _CACHE_FILES:
            if checksums.get(name) != _sha256_file(folder / name):
                return None
        raw_chunks = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
        chunks = [
            Chunk(text=item["text"], source=item["source"], title=item["title"], index=item["index"])
            for item in raw_chunks
        ]
        if not all(
            isinstance(c.text, str) and isinstance(c.source, str) and isinstance(c.title, str)
            and isinstance(c.index, int)
            for c in chunks
        ):
            return None
        problems = manifest.get("problems")
        if not isinstance(problems, list) or len(problems) != source_count:
            return None
        if not all(p is None or (isinstance(p, list) and all(isinstance(s, str) for s in p)) for p in problems):
            return None
        retriever = _read_bm25(folder, len(chunks) + faq_count)
        if embedder_name == LEXICAL:  # the chunks alone: searched by their words
            return _CachedIndex(chunks, None, None, problems, retriever)
        chunk_vectors = np.load(folder / "chunk_vectors.npy", allow_pickle=False)
        faq_vectors = np.load(folder / "faq_vectors.npy", allow_pickle=False)
        total = len(chunks) + faq_count
        if total:
            chunk_vectors = as_unit_rows(chunk_vectors, total)
        if faq_count:
            faq_vectors = as_unit_rows(faq_vectors, faq_count)
        return _CachedIndex(chunks, chunk_vectors, faq_vectors, problems, retriever)
    except Exception:  # noqa: BLE001 - missing, truncated, tampered with: rebuild
        return None


BM25_FOLDER = "bm25"  # bm25s's own files (numpy arrays without pickles, JSON): the words' index


def _read_bm25(folder: Path, documents: int) -> Any:
    """The BM25 index an earlier process kept, when it is whole and indexes `documents` passages; else None
    (the index is built again from the chunks: slower, never wrong)."""
    try:
        import bm25s

        retriever = bm25s.BM25.load(str(folder / BM25_FOLDER), load_corpus=False, allow_pickle=False)
        return retriever if int(retriever.scores.get("num_docs", -1)) == documents else None
    except Exception:  # noqa: BLE001 - missing or unreadable: rebuilt
        return None


def _write_bm25(folder: Path, index: KnowledgeIndex) -> None:
    retriever = getattr(index, "_retriever", None)
    if retriever is None:
        return
    with contextlib.suppress(Exception):  # only the next start's speed depends on it
        shutil.rmtree(folder / BM25_FOLDER, ignore_errors=True)
        retriever.save(str(folder / BM25_FOLDER), allow_pickle=False)


def _write_atomically(path: Path, write) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            write(handle)
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def _write_cache(
    folder: Path,
    key: str,
    embedder_name: str,
    agent: KnowledgeAgent,
    index: KnowledgeIndex,
    local_problems: list[list[str] | None],
) -> None:
    """Store the index's chunks and vectors in `folder` (the manifest last), then drop the agent's stale caches."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").unlink(missing_ok=True)
    chunk_records = [
        {"text": c.text, "source": c.source, "title": c.title, "index": c.index} for c in index.document_chunks
    ]
    dimension = 0
    if index.chunk_vectors is not None:
        dimension = index.chunk_vectors.shape[1]
    elif index.faq_vectors is not None:
        dimension = index.faq_vectors.shape[1]
    empty = np.zeros((0, dimension), dtype=np.float32)
    chunk_vectors = index.chunk_vectors if index.chunk_vectors is not None else empty
    faq_vectors = index.faq_vectors if index.faq_vectors is not None else empty
    _write_atomically(
        folder / "chunks.json", lambda h: h.write(json.dumps(chunk_records, ensure_ascii=False).encode("utf-8"))
    )
    _write_atomically(folder / "chunk_vectors.npy", lambda h: np.save(h, chunk_vectors, allow_pickle=False))
    _write_atomically(folder / "faq_vectors.npy", lambda h: np.save(h, faq_vectors, allow_pickle=False))
    _write_bm25(folder, index)
    manifest = {
        "format": CACHE_FORMAT,
        "key": key,
        "agent": agent.name,
        "embedder": embedder_name,
        "dimension": dimension,
        "chunks": len(chunk_records),
        "faq": len(index.faq),
        "problems": local_problems,
        "files": {name: _sha256_file(folder / name) for name in _CACHE_FILES},
    }
    _write_atomically(
        folder / "manifest.json", lambda h: h.write(json.dumps(manifest, indent=1, ensure_ascii=False).encode("utf-8"))
    )
    stale = re.compile(re.escape(_cache_folder_name(agent.name)) + r"-[0-9a-f]{16}")
    for sibling in folder.parent.iterdir():
        if sibling != folder and sibling.is_dir() and stale.fullmatch(sibling.name):
            shutil.rmtree(sibling, ignore_errors=True)


def build_with_cache(
    cls: type[KnowledgeIndex],
    agent: KnowledgeAgent,
    root: Path,
    fetcher: Fetcher,
    embedder: Embedder | None,
    cache_dir: Path,
    max_chars: int,
    overlap: int,
    options: dict,
) -> KnowledgeIndex:
    """`KnowledgeIndex.build` with a cache folder: load the cached index, or build and store it. Without an
    embedder the cache keeps the chunks alone (a new process skips reading and chunking the documents)."""
    embedder_name = LEXICAL if embedder is None else str(getattr(embedder, "name", type(embedder).__name__))
    online = bool(getattr(fetcher, "online", True))
    # Web pages are fetched first: their text is part of the key.
    fetched = {
        position: load_source(source, root, fetcher=fetcher)
        for position, source in enumerate(agent.sources)
        if source.kind == "url" and online
    }
    key = _cache_key(agent, root, embedder_name, max_chars, overlap, online, fetched)
    folder = cache_dir / f"{_cache_folder_name(agent.name)}-{key}"
    cached = _read_cache(folder, key, embedder_name, len(agent.sources), len(agent.faq))
    if cached is not None:
        problems = [
            p
            for position, stored in enumerate(cached.problems)
            for p in (fetched[position][1] if position in fetched else stored or [])
        ]
        index = cls(cached.chunks, agent.faq, problems, chunk_vectors=cached.chunk_vectors,
                    faq_vectors=cached.faq_vectors, retriever=cached.retriever, **options)
        if index.embedder is not None or embedder is None:
            index.loaded_from_cache = True
            index.cache_path = folder
            report(options.get("on_progress"), CACHED, len(index.chunks), len(index.chunks), agent.name)
            return index
    documents, per_source = load_sources(agent.sources, root, fetcher, fetched, options.get("on_progress"), agent.name)
    problems = [p for trouble in per_source for p in trouble]
    index = cls(chunk_documents(documents, max_chars, overlap), agent.faq, problems, **options)
    if embedder is not None and index.embedder is None:  # embedding failed: recorded, nothing worth caching
        return index
    local_problems = [None if position in fetched else trouble for position, trouble in enumerate(per_source)]
    try:
        _write_cache(folder, key, embedder_name, agent, index, local_problems)
        index.cache_path = folder
    except OSError as error:  # a read-only program folder only costs the next start some time
        index.cache_problem = f"could not write the index cache in {folder}: {error.strerror or error}"
    return index
