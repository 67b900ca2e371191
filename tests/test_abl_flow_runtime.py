"""The ABL flow executor (abl-specification 3.14, 7.11, 8.8) on compiled ABL programs: GATHER with
corrections, typed validation, activation modes and COMPLETE_WHEN; ON_INPUT as a first-match
dispatcher with `match` groups; DIGRESSIONS and SUB_INTENTS; TRANSFORM; max_flow_iterations; and the
system variables the runtime sets. No model is configured unless a test says so."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.state import SessionState
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)  # a Wednesday


class Chat:
    def __init__(self, tmp_path: Path, files: dict[str, str], answers: dict | None = None, llm=None,
                 channel: str | None = None) -> None:
        for name, text in files.items():
            (tmp_path / name).write_text(text, encoding="utf-8")
        program, diags = load_abl(tmp_path)
        assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
        self.program = program
        self.tools = StubToolRunner(answers or {}, convention="value")
        self.engine = Engine(program, llm, MemorySessionStore(), tools=self.tools, clock=lambda: NOW.timestamp())
        started = self.engine.start(channel=channel) if channel else self.engine.start()
        self.sid = started.session_id
        self.opening = [m.text for m in started.messages]
        self.events: list = list(started.events)
        self.last = started

    def say(self, text: str) -> list[str]:
        self.last = self.engine.send(self.sid, text)
        self.events += self.last.events
        return [m.text for m in self.last.messages]

    def kinds(self, kind: str, turn_only: bool = True) -> list[dict]:
        events = self.last.events if turn_only else self.events
        return [e.data for e in events if e.type == kind]

    @property
    def state(self) -> SessionState:
        return SessionState.model_validate(self.engine.store.load(self.sid))

    def value(self, name: str):
        return self.state.variables.get("session", {}).get(name)


HOTEL = '''AGENT: Hotel
GOAL: "Book hotels"

TOOLS:
  search_hotels(destination: string, guests: number) -> {total: number, best: string}

FLOW:
  collect -> search -> confirm

  collect:
    GATHER:
      - destination: required
      - checkin:
          TYPE: date
          REQUIRED: true
          PROMPT: "When do you check in?"
      - checkout:
          TYPE: date
          REQUIRED: true
          PROMPT: "And check out?"
          DEPENDS_ON: [checkin]
      - guests:
          TYPE: number
          PROMPT: "How many guests?"
      STRATEGY: pattern
      PROMPT: "Where would you like to stay?"
    CORRECTIONS: {corrections}
    THEN: search

  search:
    CALL: search_hotels(destination, guests)
    THEN: confirm

  confirm:
    RESPOND: "{{guests}} guests in {{destination}}, {{checkin}} to {{checkout}}: {{last_search_hotels_result.best}}. Book it?"
    ON_INPUT:
      - IF: yes
        RESPOND: "Booked."
        THEN: COMPLETE
      - ELSE:
        RESPOND: "Say yes to book."
        THEN: confirm
'''


def hotel(tmp_path: Path, corrections: bool = True) -> Chat:
    def search(destination, guests):
        return {"total": 2, "best": f"Hotel {destination} for {guests}"}

    return Chat(tmp_path, {"hotel.agent.abl": HOTEL.replace("{corrections}", str(corrections).lower())},
                {"search_hotels": search})


def booked_until_confirm(chat: Chat) -> list[str]:
    assert chat.opening == ["Where would you like to stay?"]
    assert chat.say("I'd like to go to Paris please") == ["When do you check in?"]
    assert chat.say("tomorrow") == ["And check out?"]
    assert chat.say("next friday") == ["How many guests?"]
    return chat.say("3 guests")


def test_a_gather_step_reads_text_dates_and_numbers_with_no_model(tmp_path):
    chat = hotel(tmp_path)
    assert booked_until_confirm(chat) == [
        "3 guests in Paris, 2026-11-26 to 2026-11-27: Hotel Paris for 3. Book it?"]
    assert chat.state.system["all_fields_gathered"] is True
    extracted = [e["fields"] for e in chat.kinds("gather_extraction", turn_only=False)]
    assert extracted == [{"destination": "Paris"}, {"checkin": "2026-11-26"}, {"checkout": "2026-11-27"},
                         {"guests": 3}]
    assert chat.say("yes") == ["Booked."]


def test_a_correction_at_a_later_step_updates_the_field_and_runs_what_follows_again(tmp_path):
    chat = hotel(tmp_path)
    booked_until_confirm(chat)
    assert chat.say("actually 4 guests") == [
        "4 guests in Paris, 2026-11-26 to 2026-11-27: Hotel Paris for 4. Book it?"]
    [correction] = chat.kinds("gather_correction")
    assert correction["fields"] == {"guests": {"from": 3, "to": 4}} and correction["invalidated"] == []
    transitions = chat.kinds("flow_transition")
    assert transitions[0] == {"step": "collect", "previous": "confirm", "reason": "correction"}
    assert [t for t, _ in chat.tools.calls] == ["search_hotels", "search_hotels"]  # searched again with 4


def test_a_correction_invalidates_the_fields_that_depend_on_it(tmp_path):
    chat = hotel(tmp_path)
    booked_until_confirm(chat)
    assert chat.say("no, make it the 2nd of December") == ["And check out?"]
    [correction] = chat.kinds("gather_correction")
    assert correction["fields"] == {"checkin": {"from": "2026-11-26", "to": "2026-12-02"}}
    assert correction["invalidated"] == ["checkout"]
    assert chat.value("checkout") is None and chat.state.system["all_fields_gathered"] is False
    assert chat.say("December 5")[0].startswith("3 guests in Paris, 2026-12-02 to 2026-12-05")


def test_a_correction_during_the_gather_step_itself(tmp_path):
    chat = hotel(tmp_path)
    chat.say("Rome")
    chat.say("tomorrow")
    assert chat.say("sorry, I meant next friday") == ["And check out?"]  # checkin corrected, not checkout
    assert chat.value("checkin") == "2026-11-27" and chat.value("checkout") is None


def test_without_corrections_the_same_message_is_new_input_for_the_step(tmp_path):
    chat = hotel(tmp_path, corrections=False)
    booked_until_confirm(chat)
    assert chat.say("actually 4 guests")[0] == "Say yes to book."
    assert not chat.kinds("gather_correction") and chat.value("guests") == 3


VALIDATED = '''AGENT: Claims
GOAL: "Take claims"

TOOLS:
  check_policy(policy: string) -> {valid: boolean}

ON_ERROR:
  validation_error:
    RESPOND: "Let me pass you to a colleague."
    ESCALATE: true

FLOW:
  ask -> cabin -> done

  ask:
    GATHER:
      - policy:
          PROMPT: "Your policy number?"
          VALIDATE:
            TYPE: pattern
            RULE: "^POL-\\\\d{3}$"
            ERROR: "Policy numbers look like POL-123."
            MAX_RETRIES: 1
      - guests:
          TYPE: number
          PROMPT: "How many people?"
          VALIDATE:
            TYPE: range
            RULE: "1-8"
            ERROR: "1 to 8 people."
            MAX_RETRIES: 2
      STRATEGY: pattern
    ON_FAIL:
      RESPOND: "Too many tries: {{_validation_retries.guests}} for the number of people."
      THEN: COMPLETE
    THEN: cabin

  cabin:
    GATHER:
      - cabin_class:
          PROMPT: "Which class?"
          VALIDATE:
            TYPE: enum
            RULE: "economy, business, first"
      STRATEGY: pattern
    THEN: done

  done:
    RESPOND: "{{policy}}, {{guests}}, {{cabin_class}}; asked again {{_clarification_count}} times."
    THEN: COMPLETE
'''


def test_range_validation_counts_retries_and_says_the_error(tmp_path):
    chat = Chat(tmp_path, {"claims.agent.abl": VALIDATED})
    assert chat.opening == ["Your policy number?"]
    assert chat.say("POL-123") == ["How many people?"]
    assert chat.say("12") == ["1 to 8 people.", "How many people?"]
    [failure] = chat.kinds("gather_validation")
    assert failure == {"field": "guests", "kind": "range", "rule": "1-8", "value": 12, "retries": 1,
                       "max_retries": 2}
    assert chat.state.system["_validation_retries"] == {"guests": 1} and chat.value("guests") is None
    assert chat.say("3") == ["Which class?"]
    assert chat.state.system.get("_validation_retries") is None  # counts are per step
    assert chat.say("Business") == ["POL-123, 3, business; asked again 1 times."]  # the enum's own spelling


def test_when_validation_retries_run_out_the_steps_on_fail_runs(tmp_path):
    chat = Chat(tmp_path, {"claims.agent.abl": VALIDATED})
    chat.say("POL-123")
    chat.say("12")
    chat.say("20")
    assert chat.say("99") == ["Too many tries: 3 for the number of people."]
    assert chat.kinds("flow_transition") == []  # ON_FAIL is not a step: COMPLETE ended the flow
    assert chat.value("guests") is None and chat.state.status == "ended"


def test_when_retries_run_out_and_the_step_has_no_on_fail_on_error_validation_error_runs(tmp_path):
    text = VALIDATED.replace("    ON_FAIL:\n      RESPOND: \"Too many tries: {{_validation_retries.guests}} for the "
                             "number of people.\"\n      THEN: COMPLETE\n", "")
    assert "ON_FAIL" not in text
    chat = Chat(tmp_path, {"claims.agent.abl": text})
    # the pattern reads nothing in the answer: the user is told what is expected, and it counts as a try
    assert chat.say("POL-12") == ["Policy numbers look like POL-123.", "Your policy number?"]
    [failure] = chat.kinds("gather_validation")
    assert failure["field"] == "policy" and failure["kind"] == "pattern" and failure["retries"] == 1
    assert chat.state.system["_validation_retries"] == {"policy": 1}
    chat.say("POL-123")
    assert chat.say("12") == ["1 to 8 people.", "How many people?"]
    assert chat.say("20") == ["1 to 8 people.", "How many people?"]
    assert chat.say("30") == ["Let me pass you to a colleague."]
    assert chat.state.status == "escalated"


CUSTOM = '''AGENT: Stay
GOAL: "Dates"

TOOLS:
  city_ok(city: string) -> {valid: boolean}

FLOW:
  ask:
    GATHER:
      - city:
          PROMPT: "Which city?"
          VALIDATE:
            TYPE: custom
            RULE: city_ok
            ERROR: "We have no hotels there."
      - checkin:
          TYPE: date
          PROMPT: "Check-in?"
      - checkout:
          TYPE: date
          PROMPT: "Check-out?"
          VALIDATE:
            TYPE: custom
            RULE: "checkout > checkin"
            ERROR: "Check-out must come after check-in."
      - note:
          PROMPT: "Anything to add?"
          VALIDATE: "Must be polite"
      STRATEGY: pattern
    THEN: COMPLETE
'''


def test_custom_validation_by_a_tool_and_by_an_expression(tmp_path):
    chat = Chat(tmp_path, {"stay.agent.abl": CUSTOM},
                {"city_ok": lambda city: {"valid": city.lower() != "atlantis"}})
    assert chat.say("Atlantis") == ["We have no hotels there.", "Which city?"]
    assert chat.say("Lisbon") == ["Check-in?"]
    assert chat.tools.calls == [("city_ok", {"city": "Atlantis"}), ("city_ok", {"city": "Lisbon"})]
    assert chat.say("December 10") == ["Check-out?"]
    assert chat.say("December 3") == ["Check-out must come after check-in.", "Check-out?"]
    assert chat.say("December 12") == ["Anything to add?"]


NOTE = '''AGENT: Notes
GOAL: "Notes"

FLOW:
  ask:
    GATHER:
      - note:
          PROMPT: "Anything to add?"
          VALIDATE: "Must be polite"
      STRATEGY: llm
    RESPOND: "Noted: {{note}}"
    THEN: COMPLETE
'''


def test_llm_validation_asks_the_model(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "understand", "call": "understand", "with": {"args": {"note": "you idiots"}}},
        {"purpose": "other", "call": "validate", "with": {"valid": False, "reason": "rude"}},
        {"purpose": "understand", "call": "understand", "with": {"args": {"note": "thanks a lot"}}},
        {"purpose": "other", "call": "validate", "with": {"valid": True}},
    ])
    chat = Chat(tmp_path, {"n.agent.abl": NOTE}, llm=llm)
    assert chat.say("you idiots") == ["That doesn't look like a valid note.", "Anything to add?"]
    assert "Must be polite" in llm.calls[1].messages[0].content and llm.calls[1].messages[1].content == "you idiots"
    assert chat.say("thanks a lot") == ["Noted: thanks a lot"]
    llm.assert_finished()


def test_llm_validation_with_no_model_keeps_the_value_and_says_so(tmp_path):
    chat = Chat(tmp_path, {"n.agent.abl": NOTE})
    assert chat.say("whatever") == ["Noted: whatever"]
    assert any(e.get("action") == "llm validation not checked: no model able to judge" for e in chat.kinds("step"))


ACTIVATION = '''AGENT: Loyalty
GOAL: "Loyalty"

FLOW:
  ask:
    GATHER:
      - has_loyalty:
          TYPE: boolean
          PROMPT: "Are you a member?"
      - loyalty_number:
          PROMPT: "Your member number?"
          ACTIVATION: progressive
          DEPENDS_ON: [has_loyalty]
          VALIDATE:
            TYPE: pattern
            RULE: "^M\\\\d{4}$"
      - points:
          TYPE: number
          PROMPT: "How many points?"
          ACTIVATION:
            when: "has_loyalty == true"
      - remarks:
          PROMPT: "Remarks?"
          ACTIVATION: optional
      STRATEGY: pattern
    THEN: end

  end:
    RESPOND: "number={{loyalty_number}} points={{points}}"
    THEN: COMPLETE
'''


def test_progressive_and_when_fields_are_asked_only_once_active_and_optional_never(tmp_path):
    member = Chat(tmp_path, {"l.agent.abl": ACTIVATION})
    assert member.opening == ["Are you a member?"]
    assert member.say("yes") == ["Your member number?"]
    assert member.say("it's M1234") == ["How many points?"]
    assert member.say("5000") == ["number=M1234 points=5000"]
    assert member.state.system["all_fields_gathered"] is True
    (tmp_path / "other").mkdir()
    guest = Chat(tmp_path / "other", {"l.agent.abl": ACTIVATION})
    assert guest.say("no") == ["number=(none) points=(none)"]  # neither is asked, remarks never
    assert guest.state.system["all_fields_gathered"] is True and guest.value("has_loyalty") is False


COMPLETE_WHEN = '''AGENT: Trip
GOAL: "Trips"

FLOW:
  ask -> show

  ask:
    GATHER:
      - email:
          TYPE: email
          PROMPT: "Your e-mail?"
      - phone:
          TYPE: phone
          PROMPT: "Your phone?"
      - guests:
          TYPE: number
          DEFAULT: 2
          PROMPT: "How many?"
      STRATEGY: pattern
    COMPLETE_WHEN: email OR phone
    THEN: show

  show:
    RESPOND: "{{email}} {{phone}} {{guests}}"
    THEN: COMPLETE
'''


def test_complete_when_ends_the_gather_early_and_defaults_fill_the_rest(tmp_path):
    chat = Chat(tmp_path, {"t.agent.abl": COMPLETE_WHEN})
    assert chat.opening == ["Your e-mail?"]
    assert chat.say("call me on (415) 555-2671") == ["(none) +14155552671 2"]
    assert chat.value("guests") == 2


ON_INPUT = '''AGENT: Rooms
GOAL: "Rooms"

FLOW:
  pick:
    RESPOND: "Pick a room."
    ON_INPUT:
      - IF: input matches /room\\s*(?P<room_id>\\d+)\\s*(\\w*)/
        SET: selected = match.room_id
        SET: view = match.2
        RESPOND: "Room {{match.1}} ({{match.0}})."
        THEN: done
      - IF: input.contains("room")
        SET: second = true
        THEN: done
      - ELSE:
        RESPOND: "Which room?"
        THEN: pick

  done:
    RESPOND: "selected={{selected}} view={{view}} second={{second}}"
    THEN: COMPLETE
'''


def test_on_input_takes_the_first_branch_that_holds_and_sets_match_groups(tmp_path):
    chat = Chat(tmp_path, {"r.agent.abl": ON_INPUT})
    assert chat.say("hmm") == ["Which room?", "Pick a room."]
    assert chat.state.system.get("match") is None  # a condition that failed sets nothing
    assert chat.say("room 12 seaview please") == ["Room 12 (room 12 seaview).",
                                                  "selected=12 view=seaview second=(none)"]
    evaluated = [e["condition"] for e in chat.kinds("condition_evaluated")]
    assert len(evaluated) == 1  # the second branch, which also holds, is never evaluated
    assert chat.state.system["match"] == {"0": "room 12 seaview", "1": "12", "2": "seaview", "room_id": "12"}


DIGRESS = '''AGENT: Travel
GOAL: "Travel"

FLOW:
  global_digressions:
    - INTENT: "cancel"
      RESPOND: "Canceling your request."
      GOTO: cancelled
    - INTENT: "speak_to_agent"
      DELEGATE: Human_Support

  collect:
    GATHER:
      - destination:
          PROMPT: "Where to?"
      - checkin:
          TYPE: date
          PROMPT: "When?"
      STRATEGY: pattern
    DIGRESSIONS:
      - INTENT: "help"
        RESPOND: "Just tell me where and when."
        RESUME: true
      - INTENT: "weather"
        DELEGATE: Weather
        RESUME: true
        CLEAR: [destination]
    SUB_INTENTS:
      - INTENT: "change dates"
        RESPOND: "Let's update your dates."
        CLEAR: [checkin]
    THEN: review

  review:
    RESPOND: "{{destination}} on {{checkin}}. OK?"
    SUB_INTENTS:
      - INTENT: "change dates"
        RESPOND: "Let's update your dates."
        CLEAR: [checkin]
        GOTO: collect
    ON_INPUT:
      - IF: yes
        THEN: COMPLETE
      - ELSE:
        THEN: review

  cancelled:
    RESPOND: "Cancelled."
    THEN: COMPLETE
'''

WEATHER = '''AGENT: Weather
GOAL: "Weather"

FLOW:
  tell:
    RESPOND: "Sunny everywhere."
    THEN: COMPLETE
'''

HUMAN = '''AGENT: Human_Support
GOAL: "People"

FLOW:
  hello:
    RESPOND: "A person will take over."
    THEN: COMPLETE
'''


def digress(tmp_path: Path) -> Chat:
    return Chat(tmp_path, {"travel.agent.abl": DIGRESS, "weather.agent.abl": WEATHER, "human.agent.abl": HUMAN})


def test_a_digression_with_resume_answers_and_asks_the_question_again(tmp_path):
    chat = digress(tmp_path)
    assert chat.opening == ["Where to?"]
    assert chat.say("help") == ["Just tell me where and when.", "Where to?"]
    assert chat.value("destination") is None  # "help" was not taken for the destination


def test_a_delegating_digression_runs_the_agent_then_clears_and_resumes(tmp_path):
    chat = digress(tmp_path)
    assert chat.say("Oslo") == ["When?"]
    assert chat.say("how is the weather there") == ["Sunny everywhere.", "Where to?"]
    assert chat.value("destination") is None  # CLEAR: [destination] before resuming


def test_a_digression_without_resume_goes_where_it_says_or_ends_the_flow(tmp_path):
    chat = digress(tmp_path)
    assert chat.say("cancel") == ["Canceling your request.", "Cancelled."]
    (tmp_path / "x").mkdir()
    chat = digress(tmp_path / "x")
    assert chat.say("let me speak to an agent") == ["A person will take over."]
    assert chat.state.status == "ended"  # no RESUME: the flow does not come back to its question


def test_a_sub_intent_clears_and_stays_in_its_step_or_goes_back(tmp_path):
    chat = digress(tmp_path)
    chat.say("Oslo")
    assert chat.say("tomorrow") == ["Oslo on 2026-11-26. OK?"]
    assert chat.say("can I change the dates") == ["Let's update your dates.", "When?"]
    assert chat.value("checkin") is None and chat.value("destination") == "Oslo"
    assert chat.say("next friday") == ["Oslo on 2026-11-27. OK?"]


TRANSFORM = '''AGENT: Txns
GOAL: "Transactions"

TOOLS:
  list_txns() -> {transactions: object[]}

FLOW:
  load:
    CALL: list_txns
      AS: txnResult
    TRANSFORM: txnResult.transactions AS txn INTO shown
      FILTER: txn.amount > 10
      MAP:
        label: UPPER(txn.merchant)
        amount: txn.amount
      SORT_BY: amount DESC
      LIMIT: 2
    RESPOND: "{{#each shown}}{{this.label}}={{this.amount}} {{/each}}| failures={{tool_failures}}"
    THEN: COMPLETE
'''


def test_transform_filters_maps_sorts_and_limits(tmp_path):
    txns = [{"merchant": "cafe", "amount": 4}, {"merchant": "books", "amount": 30},
            {"merchant": "rail", "amount": 120}, {"merchant": "shoes", "amount": 75}]
    chat = Chat(tmp_path, {"t.agent.abl": TRANSFORM}, {"list_txns": {"transactions": txns}})
    assert chat.opening == ["RAIL=120 SHOES=75 | failures=0"]
    assert chat.value("shown") == [{"label": "RAIL", "amount": 120}, {"label": "SHOES", "amount": 75}]


FAILING = '''AGENT: Retry
GOAL: "Retry"

TOOLS:
  flaky() -> {ok: boolean}

FLOW:
  first:
    CALL: flaky
    THEN: second

  second:
    CALL: flaky
    RESPOND: "failures={{tool_failures}}"
    THEN: COMPLETE
'''


def test_tool_failures_counts_consecutive_failures(tmp_path):
    chat = Chat(tmp_path, {"r.agent.abl": FAILING}, {})  # no stub answer: every call fails
    assert chat.opening == ["failures=2"]
    assert chat.state.system["tool_failures"] == 2


LOOP = '''AGENT: Loop
GOAL: "Loop"

EXECUTION:
  max_flow_iterations: 5

ON_ERROR:
  default:
    RESPOND: "I have to stop here, sorry."

FLOW:
  spin:
    SET: n = COALESCE(n, 0) + 1
    THEN: spin
'''


def test_max_flow_iterations_stops_a_loop_with_an_error_event_and_the_on_error_reply(tmp_path):
    chat = Chat(tmp_path, {"l.agent.abl": LOOP})
    assert chat.opening == ["I have to stop here, sorry."]
    errors = [e.data for e in chat.events if e.type == "error"]
    assert errors and errors[0]["kind"] == "max_flow_iterations" and errors[0]["limit"] == 5
    assert chat.value("n") == 5


def test_max_flow_iterations_defaults_to_100_and_without_on_error_says_a_fallback(tmp_path):
    text = LOOP.replace("EXECUTION:\n  max_flow_iterations: 5\n\n", "").replace(
        'ON_ERROR:\n  default:\n    RESPOND: "I have to stop here, sorry."\n\n', "")
    chat = Chat(tmp_path, {"l.agent.abl": text})
    assert chat.value("n") == 100
    assert len(chat.opening) == 1 and "can't go on" in chat.opening[0]


LAST_RESULT = '''AGENT: Last
GOAL: "Last result"

TOOLS:
  quote(city: string) -> {price: number, currency: string}

FLOW:
  ask:
    CALL: quote("Rome")
    SET: whole = last_quote_result
    RESPOND: "{{last_quote_result.price}} {{whole.currency}}"
    THEN: COMPLETE
'''


def test_last_tool_result_reads_the_whole_result_of_the_latest_call(tmp_path):
    chat = Chat(tmp_path, {"q.agent.abl": LAST_RESULT}, {"quote": {"price": 90, "currency": "EUR"}})
    assert chat.opening == ["90 EUR"]
    assert chat.value("whole") == {"price": 90, "currency": "EUR"}


CONDITIONAL = '''AGENT: Shop
GOAL: "Shop"

FLOW:
  start:
    SET: vip = false
    THEN: ask

  ask:
    RESPOND: "What would you like?"
    DIGRESSIONS:
      - INTENT: "discount"
        CONDITION: "vip == true"
        RESPOND: "Members get 10% off."
        RESUME: true
    ON_INPUT:
      - IF: input.contains("vip")
        SET: vip = true
        RESPOND: "Welcome back."
        THEN: ask
      - ELSE:
        RESPOND: "We have tea."
        THEN: COMPLETE
'''


def test_a_digression_with_a_condition_applies_only_when_it_holds(tmp_path):
    chat = Chat(tmp_path, {"s.agent.abl": CONDITIONAL})
    assert chat.say("any discount?") == ["We have tea."]  # not a member: the intent does not apply
    (tmp_path / "vip").mkdir()
    chat = Chat(tmp_path / "vip", {"s.agent.abl": CONDITIONAL})
    assert chat.say("I'm a vip") == ["Welcome back.", "What would you like?"]
    assert chat.say("any discount?") == ["Members get 10% off.", "What would you like?"]


# ---- HANDOFF CONTEXT from a flow step ------------------------------------------------------------------

SHOP = '''AGENT: Shop
GOAL: "Sell"

TOOLS:
  reserve(item: string) -> {order_id: string, price: number}

FLOW:
  pick -> buy -> pay -> after

  pick:
    GATHER:
      - item:
          PROMPT: "What would you like?"
      STRATEGY: pattern
    THEN: buy

  buy:
    CALL: reserve(item)
    ON_SUCCESS:
      SET: order_id = reserve.order_id
      THEN: pay

  pay:
    HANDOFF:
      TO: Till
      RETURN: true
      CONTEXT:
        pass: [order_id, reserve.price]
        summary: "Order {{order_id}}: {{reserve.price}} EUR"
        history: {last_n: 2}
    THEN: after

  after:
    RESPOND: "Back at the shop: {{paid}}."
    THEN: COMPLETE
'''

TILL = '''AGENT: Till
GOAL: "Take payments"

FLOW:
  charge:
    RESPOND: "Paying order {{order_id}}: {{price}} EUR. OK?"
    ON_INPUT:
      - IF: yes
        SET: paid = "paid " + order_id
        THEN: COMPLETE
'''


def test_a_flow_handoff_passes_its_context_values_to_the_flow_taking_over(tmp_path):
    chat = Chat(tmp_path, {"shop.agent.abl": SHOP, "till.agent.abl": TILL},
                {"reserve": lambda item: {"order_id": "O-7", "price": 30}})
    handoff = next(n for n in chat.program.agents["Shop"].graph.nodes.values() if n.kind == "handoff")
    assert [a.name for a in handoff.args] == ["order_id", "price"] and handoff.history == "last_n:2"
    assert handoff.summary is not None
    assert chat.say("a lamp") == ["Paying order O-7: 30 EUR. OK?"]
    [context] = chat.kinds("handoff_context")
    assert context["target"] == "Till" and context["passed"] == ["order_id", "price"]
    assert chat.value("price") == 30  # `reserve.price` passed as `price`: only the pass put it there
    assert chat.say("yes") == ["Back at the shop: paid O-7."]


def test_without_context_pass_the_flow_taking_over_does_not_get_the_value(tmp_path):
    shop = SHOP.replace("        pass: [order_id, reserve.price]\n", "        pass: [order_id]\n")
    chat = Chat(tmp_path, {"shop.agent.abl": shop, "till.agent.abl": TILL},
                {"reserve": lambda item: {"order_id": "O-7", "price": 30}})
    said = chat.say("a lamp")
    assert said != ["Paying order O-7: 30 EUR. OK?"] and chat.value("price") is None


def test_a_step_handoff_naming_an_agent_takes_the_context_of_the_agents_handoff_entry(tmp_path):
    shop = SHOP.replace('''    HANDOFF:
      TO: Till
      RETURN: true
      CONTEXT:
        pass: [order_id, reserve.price]
        summary: "Order {{order_id}}: {{reserve.price}} EUR"
        history: {last_n: 2}
''', "    HANDOFF: Till\n").replace("FLOW:", '''HANDOFF:
  - TO: Till
    WHEN: the order is reserved
    RETURN: true
    CONTEXT:
      pass: [order_id]
      summary: "Order {{order_id}}"

FLOW:''')
    chat = Chat(tmp_path, {"shop.agent.abl": shop, "till.agent.abl": TILL},
                {"reserve": lambda item: {"order_id": "O-7", "price": 30}})
    handoff = next(n for n in chat.program.agents["Shop"].graph.nodes.values() if n.kind == "handoff")
    assert handoff.resume and [a.name for a in handoff.args] == ["order_id"] and handoff.summary is not None
    chat.say("a lamp")
    assert chat.kinds("handoff_context")[0]["passed"] == ["order_id"]
    assert chat.say("yes") == ["Back at the shop: paid O-7."]


def test_a_flow_handoff_to_a_reasoning_agent_gives_it_the_summary_and_the_history_asked_for(tmp_path):
    till = '''AGENT: Till
GOAL: "Take payments"
GATHER:
  price:
    prompt: "unused"
    type: number
'''
    llm = ScriptedProvider([{"purpose": "reason", "reply": "Shall I charge 30 EUR?"}])
    chat = Chat(tmp_path, {"shop.agent.abl": SHOP, "till.agent.abl": till},
                {"reserve": lambda item: {"order_id": "O-7", "price": 30}}, llm=llm)
    assert chat.say("a lamp") == ["Shall I charge 30 EUR?"]
    sent = [m.content or "" for m in llm.calls[0].messages]
    assert any("Handed over by Shop: Order O-7: 30 EUR" in c for c in sent)
    assert any('"price": 30' in c or "price: 30" in c for c in sent)  # a field it declares: in its gathered data


# ---- answers nothing can be read from ----------------------------------------------------------------

UNREADABLE = '''AGENT: Claims
GOAL: "Take claims"

ON_ERROR:
  validation_error:
    RESPOND: "Let me pass you to a colleague."
    ESCALATE: true

FLOW:
  policy -> when -> count -> done

  policy:
    GATHER:
      - policy_number:
          PROMPT: "What is your policy number?"
          VALIDATE:
            TYPE: pattern
            RULE: "^POL-[A-Z]{2}\\\\d{6}$"
            ERROR: "Policy numbers look like POL-AB123456."
            MAX_RETRIES: 2
      STRATEGY: pattern
    DIGRESSIONS:
      - INTENT: "help"
        RESPOND: "Your policy number is on your insurance card."
        RESUME: true
    THEN: when

  when:
    GATHER:
      - incident_date:
          TYPE: date
          PROMPT: "On what date did it happen?"
      STRATEGY: pattern
    THEN: count

  count:
    GATHER:
      - items:
          TYPE: number
          PROMPT: "How many items were damaged?"
          RETRY_PROMPT: "Just the number of items, please."
      STRATEGY: pattern
    THEN: done

  done:
    RESPOND: "{{policy_number}}, {{incident_date}}, {{items}}."
    THEN: COMPLETE
'''


def test_an_answer_with_no_match_of_the_pattern_says_the_error_and_counts_a_retry(tmp_path):
    chat = Chat(tmp_path, {"c.agent.abl": UNREADABLE})
    assert chat.say("my policy is 12345") == ["Policy numbers look like POL-AB123456.", "What is your policy number?"]
    [failure] = chat.kinds("gather_validation")
    assert failure["field"] == "policy_number" and failure["kind"] == "pattern" and failure["value"] is None
    assert failure["retries"] == 1 and failure["max_retries"] == 2
    assert chat.say("12345") == ["Policy numbers look like POL-AB123456.", "What is your policy number?"]
    assert chat.state.system["_validation_retries"] == {"policy_number": 2}
    assert chat.say("POL-AB123456") == ["On what date did it happen?"]  # counts are per step
    assert chat.state.system.get("_validation_retries") is None


def test_when_unreadable_answers_exceed_max_retries_the_agent_gives_up(tmp_path):
    chat = Chat(tmp_path, {"c.agent.abl": UNREADABLE})
    chat.say("my policy is 12345")
    chat.say("it's 999")
    assert chat.say("POL 1") == ["Let me pass you to a colleague."]
    assert chat.state.status == "escalated"


def test_a_typed_field_says_what_it_expects_when_nothing_can_be_read(tmp_path):
    chat = Chat(tmp_path, {"c.agent.abl": UNREADABLE})
    chat.say("POL-AB123456")
    assert chat.say("dunno") == ["I need a date, for example tomorrow or March 15.", "On what date did it happen?"]
    assert chat.kinds("gather_validation")[0]["kind"] == "type"
    assert chat.say("yesterday") == ["How many items were damaged?"]
    assert chat.say("lots") == ["Just the number of items, please.", "How many items were damaged?"]
    assert chat.say("3") == ["POL-AB123456, 2026-11-24, 3."]


def test_a_digression_or_another_topic_is_not_taken_for_a_failed_answer(tmp_path):
    chat = Chat(tmp_path, {"c.agent.abl": UNREADABLE})
    assert chat.say("hello there") == ["What is your policy number?"]  # a greeting is no attempt at an answer
    assert chat.say("help") == ["Your policy number is on your insurance card.", "What is your policy number?"]
    assert chat.say("where can I find the opening hours of your office?") == ["What is your policy number?"]
    assert chat.say("I would rather talk about something else entirely today") == ["What is your policy number?"]
    assert chat.kinds("gather_validation", turn_only=False) == []
    assert chat.state.system.get("_validation_retries") is None


# ---- intent shift between two ABL flow agents under a supervisor (offline, local model) ------------------

BANK = {
    "bank.agent.abl": """SUPERVISOR: Bank
