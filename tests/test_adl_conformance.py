"""Every MICA conformance program loads with no error and lowers to the expected agent kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.ir.models import FlowAgent, Program, ReasoningAgent
from frontdesk.lang import load_program
from frontdesk.lang.adl import load_adl

CONFORMANCE = Path("/work/shared/conformance/mica")
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
