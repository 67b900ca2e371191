"""The static analysis over the corpus of tests/analysis_corpus/: every planted bug is found, and the
correct programs (near-misses of each finding) get no finding. bench/analysis.py prints the same as
precision and recall."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import analysis as corpus_bench  # noqa: E402  (bench/analysis.py)

CORPUS = ROOT / "tests" / "analysis_corpus"
# written afterwards by someone who had not seen the analysis, and measured before anything was changed
HELD_OUT = ROOT / "tests" / "analysis_heldout"
BAD = sorted(p for c in (CORPUS, HELD_OUT) for p in (c / "bad").iterdir() if (p / "expect.yml").is_file())
GOOD = sorted(p for c in (CORPUS, HELD_OUT) for p in (c / "good").iterdir() if (p / "expect.yml").is_file())


def test_the_corpus_is_big_enough_and_holds_the_papers_bug():
    assert len(BAD) >= 25 and len(GOOD) >= 25
    assert (CORPUS / "bad" / "transfer_money_add_payee").is_dir()


@pytest.fixture(autouse=True)
def example_data(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))


@pytest.mark.parametrize("folder", BAD, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_planted_bug_is_found(folder):
    result = corpus_bench.score(folder, "bad")
    assert not result.load_errors, result.load_errors
    assert result.expected, "a bad program must plant at least one finding"
    assert not result.false_negatives and not result.false_positives, result.messages


@pytest.mark.parametrize("folder", GOOD, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_correct_programs_get_no_finding(folder):
    result = corpus_bench.score(folder, "good")
    assert not result.load_errors, result.load_errors
    assert result.found == [], result.messages


def test_the_benchmark_reports_precision_and_recall(tmp_path, capsys):
    report = corpus_bench.main(["--json", str(tmp_path / "analysis.json")])
    printed = capsys.readouterr().out
    assert "precision" in printed and "recall" in printed
    assert report["programs"] == {"bad": len([p for p in BAD if CORPUS in p.parents]),
                                  "good": len([p for p in GOOD if CORPUS in p.parents])}
    assert (tmp_path / "analysis.json").is_file()
