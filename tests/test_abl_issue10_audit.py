"""Audit of issue 10 (the ABL runtime): behaviours the other ABL tests exercised only in passing or not
at all. ON_INPUT conditions read a frozen snapshot (a regex that matched inside a condition that failed
leaves `match` alone for the next case); CALL ... WITH / AS with built-ins in the mapped values, the
block form of SET and a comma list for CLEAR; ON_FAIL's `{{result.error}}` says why the call failed;
CONSTRAINTS run in the order written; an ON_ERROR handler named after the tool wins over `tool_error`;
ROUTING INTENT words reach the routing model; EXECUTION timeouts.tool_timeout_ms limits the agent's
tool calls; a CALL names a library tool's positional arguments by its signature; one supervised
conversation's trace names the events of abl-core-concepts; an anchored validation pattern reads a
whole code only; "in 3 days" is a date and not a number too; ON_START runs its CALL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.runtime.tools.runner import ProgramToolRunner
from frontdesk.store.memory import MemorySessionStore

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


class Chat:
    """One session of a compiled ABL project, tools answered by a stub (or `tools`), the clock fixed."""

    def __init__(self, folder: Path, files: dict[str, str], answers: dict | None = None, llm=None,
                 tools=None, entry: str | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        program, diags = load_abl(folder, entry=entry) if entry else load_abl(folder)
        assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
        self.program = program
        self.tools = tools if tools is not None else StubToolRunner(answers or {}, convention="value")
        self.engine = Engine(program, llm, MemorySessionStore(), tools=self.tools, clock=lambda: NOW.timestamp())
        started = self.engine.start()
        self.sid = started.session_id
        self.opening = [m.text for m in started.messages]
        self.last = started

    def say(self, text: str) -> list[str]:
        self.last = self.engine.send(self.sid, text)
        return [m.text for m in self.last.messages]

    def kinds(self, kind: str) -> list[dict]:
        return [e.data for e in self.last.events if e.type == kind]

    def value(self, name: str):
        return self.engine.load_state(self.sid).variables.get("session", {}).get(name)


# ---- ON_INPUT: a first-match dispatcher on a frozen snapshot (3.14.3, 8.10) ---------------------------

FROZEN = '''AGENT: Rooms
GOAL: "Rooms"

FLOW:
  pick:
    RESPOND: "Pick a room."
    ON_INPUT:
      - IF: input matches /room\\s*(\\d+)/ AND input.contains("suite")
        SET: kind = "suite"
        THEN: done
      - IF: match.1 == "7"
        SET: kind = "leaked from the case before"
        THEN: done
      - ELSE:
        RESPOND: "Which room?"
        THEN: pick

  done:
    RESPOND: "kind={{kind}} room={{match.1}}"
    THEN: COMPLETE
'''


def test_on_input_cases_read_a_frozen_snapshot_so_a_failed_case_leaks_no_match(tmp_path):
    chat = Chat(tmp_path, {"r.agent.abl": FROZEN})
    # the first case's regex matches "room 7", but the case fails (no "suite"): its groups must not be
    # what the second case reads, so the ELSE answers
    assert chat.say("room 7 please") == ["Which room?", "Pick a room."]
    assert chat.value("kind") is None
    assert chat.engine.load_state(chat.sid).system.get("match") is None
    # the case that holds sets match, and only then
    assert chat.say("the suite in room 7") == ["kind=suite room=7"]


# ---- CALL WITH / AS, SET block form, CLEAR list (3.14.7 - 3.14.9) --------------------------------------

BALANCE = '''AGENT: Bank
GOAL: "Balances"

TOOLS:
  get_balance(account_id: string, currency: string) -> {amount: number}

FLOW:
  start:
    SET:
      preferred_currency = COALESCE(preferred_currency, "usd")
      acct = "ac-42"
      request_id = UNIQUE_ID(6)
    THEN: fetch

  fetch:
    CALL: get_balance
      WITH:
        account_id: UPPER(acct)
        currency: UPPER(preferred_currency)
      AS: balanceResult
    ON_SUCCESS:
      RESPOND: "{{balanceResult.amount}} {{preferred_currency}}, id of {{LENGTH(request_id)}}"
      THEN: wipe
    ON_FAIL:
      RESPOND: "Sorry, the balance failed: {{result.error}}"
      THEN: COMPLETE

  wipe:
    CLEAR: acct, request_id
    RESPOND: "acct={{acct}} id={{request_id}} currency={{preferred_currency}}"
    THEN: COMPLETE
'''


def test_call_with_maps_named_parameters_and_as_binds_the_result(tmp_path):
    chat = Chat(tmp_path, {"b.agent.abl": BALANCE}, {"get_balance": lambda account_id, currency: {"amount": 12}})
    assert chat.tools.calls == [("get_balance", {"account_id": "AC-42", "currency": "USD"})]
    assert chat.opening == ["12 usd, id of 6", "acct=(none) id=(none) currency=usd"]
    assert chat.value("balanceResult") == {"amount": 12}
    assert chat.value("acct") is None and chat.value("request_id") is None  # CLEAR: a, b


def test_on_fail_says_why_the_call_failed_with_result_error(tmp_path):
    def down(account_id, currency):
        raise RuntimeError("core banking is down")

    chat = Chat(tmp_path, {"b.agent.abl": BALANCE}, {"get_balance": down})
    [said] = chat.opening
    assert said.startswith("Sorry, the balance failed: ")
    reason = said.removeprefix("Sorry, the balance failed: ")
    # the failure's message, as the tool_result event records it (not "True")
    [result] = chat.kinds("tool_result")
    assert reason == result["message"] and reason not in ("True", "true", "")


def test_result_error_in_a_condition_is_still_whether_the_call_failed(tmp_path):
    text = BALANCE.replace('''    ON_SUCCESS:
      RESPOND: "{{balanceResult.amount}} {{preferred_currency}}, id of {{LENGTH(request_id)}}"
      THEN: wipe
    ON_FAIL:
      RESPOND: "Sorry, the balance failed: {{result.error}}"
      THEN: COMPLETE''', '''    ON_RESULT:
      - IF: get_balance.error == true
        RESPOND: "failed"
        THEN: COMPLETE
      - ELSE:
        RESPOND: "fine"
        THEN: COMPLETE''')
    assert "ON_RESULT" in text
    ok = Chat(tmp_path / "ok", {"b.agent.abl": text}, {"get_balance": {"amount": 1}})
    assert ok.opening == ["fine"]
    broken = Chat(tmp_path / "broken", {"b.agent.abl": text}, {})
    assert broken.opening == ["failed"]


# ---- CONSTRAINTS in order; ON_ERROR by the tool's name -------------------------------------------------

ORDERS = '''AGENT: Shop
GOAL: "Orders"

TOOLS:
  place(qty: number) -> {id: string}
  ship(qty: number) -> {id: string}

GATHER:
  qty:
    prompt: "How many?"
    type: number
    required: true

CONSTRAINTS:
  - REQUIRE qty <= 10
    ON_FAIL: "First rule: at most 10."
  - REQUIRE qty <= 5
    ON_FAIL: "Second rule: at most 5."

ON_ERROR:
  tool_error:
    RESPOND: "Some tool failed."
  place:
    RESPOND: "The order desk is down."

FLOW:
  ask:
    GATHER:
      - qty: required
      STRATEGY: pattern
    THEN: order

  order:
    CALL: place(qty)
    THEN: send

  send:
    CALL: ship(qty)
    RESPOND: "Done."
    THEN: COMPLETE
'''


def _fails(qty):
    raise RuntimeError("offline")


def test_constraints_are_checked_in_the_order_written_and_on_error_by_tool_name_wins(tmp_path):
    chat = Chat(tmp_path, {"s.agent.abl": ORDERS}, {"place": _fails, "ship": _fails})
    said = chat.say("20")
    # `place` has its own handler (written after tool_error, still preferred); `ship` falls to tool_error
    assert said[:3] == ["The order desk is down.", "Some tool failed.", "Done."]
    assert said[3:] == ["First rule: at most 10.", "Second rule: at most 5."]
    checks = chat.kinds("constraint_check")
    assert [c["constraint"] for c in checks] == ["REQUIRE qty <= 10", "REQUIRE qty <= 5"]
    assert [c["passed"] for c in checks] == [False, False]
    assert chat.engine.load_state(chat.sid).system["constraint_failures"] == 2
    # within the limits nothing is said
    calm = Chat(tmp_path / "calm", {"s.agent.abl": ORDERS}, {"place": {"id": "P1"}, "ship": {"id": "S1"}})
    assert calm.say("3") == ["Done."]
    assert [c["passed"] for c in calm.kinds("constraint_check")] == [True, True]


# ---- EXECUTION timeouts.tool_timeout_ms (7.11) ---------------------------------------------------------

SLOW = '''AGENT: Slow
GOAL: "Wait for a slow service"

EXECUTION:
  timeouts:
    tool_timeout_ms: 200

TOOLS:
  slow_lookup(ref: string) -> {ok: boolean}

ON_ERROR:
  tool_timeout:
    RESPOND: "The lookup took too long."

FLOW:
  go:
    CALL: slow_lookup("A1")
    ON_SUCCESS:
      RESPOND: "Looked up."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "No lookup."
      THEN: COMPLETE
'''


class RecordingRunner(StubToolRunner):
    def __init__(self, answers):
        super().__init__(answers, convention="value")
        self.limits: list[float | None] = []

    def call(self, tool, args, timeout=None):
        self.limits.append(timeout)
        return super().call(tool, args)


def test_the_agents_tool_timeout_reaches_the_tool_runner(tmp_path):
    runner = RecordingRunner({"slow_lookup": {"ok": True}})
    chat = Chat(tmp_path, {"s.agent.abl": SLOW}, tools=runner)
    assert chat.opening == ["Looked up."]
    assert runner.limits == [0.2]
    plain = RecordingRunner({"slow_lookup": {"ok": True}})
    Chat(tmp_path / "plain", {"s.agent.abl": SLOW.replace("EXECUTION:\n  timeouts:\n    tool_timeout_ms: 200\n\n", "")},
         tools=plain)
    assert plain.limits == [None]  # no limit of its own: the program's tools: settings decide


SLOW_PY = '''import threading

def slow_lookup(ref):
    threading.Event().wait(3)  # longer than the agent allows, shorter than the program's 30 s
    return {"ok": True}
'''


def test_a_python_tool_slower_than_the_agents_tool_timeout_is_a_tool_timeout(tmp_path):
    files = {"s.agent.abl": SLOW.replace("TOOLS:\n  slow_lookup(ref: string) -> {ok: boolean}\n\n", ""),
             "lookup.tools.abl": "TOOLS:\n  slow_lookup(ref: string) -> {ok: boolean}\n    python: lookup.py\n",
             "lookup.py": SLOW_PY}
    folder = tmp_path / "p"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    program, diags = load_abl(folder)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    engine = Engine(program, None, MemorySessionStore(), tools=ProgramToolRunner(program),
                    clock=lambda: NOW.timestamp())
    started = engine.start()
    assert [m.text for m in started.messages] == ["No lookup."]  # the step's ON_FAIL is the nearer handler
    [result] = [e.data for e in started.events if e.type == "tool_result"]
    assert result["status"] == "error" and "did not finish within 0.2 seconds" in result["error"]


def test_a_call_of_a_library_tool_names_its_positional_arguments_by_the_librarys_signature(tmp_path):
    files = {"s.agent.abl": SLOW.replace("TOOLS:\n  slow_lookup(ref: string) -> {ok: boolean}\n\n", ""),
             "lookup.tools.abl": "TOOLS:\n  slow_lookup(ref: string) -> {ok: boolean}\n"}
    assert "TOOLS" not in files["s.agent.abl"]  # the agent does not repeat the signature
    chat = Chat(tmp_path, files, {"slow_lookup": lambda ref: {"ok": ref == "A1"}})
    assert chat.tools.calls == [("slow_lookup", {"ref": "A1"})]
    assert chat.opening == ["Looked up."]


# ---- supervisors: ROUTING INTENT words, and the trace of abl-core-concepts -------------------------------

HUB = {
    "hub.agent.abl": '''SUPERVISOR: Hub
GOAL: "Route shop customers"

HANDOFF:
  - TO: Orders
    WHEN: user wants to order lamps
    RETURN: true
  - TO: Help
    WHEN: user asks what the shop sells or asks for help
    RETURN: false

ROUTING:
  - INTENT(buy a lamp, order lamps) -> Orders
  - INTENT(what do you sell, help me) -> Help
''',
    "orders.agent.abl": '''AGENT: Orders
GOAL: "Take lamp orders"

TOOLS:
  place(qty: number) -> {order_id: string}

CONSTRAINTS:
  - REQUIRE qty <= 5
    ON_FAIL: "At most 5 lamps."

FLOW:
  ask:
    GATHER:
      - qty:
          TYPE: number
          PROMPT: "How many lamps?"
      STRATEGY: pattern
    THEN: order

  order:
    CALL: place(qty)
    RESPOND: "Order {{place.order_id}} for {{qty}} lamps."
    THEN: COMPLETE
''',
    "help.agent.abl": '''AGENT: Help
GOAL: "Say what the shop sells"

FLOW:
  say:
    RESPOND: "We sell lamps."
    THEN: COMPLETE
'''}

CORE_EVENTS = ["execution.started", "handoff_match", "tool_call", "tool_result", "gather_extraction",
               "constraint_check", "flow_transition", "thread_return", "execution.completed"]


def test_routing_intents_reach_the_model_and_the_trace_names_the_core_concept_events(tmp_path):
    for name, text in HUB.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    llm = ScriptedProvider([
        {"purpose": "route", "expect": 'words like "buy a lamp", "order lamps"', "call": "route",
         "with": {"agent": "Orders"}},
        {"purpose": "understand", "expect": "switch:Help", "call": "understand", "with": {"choice": "switch:Help"}},
    ])
    tools = StubToolRunner({"place": {"order_id": "L-1"}}, convention="value")
    engine = Engine(program, llm, MemorySessionStore(), tools=tools, clock=lambda: NOW.timestamp())
    sid = engine.start().session_id
    turns = [engine.send(sid, text) for text in ("I want to buy lamps", "what do you sell?", "3")]
    assert [[m.text for m in t.messages] for t in turns] == [
        ["How many lamps?"], ["We sell lamps.", "How many lamps?"], ["Order L-1 for 3 lamps."]]
    llm.assert_finished()
    route = llm.calls[0].messages[0].content
    assert '(words like "what do you sell", "help me")' in route  # every member's INTENT words
    events = engine.store.events(sid)
    types = [e["type"] for e in events]
    for name in CORE_EVENTS:
        assert name in types, name
    # every turn is framed by execution.started ... execution.completed
    for turn in {e["turn"] for e in events if e["type"] == "user_message"}:
        of_turn = [e["type"] for e in events if e["turn"] == turn]
        assert of_turn.count("execution.started") == 1 and of_turn[-1] == "execution.completed", of_turn
    # and the events say why: the routing target, the thread that came back, the values read
    assert [e["data"]["target"] for e in events if e["type"] == "handoff_match"] == ["Orders", "Help"]
    returns = [(e["turn"], e["agent"], e["data"].get("reason")) for e in events if e["type"] == "thread_return"]
    assert (2, "Orders", "switch") in returns  # the waiting Orders thread resumed after Help
    assert (3, "Orders", "completed") in returns
    assert {"fields": {"qty": 3}, "by": "pattern"} in [e["data"] for e in events if e["type"] == "gather_extraction"]
    assert any(e["data"].get("passed") is True for e in events if e["type"] == "constraint_check")


# ---- GATHER by pattern: anchored validation patterns, days counted from today ---------------------------

ORDER_NO = '''AGENT: Refunds
GOAL: "Refunds"

GATHER:
  order_id:
    prompt: "Your order number?"
    type: string
    required: true
    validate:
      type: pattern
      rule: "^[Aa]-\\\\d{3}$"
      error: "Order numbers look like A-123."

FLOW:
  ask:
    GATHER:
      - order_id: required
      STRATEGY: pattern
    RESPOND: "Order {{order_id}}."
    THEN: COMPLETE
'''


def test_a_longer_code_is_not_cut_down_to_what_the_anchored_pattern_accepts(tmp_path):
    chat = Chat(tmp_path, {"r.agent.abl": ORDER_NO})
    assert chat.opening == ["Your order number?"]
    # ^A-\d{3}$: "A-1001" is not an order number, and not "A-100" either
    assert chat.say("A-1001") == ["Order numbers look like A-123.", "Your order number?"]
    assert chat.value("order_id") is None
    assert chat.say("it's a-100, thanks") == ["Order a-100."]


STAY = '''AGENT: Stay
GOAL: "Stays"

FLOW:
  ask:
    GATHER:
      - checkout:
          TYPE: date
          PROMPT: "Check-out?"
      - guests:
          TYPE: number
          PROMPT: "How many guests?"
      STRATEGY: pattern
    RESPOND: "{{checkout}} for {{guests}}"
    THEN: COMPLETE
'''


def test_in_three_days_is_a_date_and_not_three_guests(tmp_path):
    chat = Chat(tmp_path, {"s.agent.abl": STAY})
    assert chat.opening == ["Check-out?"]
    assert chat.say("in 3 days") == ["How many guests?"]  # NOW is 2026-11-25
    assert chat.value("checkout") == "2026-11-28" and chat.value("guests") is None
    assert chat.say("2 guests") == ["2026-11-28 for 2"]


# ---- ON_START: its CALL runs too, before its SET and RESPOND --------------------------------------------

GREETER = '''AGENT: Greeter
GOAL: "Greet"

TOOLS:
  load_profile(user: string) -> {name: string}

ON_START:
  CALL: load_profile(user: "u1")
  SET:
    greeted = true
  RESPOND: "Hello {{load_profile.name}}."

FLOW:
  ask:
    RESPOND: "greeted={{greeted}}"
    THEN: COMPLETE
'''


def test_on_start_calls_its_tool_before_it_sets_and_speaks(tmp_path):
    chat = Chat(tmp_path, {"g.agent.abl": GREETER}, {"load_profile": {"name": "Ana"}})
    assert chat.tools.calls == [("load_profile", {"user": "u1"})]
    assert chat.opening == ["Hello Ana.", "greeted=True"]


PICKER = """AGENT: Picker
GOAL: "Pick a city"
FLOW:
  ask:
    RESPOND: "Where to?"
      ACTIONS:
        - BUTTON: "New York"
          ID: nyc
          VALUE: "NYC"
        - SELECT: "Other"
          ID: other
          OPTIONS:
            - { id: "LAX", label: "Los Angeles" }
    THEN: COMPLETE
