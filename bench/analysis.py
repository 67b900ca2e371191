"""Precision and recall of `frontdesk check`'s static analysis on the corpus of tests/analysis_corpus/
(issue 13): programs with planted bugs (bad/) and correct programs with near-misses (good/). Each program
folder has an expect.yml listing the findings it must get (`findings: [{code, agent, about}]`; none for
a correct one).

A finding counts as a true positive when its code is expected for that program (each expected finding
is matched at most once); any other analysis finding is a false positive; an expected finding no
finding matches is a false negative. Only the analysis codes count (ADL040-043, FD040-051), not the
loader's other diagnostics.

Run: .venv/bin/python bench/analysis.py [--corpus DIR] [--json FILE] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "analysis_corpus"
ANALYSIS_CODES = frozenset({f"ADL04{i}" for i in range(4)} | {f"FD0{n}" for n in range(40, 52)})


@dataclass
class ProgramResult:
    name: str
    kind: str  # bad or good
    language: str
    expected: list[str]
    found: list[str]
    true_positives: int = 0
    false_positives: list[str] = field(default_factory=list)
    false_negatives: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    load_errors: list[str] = field(default_factory=list)


def analyse(folder: Path) -> tuple[str, list, list[str]]:
    """(language, analysis findings, load errors) of one program, as `frontdesk check` computes them."""
    from frontdesk.analysis import with_analysis
    from frontdesk.lang import load_program

    program, diags = load_program(folder)
    errors = [d.format() for d in diags if d.is_error]
    if program is None or errors:
        return "?", [], errors or ["the program did not load"]
    found = [d for d in with_analysis(program, diags) if d.code in ANALYSIS_CODES]
    return program.language, found, []


def score(folder: Path, kind: str) -> ProgramResult:
    expect = yaml.safe_load((folder / "expect.yml").read_text(encoding="utf-8")) or {}
    expected = [str(f["code"]) for f in expect.get("findings") or []]
    language, found, errors = analyse(folder)
    result = ProgramResult(folder.name, kind, language, expected, [d.code for d in found], load_errors=errors)
    result.messages = [f"{d.code} {d.message}" for d in found]
    wanted = Counter(expected)
    for diag in found:
        if wanted[diag.code] > 0:
            wanted[diag.code] -= 1
            result.true_positives += 1
        else:
            result.false_positives.append(f"{diag.code} {diag.message}")
    result.false_negatives = list(wanted.elements())
    return result


def run(corpus: Path = CORPUS) -> dict:
    began = time.perf_counter()
    results = [score(folder, kind) for kind in ("bad", "good")
               for folder in sorted((corpus / kind).iterdir()) if (folder / "expect.yml").is_file()]
    tp = sum(r.true_positives for r in results)
    fp = sum(len(r.false_positives) for r in results)
    fn = sum(len(r.false_negatives) for r in results)
    per_code: dict[str, dict[str, int]] = {}
    for r in results:
        for code in r.expected:
            per_code.setdefault(code, {"expected": 0, "missed": 0})["expected"] += 1
        for code in r.false_negatives:
            per_code[code]["missed"] += 1
    return {
        "programs": {"bad": sum(r.kind == "bad" for r in results), "good": sum(r.kind == "good" for r in results)},
        "languages": dict(Counter(r.language for r in results)),
        "true_positives": tp, "false_positives": fp, "false_negatives": fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "bad_programs_fully_found": sum(r.kind == "bad" and not r.false_negatives for r in results),
        "good_programs_clean": sum(r.kind == "good" and not r.false_positives for r in results),
        "per_code": dict(sorted(per_code.items())),
        "seconds": round(time.perf_counter() - began, 2),
        "results": [asdict(r) for r in results],
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--json", metavar="FILE", help="write the numbers and every program's result as JSON")
    parser.add_argument("--verbose", action="store_true", help="list every program's findings")
    args = parser.parse_args(argv)
    report = run(args.corpus)
    print(f"corpus: {args.corpus} — {report['programs']['bad']} programs with planted bugs, "
          f"{report['programs']['good']} correct ({', '.join(f'{k} {v}' for k, v in report['languages'].items())})")
    print(f"precision {report['precision']:.3f}  recall {report['recall']:.3f}  "
          f"(true positives {report['true_positives']}, false positives {report['false_positives']}, "
          f"false negatives {report['false_negatives']})")
    print(f"bad programs whose every planted bug was found: {report['bad_programs_fully_found']}/"
          f"{report['programs']['bad']}; correct programs with no finding: {report['good_programs_clean']}/"
          f"{report['programs']['good']}; {report['seconds']} s")
    print("per code (expected / missed): " + ", ".join(f"{c} {v['expected']}/{v['missed']}"
                                                       for c, v in report["per_code"].items()))
    for r in report["results"]:
        if r["load_errors"]:
            print(f"  {r['kind']}/{r['name']}: does not load: {r['load_errors'][0]}")
        for missed in r["false_negatives"]:
            print(f"  {r['kind']}/{r['name']}: missed {missed}")
        for extra in r["false_positives"]:
            print(f"  {r['kind']}/{r['name']}: unexpected {extra}")
        if args.verbose:
            for message in r["messages"]:
                print(f"  {r['kind']}/{r['name']}: {message}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
