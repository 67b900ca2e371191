"""ACDL diagnostics: every invalid specification reports its code at its position; the CLI commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from frontdesk.diagnostics import Severity
from frontdesk.acdl import check_acdl, codes, load_acdl, parse_acdl
from frontdesk.acdl.cli import app

INVALID_DIR = Path(__file__).parent / "acdl_invalid"
INVALID_FILES = sorted(INVALID_DIR.glob("*.acdl"))
EXPECT = re.compile(r"^// expect: (ACDL\d{3}) (\d+):(\d+)\s*$")
DOCS = Path(__file__).parent.parent / "docs" / "acdl-diagnostics.md"


def expectation(path: Path) -> tuple[str, int, int]:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    found = EXPECT.match(first)
    assert found, f"{path.name}: first line must be '// expect: ACDL0xx line:col'"
    return found.group(1), int(found.group(2)), int(found.group(3))


def test_there_are_at_least_35_invalid_specifications() -> None:
    assert len(INVALID_FILES) >= 35


@pytest.mark.parametrize("path", INVALID_FILES, ids=lambda p: p.stem)
def test_invalid_specification_reports_its_code_at_its_position(path: Path) -> None:
    code, line, column = expectation(path)
    file_ast, diags = load_acdl(path)  # must not raise
    found = [(d.code, d.span.line, d.span.column) for d in diags if d.span]
    assert (code, line, column) in found, f"{path.name}: got {found}"
    diag = next(d for d in diags if d.code == code)
    assert diag.hint, "every diagnostic carries a hint"
    assert diag.span is not None and diag.span.file == str(path)
    assert "Traceback" not in diag.format(path.read_text(encoding="utf-8"))


def test_invalid_corpus_covers_every_code_that_a_file_can_trigger() -> None:
    expected = {expectation(p)[0] for p in INVALID_FILES}
    every = set(codes.DESCRIPTIONS) - {codes.READ_ERROR}
    assert every <= expected, f"codes without an invalid example: {sorted(every - expected)}"


def test_every_code_is_documented_once() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for code in codes.DESCRIPTIONS:
        assert text.count(f"`{code}`") == 1, code


def test_warnings_do_not_count_as_errors() -> None:
    _, diags = parse_acdl("P[@T]: {\n    S: Instructions\n}\n")
    assert [(d.code, d.severity) for d in diags] == [(codes.TEMPLATE_NAME, Severity.WARNING)]


def test_syntax_error_returns_no_tree_and_one_diagnostic() -> None:
    file_ast, diags = parse_acdl("P[@T]: {\n    U: {\n        env.x\n}\n")
    assert file_ast is None
    assert [(d.code, d.span.line, d.span.column) for d in diags] == [(codes.UNCLOSED_BRACE, 2, 8)]


def test_check_acdl_accepts_text_or_a_parsed_file() -> None:
    text = "P[@T]: {\n    U: {\n        S: INSTRUCTIONS\n    }\n}\n"
    from_text = check_acdl(text, "x.acdl")
    file_ast, _ = parse_acdl(text, "x.acdl")
    assert [d.code for d in from_text] == [codes.NESTED_ROLE]
    assert [d.code for d in check_acdl(file_ast)] == [codes.NESTED_ROLE]


def test_names_are_scoped_to_their_block_and_loops_see_outer_names() -> None:
    ok = "P[@T]: {\n  Name q := env.q[@T]\n  U: {\n    ForEach(i: xs) {\n      $q[i]\n    }\n  }\n}\n"
    assert parse_acdl(ok)[1] == []
    bad = "P[@T]: {\n  If a {\n    Name q := env.q[@T]\n  }\n  U: $q\n}\n"
    assert [d.code for d in parse_acdl(bad)[1]] == [codes.UNDEFINED_NAME]


def test_loop_variables_and_parameters_may_be_dotted() -> None:
    text = "StrFrag D[doc]: {\n  doc.title\n}\nP[@T]: {\n  U: {\n    ForEach(tool: sys.tools) {\n      tool.name\n      Frag D[tool]\n    }\n  }\n}\n"
    assert parse_acdl(text)[1] == []


def test_snake_case_and_camel_case_functions_are_both_fine() -> None:
    text = "P[@T]: {\n  U: {\n    k_relevant_docs(env.q[@T])\n    getDialogHistory(sys.agent_name)\n    range(3)\n  }\n}\n"
    assert parse_acdl(text)[1] == []


def test_load_acdl_reports_an_unreadable_file(tmp_path: Path) -> None:
    file_ast, diags = load_acdl(tmp_path / "missing.acdl")
    assert file_ast is None and [d.code for d in diags] == [codes.READ_ERROR]


# ---------------------------------------------------------------------------
# CLI: frontdesk acdl check / fmt
# ---------------------------------------------------------------------------

runner = CliRunner()
GOOD = "// demo\nP[@T]: {\n  S: INSTRUCTIONS   // what to do\n  U:{env.q[@T]}\n}\n"


def test_cli_check_passes_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "good.acdl"
    path.write_text(GOOD, encoding="utf-8")
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    assert "0 errors, 0 warnings, 1 specification" in result.output


def test_cli_check_fails_with_diagnostics_and_json(tmp_path: Path) -> None:
    path = INVALID_DIR / "nested_role.acdl"
    text_result = runner.invoke(app, ["check", str(path)])
    assert text_result.exit_code == 1
    assert "error[ACDL020]" in text_result.output and "hint:" in text_result.output
    json_result = runner.invoke(app, ["check", str(path), "--format", "json"])
    assert json_result.exit_code == 1
    data = json.loads(json_result.output)
    assert data[0]["code"] == "ACDL020" and data[0]["line"] == 4 and data[0]["column"] == 9


def test_cli_check_warnings_only_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "warn.acdl"
    path.write_text("P[@T]: {\n    S: Instructions\n}\n", encoding="utf-8")
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 0 and "warning[ACDL029]" in result.output


def test_cli_fmt_prints_and_writes_keeping_crlf(tmp_path: Path) -> None:
    path = tmp_path / "good.acdl"
    path.write_bytes(GOOD.replace("\n", "\r\n").encode("utf-8"))
    printed = runner.invoke(app, ["fmt", str(path)])
    assert printed.exit_code == 0
    expected = "// demo\nP[@T]: {\n    S: INSTRUCTIONS // what to do\n    U: {\n        env.q[@T]\n    }\n}\n"
    assert printed.stdout == expected
    written = runner.invoke(app, ["fmt", str(path), "--write"])
    assert written.exit_code == 0
    assert path.read_bytes() == expected.replace("\n", "\r\n").encode("utf-8")
    again = runner.invoke(app, ["fmt", str(path), "--write"])
    assert "already formatted" in again.output


def test_cli_fmt_refuses_a_file_with_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.acdl"
    original = "P[@T]: {\n    AVAILABLE_TOOLS\n}\n"
    path.write_text(original, encoding="utf-8")
    result = runner.invoke(app, ["fmt", str(path), "--write"])
    assert result.exit_code == 1 and "ACDL025" in result.output
    assert path.read_text(encoding="utf-8") == original


def test_mutated_specifications_give_documented_codes_with_hints() -> None:
    import random

    rng = random.Random(11)
    sources = [p.read_text(encoding="utf-8") for p in INVALID_FILES]
    pieces = ["{", "}", "(", ")", "[", "]", ":", "U:", "Else", "Case 1", "Mark", "=", "@", "$", "Frag", "Name", "//", "\n"]
    for _ in range(300):
        text = rng.choice(sources)
        at = rng.randrange(len(text) + 1)
        mutated = text[:at] + rng.choice(pieces) + text[at + rng.randrange(3):]
        _, diags = parse_acdl(mutated, "m.acdl")
        for diag in diags:
            assert diag.code in codes.DESCRIPTIONS and diag.hint, diag.format(mutated)
            assert diag.span is not None and diag.span.line >= 1


def test_absurd_nesting_is_a_diagnostic_not_a_crash() -> None:
    deep = "P[@T]: {\n" + "ForEach(i: xs) {\n" * 70 + "U: X\n" + "}\n" * 70 + "}\n"
    file_ast, diags = parse_acdl(deep)
    assert file_ast is None and [(d.code, d.span.line) for d in diags] == [(codes.SYNTAX, 65)]
    long_chain = "P[@T]: {\n    U: env.x[" + "1 + " * 3000 + "1]\n}\n"
    file_ast, diags = parse_acdl(long_chain)
    assert file_ast is None and diags[0].code == codes.SYNTAX and diags[0].hint