"""


def test_respond_actions_go_out_with_the_message_and_actions_beside_respond_are_flagged(tmp_path):
    (tmp_path / "picker.agent.abl").write_text(PICKER, encoding="utf-8")
    program, diags = load_abl(tmp_path / "picker.agent.abl")
    assert program is not None and not [d for d in diags if d.is_error]
    first = Engine(program, None, MemorySessionStore()).start()
    [message] = first.messages
    assert message.text == "Where to?"
    assert [(a["kind"], a["id"], a.get("send")) for a in message.actions] == [("button", "nyc", "NYC"),
                                                                            ("select", "other", None)]
    assert message.actions[1]["options"] == [{"id": "LAX", "label": "Los Angeles"}]
    said = [e for e in first.events if e.type == "bot_message"]
    assert said[0].data["actions"] == message.actions
    beside = PICKER.replace('    RESPOND: "Where to?"\n      ACTIONS:', '    RESPOND: "Where to?"\n    ACTIONS:')
    beside = beside.replace("\n          ", "\n        ").replace("\n            - {", "\n          - {")
    (tmp_path / "picker.agent.abl").write_text(beside, encoding="utf-8")
    _, diags = load_abl(tmp_path / "picker.agent.abl")
    assert [(d.code, d.span.line) for d in diags if "ACTIONS" in d.message] == [("ABL109", 6)]
