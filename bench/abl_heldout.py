"""The held-out ABL corpus of tests/abl_heldout/ (issue 26), written from the specification alone by an
author who never read the code: how Frontdesk does on it.

- projects: each valid project, in both forms, through `frontdesk check` (compile and analysis):
  errors and warnings (the target: 0 errors), and whether the .agent.abl and .agent.yaml forms
  compile to the same IR;
- defects: each single-defect file's `# expect: <severity> line <N> §<section> ...` line: found when
  `check` reports a diagnostic of that severity at that line of that file (an error expected and
  found as an error; a warning found as a warning or an error counts as located, not as matched);
- conversations: each conversation test, run by `frontdesk test` with no model.

Run: .venv/bin/python bench/abl_heldout.py [--json FILE] [--quiet]
(PYTHONPATH=other/src runs it against another copy of Frontdesk, e.g. the one before a change.)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "abl_heldout"
EXPECT = re.compile(r"#\s*expect:\s*(error|warning)\s+line\s+(\d+)\s+(§\S+)?\s*(.*)", re.IGNORECASE)
CLI = "import sys; from frontdesk.cli import app; sys.argv[0] = 'frontdesk'; app()"


def check(folder: Path) -> tuple[object, list]:
    """What `frontdesk check` reports on `folder`: (program, diagnostics)."""
    from frontdesk.analysis import with_analysis
    from frontdesk.lang import load_program

    program, diags = load_program(folder)
    if program is not None and not any(d.is_error for d in diags):
        diags = with_analysis(program, list(diags))
    return program, list(diags)


def _ir(program) -> dict:
    data = program.model_dump(mode="json", exclude={"sources", "root"})

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "span"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(data)


def projects() -> list[dict]:
    out = []
    for project in sorted(p for p in (CORPUS / "projects").iterdir() if p.is_dir()):
        forms = {}
        for form in ("abl", "yaml"):
            folder = project / form
            if not folder.is_dir():
                continue
            program, diags = check(folder)
            forms[form] = {
                "errors": [d.format() for d in diags if d.is_error],
                "warnings": [d.format() for d in diags if d.severity.value == "warning"],
                "ir": _ir(program) if program is not None else None,
            }
        same = None
        if "abl" in forms and "yaml" in forms and forms["abl"]["ir"] and forms["yaml"]["ir"]:
            same = forms["abl"]["ir"] == forms["yaml"]["ir"]
        out.append({"project": project.name, "same_ir": same,
                    **{form: {k: v for k, v in data.items() if k != "ir"} for form, data in forms.items()}})
    return out


def _expectation(case: Path) -> tuple[Path, str, int, str] | None:
    files = [case] if case.is_file() else sorted(p for p in case.rglob("*") if p.is_file())
    for path in files:
        try:
            first = path.read_text(encoding="utf-8").splitlines()[0]
        except (OSError, UnicodeDecodeError, IndexError):
            continue
        match = EXPECT.search(first)
        if match:
            return path, match.group(1).lower(), int(match.group(2)), (match.group(3) or "") + " " + match.group(4)
    return None


def defects() -> list[dict]:
    out = []
    for case in sorted((CORPUS / "defects").iterdir()):
        if case.name.startswith(".") or case.suffix == ".md":
            continue
        expected = _expectation(case)
        if expected is None:
            out.append({"defect": case.name, "verdict": "no expectation"})
            continue
        path, severity, line, about = expected
        with tempfile.TemporaryDirectory() as tmp:  # a single file is checked as a project of its own
            if case.is_file():
                target = Path(tmp) / case.name
                target.write_bytes(case.read_bytes())
                folder, shown = Path(tmp), target
            else:
                folder, shown = case, path
            _, diags = check(folder)
            at_line = [d for d in diags if d.span is not None and d.span.line == line
                       and Path(d.span.file).name == shown.name and d.severity.value in ("error", "warning")]
            same = [d for d in at_line if d.severity.value == severity]
            others = [d for d in diags if d.severity.value in ("error", "warning") and d not in at_line]
            verdict = "found" if same else ("located, other severity" if at_line else "missed")
            out.append({"defect": case.name, "expected": f"{severity} line {line}", "about": about.strip(),
                        "verdict": verdict,
                        "reported": [d.format().splitlines()[0].replace(str(folder) + "/", "") for d in at_line],
                        "elsewhere": [d.format().splitlines()[0].replace(str(folder) + "/", "") for d in others]})
    return out


def conversations() -> list[dict]:
    out = []
    for test in sorted((CORPUS / "conversations").glob("*.yml")):
        with tempfile.TemporaryDirectory() as tmp:
            junit = Path(tmp) / "r.xml"
            run = subprocess.run([sys.executable, "-c", CLI, "test", str(test), "--junit", str(junit)],
                                 capture_output=True, text=True, timeout=600, cwd=ROOT)
            if not junit.is_file():
                out.append({"test": test.name, "cases": 0, "passed": 0,
                            "failures": [(run.stdout + run.stderr).strip()[-800:]]})
                continue
            cases = ET.parse(junit).getroot().iter("testcase")
            total = passed = 0
            failures = []
            for case in cases:
                total += 1
                bad = case.find("failure") if case.find("failure") is not None else case.find("error")
                if bad is None and case.find("skipped") is None:
                    passed += 1
                elif bad is not None:
                    failures.append(f"{case.get('name')}: {(bad.get('message') or bad.text or '').strip()[:600]}")
            out.append({"test": test.name, "cases": total, "passed": passed, "failures": failures})
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--quiet", action="store_true", help="only the summary")
    args = parser.parse_args(argv)
    report = {"projects": projects(), "defects": defects(), "conversations": conversations()}
    forms = [(p["project"], f, p[f]) for p in report["projects"] for f in ("abl", "yaml") if f in p]
    clean = sum(1 for _, _, d in forms if not d["errors"])
    if not args.quiet:
        for project, form, data in forms:
            print(f"project {project}/{form}: {len(data['errors'])} errors, {len(data['warnings'])} warnings")
            for line in data["errors"] + data["warnings"]:
                print("   ", line.splitlines()[0])
        for d in report["defects"]:
            print(f"defect {d['defect']}: {d['verdict']} (expected {d.get('expected')}; {d.get('about', '')})")
            for line in d.get("reported", []) + [f"elsewhere: {x}" for x in d.get("elsewhere", [])]:
                print("   ", line)
        for c in report["conversations"]:
            print(f"conversation {c['test']}: {c['passed']}/{c['cases']}")
            for failure in c["failures"]:
                print("   ", failure.replace("\n", "\n    "))
    found = sum(1 for d in report["defects"] if d["verdict"] == "found")
    located = sum(1 for d in report["defects"] if d["verdict"] != "missed" and d["verdict"] != "no expectation")
    cases = sum(c["cases"] for c in report["conversations"])
    passed = sum(c["passed"] for c in report["conversations"])
    same = sum(1 for p in report["projects"] if p["same_ir"])
    summary = {"project_forms_clean": f"{clean}/{len(forms)}",
               "project_warnings": sum(len(d["warnings"]) for _, _, d in forms),
               "same_ir_both_forms": f"{same}/{len(report['projects'])}",
               "defects_found": f"{found}/{len(report['defects'])}",
               "defects_located": f"{located}/{len(report['defects'])}",
               "conversation_cases_passed": f"{passed}/{cases}"}
    report["summary"] = summary
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
