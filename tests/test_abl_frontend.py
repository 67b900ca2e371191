"""The ABL front end against its corpus: every spec example compiles, every broken program gets the
diagnostic it must, .abl and .agent.yaml give the same IR both ways, golden IR, and mutated text never
raises. The corpus is described in tests/abl/spec/INDEX.md and tests/abl/broken/README.md."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontdesk.diagnostics import DiagnosticBag
from frontdesk.lang import load_program
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.lang.abl.convert import to_abl, to_yaml
from frontdesk.lang.abl.documents import read_document

CORPUS = Path(__file__).parent / "abl"
SPEC = sorted(p for p in (CORPUS / "spec").iterdir() if p.is_dir())
BROKEN = sorted(p for p in (CORPUS / "broken").iterdir() if p.name != "README.md")
YAML = sorted(p for p in (CORPUS / "yaml").iterdir() if p.is_dir())
GOLDEN = CORPUS / "golden"
GOLDEN_PROGRAMS = ["s6_hotel_search_complete", "core_insurance_claim_flow",  # and every supervisor example:
                   "s5_1_supervisor_travel", "core_supervisor_retail", "core_supervisor_support_hub",
                   "core_supervisor_execution", "s3_15_supervisor_pipeline", "s8_8_routing_channel"]
# Where a problem sits inside a text (an expression, a template, a signature, a CEL check), any column
# on its line is right (tests/abl/broken/README.md).
INSIDE_TEXT = {"ABL013", "ABL014", "ABL015", "ABL016"}


def comparable_ir(program) -> dict:
    """The IR without source positions and file names: what must not depend on the format."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("span", "sources")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(program.model_dump_json()))


def header_line(path: Path, tag: str) -> str | None:
    for raw in path.read_bytes().split(b"\n")[:3]:
        text = raw.decode("ascii", "replace")
        if text.startswith(f"# {tag}:"):
            return text.split(":", 1)[1].strip()
    return None


# ---- the spec's examples ------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", SPEC, ids=[p.name for p in SPEC])
def test_every_spec_example_compiles(folder: Path):
    program, diags = load_abl(folder)
    errors = [d.format() for d in diags if d.is_error]
    assert program is not None and not errors, "\n".join(errors)
    entry_file = folder / "entry.agent.abl"
    assert program.entry == header_line(entry_file, "entry")
    expected = header_line(entry_file, "warnings")
    warned = sorted({d.code for d in diags if not d.is_error})
    if expected:
        codes = sorted({w.split()[0] for w in expected.split(",")})
        assert set(codes) <= set(warned), (codes, [d.format() for d in diags])


def test_the_spec_corpus_is_all_there():
    assert len(SPEC) >= 70 and len(BROKEN) >= 45


# ---- broken programs ----------------------------------------------------------------------------------


def expectation(case: Path) -> tuple[Path, str, int, int]:
    if case.is_dir():
        first = case / "entry.agent.abl" if (case / "entry.agent.abl").exists() else sorted(case.iterdir())[0]
    else:
        first = case
    head = first.read_bytes().split(b"\n", 1)[0].decode("ascii", "replace")
    match = re.match(r"# expect: (ABL\d+) (\d+):(\d+)", head)
    assert match, f"{case.name}: no # expect: line"
    return first, match.group(1), int(match.group(2)), int(match.group(3))


@pytest.mark.parametrize("case", BROKEN, ids=[p.name for p in BROKEN])
def test_every_broken_program_gets_its_diagnostic(case: Path):
    first, code, line, column = expectation(case)
    program, diags = load_abl(case)
    found = [d for d in diags if d.code == code and d.span is not None and (
        (d.span.line == line and d.span.column == column)
        or (code in INSIDE_TEXT and line <= d.span.line <= line + 20))]  # inside the text, maybe a block
    assert found, f"want {code} at {line}:{column}; got:\n" + "\n".join(d.format() for d in diags)
    assert all(str(d.span.file).endswith(first.name) or case.is_dir() for d in found)
    if found[0].is_error:
        assert program is None or any(d.is_error for d in diags)


