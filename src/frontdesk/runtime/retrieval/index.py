"""The knowledge index of a `kb agent`: building it, FAQ matching, and hybrid passage search with score fusion.

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

With a `cache_dir`, `build` keeps the chunks and vectors on disk (see `cache.build_with_cache`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Iterator

import numpy as np

from frontdesk.ir.models import FaqEntry, KnowledgeAgent
from frontdesk.nlu.terms import bm25_tokenize
from frontdesk.runtime.retrieval.cache import build_with_cache
from frontdesk.runtime.retrieval.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_CHUNK_OVERLAP,
    chunk_documents,
)
from frontdesk.runtime.retrieval.documents import Chunk
from frontdesk.runtime.retrieval.embedding import (
    as_unit_rows,
    embed_texts,
    embedding_text,
)
from frontdesk.runtime.retrieval.fetch import DEFAULT_TIMEOUT, Fetcher, default_fetcher
from frontdesk.runtime.retrieval.lexical import (
    NEGATION_MISMATCH_FACTOR,
    faq_similarity,
    negation_mismatch,
)
from frontdesk.runtime.retrieval.progress import DONE, ProgressCallback, report
from frontdesk.runtime.retrieval.sources import load_sources

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


@dataclass
class Passage:
    """A retrieved chunk; `score` is relative to the best passage of the same search (best = 1.0)."""

    text: str
    source: str
    score: float
    title: str = ""


def _best(scores: np.ndarray, k: int) -> list[int]:
    """The indexes of the `k` best positive scores, best first (ties: the earlier chunk first)."""
    scores = np.asarray(scores)
    positive = np.flatnonzero(scores > 0)
    if positive.size > k:  # only the k best are sorted: a question over 10,000 passages ranks a few
        values = scores[positive]
        kth = -np.partition(-values, k - 1)[k - 1]  # the k-th best score
        above, equal = positive[values > kth], positive[values == kth]
        positive = np.concatenate([above, equal[:k - len(above)]])  # ties: the earlier chunks
    return sorted(positive.tolist(), key=lambda i: (-float(scores[i]), i))


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
        on_progress: ProgressCallback | None = None,
        label: str = "",
        retriever: Any = None,
    ) -> None:
        """Index `chunks` and the FAQ; with an `embedder`, also embed them (or take the given vectors,
        one row per chunk including the FAQ chunks, and one per FAQ question). `retriever`: their BM25
        index as an earlier process built it (retrieval/cache.py), else it is built here."""
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
        self._total_chars: int | None = None
        if self.chunks and retriever is not None:
            self._retriever = retriever
            self._vocabulary = {token for token in retriever.vocab_dict if token}
        elif self.chunks:
            import bm25s

            corpus_tokens = bm25_tokenize([f"{c.title}\n{c.text}" for c in self.chunks])
            self._vocabulary = {token for tokens in corpus_tokens for token in tokens}
            if self._vocabulary:
                self._retriever = bm25s.BM25()
                self._retriever.index(corpus_tokens, show_progress=False)
        self.embedder: Embedder | None = None
        self.chunk_vectors: np.ndarray | None = None
        self.faq_vectors: np.ndarray | None = None
        self._last_query: tuple[str, np.ndarray | None] | None = None
        if embedder is not None:
            self._attach_embedder(embedder, chunk_vectors, faq_vectors, on_progress, label)

    def _attach_embedder(
        self,
        embedder: Embedder,
        chunk_vectors: np.ndarray | None,
        faq_vectors: np.ndarray | None,
        on_progress: ProgressCallback | None,
        label: str,
    ) -> None:
        try:
            if chunk_vectors is None:
                texts = [embedding_text(c) for c in self.chunks] + [entry.q for entry in self.faq]
                vectors = embed_texts(embedder, texts, on_progress, label)
                chunk_vectors, faq_vectors = vectors[: len(self.chunks)], vectors[len(self.chunks) :]
            chunk_vectors = as_unit_rows(chunk_vectors, len(self.chunks)) if self.chunks else None
            faq_vectors = as_unit_rows(faq_vectors, len(self.faq)) if self.faq else None
            if chunk_vectors is not None and faq_vectors is not None and chunk_vectors.shape[1] != faq_vectors.shape[1]:
                raise ValueError("passage and FAQ embeddings have different dimensions")
        except Exception as error:  # noqa: BLE001 - a broken model must not take the bot down: keep keyword search
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
        timeout: float = DEFAULT_TIMEOUT,
        *,
        fetcher: Fetcher | None = None,
        embedder: Embedder | None = None,
        cache_dir: Path | None = None,
        on_progress: ProgressCallback | None = None,
        faq_embedding_threshold: float = DEFAULT_FAQ_EMBEDDING_THRESHOLD,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        min_keyword_similarity: float = DEFAULT_MIN_KEYWORD_SIMILARITY,
        max_chars: int = DEFAULT_CHUNK_CHARS,
        overlap: int = DEFAULT_CHUNK_OVERLAP,
    ) -> KnowledgeIndex:
        """Load every source of `agent` (relative to `root`), chunk it and index it; never raises for bad sources.

        Web pages come from `fetcher` (without one: over HTTP with `timeout` when `fetch_urls`, else
        not at all). With an `embedder` the chunks and FAQ questions are embedded too; with a
        `cache_dir` as well, the chunks and their vectors are kept on disk and reused while the
        sources stay the same. `on_progress` hears each stage (see `progress`), "done" last.
        """
        started = time.perf_counter()
        root = Path(root)
        fetcher = fetcher or default_fetcher(fetch_urls, timeout)
        options = {
            "faq_threshold": faq_threshold,
            "embedder": embedder,
            "faq_embedding_threshold": faq_embedding_threshold,
            "min_similarity": min_similarity,
            "min_keyword_similarity": min_keyword_similarity,
            "on_progress": on_progress,
            "label": agent.name,
        }
        if cache_dir is None:
            documents, per_source = load_sources(agent.sources, root, fetcher, on_progress=on_progress,
                                                 label=agent.name)
            problems = [p for trouble in per_source for p in trouble]
            index = cls(chunk_documents(documents, max_chars, overlap), agent.faq, problems, **options)
        else:
            index = build_with_cache(cls, agent, root, fetcher, embedder, Path(cache_dir),
                                     max_chars, overlap, options)
        index.build_seconds = time.perf_counter() - started
        report(on_progress, DONE, len(index.chunks), len(index.chunks), agent.name)
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
            vector = as_unit_rows(self.embedder.encode([question]), 1)[0]
        except Exception:  # noqa: BLE001 - keyword matching still works without the vector
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
            return self._passages(_best(lexical, k), lexical)
        cosines = self.chunk_vectors @ vector
        if lexical is None:
            lexical = np.zeros(len(self.chunks), dtype=np.float32)
        fused = fuse_scores(lexical, cosines, self.min_similarity, self.min_keyword_similarity)
        return self._passages(_best(fused, k), fused)

    def every_passage(self, limit: int) -> list[Passage]:
        """All chunks, in order, with score 0, when there are at most `limit` of them; else []."""
        if not self.chunks or len(self.chunks) > limit:
            return []
        return list(self.passages_in_order())

    def passages_in_order(self) -> Iterator[Passage]:
        """Every chunk as a passage with score 0, in the sources' order, made as they are read (a reader
        that needs a few of 10,000 makes a few)."""
        return (Passage(text=c.text, source=c.source, score=0.0, title=c.title) for c in self.chunks)

    @property
    def total_chars(self) -> int:
        """The length of all the chunks' texts (counted once)."""
        if self._total_chars is None:
            self._total_chars = sum(len(c.text) for c in self.chunks)
        return self._total_chars

    def _bm25_scores(self, question: str) -> np.ndarray | None:
        """BM25 score of every chunk, or None when the question shares no indexed word."""
        if self._retriever is None:
            return None
        query = [t for t in bm25_tokenize([question])[0] if t in self._vocabulary]
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
    if negation_mismatch(question, faq_question):
        score *= NEGATION_MISMATCH_FACTOR
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
