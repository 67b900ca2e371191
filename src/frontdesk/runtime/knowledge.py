"""The knowledge index of a `kb agent`: FAQ matching, hybrid passage search, its on-disk cache, and the grounded-answer prompt.

Without an embedder the index is what it always was: FAQ questions matched by weighted word
overlap, passages ranked by BM25. With an `Embedder` (frontdesk.nlu.embeddings) every chunk
(title + text) and every FAQ question is embedded too:

- `search` mixes the two signals with a normalised weighted sum (`fuse_scores`): BM25 divided by
  the best BM25 score, weight 0.25, plus the cosine rescaled from `min_similarity` (0.3) up to
  the best cosine, weight 0.75. Chunks below cosine 0.3 count only if they share a word and
  reach cosine 0.15, so "what is the weather" finds nothing instead of every chunk containing
  "what". Measured on the MICA retail-banking docs (20 files) with the local MiniLM model, 36
  questions (24 paraphrases, 12 keyword-style), hit@1 / MRR@4: BM25 alone 21/36 / 0.68,
  embeddings alone 31/36 / 0.93, reciprocal-rank fusion (k=10 or 60) 27/36 / 0.84, weighted
  sum with BM25 weight 0.2-0.25 31/36 / 0.93, 0.3 30/36, 0.5 29/36, 0.7 27/36. RRF lost
  because it gives the weaker BM25 ranking as much say as the embedding ranking; the weighted
  sum keeps exact keywords (codes, names) in play at no cost on that set, and an uninformative
  embedding (equal cosines) leaves the BM25 order intact. Four off-topic questions returned no
  passage with the floors (BM25 alone returned some for two of them).
- `match_faq` keeps the word-overlap match and adds one by embedding similarity of the two
  questions: it must reach `faq_embedding_threshold` (0.8) and beat every other entry by 0.05,
  and is halved on a negation mismatch. Measured on 63 FAQ entries: real paraphrases scored
  0.53-0.99 (most 0.6-0.9), near misses that must not answer verbatim up to 0.85 ("block my
  card" vs "Why would I need to block my card?", margin 0.04), so the default stays strict;
  looser paraphrases are still answered through `search`, where FAQ entries are passages.

With a `cache_dir`, `build` keeps the chunks and vectors on disk (see `_build_with_cache`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from frontdesk.ir.models import FaqEntry, KnowledgeAgent, KnowledgeSource
from frontdesk.runtime.documents import Chunk, Document, chunk_documents, load_source

if TYPE_CHECKING:
    from frontdesk.nlu.embeddings import Embedder

# FAQ answers skip the model, so a match must be close: same content words, same negation.
DEFAULT_FAQ_THRESHOLD = 0.75

# Source name of the FAQ entries that are also searchable as passages.
FAQ_SOURCE = "faq"

# With an embedder, a FAQ entry also matches when the questions' embedding similarity reaches this
# and beats every other entry's by FAQ_EMBEDDING_MARGIN (sibling questions must not be confused).
DEFAULT_FAQ_EMBEDDING_THRESHOLD = 0.8
FAQ_EMBEDDING_MARGIN = 0.05

# Hybrid search (see the module docstring): a chunk is a candidate from this embedding cosine on, or
# from the lower one when it also shares a word with the question; BM25 weighs this much in the mix.
DEFAULT_MIN_SIMILARITY = 0.3
DEFAULT_MIN_KEYWORD_SIMILARITY = 0.15
LEXICAL_WEIGHT = 0.25

# Chunking of the documents (the defaults of `chunk_documents`); part of the cache key.
DEFAULT_CHUNK_CHARS = 800
DEFAULT_CHUNK_OVERLAP = 100

# Embedding is done in batches; a progress bar appears (when asked for) past this many texts or seconds.
EMBED_BATCH_SIZE = 32
PROGRESS_MIN_TEXTS = 40
PROGRESS_MIN_SECONDS = 1.0

# Version of the cache layout; files up to this size are identified by a hash of their content,
# bigger ones by size and modification time.
CACHE_FORMAT = 1
# Bump when document loading or chunking changes the text of the chunks (also part of the key):
# 2 = Markdown tables without their alignment padding.
CHUNK_TEXT_VERSION = 2
CONTENT_HASH_MAX_BYTES = 1024 * 1024


@dataclass
class Passage:
    """A retrieved chunk; `score` is relative to the best passage of the same search (best = 1.0)."""

    text: str
    source: str
    score: float
    title: str = ""


# ---------------------------------------------------------------------------
# Words
# ---------------------------------------------------------------------------


def light_stem(word: str) -> str:
    """Fold English plurals (cards -> card, policies -> policy, thanks -> thank); nothing more aggressive."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")):
        return word[:-1]
    return word


