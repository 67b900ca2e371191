"""Every MICA conformance program loads with no error and lowers to the expected agent kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.ir.models import FlowAgent, Program, ReasoningAgent
from frontdesk.lang import load_program
from frontdesk.lang.adl import load_adl

# the shared folder beside the repository (../shared), or where the workplace keeps it
SHARED = next((p for p in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")) if p.is_dir()),
              Path("/work/shared"))

CONFORMANCE = SHARED / "conformance/mica"
PROGRAMS = sorted(CONFORMANCE.glob("*/agents.yml")) if CONFORMANCE.is_dir() else []
pytestmark = pytest.mark.skipif(not PROGRAMS, reason="conformance programs are not available")

EXPECTED_KINDS = {
    "bookstore": {"store_policy_kb": "knowledge", "book_recommendation": "reasoning", "order": "flow",
                  "triage": "router", "main": "flow"},
    "custom_llm_example": {"customer_complain": "reasoning", "kb": "knowledge", "meta": "router", "main": "flow"},
    "customer_service": {"customer_complain": "reasoning", "return": "reasoning", "exchange": "reasoning",
                         "meta": "router", "main": "flow"},
    "kb_agent_example": {"kb": "knowledge", "meta": "router", "main": "flow"},
    "retail_banking": {"kb": "knowledge", "what_can_you_do": "flow", "transfer_money": "reasoning",
                       "remove_payee": "reasoning", "list_payees": "reasoning", "check_balance": "reasoning",
                       "block_card": "reasoning", "add_payee": "reasoning", "meta": "router", "main": "flow"},
}


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.parent.name)
def test_conformance_program_loads_without_errors(path: Path):
    program, diagnostics = load_adl(path)
    errors = [d.format() for d in diagnostics if d.is_error]
    assert program is not None and not errors, "\n".join(errors)
    assert program.entry == "main" and "main" in program.agents
    expected = EXPECTED_KINDS.get(path.parent.name)
    if expected is not None:
        assert {name: agent.kind for name, agent in program.agents.items()} == expected


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.parent.name)
def test_conformance_folder_and_file_load_the_same(path: Path):
    from_file, _ = load_adl(path)
    from_folder, _ = load_program(path.parent)
    assert from_file == from_folder


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.parent.name)
def test_conformance_ir_round_trips_through_json(path: Path):
    program, _ = load_adl(path)
    again = Program.model_validate_json(program.model_dump_json())
    again.root = program.root  # `root` is deliberately left out of the JSON
    assert again == program


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.parent.name)
def test_truncated_conformance_programs_give_diagnostics_not_tracebacks(path: Path, tmp_path: Path):
    text = path.read_text(encoding="utf-8")
    target = tmp_path / "agents.yml"
    for cut in range(0, len(text), max(1, len(text) // 40)):
        target.write_text(text[:cut], encoding="utf-8")
        program, diagnostics = load_adl(target)
        assert program is not None or any(d.is_error for d in diagnostics)
        if program is not None:
            Program.model_validate_json(program.model_dump_json())


def test_bookstore_flow_details():
    path = CONFORMANCE / "bookstore" / "agents.yml"
    if not path.is_file():
        pytest.skip("bookstore conformance program missing")
    program, _ = load_adl(path)
    order = program.agents["order"]
    assert isinstance(order, FlowAgent)
    graph = order.graph
    assert graph.entry == "steps.0"
    assert graph.labels == {"confirm_books": "steps.2"}
    assert graph.subflows == {"start_ordering_operation": "start_ordering_operation.0"}
    branch = graph.nodes["steps.4"]
    assert branch.kind == "branch" and len(branch.cases) == 2
    assert branch.otherwise == "steps.5.else.0"
    retry = graph.nodes["steps.5.else.0"]
    assert retry.kind == "jump" and retry.tries == 3 and retry.target == "steps.2"
    place = graph.nodes["start_ordering_operation.0"]
    assert place.target_kind == "tool"
    assert [(a.name, a.value.scope, a.value.name) for a in place.args] == [
        ("ordered_book", "order", "books"), ("date", "triage", "date")]
    triage = program.agents["triage"]
    assert [(m.agent, [(b.member_arg, b.router_arg, b.two_way) for b in m.bindings]) for m in triage.members] == [
        ("store_policy_kb", []), ("book_recommendation", [("book_wanted", "book", True)]),
        ("order", [("books", "book", True)])]


def test_retail_banking_fullwidth_prompt_and_docs_folder():
    folder = CONFORMANCE / "retail_banking"
    if not folder.is_dir():
        pytest.skip("retail_banking conformance program missing")
    program, diagnostics = load_adl(folder)
    list_payees = program.agents["list_payees"]
    assert isinstance(list_payees, ReasoningAgent)
    assert list_payees.instructions.startswith("After knowing")
    warning = [d for d in diagnostics if d.code == "ADL032"]
    assert warning and warning[0].hint == "did you mean '|'?" and warning[0].span.line == 62
    kb = program.agents["kb"]
    assert kb.sources[0].location == "./examples/retail_banking/docs"
    assert kb.sources[0].path == "docs" and kb.sources[0].kind == "directory"
    meta = program.agents["meta"]
    first_set = meta.setup.nodes["steps.0"]
    assert first_set.assignments[0].value.op == "lit" and first_set.assignments[0].value.value == "Mary Brown"
    call = meta.setup.nodes["steps.1"]
    assert call.args[0].value.op == "ref" and call.args[0].value.scope == "meta"


# ---------------------------------------------------------------------------------------------
# Shapes MICA's own example bots use that are not in the conformance folder: llm-agent arguments
# written in words (its insurance bot: "claim number", "User ID", "date of incident") and `tries:`
# under a `call:` step (its shopping assistant). The programs below are written for these tests.
# ---------------------------------------------------------------------------------------------

INSURANCE_LIKE = '''
claims:
  type: llm agent
  description: I help customers file an insurance claim.
  prompt: Ask for the claim number, the user ID and the date of incident, then file the claim.
  args:
    - claim number
    - User ID
    - date of incident: the day the damage happened
  uses:
    - file_claim

desk:
  type: flow agent
  description: Files a claim and confirms it.
  args:
    - reference
  steps:
    - call: claims
      tries: 3
    - if: claims.claim_number != None
      then:
        - call: file_claim
          args:
            claim_id: claims.claim_number
            user: claims.User_ID
        - set:
            reference: file_claim.reference
        - bot: "Claim ${claims.claim_number} (incident on ${claims.date_of_incident}) is filed as ${reference}."
      else:
        - bot: "I could not get a claim number."

main:
  type: flow agent
  steps:
    - call: desk
'''

INSURANCE_TOOLS = '''
def file_claim(claim_id: str, user: str):
    """File a claim."""
    return [{"status": "success", "msg": "filed"}, {"arg": "reference", "value": "R-" + claim_id + "-" + user}]
'''


def _write_program(folder: Path, text: str, tools: str | None = None) -> Path:
    (folder / "agents.yml").write_text(text.lstrip("\n"), encoding="utf-8")
    if tools is not None:
        (folder / "tools.py").write_text(tools, encoding="utf-8")
    return folder / "agents.yml"


def test_llm_agent_args_written_in_words_load_and_are_referenced_by_their_underscore_form(tmp_path: Path):
    program, diagnostics = load_adl(_write_program(tmp_path, INSURANCE_LIKE, INSURANCE_TOOLS))
    errors = [d.format() for d in diagnostics if d.is_error]
    assert program is not None and not errors, "\n".join(errors)
    assert not [d for d in diagnostics if d.code == "ADL044"]  # every name here can be referenced
    claims = program.agents["claims"]
    assert [(a.name, a.description) for a in claims.args] == [
        ("claim number", ""), ("User ID", ""), ("date of incident", "the day the damage happened")]
    graph = program.agents["desk"].graph
    call = next(n for n in graph.nodes.values() if n.kind == "invoke" and n.target == "file_claim")
    assert [(a.name, a.value.scope, a.value.name) for a in call.args] == [
        ("claim_id", "claims", "claim number"), ("user", "claims", "User ID")]
    say = next(n for n in graph.nodes.values() if n.kind == "say" and "filed" in n.text.source)
    assert [(p.expr.scope, p.expr.name) for p in say.text.parts if p.kind == "expr"] == [
        ("claims", "claim number"), ("claims", "date of incident"), ("desk", "reference")]


def test_tries_under_call_is_a_warning_that_says_what_tries_means(tmp_path: Path):
    program, diagnostics = load_adl(_write_program(tmp_path, INSURANCE_LIKE, INSURANCE_TOOLS))
    found = [d for d in diagnostics if d.code == "ADL045"]
    assert program is not None and len(found) == 1 and not found[0].is_error
    assert "next:" in found[0].message and "tries: 3" in found[0].hint and "label" in found[0].hint
    assert found[0].span.line == 19  # the tries: line


def test_flow_agent_args_keep_the_name_rule(tmp_path: Path):
    text = INSURANCE_LIKE.replace("    - reference\n", "    - reference number\n")
    _, diagnostics = load_adl(_write_program(tmp_path, text, INSURANCE_TOOLS))
    bad = [d for d in diagnostics if d.code == "ADL010"]
    assert bad and bad[0].is_error and "reference_number" in bad[0].hint


def test_args_in_words_that_cannot_be_referenced_are_warned_about(tmp_path: Path):
    text = INSURANCE_LIKE.replace("    - User ID\n", "    - User ID\n    - User-ID\n    - 2nd address\n")
    program, diagnostics = load_adl(_write_program(tmp_path, text, INSURANCE_TOOLS))
    errors = [d for d in diagnostics if d.is_error]
    assert program is not None and [d.code for d in errors] == ["ADL018"]  # desk's claims.User_ID
    assert "'User ID', 'User-ID'" in errors[0].message and "rename" in errors[0].hint
    warned = {d.message.split("'")[1]: d for d in diagnostics if d.code == "ADL044"}
    assert set(warned) == {"User ID", "User-ID", "2nd address"}
    assert all(not d.is_error and "filled by the model" in d.message and d.hint for d in warned.values())
    # the model still sees and fills all of them
    assert "2nd address" in program.agents["claims"].arg_names()


def test_llm_agent_args_in_words_work_end_to_end_with_a_scripted_model(tmp_path: Path):
    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.testing import run_conversation

    program, _ = load_adl(_write_program(tmp_path, INSURANCE_LIKE, INSURANCE_TOOLS))
    llm = ScriptedProvider([
        {"purpose": "reason", "expect": "claim number", "reply": "What is your claim number, user ID and the date?"},
        {"purpose": "reason", "calls": [
            {"name": "set_args", "arguments": {"claim number": "C-17", "User ID": "u42", "date of incident": "3 May"}},
            {"name": "finish", "arguments": {"status": "success"}}]},
    ])
    run = run_conversation(program, ["C-17, I am u42, it happened on 3 May"], llm)
    assert "Claim C-17 (incident on 3 May) is filed as R-C-17-u42." in run.bot_lines
    set_args = next(t for t in llm.calls[-1].tools if t.name == "set_args")
    assert set(set_args.parameters["properties"]) == {"claim number", "User ID", "date of incident"}
    state = run.engine.load_state(run.session_id)
    assert state.variables["claims"]["claim number"] == "C-17"
    called = run.events_of("tool_call")[0]["data"]
    assert called["args"] == {"claim_id": "C-17", "user": "u42"}
