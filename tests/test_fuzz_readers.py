"""Bad program text never escapes as a traceback or stalls: a fixed slice of the mutation fuzzing in
bench/fuzz_readers.py for the ABL, ADL and ACDL readers, and each kind of crash it found, as a small input."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import fuzz_readers  # noqa: E402
from frontdesk.diagnostics import Diagnostic, DiagnosticBag, Span, format_all  # noqa: E402
from frontdesk.lang import load_program  # noqa: E402
from frontdesk.acdl import parse_acdl  # noqa: E402
from frontdesk.acdl.checker import SUGGESTION_BUDGET  # noqa: E402

# A few hundred inputs in all, seed fixed: the same inputs on every run. The one-off large run and its
# counts are in bench/fuzz_readers.md.
SLICE = {"abl": 200, "adl": 150, "acdl": 250}
TIME_BOUND = 10.0  # seconds one input may take (generous: the slowest take well under a second alone)


@pytest.mark.parametrize("reader", fuzz_readers.READERS)
def test_fuzz_slice_has_no_uncaught_exception_and_no_stall(reader, tmp_path):
    report = fuzz_readers.run_reader(reader, SLICE[reader], seed=7, time_bound=TIME_BOUND, hard_limit=60.0,
                                     save=tmp_path)
    assert report.inputs == SLICE[reader]
    assert report.failed == 0, "\n".join(report.failures)
    assert report.diagnostics_only > 0  # the mutations do break programs: the readers were exercised


def test_seeds_cover_both_abl_forms_adl_and_acdl():
    abl = fuzz_readers.collect_seeds("abl")
    names = {name for seed in abl for name in seed.files}
    assert any(n.endswith(".agent.abl") for n in names) and any(n.endswith(".agent.yaml") for n in names)
    assert any(n.endswith(".tools.abl") for n in names)
    assert any("examples" in s.origin for s in fuzz_readers.collect_seeds("adl"))
    assert len(fuzz_readers.collect_seeds("acdl")) >= 20


def test_mutations_are_reproducible_and_change_the_text():
    import random

    text = "AGENT: a\nGOAL: \"g\"\nFLOW:\n  one -> two\n"
    first = fuzz_readers.mutate(text, "abl", "abl", [text], random.Random(3), "/nowhere")
    assert fuzz_readers.mutate(text, "abl", "abl", [text], random.Random(3), "/nowhere") == first
    rng = random.Random(5)
    assert any(fuzz_readers.mutate(text, "abl", "abl", [text], rng, "/nowhere") != text for _ in range(20))


# ---------------------------------------------------------------------------
# Each kind of crash the fuzzing found, as a small input that crashed before
# ---------------------------------------------------------------------------


def _check_like_cli(path: Path):
    from frontdesk.analysis import with_analysis

    program, diags = load_program(path)
    if program is not None and not any(d.is_error for d in diags):
        diags = with_analysis(program, diags)
        program.model_dump_json()
    format_all(diags)
    return program, diags


def test_deeply_nested_template_blocks_are_a_located_error_not_a_recursion_error(tmp_path):
    # before: RecursionError in `check` (walking the IR) and a JSON error in `compile`
    respond = "{{#if a}}" * 300 + "x" + "{{/if}}" * 300
    (tmp_path / "deep.agent.abl").write_text(
        f'AGENT: Deep\nGOAL: "g"\nFLOW:\n  one\n  one:\n    RESPOND: "{respond}"\n', encoding="utf-8")
    _, diags = _check_like_cli(tmp_path)
    deep = [d for d in diags if "nested more than" in d.message]
    assert deep and deep[0].is_error and deep[0].span.line == 6 and deep[0].span.column > 1


def test_template_blocks_at_the_limit_still_compile(tmp_path):
    respond = "{{#if a}}" * 10 + "x" + "{{/if}}" * 10
    (tmp_path / "ok.agent.abl").write_text(
        f'AGENT: Fine\nGOAL: "g"\nFLOW:\n  one\n  one:\n    RESPOND: "{respond}"\n', encoding="utf-8")
    _, diags = _check_like_cli(tmp_path)
    assert not [d for d in diags if "nested more than" in d.message]


@pytest.mark.parametrize("text", ["agent: a\ngoal: x\ud800y\n", "a: 1\nb: \"\udfff\"\n"])
def test_lone_surrogate_in_yaml_text_is_a_located_error(text):
    # before: UnicodeEncodeError from the YAML parser (text handed over as a string)
    from frontdesk.lang.abl.documents import read_yaml_outline
    from frontdesk.lang.adl.codes import YAML
    from frontdesk.yamlsource.nodes import compose_yaml

    for read in (read_yaml_outline, lambda text, file, bag: compose_yaml(text, file, bag, YAML)):
        bag = DiagnosticBag()
        assert read(text, "t.yaml", bag) is None
        assert len(bag.items) == 1 and bag.items[0].span.line == 2 and "surrogate" in bag.items[0].message


def test_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    # before: every alias expanded up to 200,000 nodes (seconds) before the refusal
    lines = ['lol0: &lol0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 9)}]" for i in range(1, 9)]
    (tmp_path / "agents.yml").write_text("main:\n  type: flow\n  steps:\n    - bot: hi\n" + "\n".join(lines) + "\n")
    import yaml

    from frontdesk.lang.adl import load_adl
    from frontdesk.yamlsource.nodes import _Converter, _expanded_size

    _, diags = load_adl(tmp_path / "agents.yml")
    assert [d.code for d in diags if d.is_error] == ["ADL001"] and "too large" in diags[0].message
    root = yaml.compose("\n".join(lines), Loader=yaml.SafeLoader)
    assert _expanded_size(root, _Converter.max_nodes) == _Converter.max_nodes + 1  # counted, never expanded
    assert _expanded_size(yaml.compose("a: [1, 2]\nb: {c: d}"), 100) == 9  # every node, keys too


def test_excerpt_of_a_long_line_is_a_printable_window_around_the_column():
    line = "a\x1b" * 30_000 + "HERE" + "b\x00" * 30_000
    column = line.index("HERE") + 1
    shown = Diagnostic("X001", "m", Span(file="f", line=1, column=column)).format(line)
    excerpt = shown.splitlines()[1]
    assert "HERE" in excerpt and len(excerpt) < 200 and "\x1b" not in excerpt and "\x00" not in excerpt


def test_format_all_gives_the_same_text_as_each_diagnostic_alone(tmp_path):
    source = tmp_path / "s.acdl"
    source.write_text("P[@T]: {\n    U: $a\n    U: $b\n}\n", encoding="utf-8")
    diags = [Diagnostic("X", "m", Span(file=str(source), line=n, column=8)) for n in (2, 3)]
    text = source.read_text(encoding="utf-8")
    assert format_all(diags) == "\n\n".join(d.format(text) for d in diags)


def test_undefined_fragments_get_suggestions_until_the_budget_then_the_plain_hint():
    # before: "did you mean" compared every undefined fragment with every fragment (minutes for 200 KB)
    count = 400
    text = "".join(f"StrFrag Piece{i}[@t]: {{\n    TEXT\n}}\nP{i}[@T]: {{\n    U: {{\n        Frag Pieec{i}[@T]\n"
                   f"    }}\n}}\n" for i in range(count))
    _, diags = parse_acdl(text)
    undefined = [d for d in diags if "is not defined" in d.message]
    assert len(undefined) == count
    assert undefined[0].hint == "did you mean 'Piece0'?"
    assert sum(1 for d in undefined if d.hint.startswith("did you mean")) <= SUGGESTION_BUDGET // count + 1
    assert undefined[-1].hint.startswith("define it")


def test_an_expression_too_long_to_read_is_located_at_its_line():
    terms = " + ".join(["a"] * 3000)
    text = "P[@T]: {\n  U: {\n    \"hello\"\n    Name total := " + terms + "\n  }\n}\n"
    node, diagnostics = parse_acdl(text, "long.acdl")
    problems = [d for d in diagnostics if "too long" in d.message]
    if node is not None and not problems:
        pytest.skip("this interpreter's stack reads 3,000 terms: nothing to locate")
    assert problems and problems[0].span.line == 4 and problems[0].span.column >= 5


def test_a_long_time_index_is_located_too():
    text = "P[@T]: {\n  U: {\n    env.user_input[@T" + "-1" * 30000 + "]\n  }\n}\n"
    node, diagnostics = parse_acdl(text, "index.acdl")
    assert node is None and [(d.span.line, d.span.column) for d in diagnostics] == [(3, 20)]


def test_an_adl_hole_of_thousands_of_parts_is_a_located_error(tmp_path):
    hole = ".".join(["a"] * 5000)
    (tmp_path / "agents.yml").write_text(f'main:\n  type: flow agent\n  steps:\n    - bot: "hi ${{{hole}}}"\n',
                                         encoding="utf-8")
    program, diagnostics = load_program(tmp_path)
    errors = [d for d in diagnostics if d.is_error]
    assert len(errors) == 1 and errors[0].code != "FD002"
    assert (errors[0].span.line, errors[0].span.column) == (4, 18) and "64 parts" in errors[0].message
