"""Every examples/*/conversations/*.yml replayed through the whole turn engine with a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm import ScriptedProvider
from frontdesk.testing import check_expectations, load_conversation, run_conversation

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
        names = {p.stem for p in CONVERSATIONS if p.parent.parent.name == example}
        assert {"happy_path", "intent_change", "tries_limit", "tool_error", "fallback"} <= names, example


@pytest.mark.parametrize("path", CONVERSATIONS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_conversation(path: Path):
    spec = load_conversation(path)
    program = _program(path.parent.parent)
    llm = ScriptedProvider(spec.get("llm") or [])
    run = run_conversation(program, [str(u) for u in spec.get("user") or []], llm)
    problems = check_expectations(run, spec)
    assert not problems, "\n".join(problems) + "\n\ntranscript:\n" + run.transcript()
