"""Every ABL example has a twin in the `.agent.yaml` form (tests/abl/twins/<example>/, written by
`frontdesk convert`) that compiles to the same IR, FLOW, constraints, guardrails, delegation and routing
included; and its conversations pass against the twin as against the original. The twin folder holds
only the agents: the example's tool libraries and Python files are put beside them for the test."""

from __future__ import annotations

import shutil
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


def twin(example: Path, where: Path) -> Path:
    """The example's YAML twin as a project: its .agent.yaml files with the example's other files."""
    folder = where / example.name
    shutil.copytree(example, folder, ignore=shutil.ignore_patterns("*.agent.abl", "conversations", "tests", "eval"))
    for path in (TWINS / example.name).glob("*.agent.yaml"):
        shutil.copy(path, folder / path.name)
    return folder


def test_every_abl_example_has_a_twin():
    assert {p.name for p in EXAMPLES} == {p.name for p in TWINS.iterdir() if p.is_dir()}
    for example in EXAMPLES:
        assert not list((TWINS / example.name).glob("*.agent.abl"))  # the YAML form only
        assert list((TWINS / example.name).glob("*.agent.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_twin_compiles_to_the_same_ir(example, tmp_path):
    original, _ = load_program(example)
    yaml_form, diags = load_program(twin(example, tmp_path))
    assert [d.format() for d in diags if d.is_error] == []
    assert comparable(yaml_form) == comparable(original)


CASES = [(example, path) for example in EXAMPLES for path in sorted((example / "conversations").glob("*.yml"))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].name}/{c[1].name}")
def test_the_examples_conversations_pass_against_the_twin(case, tmp_path, monkeypatch):
    example, path = case
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    runner = Runner(program=twin(example, tmp_path / "twin"))
    for test_case in load_test_file(path).cases:
        result = runner.run(test_case)
        assert [f.message for f in result.failures] == [] or getattr(result, "skipped", False), test_case.name
