"""Tool confirmation (ABL §3.5 confirm / immutable; runtime/tools/confirmation.py): the user approves
a call before it runs, in a flow's CALL step and in a reasoning agent's tool call."""

from __future__ import annotations

from pathlib import Path

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

LIBRARY = '''TOOLS:
  charge_card(amount: number, note: string = "") -> {receipt: string}
    description: "Charge the customer's card"
    side_effects: true
    confirm: when_side_effects
    immutable: [amount]

  send_voucher(email: string) -> {sent: boolean}
    side_effects: true
    confirm: always
    confirm_message: "Shall I send the voucher to {{email}}?"

  look_up(code: string) -> {found: boolean}
    side_effects: true
    confirm: never
'''

FLOW = '''AGENT: Shop
GOAL: "Take a payment"

TOOLS:
  charge_card(amount: number, note: string = "") -> {receipt: string}
  look_up(code: string) -> {found: boolean}

FLOW:
  check -> pay

  check:
    CALL: look_up("X1")
    THEN: pay

  pay:
    CALL: charge_card(25, "order X1")
    ON_SUCCESS:
      RESPOND: "Paid: {{charge_card.receipt}}."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "Nothing was charged."
      THEN: COMPLETE
'''

AGENT = '''AGENT: Cashier
GOAL: "Charge cards and send vouchers when asked"

TOOLS:
  charge_card(amount: number, note: string = "") -> {receipt: string}
  send_voucher(email: string) -> {sent: boolean}
'''


