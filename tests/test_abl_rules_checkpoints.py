"""CONSTRAINTS at flow step boundaries, WARN rules and `constraint_failures`, and hostile rules: checks
and patterns that fail at run time are events, never tracebacks (runtime/rules/)."""

from __future__ import annotations

from pathlib import Path

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

CONSTRAINTS:
{constraints}

FLOW:
  ask:
    REASONING: false
    GATHER:
      - qty: required
      STRATEGY: pattern
    THEN: order

  order:
    REASONING: false
    RESPOND: "Placing your order of {{qty}}."
    CALL: place_order(qty)
    ON_SUCCESS:
      RESPOND: "Ordered: {{place_order.order_id}}."
      THEN: COMPLETE

  bulk:
    REASONING: false
    RESPOND: "Orders over 5 go through our bulk desk."
    THEN: COMPLETE
'''


def shop(tmp_path: Path, constraints: str):
    (tmp_path / "shop.agent.abl").write_text(SHOP.replace("{constraints}", constraints), encoding="utf-8")
    program, diags = load_abl(tmp_path, entry="Shop")
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    tools = StubToolRunner({"place_order": {"order_id": "O-1"}}, convention="value")
    store = MemorySessionStore()
    engine = Engine(program, None, store, tools=tools)
    return engine, tools, store, engine.start().session_id


def texts(result) -> list[str]:
    return [m.text for m in result.messages]


def kinds(result, kind: str) -> list:
    return [e for e in result.events if e.type == kind]


def drafted(result) -> list[str]:
    """Everything the bot drafted this turn, including what a rewind took back."""
    return [e.data["text"] for e in kinds(result, "bot_message")]


# ---- step boundaries ------------------------------------------------------------------------------------


def test_goto_at_a_step_boundary_runs_neither_the_next_step_nor_its_tool(tmp_path):
    eng, tools, _, sid = shop(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL:
      RESPOND: "That is a bulk order."
      GOTO: bulk''')
    result = eng.send(sid, "9")
    assert texts(result) == ["That is a bulk order.", "Orders over 5 go through our bulk desk."]
    assert drafted(result) == texts(result)  # nothing said and then taken back
    assert tools.calls == []  # the order step's tool never ran on the value the rule refuses
    assert not any(e.data.get("step") == "order" for e in kinds(result, "flow_transition"))
    check = kinds(result, "constraint_check")[0]
    assert check.data["passed"] is False and check.data["at"] == "step order"
    assert kinds(result, "constraint_action")[0].data["checkpoint"] == "step order"
    assert eng.load_state(sid).system["constraint_failures"] == 1  # acted on once, not again at the end


def test_collect_at_a_step_boundary_asks_again_before_the_next_step(tmp_path):
    eng, tools, _, sid = shop(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL:
      RESPOND: "At most 5, please."
      COLLECT: [qty]''')
    result = eng.send(sid, "9")
    assert drafted(result) == texts(result) == ["At most 5, please.", "How many would you like?"]
    assert tools.calls == []
    result = eng.send(sid, "3")
    assert texts(result) == ["Placing your order of 3.", "Ordered: O-1."]
    assert [c[1] for c in tools.calls] == [{"qty": 3}]


def test_retry_at_a_step_boundary_reruns_the_step_it_leaves(tmp_path):
    eng, tools, _, sid = shop(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL:
      RESPOND: "Let's try that again."
      COLLECT: [qty]
      RETRY: true''')
    result = eng.send(sid, "7")
    assert drafted(result) == ["Let's try that again.", "How many would you like?"]
    assert tools.calls == []