_FUNCTION_WORDS = frozenset(
    """
    a an the and or but if then so than of to in on at by for with from about as into onto over
    under up out off again i me my mine myself we us our ours you your yours yourself he him his
    she her hers it its they them their theirs this that these those there here is am are was
    were be been being do does did doing done have has had having can could would should will
    shall may might must please just also very really any some ok okay hey hi hello
    """.split()
)
_QUESTION_WORDS = frozenset("what how when where why who whom whose which".split())
_NEGATION_WORDS = frozenset("not no never none nothing nobody nor without".split())
_CONTRACTION_REMNANTS = frozenset("s d m ll re ve t".split())

_FUNCTION_WEIGHT = 0.15
_QUESTION_WEIGHT = 0.5
# A question that negates what the other affirms ("I don't want to cancel") scores at most half.
_NEGATION_MISMATCH_FACTOR = 0.5


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    text = re.sub(r"\bcan't\b|\bcannot\b", "can not", text)
    text = re.sub(r"\bwon't\b", "will not", text)
    text = re.sub(r"n't\b", " not", text)
    return text


def _faq_words(text: str) -> dict[str, float]:
    """Distinct words of a question with their weight in the overlap score."""
    weights: dict[str, float] = {}
    for raw in re.findall(r"[^\W_]+", _normalise(text)):
        if raw in _CONTRACTION_REMNANTS:
            continue
        word = light_stem(raw)
        if raw in _FUNCTION_WORDS or word in _FUNCTION_WORDS:
            weight = _FUNCTION_WEIGHT
        elif raw in _QUESTION_WORDS:
            weight = _QUESTION_WEIGHT
        else:
            weight = 1.0
        weights[word] = weight
    return weights


def faq_similarity(question: str, faq_question: str) -> float:
    """Weighted word overlap (Dice) of two questions in 0..1, ignoring case, punctuation and word order."""
    left = _faq_words(question)
    right = _faq_words(faq_question)
    if not left or not right:
        return 0.0
    shared = sum(weight for word, weight in left.items() if word in right)
    score = 2.0 * shared / (sum(left.values()) + sum(right.values()))
    if _NEGATION_WORDS.isdisjoint(left) != _NEGATION_WORDS.isdisjoint(right):
        score *= _NEGATION_MISMATCH_FACTOR
    return score


# BM25 words, for passages and questions alike: bm25s's own tokeniser with its longer English stop
# word list ("en_plus", 179 words: its 33-word "en" list keeps "how", "does", "what", "can") and the
# Snowball English stemmer from PyStemmer ("shipping" and "shipped" -> "ship"). Changing either
# changes every score: bump BM25_TOKENIZER, which is part of the index cache key.
# Measured with BM25 alone, hit@1 (before: bm25s's 33 "en" stop words and a plural-only stemmer):
# bookstore policies, 8 questions: 7 -> 8 ("how long does shipping usually take?" found the
# lost-parcels section through "how" and "doe"); MICA retail-banking docs, 77 paraphrased
# questions: 60 -> 56 (MRR@4 0.855 -> 0.818): those files are lists of questions, so the
# question's own "why does my ..." used to help, and the ties broke the other way. With
# embeddings (the offline default) the banking score is unchanged (33/37, MRR 0.946).
BM25_STOPWORDS = "en_plus"
BM25_STEMMER_LANGUAGE = "english"
BM25_TOKENIZER = f"bm25s:{BM25_STOPWORDS}+snowball:{BM25_STEMMER_LANGUAGE}:1"
_stemmers = threading.local()  # a PyStemmer Stemmer must not be shared between threads