GOAL: "Route bank customers"

HANDOFF:
  - TO: Card_Payment
    WHEN: user wants to pay their credit card bill or make a card payment
    RETURN: true
  - TO: Address_Change
    WHEN: user wants to change their postal address or says they moved house
    RETURN: true

ROUTING:
  - INTENT(pay my card, credit card payment, card bill) -> Card_Payment
  - INTENT(change my address, new address, I moved house) -> Address_Change
""",
    "card.agent.abl": """AGENT: Card_Payment
GOAL: "Pay the customer's credit card bill"

FLOW:
  ask:
    GATHER:
      - amount:
          TYPE: number
          PROMPT: "How much would you like to pay on your card?"
      STRATEGY: pattern
    RESPOND: "Paying {{amount}} EUR."
    THEN: COMPLETE
""",
    "address.agent.abl": """AGENT: Address_Change
GOAL: "Change the customer's postal address"

FLOW:
  ask:
    GATHER:
      - street:
          PROMPT: "What is your new street address?"
      - moved_on:
          TYPE: date
          PROMPT: "Since when do you live there?"
      STRATEGY: pattern
    RESPOND: "Address changed to {{street}} from {{moved_on}}."
    THEN: COMPLETE
""",
}


def test_a_message_for_the_other_flow_agent_reaches_it_in_the_same_turn_offline(tmp_path, local_model):
    from frontdesk.lang import load_program
    from frontdesk.testing import run_conversation

    for name, text in BANK.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    understanding, embedder = local_model
    llm = ScriptedProvider([])
    llm.can_classify = False  # no model decides: the local understanding model and patterns only
    run = run_conversation(program, ["I'd like to pay my credit card bill",
                                     "Actually I need to change my postal address, I moved house",
                                     "12 Rue de la Paix", "since yesterday", "50"],
                           llm, understanding=understanding, embedder=embedder)
    said = [[m.text for m in turn.messages] for turn in run.turns[1:]]
    assert said[0] == ["How much would you like to pay on your card?"]
    # the message answers nothing the card flow asked: the address flow takes it in the same turn,
    # with no "I need a number" and no "didn't understand"
    assert said[1] == ["What is your new street address?"]
    assert said[2] == ["Since when do you live there?"]
    assert said[3][0].startswith("Address changed to 12 Rue de la Paix from ")
    assert said[3][-1] == "How much would you like to pay on your card?"  # the card payment resumes
    assert said[4] == ["Paying 50 EUR."]
    events = [e for e in run.events if e["type"] in ("gather_validation", "llm_call", "fallback")]
    assert events == []
    switched = [e for e in run.events if e["type"] == "route_decided" and e["agent"] == "Card_Payment"]
    assert switched and switched[0]["data"]["agent"] == "Address_Change"


# ---- BEHAVIOR_PROFILES: GATHER_OVERRIDES and FLOW_MODIFICATIONS ------------------------------------------

CHECKOUT = """AGENT: Checkout
GOAL: "Check out"

