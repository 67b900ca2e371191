"""ABL CONSTRAINTS and GUARDRAILS at run time (runtime/rules.py), on compiled ABL programs."""

from __future__ import annotations

from pathlib import Path

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

REFUND = '''AGENT: Refund_Desk
GOAL: "Refund orders"

TOOLS:
  lookup_order(order_id: string) -> {status: string, total: number}
  process_refund(order_id: string) -> {refund_id: string}

GATHER:
  order_id:
    prompt: "Your order number?"
    type: string
    required: true

CONSTRAINTS:
  refunds:
    - REQUIRE order_status != "already_refunded"
      ON_FAIL: "This order has already been refunded."
    - REQUIRE order_total <= 1000 BEFORE calling process_refund
      ON_FAIL: "Refunds over 1000 need a manager."

GUARDRAILS:
  no_card_numbers:
    kind: input
    check: "abl.contains_pii(content)"
    action: block
    msg: "Please don't share card numbers here."
  no_pii_output:
    kind: output
    check: "abl.contains_email(content)"
    action: redact

FLOW:
  ask -> look -> refund

  ask:
    GATHER:
      - order_id: required
    THEN: look

  look:
    CALL: lookup_order(order_id)
    SET:
      order_status = lookup_order.status
      order_total = lookup_order.total
    RESPOND: "Order {{order_id}}: {{order_status}}. Write to help@shop.test for anything else."
    THEN: refund

  refund:
    CALL: process_refund(order_id)
    ON_SUCCESS:
      RESPOND: "Refunded: {{process_refund.refund_id}}."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "The refund did not go through."
      THEN: COMPLETE
'''


def engine(tmp_path: Path, answers: dict, extract: str) -> tuple[Engine, StubToolRunner]:
    (tmp_path / "refund.agent.abl").write_text(REFUND, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None, [d.format() for d in diags]
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"args": {"order_id": extract}}}])
    tools = StubToolRunner(answers, convention="value")
    return Engine(program, llm, MemorySessionStore(), tools=tools), tools


def events(result, kind: str) -> list:
    return [e for e in result.events if e.type == kind]


def test_an_input_guardrail_blocks_the_message_before_any_agent_or_tool(tmp_path):
    eng, tools = engine(tmp_path, {}, "A-1")
    sid = eng.start().session_id
    result = eng.send(sid, "my card is 4111 1111 1111 1111")
    assert [m.text for m in result.messages] == ["Please don't share card numbers here."]
    assert not tools.calls and events(result, "input_blocked")
    assert events(result, "guardrail_check")[0].data["fired"] is True


def test_a_before_calling_constraint_stops_the_tool_and_an_output_guardrail_redacts(tmp_path):
    eng, tools = engine(tmp_path, {"lookup_order": {"status": "paid", "total": 2500},
                                   "process_refund": {"refund_id": "R-9"}}, "A-1")
    sid = eng.start().session_id
    result = eng.send(sid, "order A-1")
    texts = [m.text for m in result.messages]
    assert texts[0] == "Order A-1: paid. Write to [REDACTED] for anything else."
    assert "Refunds over 1000 need a manager." in texts[1] and texts[-1] == "The refund did not go through."
    assert [t for t, _ in tools.calls] == ["lookup_order"]  # process_refund never ran
    assert events(result, "tool_intercepted")
    failed = [e.data["constraint"] for e in events(result, "constraint_check") if not e.data["passed"]]
    assert any("order_total <= 1000" in c for c in failed)


def test_a_turn_constraint_sends_its_message_when_the_state_breaks_it(tmp_path):
    eng, tools = engine(tmp_path, {"lookup_order": {"status": "already_refunded", "total": 20},
                                   "process_refund": {"refund_id": "R-9"}}, "A-2")
    sid = eng.start().session_id
    result = eng.send(sid, "order A-2")
    assert result.messages[-1].text == "This order has already been refunded."
    assert [t for t, _ in tools.calls] == ["lookup_order", "process_refund"]


def test_a_constraint_on_values_not_given_yet_does_not_fire(tmp_path):
    eng, _ = engine(tmp_path, {}, "A-1")
    started = eng.start()
    assert [m.text for m in started.messages] == ["Your order number?"]
    assert not [e for e in events(started, "constraint_check") if not e.data["passed"]]


MEMORY = '''AGENT: Trip_Planner
GOAL: "Plan trips"

MEMORY:
  session:
    - attempts
      INITIAL: 0
      RESET: per_session
  persistent:
    - PATH: user.past_destinations
      SCOPE: user
      ACCESS: readwrite
    - PATH: project.greeting
      SCOPE: project
      ACCESS: read
  remember:
    - WHEN: booked == true
      STORE: destination -> user.past_destinations

FLOW:
  ask -> book

  ask:
    PRESENT: "Last time: {{user.past_destinations}}. Attempts: {{attempts}}."
    GATHER:
      - destination:
          REQUIRED: true
          PROMPT: "Where to?"
    THEN: book

  book:
    SET:
      booked = true
      attempts = attempts + 1
      project.greeting = "hacked"
    RESPOND: "Booked {{destination}}."
    THEN: COMPLETE
'''