def _bm25_stemmer():
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        import Stemmer

        stemmer = _stemmers.english = Stemmer.Stemmer(BM25_STEMMER_LANGUAGE)
    return stemmer


def _bm25_tokenize(texts: list[str]) -> list[list[str]]:
    """The BM25 terms of each text: lower-cased words of two or more characters, stop words dropped, stemmed."""
    import bm25s

    normalised = [unicodedata.normalize("NFKC", text).replace("\u2019", "'") for text in texts]
    return bm25s.tokenize(
        normalised, stopwords=BM25_STOPWORDS, stemmer=_bm25_stemmer(), return_ids=False, show_progress=False
    )


# ---------------------------------------------------------------------------
# Embeddings
# ---------------------------------------------------------------------------


def _embedding_text(chunk: Chunk) -> str:
    """What a chunk's vector is computed from: its title (when it adds something) and its text."""
    if chunk.title and chunk.title not in chunk.text:
        return f"{chunk.title}\n{chunk.text}"
    return chunk.text


def _as_unit_rows(vectors: object, rows: int) -> np.ndarray:
    """`vectors` as a float32 (rows, d) array with L2-normalised rows; ValueError when it is not one."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != rows or (rows and array.shape[1] == 0):
        raise ValueError(f"expected {rows} embedding rows, got an array of shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("the embeddings contain NaN or infinite values")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0)


def embed_texts(embedder: Embedder, texts: list[str], progress: bool = False, label: str = "") -> np.ndarray:
    """Embed `texts` in batches; with `progress`, a bar on stderr once the job is big or slow."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    parts: list[np.ndarray] = []
    bar = None
    task = None
    bar_wanted = progress
    started = time.perf_counter()
    done = 0
    try:
        for first in range(0, len(texts), EMBED_BATCH_SIZE):
            batch = texts[first : first + EMBED_BATCH_SIZE]
            if bar_wanted and (
                len(texts) > PROGRESS_MIN_TEXTS or time.perf_counter() - started > PROGRESS_MIN_SECONDS
            ):
                bar_wanted = False
                bar, task = _start_progress_bar(label, len(texts), done)
            parts.append(_as_unit_rows(embedder.encode(batch), len(batch)))
            done += len(batch)
            if bar is not None:
                bar.update(task, completed=done)
    finally:
        if bar is not None:
            bar.stop()
    return np.concatenate(parts, axis=0)