# ---- the two formats --------------------------------------------------------------------------------


def convert_folder(source: Path, target: Path, suffix_from: str, suffix_to: str, write) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for f in source.iterdir():
        if f.name.endswith(suffix_from):
            doc = read_document(f, str(f), DiagnosticBag())
            assert doc is not None
            (target / (f.name[: -len(suffix_from)] + suffix_to)).write_text(write(doc.root), encoding="utf-8")
        elif f.is_file():
            shutil.copy(f, target / f.name)


@pytest.mark.parametrize("folder", SPEC, ids=[p.name for p in SPEC])
def test_abl_to_yaml_and_back_gives_the_same_ir(folder: Path, tmp_path: Path):
    original, _ = load_abl(folder)
    convert_folder(folder, tmp_path / "yaml", ".agent.abl", ".agent.yaml", to_yaml)
    as_yaml, diags = load_abl(tmp_path / "yaml")
    assert as_yaml is not None, [d.format() for d in diags if d.is_error]
    assert comparable_ir(as_yaml) == comparable_ir(original)
    convert_folder(tmp_path / "yaml", tmp_path / "abl", ".agent.yaml", ".agent.abl", to_abl)
    again, diags = load_abl(tmp_path / "abl")
    assert again is not None, [d.format() for d in diags if d.is_error]
    assert comparable_ir(again) == comparable_ir(original)


@pytest.mark.parametrize("folder", YAML, ids=[p.name for p in YAML])
def test_hand_written_yaml_gives_the_ir_of_its_abl_original(folder: Path):
    program, diags = load_abl(folder)
    assert program is not None, [d.format() for d in diags if d.is_error]
    original, _ = load_abl(CORPUS / "spec" / folder.name)
    assert comparable_ir(program) == comparable_ir(original)


def test_keywords_are_capitals_in_abl_and_lowercase_in_yaml(tmp_path: Path):
    (tmp_path / "a.agent.abl").write_text('AGENT: A\ngoal: "x"\n', encoding="utf-8")
    (tmp_path / "b.agent.yaml").write_text('agent: B\nGOAL: "x"\n', encoding="utf-8")
    _, abl = load_abl(tmp_path / "a.agent.abl")
    _, yml = load_abl(tmp_path / "b.agent.yaml")
    assert [d.code for d in abl if d.is_error] == ["ABL004"]
    assert [d.code for d in yml if d.is_error] == ["ABL004"]


# ---- golden IR ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", GOLDEN_PROGRAMS)
def test_golden_ir(name: str):
    """The IR of a few spec programs, checked in: a change to it is a change to review (regenerate with
    `python -m frontdesk.cli compile tests/abl/spec/NAME -o tests/abl/golden/NAME.json`)."""
    program, _ = load_abl(CORPUS / "spec" / name)
    assert program is not None
    golden = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    assert comparable_ir(program) == comparable_ir(type(program).model_validate(golden))


def test_the_hotel_agent_lowers_to_what_the_spec_says():
    program, _ = load_abl(CORPUS / "spec" / "s6_hotel_search_complete")
    agent = program.agents[program.entry]
    assert agent.kind == "flow" or agent.kind == "reasoning"
    rules = agent.rules
    assert rules.goal.startswith("Help user find and book a hotel")
    assert {f.name for f in rules.gather} >= {"destination", "checkin", "checkout"}
    assert rules.constraints and rules.memory.persistent
    assert any(t for t in program.tools.values() if t.name == "search_hotels")


# ---- the runtime runs ABL -------------------------------------------------------------------------------