def test_memory_initial_values_and_remember_triggers_across_sessions(tmp_path):
    from frontdesk.store.longterm import DictMemoryStore

    (tmp_path / "trip.agent.abl").write_text(MEMORY, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None, [d.format() for d in diags]
    memory = DictMemoryStore()

    def chat(place: str) -> list[str]:
        llm = ScriptedProvider([{"purpose": "understand", "call": "understand",
                                 "with": {"args": {"destination": place}}}])
        engine = Engine(program, llm, MemorySessionStore(), memory=memory)
        first = engine.start(user_id="ada")
        second = engine.send(first.session_id, place)
        return [m.text for m in first.messages + second.messages]

    assert chat("Lisbon") == ["Last time: (none). Attempts: 0.", "Where to?", "Booked Lisbon."]
    assert memory.get("user", "ada", "past_destinations") == "Lisbon"
    assert chat("Oslo")[0] == "Last time: Lisbon. Attempts: 0."
    assert memory.get("user", "ada", "past_destinations") == "Oslo"
    assert memory.get("project", "project", "greeting") is None  # ACCESS: read: the SET was refused


COMPLETING = '''AGENT: Refund_Agent
GOAL: "Process refunds"

TOOLS:
  process_refund(order_id: string) -> {refund_id: string, amount: number}

GATHER:
  order_id:
    prompt: "Your order number?"
    type: string
    required: true

COMPLETE:
  - WHEN: process_refund.refund_id IS SET
    RESPOND: "Your refund {{process_refund.refund_id}} of {{process_refund.amount}} is on its way."
'''


def test_a_reasoning_agent_completes_when_its_complete_condition_holds(tmp_path):
    (tmp_path / "refund.agent.abl").write_text(COMPLETING, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None, [d.format() for d in diags]
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello! What is your order number?"},
        {"purpose": "reason", "calls": [{"name": "process_refund", "arguments": {"order_id": "A-1"}}]},
    ])
    tools = StubToolRunner({"process_refund": {"refund_id": "R-7", "amount": 30}}, convention="value")
    engine = Engine(program, llm, MemorySessionStore(), tools=tools)
    sid = engine.start().session_id
    result = engine.send(sid, "refund order A-1")
    assert [m.text for m in result.messages] == ["Your refund R-7 of 30 is on its way."]
    assert result.ended  # the entry agent completed: the session is over
    llm.assert_finished()  # no model call after the task was complete


def test_a_supervisors_handoff_rules_reach_the_routing_model(tmp_path):
    (tmp_path / "hub.agent.abl").write_text('''SUPERVISOR: Support_Hub
GOAL: "Route customers to the right specialist"

HANDOFF:
  - TO: Billing_Support
    WHEN: user asks about invoices, charges, or refunds
  - TO: Shipping_Agent
    WHEN: user asks about delivery, tracking, or shipments
''', encoding="utf-8")
    (tmp_path / "billing.agent.abl").write_text('AGENT: Billing_Support\nGOAL: "Resolve billing questions"\n',
                                                encoding="utf-8")
    (tmp_path / "shipping.agent.abl").write_text('AGENT: Shipping_Agent\nGOAL: "Track parcels"\n',
                                                 encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and program.entry == "Support_Hub", [d.format() for d in diags]
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "Shipping_Agent"}},
        {"purpose": "reason", "reply": "Your parcel is on its way."},
    ])
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "where is my package?")
    assert result.messages[-1].text == "Your parcel is on its way."
    assert result.active_agent == "Shipping_Agent"
    shown = llm.calls[0].messages[0].content
    assert "route here when: user asks about delivery, tracking, or shipments" in shown


ERRORS = '''AGENT: Booker
GOAL: "Book rooms"

TOOLS:
  book_room(room: string) -> {booking_id: string}

ON_ERROR:
  tool_error:
    RESPOND: "The booking system is having trouble. I'm passing you to a colleague."
    RETRY: 2
    THEN: ESCALATE with REASON: "Service unavailable"

FLOW:
  book:
    CALL: book_room("suite")
    RESPOND: "Booked: {{book_room.booking_id}}."
    THEN: COMPLETE
'''


def test_on_error_retries_then_says_its_words_and_escalates(tmp_path):
    (tmp_path / "booker.agent.abl").write_text(ERRORS, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None, [d.format() for d in diags]
    calls = []

    def flaky(room):
        calls.append(room)
        if len(calls) < 3:
            raise RuntimeError("busy")
        return {"booking_id": "B-1"}

    engine = Engine(program, None, MemorySessionStore(), tools=StubToolRunner({"book_room": flaky}, convention="value"))
    result = engine.start()
    assert [m.text for m in result.messages] == ["Booked: B-1."] and len(calls) == 3  # two retries were enough

    calls.clear()
    always = StubToolRunner({"book_room": lambda room: (_ for _ in ()).throw(RuntimeError("down"))}, convention="value")
    engine = Engine(program, None, MemorySessionStore(), tools=always)
    result = engine.start()
    assert [m.text for m in result.messages] == [
        "The booking system is having trouble. I'm passing you to a colleague."]
    assert engine.load_state(result.session_id).status == "escalated"
    assert [e.data["attempt"] for e in result.events if e.data.get("action") == "retry after a tool error"] == [1, 2]


def test_a_named_template_is_said_in_the_variant_of_the_sessions_channel(tmp_path):
    (tmp_path / "greet.agent.abl").write_text('''AGENT: Greeter
GOAL: "Greet"

TEMPLATES:
  welcome:
    DEFAULT: "Welcome to our store."
    SLACK: "*Welcome* to our store :wave:"
  bye:
    DEFAULT: "Bye {{name}}!"

ON_START:
  RESPOND: TEMPLATE(welcome)

FLOW:
  ask:
    GATHER:
      - name:
          REQUIRED: true
          PROMPT: "Your name?"
    RESPOND: TEMPLATE(bye)
    THEN: COMPLETE
''', encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    engine = Engine(program, None, MemorySessionStore())
    assert [m.text for m in engine.start(channel="slack").messages] == ["*Welcome* to our store :wave:", "Your name?"]
    assert [m.text for m in engine.start(channel="web").messages] == ["Welcome to our store.", "Your name?"]
