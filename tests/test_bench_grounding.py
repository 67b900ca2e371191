"""bench/grounding.py (issue 27): a model told to invent fills every field it is asked for, and the
runtime keeps only what the user gave; the same scorer counts values kept that the user never gave."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import grounding  # noqa: E402  (bench/grounding.py)

CASES = ROOT / "bench" / "grounding" / "cases"


def test_the_inventing_model_fills_what_it_is_not_given():
    model = grounding.InventingModel(program=None)
    model.truth = {"student_name": "Ana Costa"}
    filled = model.fill({"student_name": {"type": "string"}, "student_age": {"type": "integer"},
                         "booking_ref": {"type": "string", "description": "It looks like ML-1234."},
                         "instrument": {"type": "string", "enum": ["piano", "guitar"]}})
    assert filled == {"student_name": "Ana Costa", "student_age": 2, "booking_ref": "ML-1234", "instrument": "piano"}


@pytest.mark.parametrize("name", ["music_school::name_step_refuses_to_give_name",
                                  "music_school::first_message_books_guitar_for_named_son",
                                  "island_ferries::island_step_rules_one_out"])
def test_with_a_model_that_invents_only_what_the_user_gave_is_kept(name, local_model):
    case = next(c for c in grounding.load_cases(CASES) if c.name == name)
    outcome = grounding.Bench("invent").run(case)
    assert outcome.error is None
    assert outcome.invented == {}
    assert sorted(outcome.filled) == sorted(case.gives)