def _start_progress_bar(label: str, total: int, completed: int):
    """A started rich progress bar on stderr and its task, or (None, None) when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        return None, None
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    description = f"Embedding the documents of {label}" if label else "Embedding the documents"
    task = bar.add_task(description, total=total, completed=completed)
    bar.start()
    return bar, task


# ---------------------------------------------------------------------------
# The index
# ---------------------------------------------------------------------------


class KnowledgeIndex:
    """What a `kb agent` knows: its FAQ and its document chunks, ready to match and search."""

    def __init__(
        self,
        chunks: list[Chunk],
        faq: list[FaqEntry] | None = None,
        problems: list[str] | None = None,
        faq_threshold: float = DEFAULT_FAQ_THRESHOLD,
        *,
        embedder: Embedder | None = None,
        faq_embedding_threshold: float = DEFAULT_FAQ_EMBEDDING_THRESHOLD,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        min_keyword_similarity: float = DEFAULT_MIN_KEYWORD_SIMILARITY,
        chunk_vectors: np.ndarray | None = None,
        faq_vectors: np.ndarray | None = None,
        progress: bool = False,
        label: str = "",
    ) -> None:
        """Index `chunks` and the FAQ; with an `embedder`, also embed them (or take the given vectors,
        one row per chunk including the FAQ chunks, and one per FAQ question)."""
        self.faq: list[FaqEntry] = list(faq or [])
        self.problems: list[str] = list(problems or [])
        self.faq_threshold = faq_threshold
        self.faq_embedding_threshold = faq_embedding_threshold
        self.min_similarity = min_similarity
        self.min_keyword_similarity = min_keyword_similarity
        # How the index came to be: set by `build`, observable by callers and tests.
        self.loaded_from_cache = False
        self.build_seconds = 0.0
        self.cache_path: Path | None = None
        self.cache_problem: str | None = None
        # FAQ entries are searchable passages too, so a reworded question still finds them.
        faq_chunks = [
            Chunk(text=f"Q: {entry.q}\nA: {entry.a}", source=FAQ_SOURCE, title=entry.q, index=i)
            for i, entry in enumerate(self.faq)
        ]
        self.document_chunks: list[Chunk] = list(chunks)
        self.chunks: list[Chunk] = self.document_chunks + faq_chunks
        self._retriever = None
        self._vocabulary: set[str] = set()
        if self.chunks:
            import bm25s

            corpus_tokens = _bm25_tokenize([f"{c.title}\n{c.text}" for c in self.chunks])
            self._vocabulary = {token for tokens in corpus_tokens for token in tokens}
            if self._vocabulary:
                self._retriever = bm25s.BM25()
                self._retriever.index(corpus_tokens, show_progress=False)
        self.embedder: Embedder | None = None
        self.chunk_vectors: np.ndarray | None = None
        self.faq_vectors: np.ndarray | None = None
        self._last_query: tuple[str, np.ndarray | None] | None = None
        if embedder is not None:
            self._attach_embedder(embedder, chunk_vectors, faq_vectors, progress, label)

    def _attach_embedder(
        self,
        embedder: Embedder,
        chunk_vectors: np.ndarray | None,
        faq_vectors: np.ndarray | None,
        progress: bool,
        label: str,
    ) -> None:
        try:
            if chunk_vectors is None:
                texts = [_embedding_text(c) for c in self.chunks] + [entry.q for entry in self.faq]
                vectors = embed_texts(embedder, texts, progress=progress, label=label)
                chunk_vectors, faq_vectors = vectors[: len(self.chunks)], vectors[len(self.chunks) :]
            chunk_vectors = _as_unit_rows(chunk_vectors, len(self.chunks)) if self.chunks else None
            faq_vectors = _as_unit_rows(faq_vectors, len(self.faq)) if self.faq else None
            if chunk_vectors is not None and faq_vectors is not None and chunk_vectors.shape[1] != faq_vectors.shape[1]:
                raise ValueError("passage and FAQ embeddings have different dimensions")
        except Exception as error:  # a broken model must not take the bot down: keep keyword search
            self.problems.append(
                f"could not embed the passages ({error or type(error).__name__}); searching by keywords only"
            )
            return
        self.embedder = embedder
        self.chunk_vectors = chunk_vectors
        self.faq_vectors = faq_vectors

    @classmethod
    def build(
        cls,
        agent: KnowledgeAgent,
        root: Path,
        fetch_urls: bool = True,
        faq_threshold: float = DEFAULT_FAQ_THRESHOLD,
        timeout: float = 5.0,
        *,
        embedder: Embedder | None = None,
        cache_dir: Path | None = None,
        progress: bool = False,
        faq_embedding_threshold: float = DEFAULT_FAQ_EMBEDDING_THRESHOLD,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        min_keyword_similarity: float = DEFAULT_MIN_KEYWORD_SIMILARITY,
        max_chars: int = DEFAULT_CHUNK_CHARS,
        overlap: int = DEFAULT_CHUNK_OVERLAP,
    ) -> "KnowledgeIndex":
        """Load every source of `agent` (relative to `root`), chunk it and index it; never raises for bad sources.

        With an `embedder` the chunks and FAQ questions are embedded too; with a `cache_dir` as well,
        the chunks and their vectors are kept on disk and reused while the sources stay the same.
        """
        started = time.perf_counter()
        root = Path(root)
        options = dict(
            faq_threshold=faq_threshold,
            embedder=embedder,
            faq_embedding_threshold=faq_embedding_threshold,
            min_similarity=min_similarity,
            min_keyword_similarity=min_keyword_similarity,
            progress=progress,
            label=agent.name,
        )
        if embedder is None or cache_dir is None:
            documents, per_source = _load_sources(agent, root, fetch_urls, timeout, {})
            problems = [p for trouble in per_source for p in trouble]
            index = cls(chunk_documents(documents, max_chars, overlap), agent.faq, problems, **options)
        else:
            index = _build_with_cache(cls, agent, root, fetch_urls, timeout, embedder, Path(cache_dir),
                                      max_chars, overlap, options)
        index.build_seconds = time.perf_counter() - started
        return index

    @property
    def is_empty(self) -> bool:
        return not self.chunks

    @property
    def uses_embeddings(self) -> bool:
        """True when search and FAQ matching use the embedder as well as the words."""
        return self.embedder is not None

    def _query_vector(self, question: str) -> np.ndarray | None:
        """The question's unit vector (the last one is remembered: FAQ match and search share it)."""
        if self.embedder is None or not question.strip():
            return None
        remembered = self._last_query  # one read: another thread may replace it
        if remembered is not None and remembered[0] == question:
            return remembered[1]
        try:
            vector = _as_unit_rows(self.embedder.encode([question]), 1)[0]
        except Exception:  # keyword matching still works without the vector
            vector = None
        self._last_query = (question, vector)
        return vector

    def faq_scores(self, question: str) -> list[tuple[FaqEntry, float, float | None]]:
        """Every FAQ entry with its lexical score and (with an embedder) its embedding similarity."""
        vector = self._query_vector(question) if self.faq else None
        cosines = self.faq_vectors @ vector if vector is not None and self.faq_vectors is not None else None
        return [
            (entry, faq_similarity(question, entry.q), None if cosines is None else float(cosines[i]))
            for i, entry in enumerate(self.faq)
        ]

    def match_faq(self, question: str) -> tuple[FaqEntry, float] | None:
        """The FAQ entry whose question says the same as `question`, with its score, if above the threshold.

        Without an embedder the score is the word overlap and must reach `faq_threshold`. With one,
        an entry also matches when its embedding similarity (halved on a negation mismatch, as the
        overlap is) reaches `faq_embedding_threshold` and beats every other entry's by
        `FAQ_EMBEDDING_MARGIN`; the reported score is then the larger of the two.
        """
        scored = self.faq_scores(question)
        if not scored:
            return None
        best_lexical = max(scored, key=lambda item: item[1])
        if best_lexical[1] >= self.faq_threshold:
            return best_lexical[0], best_lexical[1]
        if self.embedder is None or scored[0][2] is None:
            return None
        semantic = [
            (entry, _faq_semantic_score(question, entry.q, cosine), lexical)
            for entry, lexical, cosine in scored
        ]
        ranked = sorted(semantic, key=lambda item: -item[1])
        entry, score, lexical = ranked[0]
        runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
        if score >= self.faq_embedding_threshold and score - runner_up >= FAQ_EMBEDDING_MARGIN:
            return entry, round(max(score, lexical), 4)
        return None

    def search(self, question: str, k: int = 4) -> list[Passage]:
        """The `k` chunks ranked best; scores relative to the best; [] when nothing is related.

        Without an embedder: BM25, and related means sharing a word. With one: BM25 and embedding
        cosine fused by `fuse_scores`, which also says what counts as related.
        """
        if not self.chunks or k <= 0:
            return []
        lexical = self._bm25_scores(question)
        vector = self._query_vector(question) if self.chunk_vectors is not None else None
        if vector is None:
            if lexical is None:
                return []
            ranked = sorted((i for i in range(len(lexical)) if lexical[i] > 0), key=lambda i: (-lexical[i], i))
            return self._passages(ranked[:k], lexical)
        cosines = self.chunk_vectors @ vector
        if lexical is None:
            lexical = np.zeros(len(self.chunks), dtype=np.float32)
        fused = fuse_scores(lexical, cosines, self.min_similarity, self.min_keyword_similarity)
        ranked = sorted((i for i in range(len(fused)) if fused[i] > 0), key=lambda i: (-fused[i], i))
        return self._passages(ranked[:k], fused)

    def _bm25_scores(self, question: str) -> np.ndarray | None:
        """BM25 score of every chunk, or None when the question shares no indexed word."""
        if self._retriever is None:
            return None
        query = [t for t in _bm25_tokenize([question])[0] if t in self._vocabulary]
        if not query:
            return None
        return np.asarray(self._retriever.get_scores(query), dtype=np.float64)

    def _passages(self, ranked: list[int], scores: np.ndarray) -> list[Passage]:
        if not ranked:
            return []
        best = float(scores[ranked[0]])
        return [
            Passage(
                text=self.chunks[i].text,
                source=self.chunks[i].source,
                score=round(float(scores[i]) / best, 4),
                title=self.chunks[i].title,
            )
            for i in ranked
        ]


