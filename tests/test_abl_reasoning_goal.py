"""An ABL reasoning agent (no FLOW) gathers to serve its goal (abl-specification 3.6, 3.12): once its
GATHER fields are filled it goes on reasoning with its tools until a COMPLETE condition holds. With a
model that can reason (a scripted one counts, also under `embeddings: true`) the model is asked after
the last field; with none, the agent runs what it safely can (read-only tools whose arguments are known)
and completes with success only when a COMPLETE condition holds, else says plainly that it cannot finish
here. What it says about its model is true (issue 26 §3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.convtest.model import TestCase, Turn
from frontdesk.convtest.runner import scripted_model_for
from frontdesk.diagnostics import Span
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

BILLING = r'''AGENT: Billing
GOAL: "Understand why the customer disputes a bill and either explain the charge or open a dispute case"

TOOLS:
  get_bill(account_id: string, month: string) -> {found: boolean, total?: number, lines?: object[]}
    description: "Read the bill of a month"
  open_dispute(account_id: string, month: string, reason: string) -> {case_id: string}
    description: "Open a dispute case"
    side_effects: true
    confirm: never

GATHER:
  account_id:
    prompt: "What is your account number?"
    type: string
    required: true
    validate:
      type: pattern
      rule: "^AC-\\d{4}$"
  month:
    prompt: "Which month (YYYY-MM)?"
    type: string
    required: true
    validate:
      type: pattern
      rule: "^\\d{4}-\\d{2}$"
  reason:
    prompt: "What looks wrong on the bill?"
    type: string
    required: true

INSTRUCTIONS: |
  Call get_bill once you know the account and the month; open_dispute when the customer still disputes it.
%(extra)s
COMPLETE:
  - WHEN: open_dispute.case_id IS SET
    RESPOND: "Dispute case {{open_dispute.case_id}} is open."
'''

TRACKING = r'''AGENT: Order_Tracking
GOAL: "Tell the customer where their order is"

TOOLS:
  track_order(order_id: string) -> {found: boolean, status?: string}
    description: "Where an order is"

GATHER:
  order_id:
    prompt: "What is your order number?"
    type: string
    required: true
    validate:
      type: pattern
      rule: "^O-\\d{3}$"

INSTRUCTIONS: |
  Call track_order once you have the order number.
%(extra)s'''

TRACKING_COMPLETE = '''
COMPLETE:
  - WHEN: track_order.found == true
    RESPOND: "Order {{order_id}} is {{track_order.status}}."
'''

STUBS = {"get_bill": {"found": True, "total": 64.0, "lines": [{"item": "Roaming", "amount": 25.0}]},
         "open_dispute": {"case_id": "D-7"}, "track_order": {"found": True, "status": "out for delivery"}}

ANSWERS = ("AC-1234", "2026-03", "a roaming charge I never made")


class SmallLocalModel:
    """Stands in for the local SmolLM2: a model is configured, but the runtime does not let it reason."""

    name = "local:smollm2-135m"
    can_classify = False

    def complete(self, request):  # pragma: no cover - must never be asked to reason
        raise AssertionError(f"the small local model was asked a '{request.purpose}' call")


def build(tmp_path: Path, source: str, entry: str, llm=None):
    (tmp_path / "agent.agent.abl").write_text(source, encoding="utf-8")
    prog, diags = load_abl(tmp_path, entry=entry)
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    tools = StubToolRunner(dict(STUBS), convention="value")
    return Engine(prog, llm, MemorySessionStore(), tools=tools), tools


def of(result, kind: str, agent: str | None = None) -> list:
    return [e for e in result.events if e.type == kind and (agent is None or e.agent == agent)]


GREETING = {"purpose": "reason", "reply": "Hello, how can I help?"}  # said when the session starts


def embeddings_like(script: list[dict]) -> ScriptedProvider:
    """The scripted model of a conversation test with `embeddings: true` and scripted answers (the
    greeting first)."""
    script = [GREETING, *script]
    case = TestCase(name="goal", path=Path("goal.yml"), span=Span(),
                    turns=[Turn(index=0, user=None, span=Span(), llm=list(script))], embeddings=True)
    return scripted_model_for(case)


# ---- with a model that can reason ----------------------------------------------------------------


def test_a_scripted_model_under_embeddings_reasons_and_a_case_with_no_answers_does_not():
    llm = embeddings_like([{"purpose": "reason", "reply": "hi"}])
    assert llm.can_classify is False  # routing and conditions stay with the embedding model
    assert llm.can_reason is True  # but the reasoning agent asks the scripted model
    silent = scripted_model_for(TestCase(name="none", path=Path("none.yml"), span=Span(),
                                         turns=[Turn(index=0, user=None, span=Span())], embeddings=True))
    assert silent.can_reason is False  # no answers at all: runs as a program with no model


def test_after_the_last_field_the_model_is_asked_and_runs_tools_until_complete_holds(tmp_path):
    script = [
        {"purpose": "reason", "reply": "What is your account number?"},
        {"purpose": "reason", "call": "set_args", "with": {"account_id": "AC-1234", "month": "2026-03"}},
        {"purpose": "reason", "reply": "What looks wrong on the bill?"},
        {"purpose": "reason", "call": "set_args", "with": {"reason": "a roaming charge"}},
        # the fields are gathered: the loop goes on, the model reads the bill and asks
        {"purpose": "reason", "expect": "all fields gathered", "call": "get_bill",
         "with": {"account_id": "AC-1234", "month": "2026-03"}},
        {"purpose": "reason", "reply": "Your bill has a 25 EUR roaming line. Do you still dispute it?"},
        {"purpose": "reason", "call": "open_dispute",
         "with": {"account_id": "AC-1234", "month": "2026-03", "reason": "roaming"}},
    ]
    llm = embeddings_like(script)
    eng, tools = build(tmp_path, BILLING % {"extra": ""}, "Billing", llm)
    sid = eng.start().session_id
    eng.send(sid, "my bill is wrong")
    eng.send(sid, "AC-1234, March 2026")
    result = eng.send(sid, "a roaming charge")
    assert not of(result, "reasoning_offline") and not of(result, "agent_finished")
    assert [t for t, _ in tools.calls] == ["get_bill"]
    assert [m.text for m in result.messages] == ["Your bill has a 25 EUR roaming line. Do you still dispute it?"]
    result = eng.send(sid, "yes, I still dispute it")
    assert [t for t, _ in tools.calls] == ["get_bill", "open_dispute"]
    finished = of(result, "agent_finished", "Billing")
    assert finished and finished[0].data["status"] == "success" and finished[0].data["message"] == "completed"
    assert [m.text for m in result.messages] == ["Dispute case D-7 is open."]
    assert llm.remaining() == 0


def test_a_models_complete_before_any_complete_condition_holds_is_refused_once(tmp_path):
    script = [
        {"purpose": "reason", "calls": [
            {"name": "set_args", "arguments": {"account_id": "AC-1234", "month": "2026-03", "reason": "roaming"}}]},
        {"purpose": "reason", "call": "complete", "with": {"status": "success", "message": "done", "rest": ""}},
        {"purpose": "reason", "expect": "open_dispute.case_id IS SET", "call": "open_dispute",
         "with": {"account_id": "AC-1234", "month": "2026-03", "reason": "roaming"}},
    ]
    llm = embeddings_like(script)
    eng, tools = build(tmp_path, BILLING % {"extra": ""}, "Billing", llm)
    sid = eng.start().session_id
    result = eng.send(sid, "AC-1234: the 2026-03 bill has a roaming charge I dispute")
    assert any(e.data.get("action") == "complete refused: no COMPLETE condition holds" for e in of(result, "step"))
    assert [t for t, _ in tools.calls] == ["open_dispute"]
    finished = of(result, "agent_finished", "Billing")
    assert [(e.data["status"], e.data["message"]) for e in finished] == [("success", "completed")]


# ---- with no model that can reason -----------------------------------------------------------------


def offline_dispute(tmp_path: Path, llm=None, extra: str = ""):
    eng, tools = build(tmp_path, BILLING % {"extra": extra}, "Billing", llm)
    sid = eng.start().session_id
    asked = [eng.send(sid, "my bill is wrong")]
    for line in ANSWERS:
        asked.append(eng.send(sid, line))
    return eng, sid, tools, asked


def test_offline_the_agent_whose_complete_condition_is_not_met_does_not_report_success(tmp_path):
    eng, sid, tools, asked = offline_dispute(tmp_path)
    assert [m.text for r in asked[:3] for m in r.messages] == [
        "What is your account number?", "Which month (YYYY-MM)?", "What looks wrong on the bill?"]
    result = asked[-1]
    # the read-only tool with every argument known runs; the one that changes something never does
    assert [t for t, _ in tools.calls] == ["get_bill"]
    finished = of(result, "agent_finished", "Billing")
    assert finished and finished[0].data["status"] != "success"
    assert "completed without a model" not in str([e.data for e in result.events])
    actions = [e.data["action"] for e in of(result, "reasoning_offline")]
    assert "cannot finish" in actions and "complete" not in actions
    assert [m.text for m in result.messages] == [
        "I can't finish this here: no language model is configured for me."]


def test_offline_with_escalate_declared_the_agent_hands_the_conversation_to_a_person(tmp_path):
    extra = '''
ESCALATE:
  triggers:
    - WHEN: tool_failures > 2
      REASON: "The billing system keeps failing"
'''
    eng, sid, tools, asked = offline_dispute(tmp_path, extra=extra)
    result = asked[-1]
    assert eng.load_state(sid).status == "escalated"
    assert not [e for e in of(result, "agent_finished") if e.data["status"] == "success"]
    assert result.messages[0].text.startswith("I can't finish this here")


def test_offline_the_no_model_message_is_the_agents_own_when_it_has_one(tmp_path):
    extra = '''
MESSAGES:
  no_model: "A colleague from billing will look at this."
'''
    _, _, _, asked = offline_dispute(tmp_path, extra=extra)
    assert [m.text for m in asked[-1].messages] == ["A colleague from billing will look at this."]


def test_with_the_small_local_model_the_agent_does_not_claim_no_model_is_configured(tmp_path):
    _, _, _, asked = offline_dispute(tmp_path, llm=SmallLocalModel())
    said = [m.text for m in asked[-1].messages]
    assert said == ["I can't finish this here: the model I run with (local:smollm2-135m) is too small to "
                    "work this out."]
    assert "no language model is configured" not in said[0]


def test_with_the_small_local_model_an_agent_with_nothing_to_do_names_the_model(tmp_path):
    (tmp_path / "chat.agent.abl").write_text('AGENT: Small_Talk\nGOAL: "Chat about the weather"\n', encoding="utf-8")
    prog, _ = load_abl(tmp_path)
    eng = Engine(prog, SmallLocalModel(), MemorySessionStore())
    sid = eng.start().session_id
    result = eng.send(sid, "nice weather today?")
    assert [m.text for m in result.messages] == [
        "I can't help with that here: the model I run with (local:smollm2-135m) is too small to work this out."]


def test_offline_an_agent_whose_read_only_tool_meets_its_complete_condition_completes(tmp_path):
    eng, tools = build(tmp_path, TRACKING % {"extra": TRACKING_COMPLETE}, "Order_Tracking")
    sid = eng.start().session_id
    assert [m.text for m in eng.send(sid, "where is my parcel?").messages] == ["What is your order number?"]
    result = eng.send(sid, "O-123")
    assert [t for t, _ in tools.calls] == ["track_order"]
    assert [m.text for m in result.messages] == ["Order O-123 is out for delivery."]
    finished = of(result, "agent_finished", "Order_Tracking")
    assert [(e.data["status"], e.data["message"]) for e in finished] == [("success", "completed")]


def test_offline_an_agent_with_no_complete_rules_keeps_completing_after_its_tools(tmp_path):
    eng, tools = build(tmp_path, TRACKING % {"extra": ""}, "Order_Tracking")
    sid = eng.start().session_id
    eng.send(sid, "where is my parcel?")
    result = eng.send(sid, "O-123")
    assert [t for t, _ in tools.calls] == ["track_order"]
    finished = of(result, "agent_finished", "Order_Tracking")
    assert [e.data["status"] for e in finished] == ["success"]


@pytest.mark.parametrize("extra", ["", TRACKING_COMPLETE])
def test_a_model_that_reasons_is_asked_after_the_order_number_and_calls_track_order(tmp_path, extra):
    script = [
        {"purpose": "reason", "call": "set_args", "with": {"order_id": "O-123"}},
        {"purpose": "reason", "expect": "all fields gathered", "call": "track_order", "with": {"order_id": "O-123"}},
    ]
    if not extra:  # no COMPLETE rule: the model says what it found
        script += [{"purpose": "reason", "reply": "It is out for delivery."}]
    llm = embeddings_like(script)
    eng, tools = build(tmp_path, TRACKING % {"extra": extra}, "Order_Tracking", llm)
    sid = eng.start().session_id
    result = eng.send(sid, "where is order O-123?")
    assert [t for t, _ in tools.calls] == ["track_order"]
    assert not of(result, "reasoning_offline")
    if extra:
        assert [m.text for m in result.messages] == ["Order O-123 is out for delivery."]
        assert [e.data["status"] for e in of(result, "agent_finished", "Order_Tracking")] == ["success"]
    else:
        assert [m.text for m in result.messages] == ["It is out for delivery."]
    assert llm.remaining() == 0