def build(tmp_path: Path, agent: str, llm: ScriptedProvider | None = None) -> tuple[Engine, StubToolRunner]:
    (tmp_path / "shop.tools.abl").write_text(LIBRARY, encoding="utf-8")
    (tmp_path / "shop.agent.abl").write_text(agent, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None, [d.format() for d in diags]
    receipts = iter(["R-1", "R-2", "R-3"])
    tools = StubToolRunner({"charge_card": lambda amount, note="": {"receipt": next(receipts)},
                            "send_voucher": lambda email: {"sent": True},
                            "look_up": lambda code: {"found": True}}, convention="value")
    return Engine(program, llm, MemorySessionStore(), tools=tools), tools


def kinds(result, kind: str) -> list[dict]:
    return [e.data for e in result.events if e.type == kind]


def test_a_flow_call_runs_after_yes_with_the_approved_arguments(tmp_path):
    engine, tools = build(tmp_path, FLOW)
    first = engine.start()
    # confirm: never runs at once; the side-effecting charge asks first and does not run
    assert [t for t, _ in tools.calls] == ["look_up"]
    assert [m.text for m in first.messages] == [
        "I'm about to charge the customer's card (amount: 25, note: order X1). Shall I go ahead?"]
    asked = kinds(first, "tool_confirmation_requested")
    assert asked and asked[0]["tool"] == "charge_card" and asked[0]["args"] == {"amount": 25, "note": "order X1"}
    assert not [e for e in kinds(first, "tool_call") if e["tool"] == "charge_card"]

    second = engine.send(first.session_id, "yes please")
    assert [m.text for m in second.messages] == ["Paid: R-1."]
    assert tools.calls[-1] == ("charge_card", {"amount": 25, "note": "order X1"})
    assert kinds(second, "tool_confirmation_answered")[0]["answer"] == "yes"


def test_a_flow_call_the_user_declines_fails_without_running(tmp_path):
    engine, tools = build(tmp_path, FLOW)
    sid = engine.start().session_id
    result = engine.send(sid, "no, don't")
    assert [m.text for m in result.messages] == ["Nothing was charged."]
    assert [t for t, _ in tools.calls] == ["look_up"]
    charged = next(e for e in kinds(result, "tool_result") if e["tool"] == "charge_card")
    assert charged["status"] == "error" and "declined" in charged["error"]
    assert kinds(result, "tool_confirmation_answered")[0]["answer"] == "no"


def test_an_unrelated_message_declines_and_is_left_for_the_agent(tmp_path):
    engine, tools = build(tmp_path, FLOW)
    sid = engine.start().session_id
    result = engine.send(sid, "what are your opening hours?")
    assert kinds(result, "tool_confirmation_answered")[0]["answer"] == "other"
    assert [m.text for m in result.messages] == ["Nothing was charged."]
    assert [t for t, _ in tools.calls] == ["look_up"]
    # the confirmation did not take the message: it stays the agents' to handle
    assert not [e for e in kinds(result, "input_taken") if e["how"] == "confirmation"]


def test_a_reasoning_agents_call_waits_for_approval_and_immutable_params_need_new_approval(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello! How can I help?"},
        {"purpose": "reason", "call": "charge_card", "with": {"amount": 25}},
        # after "yes" the approved call runs and the model reads its result
        {"purpose": "reason", "reply": "Done, your receipt is R-1."},
        # the same amount again (another note): the approved amount is locked, so no new question
        {"purpose": "reason", "call": "charge_card", "with": {"amount": 25, "note": "tip"}},
        {"purpose": "reason", "reply": "Charged again: R-2."},
        # the model tries again with another amount: the amount is locked, the user is asked again
        {"purpose": "reason", "call": "charge_card", "with": {"amount": 30}},
        {"purpose": "reason", "reply": "All right, I won't charge 30."},
        # a tool with a question of its own; a message that is no answer reaches the model
        {"purpose": "reason", "call": "send_voucher", "with": {"email": "bo@example.com"}},
        {"purpose": "reason", "reply": "We open at nine."},
    ])
    engine, tools = build(tmp_path, AGENT, llm)
    sid = engine.start().session_id

    asked = engine.send(sid, "please charge 25 to my card")
    assert [m.text for m in asked.messages] == [
        "I'm about to charge the customer's card (amount: 25). Shall I go ahead?"]
    assert tools.calls == []

    done = engine.send(sid, "yes")
    assert tools.calls == [("charge_card", {"amount": 25})]
    assert [m.text for m in done.messages] == ["Done, your receipt is R-1."]
    transcript = llm.calls[2].messages
    assert any(m.role == "tool" and "R-1" in (m.content or "") for m in transcript)

    same = engine.send(sid, "charge 25 once more, as a tip")
    assert [m.text for m in same.messages] == ["Charged again: R-2."]
    assert tools.calls[-1] == ("charge_card", {"amount": 25, "note": "tip"})
    assert not kinds(same, "tool_confirmation_requested")

    again = engine.send(sid, "actually make it 30")
    assert [m.text for m in again.messages] == [
        "I'm about to charge the customer's card (amount: 30). Shall I go ahead?"]
    assert "amount changed" in kinds(again, "tool_confirmation_requested")[0]["why"]
    declined = engine.send(sid, "no")
    assert len(tools.calls) == 2
    assert [m.text for m in declined.messages] == ["All right, I won't charge 30."]
    tool_message = [m for m in llm.calls[6].messages if m.role == "tool"][-1]
    assert "declined" in tool_message.content

    voucher = engine.send(sid, "send me a voucher at bo@example.com")
    assert [m.text for m in voucher.messages] == ["Shall I send the voucher to bo@example.com?"]
    other = engine.send(sid, "when do you open tomorrow?")
    assert [t for t, _ in tools.calls] == ["charge_card", "charge_card"]  # the voucher was not sent
    assert [m.text for m in other.messages] == ["We open at nine."]
    last = llm.calls[-1].messages
    assert last[-1].role == "user" and last[-1].content == "when do you open tomorrow?"
    assert last[-2].role == "tool" and "did not approve" in last[-2].content
    llm.assert_finished()


def test_when_side_effects_asks_only_for_tools_with_side_effects():
    from frontdesk.ir.models import ToolConfirmation, ToolDef
    from frontdesk.runtime.tools.confirmation import needs_confirmation

    def tool(**confirmation) -> ToolDef:
        return ToolDef(name="t", confirmation=ToolConfirmation(**confirmation))

    assert needs_confirmation(tool(require="always"))
    assert needs_confirmation(tool(require="when_side_effects", side_effects=True))
    assert not needs_confirmation(tool(require="when_side_effects", side_effects=False))
    assert not needs_confirmation(tool(require="never", side_effects=True))
    assert not needs_confirmation(tool(side_effects=True))  # no policy: the runtime adds none
    assert not needs_confirmation(ToolDef(name="t"))
