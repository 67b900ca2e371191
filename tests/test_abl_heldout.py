"""The held-out ABL corpus (tests/abl_heldout/, issue 26): 6 projects in both forms, 30 single-defect
files and 12 conversation tests written from the specification alone by an author who never read the
code. Each valid project checks with no error; each defect is reported at its line with its severity;
each conversation case passes.
bench/abl_heldout.py prints the same as a scorecard."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from frontdesk.convtest.model import load_test_file
from frontdesk.convtest.runner import Runner

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import abl_heldout  # noqa: E402  (bench/abl_heldout.py)

CORPUS = ROOT / "tests" / "abl_heldout"
PROJECTS = sorted(p / form for p in (CORPUS / "projects").iterdir() if p.is_dir() for form in ("abl", "yaml"))
DEFECTS = sorted(p for p in (CORPUS / "defects").iterdir() if p.name[:3].isdigit())
CASES = [(path, index, case.name) for path in sorted((CORPUS / "conversations").glob("*.yml"))
         for index, case in enumerate(load_test_file(path).cases)]

@pytest.fixture(scope="module")
def runner():
    return Runner()


@pytest.mark.parametrize("folder", PROJECTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_valid_project_checks_without_error(folder):
    _, diags = abl_heldout.check(folder)
    assert [d.format() for d in diags if d.is_error] == []


@pytest.mark.parametrize("case", DEFECTS, ids=lambda p: p.name)
def test_every_defect_is_reported_at_its_line_with_its_severity(case):
    found = _one_defect(case)
    assert found["verdict"] == "found", found


def _one_defect(case: Path) -> dict:
    """bench/abl_heldout.defects() for one file."""
    import tempfile

    path, severity, line, about = abl_heldout._expectation(case)
    with tempfile.TemporaryDirectory() as tmp:
        if case.is_file():
            target = Path(tmp) / case.name
            target.write_bytes(case.read_bytes())
            folder, shown = Path(tmp), target
        else:
            folder, shown = case, path
        _, diags = abl_heldout.check(folder)
        at_line = [d for d in diags if d.span is not None and d.span.line == line and Path(d.span.file).name == shown.name]
        same = [d for d in at_line if d.severity.value == severity]
        return {"verdict": "found" if same else "missed", "expected": f"{severity} line {line}: {about}",
                "reported": [d.format() for d in diags if d.severity.value in ("error", "warning")]}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].stem}::{c[2]}")
def test_every_conversation_passes(case, runner):
    path, index, name = case
    result = runner.run(load_test_file(path).cases[index])
    problems = [f.message for f in result.failures]
    assert problems == [], f"{name}: " + "\n".join(problems)