BEHAVIOR_PROFILES:
  - NAME: voice
    PRIORITY: 10
    WHEN: context.channel == "voice"
    GATHER_OVERRIDES:
      field_overrides:
        email:
          prompt: "Please spell your e-mail address."
        phone:
          required: false
        postcode:
          required: true
          validate:
            type: pattern
            rule: "^\\d{5}$"
            error: "Five digits, please."
    FLOW_MODIFICATIONS:
      skip: [upsell]
  - NAME: voice-low
    PRIORITY: 1
    WHEN: context.channel == "voice"
    GATHER_OVERRIDES:
      field_overrides:
        email:
          prompt: "The lower priority loses."

FLOW:
  contact -> upsell -> done

  contact:
    GATHER:
      - email:
          TYPE: email
          PROMPT: "Your e-mail?"
      - phone:
          TYPE: phone
          PROMPT: "Your phone number?"
      - postcode:
          PROMPT: "Your postcode?"
          REQUIRED: false
      STRATEGY: pattern
    THEN: upsell

  upsell:
    RESPOND: "We also sell travel insurance."
    THEN: done

  done:
    RESPOND: "Done: {{email}}{{#if phone}} {{phone}}{{/if}}{{#if postcode}} {{postcode}}{{/if}}."
    THEN: COMPLETE
