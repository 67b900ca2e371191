"""Tests for the seams of knowledge retrieval: where web pages come from (a `Fetcher`), how an index build
reports its progress (a callback, turn events, the CLI's bar), and how the engine is handed its knowledge."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from frontdesk import progress as progress_bars
from frontdesk.app import knowledge_for
from frontdesk.ir.models import KnowledgeAgent, KnowledgeSource
from frontdesk.lang import load_program
from frontdesk.progress import IndexProgressBar
from frontdesk.runtime.answering import KnowledgeCache, ProgressEvents
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.events import EVENT_TYPES, EventLog
from frontdesk.runtime.retrieval.embedding import EMBED_BATCH_SIZE
from frontdesk.runtime.retrieval.fetch import (
    FetchedPage,
    Fetcher,
    FetchError,
    HttpFetcher,
    NoFetcher,
)
from frontdesk.runtime.retrieval.index import KnowledgeIndex
from frontdesk.runtime.retrieval.sources import load_source
from frontdesk.store.memory import MemorySessionStore

OFF = "did not fetch www.example.com/help: fetching web pages is turned off"
HELP_PAGE = (b"<html><head><title>Help centre</title></head><body><nav>Menu</nav>"
             b"<h1>Shipping</h1><p>Parcels arrive within three working days.</p></body></html>")


class StubFetcher:
    """The web without the network: fixed pages by location; anything else is a fetch error."""

    online = True

    def __init__(self, pages: dict[str, bytes]) -> None:
        self.pages = pages
        self.asked: list[str] = []

    def fetch(self, location: str) -> FetchedPage | FetchError:
        self.asked.append(location)
        if location not in self.pages:
            return FetchError(f"could not fetch https://{location}: the server answered 404 Not Found")
        return FetchedPage(url=f"https://{location}", data=self.pages[location], content_type="text/html",
                           charset="utf-8")


class WordEmbedder:
    """A tiny deterministic sentence model: hashed words -> unit vector."""

    name = "word-hash"

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                rows[row, sum(map(ord, word)) % 64] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1.0)


def url_agent(*locations: str) -> KnowledgeAgent:
    return KnowledgeAgent(name="web_kb", sources=[KnowledgeSource(location=loc, kind="url") for loc in locations])


def docs_agent(root: Path, files: int = 2) -> KnowledgeAgent:
    docs = root / "docs"
    docs.mkdir(exist_ok=True)
    for i in range(files):
        (docs / f"topic{i}.md").write_text(f"# Topic {i}\n\nParagraph number {i} about refunds and parcels.")
    return KnowledgeAgent(
        name="store_kb",
        sources=[KnowledgeSource(location="docs", kind="directory", path="docs"),
                 KnowledgeSource(location="missing.pdf", kind="file")],
    )


# ---------------------------------------------------------------------------
# Fetchers
# ---------------------------------------------------------------------------


def test_the_fetchers_are_fetchers() -> None:
    assert isinstance(HttpFetcher(), Fetcher) and HttpFetcher().online
    assert isinstance(NoFetcher(), Fetcher) and not NoFetcher().online
    assert isinstance(StubFetcher({}), Fetcher)
    assert HttpFetcher(timeout=2.5).timeout == 2.5


def test_a_stub_fetcher_feeds_a_url_source(tmp_path: Path) -> None:
    fetcher = StubFetcher({"www.example.com/help": HELP_PAGE})
    docs, problems = load_source(url_agent("www.example.com/help").sources[0], tmp_path, fetcher=fetcher)
    assert problems == [] and fetcher.asked == ["www.example.com/help"]
    assert len(docs) == 1
    assert docs[0].source == "www.example.com/help" and docs[0].title == "Help centre"
    assert "# Shipping" in docs[0].text and "three working days" in docs[0].text and "Menu" not in docs[0].text

    index = KnowledgeIndex.build(url_agent("www.example.com/help", "www.example.com/gone"), tmp_path,
                                 fetcher=fetcher)
    assert index.search("when do parcels arrive")[0].source == "www.example.com/help"
    assert index.problems == ["could not fetch https://www.example.com/gone: the server answered 404 Not Found"]


def test_a_fetched_page_is_read_by_its_content_type_and_a_long_one_says_so(tmp_path: Path) -> None:
    class Fixed:
        online = True

        def __init__(self, page: FetchedPage) -> None:
            self.page = page

        def fetch(self, location: str) -> FetchedPage:
            return self.page

    source = url_agent("example.com/data").sources[0]
    page = FetchedPage(url="https://example.com/data", data=b'{"opening": "9 to 5"}', content_type="application/json",
                       truncated=True)
    docs, problems = load_source(source, tmp_path, fetcher=Fixed(page))
    assert '"opening": "9 to 5"' in docs[0].text and docs[0].title == "https://example.com/data"
    assert problems == ["https://example.com/data is larger than 10 MB; only the start was read"]
    odd = FetchedPage(url="https://example.com/data", data=b"\x00\x01", content_type="application/octet-stream")
    assert load_source(source, tmp_path, fetcher=Fixed(odd)) == (
        [], [("skipped https://example.com/data: unsupported content type application/octet-stream "
              "(use .txt, .md, .csv, .pdf, .html, .json or .docx)")])


def test_a_fetcher_that_raises_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    class Broken:
        online = True

        def fetch(self, location: str) -> FetchedPage:
            raise RuntimeError("socket on fire")

    assert load_source(url_agent("example.com").sources[0], tmp_path, fetcher=Broken()) == (
        [], ["could not load example.com: socket on fire"])


def test_with_fetching_off_a_url_source_says_so(tmp_path: Path) -> None:
    source = url_agent("www.example.com/help").sources[0]
    assert load_source(source, tmp_path, fetcher=NoFetcher()) == ([], [OFF])
    assert load_source(source, tmp_path, fetch_urls=False) == ([], [OFF])
    assert KnowledgeIndex.build(url_agent("www.example.com/help"), tmp_path, fetcher=NoFetcher()).problems == [OFF]


def test_with_fetching_off_the_engine_warns_as_before(tmp_path: Path) -> None:
    prog = kb_program(tmp_path)
    engine = Engine(prog, None, MemorySessionStore(), knowledge=knowledge_for(prog, fetch_urls=False))
    session = engine.start().session_id
    events = engine.send(session, "how long until refunds are reimbursed?").events
    assert [e.data["message"] for e in events if e.type == "warning"] == [OFF]
    assert "five working days" in [e for e in events if e.type == "bot_message"][-1].data["text"]


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------


def test_a_build_reports_its_stages_through_the_callback(tmp_path: Path) -> None:
    agent = docs_agent(tmp_path)
    heard: list[tuple[str, int, int, str]] = []
    KnowledgeIndex.build(agent, tmp_path, on_progress=lambda *args: heard.append(args))
    assert heard == [("load", 1, 2, "store_kb"), ("load", 2, 2, "store_kb"), ("done", 2, 2, "store_kb")]

    heard.clear()
    cache = tmp_path / "cache"
    index = KnowledgeIndex.build(agent, tmp_path, embedder=WordEmbedder(), cache_dir=cache,
                                 on_progress=lambda *args: heard.append(args))
    assert index.uses_embeddings
    assert heard == [("load", 1, 2, "store_kb"), ("load", 2, 2, "store_kb"), ("embed", 0, 2, "store_kb"),
                     ("embed", 2, 2, "store_kb"), ("done", 2, 2, "store_kb")]

    heard.clear()
    again = KnowledgeIndex.build(agent, tmp_path, embedder=WordEmbedder(), cache_dir=cache,
                                 on_progress=lambda *args: heard.append(args))
    assert again.loaded_from_cache
    assert heard == [("cached", 2, 2, "store_kb"), ("done", 2, 2, "store_kb")]


def test_embedding_reports_after_every_batch(tmp_path: Path) -> None:
    agent = docs_agent(tmp_path, files=EMBED_BATCH_SIZE + 3)
    heard: list[tuple[str, int, int, str]] = []
    KnowledgeIndex.build(agent, tmp_path, embedder=WordEmbedder(), on_progress=lambda *args: heard.append(args))
    total = EMBED_BATCH_SIZE + 3
    assert [h[1] for h in heard if h[0] == "embed"] == [0, EMBED_BATCH_SIZE, total]


def test_a_failing_progress_callback_does_not_break_the_build(tmp_path: Path) -> None:
    def broken(stage: str, done: int, total: int, label: str) -> None:
        raise RuntimeError("display gone")

    index = KnowledgeIndex.build(docs_agent(tmp_path), tmp_path, embedder=WordEmbedder(), on_progress=broken)
    assert index.uses_embeddings and index.search("refunds")


def test_progress_events_are_a_few_per_stage() -> None:
    log = EventLog(0, 1)
    events = ProgressEvents(log, "big_kb")
    events("load", 1, 1, "big_kb")
    for done in range(0, 10_001, 32):
        events("embed", done, 10_000, "big_kb")
    events("embed", 10_000, 10_000, "big_kb")
    events("done", 10_010, 10_010, "big_kb")
    assert all(e.type == "knowledge_progress" and e.agent == "big_kb" for e in log.events)
    embed = [e.data["done"] for e in log.events if e.data["stage"] == "embed"]
    assert embed[0] == 0 and embed[-1] == 10_000 and len(embed) == 11
    assert [e.data["stage"] for e in log.events].count("done") == 1
    assert set(EVENT_TYPES["knowledge_progress"].fields) <= set(log.events[0].data)


def kb_program(root: Path):
    (root / "agents.yml").write_text(textwrap.dedent("""
        main:
          type: flow agent
          steps:
            - call: desk
        desk:
          type: ensemble agent
          description: front desk
          contains:
            - shop_kb
          steps:
            - bot: "Hello!"
        shop_kb:
          type: kb agent
          description: answers questions about the shop's refunds
          sources:
            - docs/
            - www.example.com/help
        """), encoding="utf-8")
    docs = root / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "refunds.md").write_text("# Refunds\n\nReturned items are reimbursed within five working days.")
    prog, diags = load_program(root)
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return prog


def test_the_turn_that_builds_an_index_records_its_progress_as_events(tmp_path: Path) -> None:
    prog = kb_program(tmp_path)
    heard: list[tuple[str, int, int, str]] = []
    fetcher = StubFetcher({"www.example.com/help": HELP_PAGE})
    knowledge = KnowledgeCache(prog, fetcher=fetcher, embedder=WordEmbedder(), on_progress=lambda *a: heard.append(a),
                               cache_dir=tmp_path / "cache")
    engine = Engine(prog, None, MemorySessionStore(), knowledge=knowledge)  # no LLM: extractive answers
    session = engine.start().session_id
    first = engine.send(session, "how long until refunds are reimbursed?")
    progress = [(e.agent, e.data["stage"], e.data["done"], e.data["total"])
                for e in first.events if e.type == "knowledge_progress"]
    assert progress == [("shop_kb", "load", 1, 2), ("shop_kb", "load", 2, 2), ("shop_kb", "embed", 0, 2),
                        ("shop_kb", "embed", 2, 2), ("shop_kb", "done", 2, 2)]
    assert [h[:3] for h in heard] == [p[1:] for p in progress]  # the application's callback heard the same
    assert fetcher.asked == ["www.example.com/help"]
    assert not [e for e in first.events if e.type == "warning"]
    second = engine.send(session, "and how long until refunds are reimbursed?")
    assert not [e for e in second.events if e.type == "knowledge_progress"]  # built once per process
    assert len(heard) == 5


def test_the_engine_builds_default_knowledge_from_the_program(tmp_path: Path) -> None:
    prog = kb_program(tmp_path)
    engine = Engine(prog, None, MemorySessionStore())
    assert isinstance(engine.knowledge, KnowledgeCache) and engine.knowledge.program is prog
    assert isinstance(engine.knowledge.fetcher, HttpFetcher) and engine.knowledge.embedder is None
    wired = knowledge_for(prog, WordEmbedder(), fetch_urls=False)
    assert isinstance(wired.fetcher, NoFetcher) and isinstance(wired.embedder, WordEmbedder)
    assert Engine(prog, None, MemorySessionStore(), knowledge=wired).knowledge is wired


# ---------------------------------------------------------------------------
# The command line's bar
# ---------------------------------------------------------------------------


class FakeBar:
    def __init__(self) -> None:
        self.updates: list[int] = []
        self.stopped = False

    def update(self, task, completed: int) -> None:
        self.updates.append(completed)

    def stop(self) -> None:
        self.stopped = True


def test_the_bar_follows_the_embedding_and_goes_away_when_the_build_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    bars: list[FakeBar] = []

    def start(label: str, total: int, completed: int):
        bars.append(FakeBar())
        return bars[-1], 0

    monkeypatch.setattr(progress_bars, "_start_progress_bar", start)
    bar = IndexProgressBar()
    bar("load", 1, 1, "kb")
    bar("embed", 0, 100, "kb")
    bar("embed", 32, 100, "kb")
    assert len(bars) == 1 and bars[0].updates == [0, 32] and not bars[0].stopped
    bar("done", 40, 40, "kb")  # embedding failed half-way: the build still ends, and so does the bar
    assert bars[0].stopped
    bar("embed", 0, 100, "kb")
    bar("embed", 100, 100, "kb")
    assert len(bars) == 2 and bars[1].updates == [0, 100] and bars[1].stopped
    bar("embed", 0, 3, "kb")  # a small quick job: no bar
    bar("embed", 3, 3, "kb")
    assert len(bars) == 2
