"""Every ON_FAIL action of ABL CONSTRAINTS (abl-specification 3.8.3), the BEFORE checkpoints, WHEN gates
and the system variables `constraint_failures` / `_constraint_warnings` (8.8), on compiled programs
that run offline (pattern GATHER, no model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

SHOP = '''AGENT: Shop
GOAL: "Take orders"

TOOLS:
  place_order(qty: number) -> {order_id: string}

GATHER:
  qty:
    prompt: "How many would you like?"
    type: number
    required: true

TEMPLATES:
  too_many:
    DEFAULT: "At most {{limit}} per order, not {{qty}}."
    SLACK: "*At most {{limit}}* per order."
  handover:
    DEFAULT: "{{#if qty}}Your order of {{qty}} goes to a colleague.{{/if}}"

MESSAGES:
  constraint_blocked: "That order cannot go through."
  escalation_notice: TEMPLATE(handover)

MEMORY:
  session:
    - limit
      INITIAL: 5

CONSTRAINTS:
{constraints}

FLOW:
  ask:
    REASONING: false
    GATHER:
      - qty: required
      STRATEGY: pattern
    THEN: confirm

  confirm:
    REASONING: false
    RESPOND: "Order {{qty}}? (yes/no)"
    ON_INPUT:
      - IF: yes
        THEN: order
      - ELSE:
        RESPOND: "Cancelled."
        THEN: COMPLETE

  order:
    REASONING: false
    CALL: place_order(qty)
    ON_SUCCESS:
      RESPOND: "Ordered: {{place_order.order_id}}."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "The order did not go through."
      THEN: COMPLETE

  bulk:
    REASONING: false
    RESPOND: "Orders over 5 go through our bulk desk: bulk@shop.test."
    THEN: COMPLETE
'''

MANAGER = '''AGENT: Manager
GOAL: "Approve large orders"

FLOW:
  hello:
    REASONING: false
    RESPOND: "A manager will look at your order of {{qty}}."
    THEN: COMPLETE
'''


def run(tmp_path: Path, constraints: str, channel: str = "") -> tuple[Engine, StubToolRunner, str]:
    (tmp_path / "shop.agent.abl").write_text(SHOP.replace("{constraints}", constraints), encoding="utf-8")
    (tmp_path / "manager.agent.abl").write_text(MANAGER, encoding="utf-8")
    program, diags = load_abl(tmp_path, entry="Shop")
    assert program is not None and not [d for d in diags if d.severity == "error"], [d.format() for d in diags]
    tools = StubToolRunner({"place_order": {"order_id": "O-1"}}, convention="value")
    engine = Engine(program, None, MemorySessionStore(), tools=tools)
    sid = engine.start(channel=channel).session_id
    return engine, tools, sid


def texts(result) -> list[str]:
    return [m.text for m in result.messages]


def kinds(result, kind: str) -> list:
    return [e for e in result.events if e.type == kind]


def test_on_fail_message_is_said_after_the_turn_and_counted(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL: "We sell at most 5 at a time."''')
    result = eng.send(sid, "9")
    assert texts(result) == ["Order 9? (yes/no)", "We sell at most 5 at a time."]
    state = eng.load_state(sid)
    assert state.system["constraint_failures"] == 1
    assert [e.data["passed"] for e in kinds(result, "constraint_check")] == [False]
    assert kinds(result, "constraint_action")[0].data["action"] == "message"


def test_on_fail_escalate_hands_the_session_to_a_person(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL: ESCALATE "Bulk order"''')
    result = eng.send(sid, "9")
    assert eng.load_state(sid).status == "escalated"
    assert kinds(result, "session_escalated")[0].data["reason"] == "Bulk order"
    assert texts(result)[-1] == "Your order of 9 goes to a colleague."  # MESSAGES -> TEMPLATE, Handlebars


def test_on_fail_handoff_gives_the_conversation_to_the_agent_named(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL: HANDOFF Manager''')
    result = eng.send(sid, "9")
    assert "A manager will look at your order of 9." in texts(result)
    assert any(e.agent == "Manager" for e in kinds(result, "agent_started"))
    assert kinds(result, "constraint_action")[0].data["action"] == "HANDOFF Manager"


def test_on_fail_block_drops_the_drafts_and_says_the_blocked_message(tmp_path):
    eng, _, sid = run(tmp_path, '''  - RESTRICT qty <= 5
    ON_FAIL: BLOCK''')
    result = eng.send(sid, "9")
    assert texts(result) == ["That order cannot go through."]  # MESSAGES.constraint_blocked


def test_structured_respond_and_collect_clear_the_field_and_ask_again(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL:
      RESPOND: "Please pick at most 5."
      COLLECT: [qty]''')
    result = eng.send(sid, "9")
    assert texts(result) == ["Please pick at most 5.", "How many would you like?"]
    assert eng.load_state(sid).variables["session"]["qty"] is None
    result = eng.send(sid, "3")  # the flow goes on from the question
    assert texts(result) == ["Order 3? (yes/no)"]


def test_structured_goto_moves_the_flow_to_the_step(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL:
      RESPOND: "Too many."
      GOTO: bulk''')
    result = eng.send(sid, "9")
    assert texts(result) == ["Too many.", "Orders over 5 go through our bulk desk: bulk@shop.test."]
    assert any(e.data.get("step") == "bulk" for e in kinds(result, "flow_transition"))


def test_structured_retry_runs_the_current_step_again(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL:
      RESPOND: "Large order, please confirm."
      RETRY: true''')
    result = eng.send(sid, "9")
    assert texts(result) == ["Large order, please confirm.", "Order 9? (yes/no)"]
    assert kinds(result, "constraint_action")[0].data["action"] == "message + RETRY"


def test_on_fail_template_is_rendered_in_the_channels_variant(tmp_path):
    rule = '''  - REQUIRE qty <= limit
    ON_FAIL: TEMPLATE(too_many)'''
    eng, _, sid = run(tmp_path, rule)
    assert texts(eng.send(sid, "9"))[-1] == "At most 5 per order, not 9."
    eng, _, sid = run(tmp_path, rule, channel="slack")
    assert texts(eng.send(sid, "9"))[-1] == "*At most 5* per order."


def test_before_calling_stops_the_tool_and_can_hand_off(tmp_path):
    eng, tools, sid = run(tmp_path, '''  - REQUIRE qty <= 5 BEFORE calling place_order
    ON_FAIL: HANDOFF Manager''')
    assert texts(eng.send(sid, "9")) == ["Order 9? (yes/no)"]  # an every-turn rule would have spoken here
    result = eng.send(sid, "yes")
    assert not tools.calls
    assert "A manager will look at your order of 9." in texts(result)
    assert kinds(result, "tool_intercepted")


def test_before_returning_results_is_checked_when_the_agent_finishes(tmp_path):
    eng, tools, sid = run(tmp_path, '''  - REQUIRE qty <= 5 BEFORE returning results
    ON_FAIL: HANDOFF Manager''')
    assert texts(eng.send(sid, "9")) == ["Order 9? (yes/no)"]
    result = eng.send(sid, "yes")
    assert [t for t, _ in tools.calls] == ["place_order"]
    assert texts(result) == ["Ordered: O-1.", "A manager will look at your order of 9."]
    check = [e for e in kinds(result, "constraint_check") if e.data["checkpoint"] == "before_results"]
    assert check and check[0].data["passed"] is False


def test_when_gates_a_constraint(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 2
    WHEN: limit < 5
    ON_FAIL: "Gated."''')
    result = eng.send(sid, "9")
    assert "Gated." not in texts(result)
    assert kinds(result, "constraint_check")[0].data.get("gated") is True


def test_warn_records_a_constraint_warning_and_goes_on(tmp_path):
    eng, _, sid = run(tmp_path, '''  - WARN qty <= 3
    ON_FAIL: "Large order."''')
    result = eng.send(sid, "4")
    assert texts(result) == ["Large order.", "Order 4? (yes/no)"]  # said before the turn's question
    state = eng.load_state(sid)
    assert state.system["_constraint_warnings"] == ["Large order."]
    assert "constraint_failures" not in state.system  # a soft failure is no violation


def test_constraint_failures_can_be_read_by_another_constraint(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL:
      RESPOND: "At most 5."
      COLLECT: [qty]
  - LIMIT constraint_failures < 2
    ON_FAIL: ESCALATE''')
    assert eng.load_state(sid).status != "escalated"
    eng.send(sid, "9")
    assert eng.load_state(sid).status != "escalated"
    result = eng.send(sid, "8")
    assert eng.load_state(sid).status == "escalated"
    assert eng.load_state(sid).system["constraint_failures"] >= 2
    assert kinds(result, "session_escalated")


@pytest.mark.parametrize("text", ["3"])
def test_a_passing_constraint_changes_nothing(tmp_path, text):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL: BLOCK''')
    result = eng.send(sid, text)
    assert texts(result) == ["Order 3? (yes/no)"]
    assert "constraint_failures" not in eng.load_state(sid).system


def test_on_fail_delegate_runs_the_agent_and_comes_back(tmp_path):
    eng, _, sid = run(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL: DELEGATE -> Manager''')
    result = eng.send(sid, "9")
    assert "A manager will look at your order of 9." in texts(result)
    assert kinds(result, "thread_return") and result.active_agent == "Shop"  # Shop waits for its answer again
