"""Bad ABL program text never escapes as a traceback or stalls the reader (issue 23, part 3): nesting
deeper than the readers follow is ABL027 where it goes too deep, a signature without `-> type` is a
located ABL015, a front end's own failure is FD002, and continuation lines are joined in one pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from frontdesk.cli import app
from frontdesk.diagnostics import DiagnosticBag
from frontdesk.lang import load_program
from frontdesk.lang.abl import outline
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.lang.abl.signatures import SignatureError, parse_signature, parse_type

HEAD = 'AGENT: Hotel_Search\nGOAL: "Help the user find a hotel"\n'
DEEP = 2500  # far past Python's recursion limit: any reader that recursed on it would crash


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def errors(diags) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.column) for d in diags if d.is_error]


# ---- nesting -----------------------------------------------------------------------------------------


def test_thousands_of_nested_braces_under_escalate_are_one_located_diagnostic(tmp_path):
    # `  context: ` is 11 characters; each `{a: ` 4 more: the 65th brace is at column 12 + 64 * 4
    path = write(tmp_path, "deep.agent.abl", HEAD + "ESCALATE:\n  context: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n")
    program, diags = load_abl(path)
    assert errors(diags) == [("ABL027", 4, 12 + 64 * 4)]
    assert "more than 64" in diags[0].message and diags[0].hint


def test_nesting_never_closed_is_reported_as_too_deep_not_as_unclosed(tmp_path):
    path = write(tmp_path, "open.agent.abl", HEAD + "ESCALATE:\n  context: " + "{a: " * DEEP + "\n")
    _, diags = load_abl(path)
    assert errors(diags) == [("ABL027", 4, 12 + 64 * 4)]


def test_nesting_over_continued_lines_is_located_on_the_line_it_goes_too_deep(tmp_path):
    lines = "".join("    [\n" for _ in range(100))  # one `[` a line, after `search(x: `
    path = write(tmp_path, "lines.agent.abl", HEAD + "TOOLS:\n  search(x:\n" + lines + "  ) -> X\n")
    _, diags = load_abl(path)
    # `(` on line 4 is the first level; the 64th `[` (line 4 + 64) is the 65th
    assert errors(diags) == [("ABL027", 4 + 64, 5)]


def test_a_too_deep_value_leaves_its_key_and_the_rest_of_the_agent(tmp_path):
    text = (HEAD + "GATHER:\n  city:\n    prompt: \"Which city?\"\n    type: " + "{a: " * 300 + "string" + "}" * 300
            + "\n  nights:\n    prompt: \"How many nights?\"\n    type: number\n")
    _, diags = load_abl(write(tmp_path, "gather.agent.abl", text))
    # no echo on the same line (an empty type, ...), and the field after it still compiles without error
    assert [d.code for d in diags if d.is_error] == ["ABL027"]


def test_list_items_nested_on_one_line_are_too_deep_not_a_crash(tmp_path):
    path = write(tmp_path, "dashes.agent.abl", HEAD + "ESCALATE:\n  triggers:\n    " + "- " * 3000 + "x\n")
    _, diags = load_abl(path)
    assert [d.code for d in diags if d.is_error] == ["ABL027"]
    assert diags[0].span.line == 5 and diags[0].span.column > 5


def test_deeply_indented_blocks_are_too_deep(tmp_path):
    text = HEAD + "ESCALATE:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(80)) + "  " * 81 + "x: 1\n"
    _, diags = load_abl(write(tmp_path, "indent.agent.abl", text))
    assert [d.code for d in diags if d.is_error] == ["ABL027"]


@pytest.mark.parametrize("body, where", [
    ("context: " + "[" * 5000 + "]" * 5000, (4, None)),  # YAML flow nesting
    ("context:\n" + "".join("  " * (i + 2) + "a:\n" for i in range(150)) + "  " * 152 + "b: 1", (None, None)),
    ("context:\n" + "".join("  " * (i + 2) + "-\n" for i in range(150)) + "  " * 152 + "- 1", (None, None)),
    ("context: '" + "{a: " * DEEP + "1" + "}" * DEEP + "'", (4, 12 + 64 * 4 + 1)),  # a quoted value
], ids=["flow", "mappings", "lists", "quoted-value"])
def test_deep_nesting_in_agent_yaml_is_a_located_diagnostic(tmp_path, body, where):
    text = "agent: Hotel_Search\ngoal: Help the user find a hotel\nescalate:\n  " + body + "\n"
    _, diags = load_abl(write(tmp_path, "deep.agent.yaml", text))
    found = [d for d in diags if d.is_error]
    assert [d.code for d in found] == ["ABL027"], [d.format() for d in found]
    line, column = where
    assert found[0].span.line >= 4 and (line is None or found[0].span.line == line)
    assert column is None or found[0].span.column == column


def test_a_deep_type_in_a_yaml_signature_is_a_located_diagnostic(tmp_path):
    text = ("agent: Hotel_Search\ngoal: Help the user find a hotel\ntools:\n  - 'search(x: "
            + "{a: " * 300 + "string" + "}" * 300 + ") -> X'\n")
    _, diags = load_abl(write(tmp_path, "sig.agent.yaml", text))
    assert [d.code for d in diags if d.is_error] == ["ABL027"]


def test_signature_and_type_readers_refuse_deep_nesting_themselves():
    # `<` of array<T> is no bracket to the outline reader: the signature reader bounds it itself
    for text in ("f(x: " + "array<" * DEEP + "string" + ">" * DEEP + ") -> X",
                 "f(x: any = " + "[" * DEEP + "]" * DEEP + ") -> X",
                 "f(x: string) -> " + "{a: " * 300 + "string" + "}" * 300):
        with pytest.raises(SignatureError, match="more than 64 deep"):
            parse_signature(text)
    with pytest.raises(SignatureError, match="more than 64 deep"):
        parse_type("(" * DEEP + "string" + ")" * DEEP)
    assert parse_signature("f(x: " + "array<" * 63 + "string" + ">" * 63 + ") -> X").name == "f"


def test_a_deep_generic_in_a_signature_is_a_located_abl015(tmp_path):
    path = write(tmp_path, "gen.agent.abl", HEAD + "TOOLS:\n  search(x: " + "array<" * 300 + "string"
                 + ">" * 300 + ") -> X\n")
    _, diags = load_abl(path)
    found = [d for d in diags if d.code == "ABL015"]
    assert [d.span.line for d in found] == [4] and "64 deep" in found[0].message
    # `(` is the first level: the `<` of the 64th array< is the 65th
    assert found[0].span.column == 3 + len("search(x: ") + 63 * len("array<") + len("array")


def test_frontdesk_check_on_deep_nesting_prints_the_diagnostic_not_a_traceback(tmp_path):
    path = write(tmp_path, "deep.agent.abl", HEAD + "ESCALATE:\n  context: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    assert "ABL027" in result.output and "Traceback" not in result.output
    assert not isinstance(result.exception, RecursionError)


# ---- a signature without a return type -----------------------------------------------------------------


def test_a_signature_without_return_type_is_a_located_diagnostic_with_the_form(tmp_path):
    path = write(tmp_path, "noret.agent.abl", HEAD + "TOOLS:\n  search(query: string)\n")
    program, diags = load_abl(path)
    assert errors(diags) == [("ABL015", 4, 3)]
    assert "search" in diags[0].message and "return type" in diags[0].message
    assert "search(...) ->" in diags[0].hint


def test_a_signature_without_return_type_in_yaml_and_in_a_tool_library(tmp_path):
    yaml_path = write(tmp_path, "noret.agent.yaml", "agent: Hotel_Search\ngoal: Find a hotel\ntools:\n"
                      "  - 'search(query: string)'\n")
    _, diags = load_abl(yaml_path)
    assert [(c, line) for c, line, _ in errors(diags)] == [("ABL015", 4)]
    library = tmp_path / "lib"
    library.mkdir()
    write(library, "hotels.tools.abl", "TOOLS:\n  search(query: string)\n")
    write(library, "main.agent.abl", HEAD)
    _, diags = load_abl(library)
    assert errors(diags) == [("ABL015", 2, 3)]
    assert diags[0].span.file.endswith("hotels.tools.abl")


def test_frontdesk_check_shows_no_pydantic_error_for_a_signature_without_return_type(tmp_path):
    path = write(tmp_path, "noret.agent.abl", HEAD + "TOOLS:\n  search(query: string)\n")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    assert "ABL015" in result.output
    assert "validation error" not in result.output and "FD001" not in result.output


def test_an_infinite_number_is_a_bad_value_not_a_crash(tmp_path):
    text = HEAD + "ON_ERROR:\n  tool_timeout:\n    RESPOND: \"Trying again\"\n    RETRY: 1e400\n"
    _, diags = load_abl(write(tmp_path, "inf.agent.abl", text))
    assert errors(diags) == [("ABL026", 6, 12)]


# ---- a front end's own failure --------------------------------------------------------------------------


@pytest.mark.parametrize("failure", [RuntimeError("boom"), RecursionError("too deep"), KeyError("x")])
def test_a_front_end_that_fails_gives_fd002_with_the_file(tmp_path, monkeypatch, failure):
    path = write(tmp_path, "ok.agent.abl", HEAD)

    def broken(*args, **kwargs):
        raise failure

    monkeypatch.setattr("frontdesk.lang.abl.compiler.load_abl", broken)
    program, diags = load_program(path)
    assert program is None
    assert [(d.code, d.span.file) for d in diags] == [("FD002", str(path))]
    assert "internal error" in diags[0].message and diags[0].hint
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1 and "FD002" in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_path_the_system_refuses_is_still_the_callers_business(tmp_path, monkeypatch):
    path = write(tmp_path, "ok.agent.abl", HEAD)

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("frontdesk.lang.abl.compiler.load_abl", refused)
    with pytest.raises(PermissionError):
        load_program(path)


# ---- joining continuation lines ---------------------------------------------------------------------------


def signature(lines: int) -> str:
    return HEAD + "TOOLS:\n  search(\n" + "".join(f"    p{i}: string,\n" for i in range(lines)) + \
        "    last: string\n  ) -> {found: boolean}\n"


def test_a_4000_line_signature_reads_as_one_tool_with_every_parameter(tmp_path):
    program, diags = load_abl(write(tmp_path, "long.agent.abl", signature(4000)))
    assert not [d for d in diags if d.is_error]
    tool = program.tools["search"]
    assert [p.name for p in tool.params] == [f"p{i}" for i in range(4000)] + ["last"]
    assert tool.returns["properties"] == {"found": {"type": "boolean"}}


def test_joining_continuation_lines_reads_each_character_once(monkeypatch):
    made: list[outline._Scanner] = []
    real_init = outline._Scanner.__init__

    def counting_init(self):
        real_init(self)
        made.append(self)

    monkeypatch.setattr(outline._Scanner, "__init__", counting_init)
    for lines in (1000, 4000):
        made.clear()
        text = signature(lines)
        root = outline.read_outline(text, "long.agent.abl", DiagnosticBag())
        joined = root.get("TOOLS").children[0].value
        assert joined.startswith("search(p0: string, p1: string,") and joined.endswith(") -> {found: boolean}")
        # every character of the file is fed to a scanner at most once (a rescan would feed n² / 2)
        assert sum(s.length for s in made) <= len(text)


def test_an_unclosed_bracket_in_a_continued_line_is_reported_on_its_own_line(tmp_path):
    text = HEAD + "TOOLS:\n  search(\n    query: string,\n    limit: number]\n  ) -> X\n"
    _, diags = load_abl(write(tmp_path, "close.agent.abl", text))
    assert ("ABL002", 6, 18) in errors(diags)
    assert "']' closes nothing" in next(d.message for d in diags if d.code == "ABL002")


def test_an_unknown_on_fail_agent_is_located_at_its_own_name_not_a_longer_one(tmp_path):
    # each unknown name is found in one pass over the document (not by reading it again per name),
    # as a whole word: `Billing` is not the start of `Billing_Team` two lines before it
    text = (HEAD + "GATHER:\n  account:\n    prompt: \"Billing_Team asks: which account?\"\n"
            "CONSTRAINTS:\n  - REQUIRE account IS SET\n    ON_FAIL:\n      HANDOFF: Billing\n")
    _, diags = load_abl(write(tmp_path, "onfail.agent.abl", text))
    assert errors(diags) == [("ABL018", 9, 16)]
