"""ABL state and lifecycle rules at run time: MEMORY recall at the canonical events (8.10) with ACCESS,
INITIAL / RESET, HOOKS (before/after turn and agent), ACTION_HANDLERS for button payloads,
BEHAVIOR_PROFILES (activation, priority merge, hidden tools, profile constraints), MESSAGES with
TEMPLATE(...), and ON_ERROR's THEN."""

from __future__ import annotations

from pathlib import Path

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.runtime import rules
from frontdesk.runtime.context import TurnContext
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

CONCIERGE = '''AGENT: Concierge
GOAL: "Find hotels"

TOOLS:
  search_hotels(city: string) -> {count: number}
  audit(turn: number) -> {ok: boolean}

GATHER:
  city:
    prompt: "Which city?"
    type: string
    validate:
      type: enum
      rule: "Paris, Rome"

MEMORY:
  session:
    - preferred_chain
    - visits
      INITIAL: 0
      RESET: per_session
  persistent:
    - PATH: user.preferred_chain
      SCOPE: user
      ACCESS: readwrite
    - PATH: user.secret_note
      SCOPE: user
      ACCESS: write
    - PATH: user.city_history
      SCOPE: user
      ACCESS: read
    - PATH: user.loyalty
      SCOPE: user
      ACCESS: read
  recall:
    - ON: session:start
      ACTION: inject_context
      PATHS: [user.preferred_chain, user.secret_note]
    - ON: entity:city:extracted
      ACTION: load_memory
      PATHS: [user.city_history]
    - ON: tool:search_hotels:after
      ACTION: prompt_llm
      INSTRUCTION: "Prefer hotels of the user's favourite chain"
    - ON: step:exit:search
      ACTION: inject_context
      PATHS: [user.loyalty]
    - ON: step:enter:results
      ACTION: inject_context
      PATHS: [user.loyalty]
    - ON: agent:Concierge:before
      ACTION: load_memory
      PATHS: [user.city_history]
    - ON: agent:*:after
      ACTION: prompt_llm
      INSTRUCTION: "Ask how the stay was next time"

GUARDRAILS:
  no_cards:
    kind: input
    check: "abl.contains_pii(content)"
    action: block
    msg: "No card numbers, please."

HOOKS:
  before_turn:
    SET:
      visits: visits + 1
  after_turn:
    CALL: audit(turn: visits)
  before_agent:
    RESPOND: "Concierge here."
  after_agent:
    RESPOND: "Thanks for using the concierge."

FLOW:
  ask:
    REASONING: false
    GATHER:
      - city: required
      STRATEGY: pattern
    THEN: search

  search:
    REASONING: false
    CALL: search_hotels(city)
    THEN: results

  results:
    REASONING: false
    RESPOND: "{{search_hotels.count}} hotels in {{city}}; you like {{preferred_chain}}."
    THEN: COMPLETE
'''