def test_an_abl_flow_runs_in_the_same_engine(tmp_path: Path):
    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.runtime.engine import Engine
    from frontdesk.runtime.tools import StubToolRunner
    from frontdesk.store.memory import MemorySessionStore

    (tmp_path / "hotel.agent.abl").write_text('''AGENT: Hotel_Booking
GOAL: "Guide users through a hotel booking"

TOOLS:
  search_hotels(destination: string, nights: number = 1) -> {count: number}

FLOW:
  ask -> search -> done

  ask:
    GATHER:
      - destination: required
    THEN: search

  search:
    CALL: search_hotels(destination)
      AS: found
    ON_SUCCESS:
      RESPOND: "I found {{found.count}} hotels in {{destination}}."
      THEN: done
    ON_FAIL:
      RESPOND: "The search failed."
      THEN: COMPLETE

  done:
    RESPOND: "Anything else?"
    ON_INPUT:
      - IF: input == "no" OR no
        RESPOND: "Goodbye!"
        THEN: COMPLETE
      - ELSE:
        THEN: ask
''', encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and program.language == "abl", [d.format() for d in diags]
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"args": {"destination": "Paris"}}}])
    tools = StubToolRunner({"search_hotels": {"count": 3}}, convention="value")
    engine = Engine(program, llm, MemorySessionStore(), tools=tools)
    sid = engine.start().session_id
    assert [m.text for m in engine.send(sid, "Paris please").messages] == [
        "I found 3 hotels in Paris.", "Anything else?"]
    assert tools.calls == [("search_hotels", {"destination": "Paris"})]
    result = engine.send(sid, "no")
    assert [m.text for m in result.messages] == ["Goodbye!"] and result.ended


# ---- mutated text ---------------------------------------------------------------------------------------


SAMPLES = [f for folder in SPEC[:12] for f in sorted(folder.glob("*.agent.abl"))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_abl_gives_diagnostics_never_an_exception(tmp_path_factory, data):
    source = data.draw(st.sampled_from(SAMPLES)).read_text(encoding="utf-8")
    lines = source.split("\n")
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        kind = data.draw(st.sampled_from(["drop", "dup", "indent", "insert", "cut"]))
        i = data.draw(st.integers(min_value=0, max_value=max(len(lines) - 1, 0)))
        if not lines:
            break
        if kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "indent":
            lines[i] = " " * data.draw(st.integers(0, 7)) + lines[i].lstrip()
        elif kind == "insert":
            lines.insert(i, data.draw(st.text(alphabet=st.sampled_from(list('abcXYZ:-"{}[]()|>#= \t.,\'')),
                                              max_size=30)))
        else:
            cut = data.draw(st.integers(0, max(len(lines[i]), 0)))
            lines[i] = lines[i][:cut]
    folder = tmp_path_factory.mktemp("mutated")
    (folder / "entry.agent.abl").write_text("\n".join(lines), encoding="utf-8")
    program, diags = load_abl(folder)  # must not raise
    assert program is not None or any(d.is_error for d in diags)
    for d in diags:
        assert d.span is None or d.span.line >= 0


def test_a_tool_library_gives_the_agents_tools_their_http_implementation():
    program, diags = load_abl(CORPUS / "spec" / "derived_tool_library")
    assert program is not None and not [d for d in diags if d.is_error]
    card = program.tools["get_id_card"]
    assert card.binding.kind == "http" and card.binding.method == "POST"
    assert '"member_id": "{{member_id}}"' in card.binding.body
    assert [p.name for p in card.params] == ["member_id"] and card.returns["properties"]["card_url"]["type"] == "string"


def test_tool_auth_and_confirmation_reach_the_ir(tmp_path: Path):
    (tmp_path / "a.agent.abl").write_text('''AGENT: Mailer
GOAL: "Send mail"
TOOLS:
  gmail_lookup(query: string) -> Result
    auth_profile: "google-creds"
    auth_jit: true
    consent: preflight
    connection: per_user
  charge_card(amount: number) -> Result
    side_effects: true
    confirm: when_side_effects
    immutable: [amount]
''', encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert not diags, [d.format() for d in diags]
    lookup, charge = program.tools["gmail_lookup"], program.tools["charge_card"]
    assert (lookup.auth.profile, lookup.auth.jit, lookup.auth.consent, lookup.auth.connection) == (
        "google-creds", True, "preflight", "per_user")
    assert (charge.confirmation.side_effects, charge.confirmation.require, charge.confirmation.immutable) == (
        True, "when_side_effects", ["amount"])
