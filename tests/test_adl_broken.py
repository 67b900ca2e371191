"""Every tests/adl_broken/*.yml program reports the diagnostic its `# expect:` line names, where it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from frontdesk.diagnostics import Severity
from frontdesk.lang.adl import load_adl

HERE = Path(__file__).resolve().parent
CORPUS = sorted((HERE / "adl_broken").glob("*.yml"))
TABLE = HERE.parent / "docs" / "diagnostics.md"
EXPECT = re.compile(r"#\s*expect:\s*(?P<code>ADL\d{3})(?:\s+(?P<line>\d+):(?P<col>\d+))?(?:\s+(?P<severity>error|warning|info))?")


def documented_severities() -> dict[str, Severity]:
    """Code -> severity from the table in docs/diagnostics.md (`error*` counts as error)."""
    rows = re.findall(r"^\|\s*(ADL\d{3})\s*\|\s*(error|warning|info)\*?\s*\|", TABLE.read_text(encoding="utf-8"), re.M)
    return {code: Severity(severity) for code, severity in rows}


SEVERITIES = documented_severities()


def expectation(path: Path) -> tuple[str, tuple[int, int] | None, Severity]:
    match = EXPECT.match(path.read_text(encoding="utf-8").splitlines()[0])
    assert match, f"{path.name} must start with '# expect: ADL0xx [line:col] [severity]'"
    position = (int(match["line"]), int(match["col"])) if match["line"] else None
    severity = Severity(match["severity"]) if match["severity"] else SEVERITIES[match["code"]]
    return match["code"], position, severity


def test_corpus_is_large_and_named_consistently():
    assert len(CORPUS) >= 35
    for path in CORPUS:
        assert re.match(r"\d\d_[a-z0-9_]+\.yml$", path.name), path.name


def test_every_code_in_the_corpus_is_documented():
    for path in CORPUS:
        code, _, _ = expectation(path)
        assert code in SEVERITIES, f"{code} ({path.name}) is missing from docs/diagnostics.md"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_broken_program_reports_expected_diagnostic(path: Path):
    code, position, severity = expectation(path)
    program, diagnostics = load_adl(path)
    found = [d for d in diagnostics if d.code == code]
    described = "\n".join(d.format() for d in diagnostics)
    assert found, f"expected {code}, got:\n{described}"
    if position is not None:
        at = [d for d in found if d.span is not None and (d.span.line, d.span.column) == position]
        assert at, f"expected {code} at {position[0]}:{position[1]}, got:\n{described}"
        found = at
    assert any(d.severity is severity for d in found), f"expected {code} as {severity.value}:\n{described}"
    assert all(d.message and d.hint for d in found), described
    # one problem per program: no other error hides behind the expected one
    stray = [d for d in diagnostics if d.is_error and d.code != code]
    assert not stray, "unexpected errors:\n" + "\n".join(d.format() for d in stray)