def test_a_rule_that_only_speaks_keeps_its_end_of_turn_timing(tmp_path):
    eng, _tools, _, sid = shop(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL: "Noted: that is a large order."''')
    result = eng.send(sid, "9")
    assert texts(result) == ["Placing your order of 9.", "Ordered: O-1.", "Noted: that is a large order."]
    assert "at" not in kinds(result, "constraint_check")[0].data


def test_a_passing_rule_at_the_boundary_changes_nothing(tmp_path):
    eng, _tools, _, sid = shop(tmp_path, '''  - REQUIRE qty <= 5
    ON_FAIL:
      GOTO: bulk''')
    result = eng.send(sid, "2")
    assert texts(result) == ["Placing your order of 2.", "Ordered: O-1."]
    assert not eng.load_state(sid).system.get("constraint_failures")


# ---- WARN --------------------------------------------------------------------------------------------------


def test_a_failed_warn_is_a_soft_failure_not_counted_in_constraint_failures(tmp_path):
    eng, _tools, _, sid = shop(tmp_path, '''  - WARN qty <= 5
    ON_FAIL: "Large order."
  - REQUIRE qty <= 8
    ON_FAIL: "We sell at most 8."''')
    result = eng.send(sid, "9")
    system = eng.load_state(sid).system
    assert system["_constraint_warnings"] == ["Large order."]
    assert system["constraint_failures"] == 1  # the REQUIRE only
    warn = next(e for e in kinds(result, "constraint_check") if e.data["kind"] == "warn")
    assert warn.data["passed"] is False and warn.data["soft"] is True
    assert texts(result).count("Large order.") == 1  # said once (3.8.3: ON_FAIL's message), and recorded


# ---- hostile rules ------------------------------------------------------------------------------------------

HELPER = '''AGENT: Desk
GOAL: "Answer questions"

GUARDRAILS:
{guards}

FLOW:
  ask:
    REASONING: false
    RESPOND: "What do you need?"
    ON_INPUT:
      - ELSE:
        SET: query = input
        THEN: answer

  answer:
    REASONING: false
    RESPOND: "You said: {{query}}"
    THEN: ask
'''


def desk(tmp_path: Path, guards: str):
    (tmp_path / "desk.agent.abl").write_text(HELPER.replace("{guards}", guards), encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    engine = Engine(program, None, MemorySessionStore())
    return engine, engine.start().session_id


def test_a_cel_check_that_fails_at_run_time_is_an_error_event_and_passes(tmp_path):
    eng, sid = desk(tmp_path, '''  numeric:
    kind: input
    check: "int(content) > 5"
    action: block''')
    result = eng.send(sid, "not a number")
    assert texts(result) == ["You said: not a number", "What do you need?"]
    errors = [e for e in kinds(result, "error") if e.data.get("where") == "guardrail numeric"]
    assert errors and "int(content) > 5" in errors[0].data["message"]
    assert kinds(result, "guardrail_check")[0].data["fired"] is False


def test_an_invalid_pattern_in_a_check_is_an_error_event(tmp_path):
    eng, sid = desk(tmp_path, '''  odd:
    kind: input
    check: "abl.matches_pattern(content, '([a-z')"
    action: redact''')
    result = eng.send(sid, "hello")
    assert texts(result) == ["You said: hello", "What do you need?"]
    assert any("invalid regular expression" in e.data["message"] for e in kinds(result, "error"))


def test_a_catastrophic_pattern_is_stopped_by_the_time_limit(tmp_path):
    eng, sid = desk(tmp_path, '''  slow:
    kind: input
    patterns: ["(x+x+)+y"]
    action: block
  slow_check:
    kind: input
    check: "abl.matches_pattern(content, '(x+x+)+y')"
    action: block''')
    # the stdlib `re` takes practically for ever on this; how long the turn takes is measured by
    # bench/catastrophic_pattern.py (a timing belongs in a benchmark, not in a test on a shared machine)
    result = eng.send(sid, "x" * 5000)
    assert texts(result)[0].startswith("You said: xxx")
    slow = [e for e in kinds(result, "error") if "took more than" in e.data.get("message", "")]
    assert {e.data["where"] for e in slow} == {"guardrail slow", "guardrail slow_check"}


def test_a_failing_when_of_a_constraint_is_an_error_not_a_traceback(tmp_path):
    eng, _tools, _, sid = shop(tmp_path, '''  - REQUIRE qty <= 5
    WHEN: qty / 0 > 1
    ON_FAIL:
      GOTO: bulk''')
    result = eng.send(sid, "2")
    assert texts(result) == ["Placing your order of 2.", "Ordered: O-1."]