def _faq_semantic_score(question: str, faq_question: str, cosine: float | None) -> float:
    """The embedding side of FAQ matching: the cosine, halved when one side negates and the other does not."""
    if cosine is None:
        return 0.0
    score = max(0.0, cosine)
    if _NEGATION_WORDS.isdisjoint(_faq_words(question)) != _NEGATION_WORDS.isdisjoint(_faq_words(faq_question)):
        score *= _NEGATION_MISMATCH_FACTOR
    return score


def fuse_scores(
    lexical: np.ndarray,
    cosines: np.ndarray,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    min_keyword_similarity: float = DEFAULT_MIN_KEYWORD_SIMILARITY,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> np.ndarray:
    """Hybrid relevance in 0..1 of every chunk from its BM25 score and embedding cosine (0 = unrelated).

    BM25 is divided by the best BM25 score; the cosine is scaled so `min_similarity` -> 0 and the
    best cosine -> 1. The two are mixed `lexical_weight` : 1 - `lexical_weight`. A chunk is a
    candidate when its cosine reaches `min_similarity`, or when it shares a word with the question
    and its cosine reaches `min_keyword_similarity`; every other chunk scores 0.
    """
    lexical = np.asarray(lexical, dtype=np.float64)
    cosines = np.asarray(cosines, dtype=np.float64)
    candidates = (cosines >= min_similarity) | ((lexical > 0) & (cosines >= min_keyword_similarity))
    top_lexical = lexical.max(initial=0.0)
    words = lexical / top_lexical if top_lexical > 0 else np.zeros(len(lexical))
    top_cosine = cosines.max(initial=min_similarity)
    if top_cosine > min_similarity:
        meaning = np.clip((cosines - min_similarity) / (top_cosine - min_similarity), 0.0, 1.0)
    else:
        meaning = np.zeros(len(cosines))
    fused = lexical_weight * words + (1.0 - lexical_weight) * meaning
    return np.where(candidates, fused, 0.0)


# ---------------------------------------------------------------------------
# Loading sources, and the on-disk cache of chunks and vectors
# ---------------------------------------------------------------------------


def default_cache_dir(root: Path) -> Path:
    """Where the runtime keeps the embedded indexes of a program's knowledge agents."""
    return Path(root) / ".frontdesk" / "index"


def _load_sources(
    agent: KnowledgeAgent,
    root: Path,
    fetch_urls: bool,
    timeout: float,
    already_loaded: dict[int, tuple[list[Document], list[str]]],
) -> tuple[list[Document], list[list[str]]]:
    """All documents of the agent's sources in order, and each source's problems."""
    documents: list[Document] = []
    per_source: list[list[str]] = []
    for position, source in enumerate(agent.sources):
        if position in already_loaded:
            found, trouble = already_loaded[position]
        else:
            found, trouble = load_source(source, root, fetch_urls=fetch_urls, timeout=timeout)
        documents.extend(found)
        per_source.append(list(trouble))
    return documents, per_source


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


def _cache_key(
    agent: KnowledgeAgent,
    root: Path,
    embedder_name: str,
    max_chars: int,
    overlap: int,
    fetch_urls: bool,
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
        "fetch_urls": fetch_urls,
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
        chunk_vectors = np.load(folder / "chunk_vectors.npy", allow_pickle=False)
        faq_vectors = np.load(folder / "faq_vectors.npy", allow_pickle=False)
        total = len(chunks) + faq_count
        if total:
            chunk_vectors = _as_unit_rows(chunk_vectors, total)
        if faq_count:
            faq_vectors = _as_unit_rows(faq_vectors, faq_count)
        return _CachedIndex(chunks, chunk_vectors, faq_vectors, problems)
    except Exception:  # missing, truncated, tampered with: rebuild
        return None


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


def _build_with_cache(
    cls: type[KnowledgeIndex],
    agent: KnowledgeAgent,
    root: Path,
    fetch_urls: bool,
    timeout: float,
    embedder: Embedder,
    cache_dir: Path,
    max_chars: int,
    overlap: int,
    options: dict,
) -> KnowledgeIndex:
    """`KnowledgeIndex.build` with an embedder and a cache folder: load the cached index, or build and store it."""
    embedder_name = str(getattr(embedder, "name", type(embedder).__name__))
    # Web pages are fetched first: their text is part of the key.
    fetched = {
        position: load_source(source, root, fetch_urls=fetch_urls, timeout=timeout)
        for position, source in enumerate(agent.sources)
        if source.kind == "url" and fetch_urls
    }
    key = _cache_key(agent, root, embedder_name, max_chars, overlap, fetch_urls, fetched)
    folder = cache_dir / f"{_cache_folder_name(agent.name)}-{key}"
    cached = _read_cache(folder, key, embedder_name, len(agent.sources), len(agent.faq))
    if cached is not None:
        problems = [
            p
            for position, stored in enumerate(cached.problems)
            for p in (fetched[position][1] if position in fetched else stored or [])
        ]
        index = cls(cached.chunks, agent.faq, problems, chunk_vectors=cached.chunk_vectors,
                    faq_vectors=cached.faq_vectors, **options)
        if index.embedder is not None:
            index.loaded_from_cache = True
            index.cache_path = folder
            return index
    documents, per_source = _load_sources(agent, root, fetch_urls, timeout, fetched)
    problems = [p for trouble in per_source for p in trouble]
    index = cls(chunk_documents(documents, max_chars, overlap), agent.faq, problems, **options)
    if index.embedder is None:  # embedding failed; the problem is recorded, nothing worth caching
        return index
    local_problems = [None if position in fetched else trouble for position, trouble in enumerate(per_source)]
    try:
        _write_cache(folder, key, embedder_name, agent, index, local_problems)
        index.cache_path = folder
    except OSError as error:  # a read-only program folder only costs the next start some time
        index.cache_problem = f"could not write the index cache in {folder}: {error.strerror or error}"
    return index