def concierge(tmp_path: Path) -> tuple[Engine, StubToolRunner]:
    (tmp_path / "concierge.agent.abl").write_text(CONCIERGE, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    tools = StubToolRunner({"search_hotels": {"count": 3}, "audit": {"ok": True}}, convention="value")
    engine = Engine(program, None, MemorySessionStore(), tools=tools)
    for path, value in (("preferred_chain", "Ibis"), ("secret_note", "vip"), ("city_history", ["Rome"]),
                        ("loyalty", "gold")):
        engine.memory.put("user", "u1", path, value)
    return engine, tools


def kinds(result, kind: str) -> list:
    return [e for e in result.events if e.type == kind]


def test_recall_loads_memory_at_the_canonical_events_and_respects_access(tmp_path):
    engine, _ = concierge(tmp_path)
    started = engine.start(user_id="u1")
    recalls = {e.data["on"]: e.data["values"] for e in kinds(started, "memory_recall")}
    # session:start: the readable path is loaded, the write-only one is not read
    assert recalls["session:start"] == {"user.preferred_chain": "Ibis"}
    assert recalls["agent:Concierge:before"] == {"user.city_history": ["Rome"]}
    state = engine.load_state(started.session_id)
    assert state.variables["session"]["preferred_chain"] == "Ibis"  # a declared session variable
    assert state.system["_stored_user_preferred_chain"] == "Ibis"
    assert "_stored_user_secret_note" not in state.system
    result = engine.send(started.session_id, "Paris please")
    on = [e.data["on"] for e in kinds(result, "memory_recall")]
    assert on == ["entity:city:extracted", "tool:search_hotels:after", "step:exit:search", "step:enter:results",
                  "agent:*:after"]
    state = engine.load_state(started.session_id)
    assert state.system["_stored_user_city_history"] == ["Rome"]
    assert state.system["_stored_user_loyalty"] == "gold"
    assert state.system["_recall_instructions"] == ["Prefer hotels of the user's favourite chain",
                                                    "Ask how the stay was next time"]
    assert result.messages[0].text == "3 hotels in Paris; you like Ibis."


def test_memory_context_gives_the_prompt_builder_what_was_recalled(tmp_path):
    engine, _ = concierge(tmp_path)
    sid = engine.start(user_id="u1").session_id
    engine.send(sid, "Rome")
    ctx = TurnContext(program=engine.program, state=engine.load_state(sid), llm=None, tools=engine.tools,
                      log=engine.context(engine.load_state(sid)).log, knowledge=None)
    text = rules.memory_context("Concierge", ctx)
    assert '- user.preferred_chain: "Ibis"' in text and "Prefer hotels of the user's favourite chain" in text


def test_initial_values_and_hooks_around_every_turn_and_agent(tmp_path):
    engine, tools = concierge(tmp_path)
    started = engine.start(user_id="u1")
    sid = started.session_id
    assert engine.load_state(sid).variables["session"]["visits"] == 0  # INITIAL, before any turn
    assert [m.text for m in started.messages] == ["Concierge here.", "Which city?"]  # before_agent
    assert tools.calls == [("audit", {"turn": 0})]  # after_turn ran at the end of the first turn
    result = engine.send(sid, "Rome")
    assert engine.load_state(sid).variables["session"]["visits"] == 1  # before_turn added one
    assert tools.calls[-1] == ("audit", {"turn": 1})
    assert [m.text for m in result.messages][-1] == "Thanks for using the concierge."  # after_agent
    assert {e.data["hook"] for e in kinds(result, "hook_run")} == {"before_turn", "after_turn", "after_agent"}


def test_an_input_guardrail_runs_before_the_turns_hooks_and_tools(tmp_path):
    engine, tools = concierge(tmp_path)
    sid = engine.start(user_id="u1").session_id
    result = engine.send(sid, "card 4111 1111 1111 1111")
    assert [m.text for m in result.messages] == ["No card numbers, please."]
    assert engine.load_state(sid).variables["session"]["visits"] == 0  # before_turn did not run
    first_hook = next(e.seq for e in result.events if e.type == "hook_run")
    assert next(e.seq for e in result.events if e.type == "input_blocked") < first_hook
    assert [t for t, _ in tools.calls] == ["audit", "audit"]  # only the after_turn audits


PICKER = '''AGENT: Option_Picker
GOAL: "Let the user pick an option"

FLOW:
  choose_option:
    REASONING: false
    RESPOND: "Choose your preferred option:"
      ACTIONS:
        - BUTTON: "Option A"
          ID: option_a
          VALUE: "a"
        - BUTTON: "Option B"
          ID: option_b
          VALUE: "b"
    GATHER:
      - note: required
    THEN: process_selection

  process_selection:
    REASONING: false
    RESPOND: "Processing option {{user_choice}}."
    THEN: COMPLETE

ACTION_HANDLERS:
  option_a:
    SET: user_choice = "a"
    RESPOND: "Great choice!"
    THEN: process_selection
  option_b:
    SET: user_choice = "b"
    THEN: process_selection
'''


def test_a_button_payload_runs_its_action_handler(tmp_path):
    (tmp_path / "picker.agent.abl").write_text(PICKER, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    engine = Engine(program, None, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "a")  # the button's VALUE
    assert [m.text for m in result.messages] == ["Great choice!", "Processing option a."]
    assert engine.load_state(sid).variables["session"]["user_choice"] == "a"
    sid = engine.start().session_id
    result = engine.send(sid, "option_b")  # its ID
    assert [m.text for m in result.messages] == ["Processing option b."]


def test_a_message_that_is_no_payload_reaches_the_flow(tmp_path):
    (tmp_path / "picker.agent.abl").write_text(PICKER, encoding="utf-8")
    program, _ = load_abl(tmp_path)
    engine = Engine(program, None, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "c")
    assert not kinds(result, "hook_run")


GUIDE = '''AGENT: Travel_Guide
GOAL: "Answer travel questions on every channel"

TOOLS:
  show_map(location: string) -> {displayed: boolean}
  render_chart(series: object[]) -> {displayed: boolean}

BEHAVIOR_PROFILES:
  - NAME: voice-optimized
    PRIORITY: 10
    WHEN: context.channel == "voice"
    INSTRUCTIONS: "Keep responses under 3 sentences."
    RESPONSE_RULES:
      max_buttons: 0
      max_response_length: 200
    TOOLS_HIDE: [show_map, render_chart]
    CONSTRAINTS:
      - REQUIRE len(response) < 40
        ON_FAIL: "Please ask me one thing at a time."
  - NAME: everywhere
    PRIORITY: 1
    INSTRUCTIONS: "Be friendly."
    RESPONSE_RULES:
      max_buttons: 3
      fallback_format: markdown
'''


def guide(tmp_path: Path, channel: str):
    (tmp_path / "guide.agent.abl").write_text(GUIDE, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    engine = Engine(program, None, MemorySessionStore())
    state = engine.load_state(engine.start(channel=channel).session_id)
    return engine, engine.context(state)


def test_profiles_activate_by_their_condition_and_merge_by_priority(tmp_path):
    _, ctx = guide(tmp_path, "voice")
    assert [p.name for p in rules.active_profiles("Travel_Guide", ctx)] == ["voice-optimized", "everywhere"]
    merged = rules.effective_profile("Travel_Guide", ctx)
    assert merged["response_rules"] == {"max_buttons": 0, "max_response_length": 200, "fallback_format": "markdown"}
    assert rules.hidden_tools("Travel_Guide", ctx) == {"show_map", "render_chart"}
    refused = ctx.call_tool("show_map", {"location": "Rome"}, "Travel_Guide", None)  # hidden: not run
    assert refused.status == "error" and "not available" in refused.message
    assert rules.profile_instructions("Travel_Guide", ctx) == "Keep responses under 3 sentences.\n\nBe friendly."
    (tmp_path / "web").mkdir()
    _, ctx = guide(tmp_path / "web", "web")
    assert [p.name for p in rules.active_profiles("Travel_Guide", ctx)] == ["everywhere"]
    assert rules.hidden_tools("Travel_Guide", ctx) == set()


def test_an_active_profiles_constraint_checks_the_reply(tmp_path):
    from frontdesk.runtime.context import BotMessage
    from frontdesk.runtime.pipeline import Outgoing

    engine, ctx = guide(tmp_path, "voice")
    out = Outgoing([BotMessage("Travel_Guide", "A very long answer that goes on and on about the trip.")])
    engine.rules.output_ready(ctx, out)
    assert [m.text for m in out.messages] == ["Please ask me one thing at a time."]
    (tmp_path / "w").mkdir()
    engine, ctx = guide(tmp_path / "w", "web")
    out = Outgoing([BotMessage("Travel_Guide", "A very long answer that goes on and on about the trip.")])
    engine.rules.output_ready(ctx, out)
    assert [m.text for m in out.messages] == ["A very long answer that goes on and on about the trip."]


def test_profiles_of_a_behavior_profile_file_are_compiled():
    program, _ = load_abl(Path(__file__).parent / "abl" / "spec" / "derived_behavior_profile_file")
    profile = program.agents["Travel_Guide"].rules.profiles[0]
    assert profile.name == "voice-optimized" and profile.priority == 10 and profile.when is not None
    assert profile.tools_hide == ["show_map", "render_chart"] and profile.constraints


ERRORS = '''AGENT: Booker
GOAL: "Book rooms"

TOOLS:
  book_room(room: string) -> {booking_id: string}

TEMPLATES:
  sorry:
    DEFAULT: "Booking is down."
    SLACK: ":warning: Booking is down."

ON_ERROR:
  tool_error:
    LOG: {room}
    RESPOND: TEMPLATE(sorry)
    RETRY: 1
    THEN: HANDOFF Desk

FLOW:
  book:
    REASONING: false
    CALL: book_room("suite")
    RESPOND: "Booked: {{book_room.booking_id}}."
    THEN: COMPLETE
'''

DESK = '''AGENT: Desk
GOAL: "People at the desk"

FLOW:
  hello:
    REASONING: false
    RESPOND: "The front desk will book it for you."
    THEN: COMPLETE
'''


def test_on_error_then_hands_off_after_its_retries(tmp_path):
    (tmp_path / "booker.agent.abl").write_text(ERRORS, encoding="utf-8")
    (tmp_path / "desk.agent.abl").write_text(DESK, encoding="utf-8")
    program, diags = load_abl(tmp_path, entry="Booker")
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    down = StubToolRunner({"book_room": lambda room: (_ for _ in ()).throw(RuntimeError("down"))}, convention="value")
    engine = Engine(program, None, MemorySessionStore(), tools=down)
    result = engine.start(channel="slack")
    texts = [m.text for m in result.messages]
    assert texts[0] == ":warning: Booking is down."
    assert "The front desk will book it for you." in texts
    assert len(down.calls) == 2  # the call and one retry
    assert any(e.data.get("action") == "ON_ERROR log" for e in result.events)