"""


def test_without_an_active_profile_the_gather_and_the_flow_are_the_base_ones(tmp_path):
    chat = Chat(tmp_path, {"c.agent.abl": CHECKOUT}, channel="web")
    assert chat.opening == ["Your e-mail?"]
    assert chat.say("ada@example.org") == ["Your phone number?"]
    assert chat.say("+33 1 42 68 53 00") == ["We also sell travel insurance.", "Done: ada@example.org +33142685300."]


def test_an_active_profile_overrides_the_prompt_required_and_validation_of_gather_fields(tmp_path):
    chat = Chat(tmp_path, {"c.agent.abl": CHECKOUT}, channel="voice")
    assert chat.opening == ["Please spell your e-mail address."]  # the highest priority's prompt
    # phone is optional and postcode required while the profile is active, with the profile's validation
    assert chat.say("ada@example.org") == ["Your postcode?"]
    assert chat.say("it is 750") == ["Five digits, please.", "Your postcode?"]
    assert chat.kinds("gather_validation")[0]["field"] == "postcode"
    # FLOW_MODIFICATIONS skip: the upsell step is skipped, the flow goes on where it would
    assert chat.say("75001") == ["Done: ada@example.org 75001."]
    skipped = [e for e in chat.kinds("step") if e.get("action") == "step skipped by a behaviour profile"]
    assert skipped == [{"action": "step skipped by a behaviour profile", "step": "upsell", "profile": "voice",
                        "to": "done"}]


def test_profile_overrides_compile_into_the_profile(tmp_path):
    chat = Chat(tmp_path, {"c.agent.abl": CHECKOUT}, channel="web")
    voice = next(p for p in chat.program.agents["Checkout"].rules.profiles if p.name == "voice")
    assert set(voice.gather_fields) == {"email", "phone", "postcode"}
    assert voice.gather_fields["phone"].required is False and voice.gather_fields["phone"].type == "phone"
    assert [v.rule for v in voice.gather_fields["postcode"].validations] == ["^\\d{5}$"]
    assert set(voice.gather_prompts) == {"email"}
    assert chat.program.agents["Checkout"].graph.exits == {"upsell": "done"}


def test_a_profile_overriding_an_unknown_field_or_step_is_warned_about(tmp_path):
    from frontdesk.lang.abl.compiler import load_abl

    text = CHECKOUT.replace("        phone:\n          required: false\n", "        phnoe:\n          required: false\n") \
        .replace("skip: [upsell]", "skip: [upsel]")
    (tmp_path / "c.agent.abl").write_text(text, encoding="utf-8")
    _, diags = load_abl(tmp_path)
    messages = [d.message for d in diags if d.code == "ABL109"]
    assert any("phnoe" in m for m in messages) and any("upsel" in m for m in messages)
    assert not [d for d in diags if d.is_error]


def test_a_lenient_profile_keeps_a_value_that_fails_validation(tmp_path):
    text = VALIDATED.replace("FLOW:", """BEHAVIOR_PROFILES:
  - NAME: relaxed
    WHEN: context.channel == "voice"
    GATHER_OVERRIDES:
      validation_style: lenient

FLOW:""", 1)
    strict = Chat(tmp_path, {"claims.agent.abl": text}, channel="web")
    strict.say("POL-123")
    assert strict.say("12") == ["1 to 8 people.", "How many people?"]
    (tmp_path / "v").mkdir()
    lenient = Chat(tmp_path / "v", {"claims.agent.abl": text}, channel="voice")
    lenient.say("POL-123")
    assert lenient.say("12") == ["Which class?"]
    [kept] = lenient.kinds("gather_validation")
    assert kept["field"] == "guests" and kept["lenient"] is True and lenient.value("guests") == 12
