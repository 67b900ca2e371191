"""The scale benchmark (bench/scale.py) on tiny sizes: its generated programs load, and the program-size
measurement plays bs_issue7 through Frontdesk (LLM-only, no MICA). No timing is asserted."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import scale  # noqa: E402
from frontdesk.ir.models import RouterAgent  # noqa: E402
from frontdesk.lang import load_program  # noqa: E402


def test_filler_agents_have_names_and_descriptions_of_their_own():
    agents = scale.filler_agents(1200)
    assert len({name for name, _ in agents}) == 1200
    assert len({agent["description"] for _, agent in agents}) == 1200
    kinds = {agent["type"] for _, agent in agents}
    assert kinds == {"flow agent", "kb agent", "llm agent"}


def test_the_generated_programs_load_with_the_size_asked(tmp_path):
    program, diagnostics = load_program(scale.bookstore_with(30, tmp_path / "bookstore"))
    assert program is not None, [str(d) for d in diagnostics]
    assert len(program.agents) == 30
    triage = program.agents["triage"]
    assert isinstance(triage, RouterAgent) and len(triage.members) == 28
    program, diagnostics = load_program(scale.knowledge_program(45, tmp_path / "kb"))
    assert program is not None, [str(d) for d in diagnostics]
    assert len(list((tmp_path / "kb" / "docs").iterdir())) == 3


def test_the_program_size_measurement_plays_the_dialogue(tmp_path):
    with scale.IdealModelServer() as server:
        rows = scale.measure_program([20], ["llm"], False, tmp_path, server, scale.TokenCounter(), 0)
    row = rows[0]["llm"]
    assert row["turns"] == 8 and row["right"] == 8
    assert row["prompt_tokens_per_turn"] > 0 and rows[0]["compile_s"] > 0
