"""Every ABL example has a twin in the `.agent.yaml` form (tests/abl/twins/<example>/, written by
`frontdesk convert`) that compiles to the same IR, FLOW, constraints, guardrails, delegation and routing
included; and its conversations pass against the twin as against the original."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from frontdesk.convtest.model import load_test_file
from frontdesk.convtest.runner import Runner
from frontdesk.lang import load_program

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from abl_heldout import _ir as comparable  # noqa: E402  (spans, sources and root left out)

EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if any(p.glob("*.agent.abl")))
TWINS = ROOT / "tests" / "abl" / "twins"


def test_every_abl_example_has_a_twin():
    assert {p.name for p in EXAMPLES} == {p.name for p in TWINS.iterdir() if p.is_dir()}
    for example in EXAMPLES:
        assert not list((TWINS / example.name).glob("*.agent.abl"))  # the YAML form only
        assert list((TWINS / example.name).glob("*.agent.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_twin_compiles_to_the_same_ir(example):
    original, _ = load_program(example)
    twin, diags = load_program(TWINS / example.name)
    assert [d.format() for d in diags if d.is_error] == []
    assert comparable(twin) == comparable(original)


CASES = [(example, path) for example in EXAMPLES for path in sorted((example / "conversations").glob("*.yml"))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].name}/{c[1].name}")
def test_the_examples_conversations_pass_against_the_twin(case, tmp_path, monkeypatch):
    example, path = case
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    runner = Runner(program=TWINS / example.name)
    for test_case in load_test_file(path).cases:
        result = runner.run(test_case)
        assert [f.message for f in result.failures] == [] or getattr(result, "skipped", False), test_case.name
