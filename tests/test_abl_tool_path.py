"""The tool call path of the engine (TurnContext.call_tool) for ABL programs: `tool_failures` counted for
every caller, ON_ERROR words that read the failed result, `tool_call` / `tool_result` events with their
timing (and the legacy `tool_called` kind in stored traces), fan_out's execution mode, the
`max_iterations` the IR carries, and the speaker a FLOW step's reasoning agent shows the user.

Real Python tools (a file beside the program) and the scripted model; no mocks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

OPS = '''"""Tools of the tests: a booking system that fails on request, and slow lookups."""
import time


def book(kind: str) -> dict:
    """Book a room of this kind."""
    if kind == "broken":
        raise RuntimeError("the booking system is down")
    return {"booked": kind}


def slow_a(x: str) -> dict:
    """A lookup that takes half a second."""
    time.sleep(0.5)
    return {"a": x}


def slow_b(x: str) -> dict:
    """Another lookup that takes half a second."""
    time.sleep(0.5)
    return {"b": x}
'''

TOOLS = '''TOOLS:
  book(kind: string) -> {booked: string}
    description: "Book a room"
    python: ops.py

  slow_a(x: string) -> {a: string}
    description: "Lookup A"
    python: ops.py

  slow_b(x: string) -> {b: string}
    description: "Lookup B"
    python: ops.py
'''

DESK = '''AGENT: Desk
GOAL: "Book rooms"

TOOLS:
  book(kind: string) -> {booked: string}

ESCALATE:
  triggers:
    - WHEN: tool_failures > 1
      REASON: "The booking system keeps failing"
      PRIORITY: high
      RESPOND: "Passing you to a colleague."
'''

GREETING = {"purpose": "reason", "reply": "Hello, what can I book for you?"}


def build(tmp_path: Path, files: dict[str, str], entry: str):
    (tmp_path / "ops.py").write_text(OPS, encoding="utf-8")
    (tmp_path / "ops.tools.abl").write_text(TOOLS, encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    prog, diags = load_abl(tmp_path, entry=entry)
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return prog


def engine(tmp_path: Path, files: dict[str, str], entry: str, script: list[dict] | None, store=None):
    llm = ScriptedProvider(script) if script is not None else None
    return Engine(build(tmp_path, files, entry), llm, store or MemorySessionStore()), llm


def of(result, kind: str) -> list:
    return [e for e in result.events if e.type == kind]


def book(kind: str) -> dict:
    return {"purpose": "reason", "call": "book", "with": {"kind": kind}}


# ---- 1. tool_failures: counted in call_tool, for every caller ------------------------------------------


def test_a_reasoning_agents_failing_tool_counts_and_the_escalate_trigger_fires(tmp_path):
    eng, _ = engine(tmp_path, {"desk.agent.abl": DESK}, "Desk",
                    [GREETING, book("broken"), book("broken"), {"purpose": "reason", "reply": "It did not work."}])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "book a broken room")
    assert [e.data["status"] for e in of(result, "tool_result")] == ["error", "error"]
    state = eng.store.load(sid)
    assert state["system"]["tool_failures"] == 2
    escalated = of(result, "escalated")
    assert escalated and escalated[0].data["priority"] == "high"
    assert state["status"] == "escalated"
    assert [m.text for m in result.messages] == ["It did not work.", "Passing you to a colleague."]


def test_a_success_resets_the_count_so_failures_must_be_consecutive(tmp_path):
    eng, _ = engine(tmp_path, {"desk.agent.abl": DESK}, "Desk",
                    [GREETING, book("broken"), book("suite"), book("broken"),
                     {"purpose": "reason", "reply": "One of three failed."}])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "book three rooms: suite, broken or whatever works")  # the values the model sends
    assert [e.data["status"] for e in of(result, "tool_result")] == ["error", "success", "error"]
    assert eng.store.load(sid)["system"]["tool_failures"] == 1
    assert not of(result, "escalated")


FLOW_DESK = '''AGENT: Flow_Desk
GOAL: "Book rooms"

TOOLS:
  book(kind: string) -> {booked: string}

FLOW:
  first:
    CALL: book("broken")
    THEN: second

  second:
    CALL: book("broken")
    RESPOND: "failures={{tool_failures}}"
    THEN: third

  third:
    CALL: book("suite")
    RESPOND: "now failures={{tool_failures}}"
    THEN: COMPLETE
'''


def test_a_flows_calls_are_counted_once_each(tmp_path):
    eng, _ = engine(tmp_path, {"flow.agent.abl": FLOW_DESK}, "Flow_Desk", None)
    result = eng.start(channel="test")
    assert [m.text for m in result.messages] == ["failures=2", "now failures=0"]


# ---- 2. ON_ERROR's words read the result of the call that failed ------------------------------------


ON_ERROR_DESK = '''AGENT: Err_Desk
GOAL: "Book rooms"

TOOLS:
  book(kind: string) -> {booked: string}

ON_ERROR:
  book:
    RESPOND: "Sorry: {{book.message}} ({{tool.name}}: {{tool.message}})"

FLOW:
  go:
    CALL: book("broken")
    RESPOND: "after: {{book.status}}"
    THEN: COMPLETE
'''


def test_on_error_respond_shows_the_failed_tools_message(tmp_path):
    eng, _ = engine(tmp_path, {"err.agent.abl": ON_ERROR_DESK}, "Err_Desk", None)
    result = eng.start(channel="test")
    said = [m.text for m in result.messages]
    failure = of(result, "tool_result")[0].data["message"]
    assert failure and "(none)" not in said[0]
    assert said[0] == f"Sorry: {failure} (book: {failure})"
    assert said[1] == "after: error"
    assert not [e for e in result.events if e.type == "warning" and e.data.get("where") == "bot message"]


# ---- 6. tool_call / tool_result events, with their timing; legacy tool_called ------------------------


def test_tool_call_and_tool_result_carry_the_calls_duration(tmp_path):
    eng, _ = engine(tmp_path, {"desk.agent.abl": DESK.replace("book(kind: string) -> {booked: string}",
                                                              "slow_a(x: string) -> {a: string}")},
                    "Desk", [GREETING, {"purpose": "reason", "call": "slow_a", "with": {"x": "1"}},
                             {"purpose": "reason", "reply": "Done."}])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "look up 1")
    assert not of(result, "tool_called")
    (call,), (answer,) = of(result, "tool_call"), of(result, "tool_result")
    assert call.seq < answer.seq and call.data["tool"] == "slow_a" and call.data["args"] == {"x": "1"}
    assert 500 <= answer.data["duration_ms"] < 5000
    stored = [e for e in eng.store.events(sid) if e["type"] == "tool_call"]
    assert stored[0]["data"]["duration_ms"] == answer.data["duration_ms"]


def test_an_old_trace_with_tool_called_events_still_renders(tmp_path):
    from frontdesk.cli import app
    from frontdesk.runtime.events import EVENT_TYPES

    assert "tool_called" in EVENT_TYPES and "tool_call" in EVENT_TYPES
    db = tmp_path / "sessions.sqlite3"
    store = SqliteSessionStore(str(db))
    old = [{"seq": 1, "turn": 1, "type": "tool_called", "agent": "order",
            "data": {"tool": "place_order", "args": {"book": "Dune"}}, "ts": 0.0},
           {"seq": 2, "turn": 1, "type": "tool_result", "agent": "order",
            "data": {"tool": "place_order", "status": "success", "message": "ordered"}, "ts": 0.0}]
    store.save_turn("old-session", {"session_id": "old-session", "turn": 1}, old)
    out = CliRunner().invoke(app, ["trace", "old-session", "--store", str(db)])
    assert out.exit_code == 0, out.output
    assert "call place_order" in out.output and "Dune" in out.output
    assert "place_order -> success" in out.output


# ---- 3. fan_out: the mode it runs in, said in the trace ------------------------------------------------


FANNER = '''AGENT: Fanner
GOAL: "Look things up"

DELEGATE:
  - AGENT: Look_A
    PURPOSE: "Lookup A"
    INPUT: {x}
  - AGENT: Look_B
    PURPOSE: "Lookup B"
    INPUT: {x}
'''

LOOK = '''AGENT: Look_{n}
GOAL: "Lookup {n}"

TOOLS:
  slow_{l}(x: string) -> {{{l}: string}}

GATHER:
  x:
    prompt: "What?"
    type: string

FLOW:
  go:
    CALL: slow_{l}(x)
    THEN: COMPLETE
'''


FAN_TASKS = [{"agent": "Look_A", "input": {"x": "1"}}, {"agent": "Look_B", "input": {"x": "2"}}]


class ByTranscript:
    """A model that answers by what the request holds, not by the order of the calls (so it is not
    `ordered`, and fan_out may run its tasks at once): a greeting before the user spoke, the fan_out
    call to the user's message, words once the results are in. Thread-safe: it keeps only a list."""

    name = "by-transcript"

    def __init__(self) -> None:
        self.calls: list = []

    def complete(self, request):
        from frontdesk.llm.base import LLMResponse, ToolCall, Usage

        self.calls.append(request)
        usage = Usage(prompt_tokens=7, completion_tokens=3)
        if not any(m.role == "user" for m in request.messages):
            return LLMResponse(content=GREETING["reply"], usage=usage)
        if request.messages[-1].role == "user":
            return LLMResponse(tool_calls=[ToolCall(id="fan-1", name="fan_out", arguments={"tasks": FAN_TASKS})],
                               usage=usage)
        return LLMResponse(content="Both are back.", usage=usage)


@pytest.mark.parametrize("provider", ["scripted", "unordered"])
def test_fan_out_runs_its_tasks_in_the_mode_the_trace_says(tmp_path, provider):
    files = {"fanner.agent.abl": FANNER, "a.agent.abl": LOOK.format(n="A", l="a"),
             "b.agent.abl": LOOK.format(n="B", l="b")}
    if provider == "scripted":  # answers in the order it is asked: the tasks run one after another
        eng, _ = engine(tmp_path, files, "Fanner", [
            GREETING, {"purpose": "reason", "call": "fan_out", "with": {"tasks": FAN_TASKS}},
            {"purpose": "reason", "reply": "Both are back."}])
    else:
        eng = Engine(build(tmp_path, files, "Fanner"), ByTranscript(), MemorySessionStore())
    sid = eng.start(channel="test").session_id
    started = time.perf_counter()
    result = eng.send(sid, "look up both")
    took = time.perf_counter() - started
    (fan,) = of(result, "fan_out.started")
    (done,) = of(result, "fan_out.completed")
    results = done.data["results"]
    assert [(r["agent"], r["status"]) for r in results] == [("Look_A", "success"), ("Look_B", "success")]
    assert [(t["agent"], t["status"]) for t in done.data["tasks"]] == [("Look_A", "success"), ("Look_B", "success")]
    assert all(t["duration_ms"] >= 450 for t in done.data["tasks"])  # each task's own time: its 0.5 s lookup
    assert [m.text for m in result.messages] == ["Both are back."]
    calls = of(result, "tool_call")
    answers = of(result, "tool_result")
    # merged in task order, renumbered by the turn's log: one sequence, no gap, no repeat
    assert [c.data["tool"] for c in calls] == ["slow_a", "slow_b"]
    assert [e.seq for e in result.events] == list(range(result.events[0].seq, result.events[-1].seq + 1))
    assert [e["seq"] for e in eng.store.events(sid)][-len(result.events):] == [e.seq for e in result.events]
    assert fan.seq < calls[0].seq < answers[0].seq < calls[1].seq < answers[1].seq < done.seq
    if provider == "scripted":
        assert fan.data["mode"] == "sequential" and "order" in fan.data["why"]
        # one task after the other: the second lookup started once the first had answered
        assert answers[0].ts <= calls[1].ts and took >= 0.95
    else:
        assert fan.data["mode"] == "parallel" and fan.data["workers"] == 2
        # at the same time: the second lookup started before the first answered
        assert calls[1].ts < answers[0].ts and took < 0.9
        # the tasks' model calls (none here) and the caller's two are counted once each
        (completed,) = of(result, "execution.completed")
        assert completed.data["llm_calls"] == 2 and completed.data["prompt_tokens"] == 14


# ---- 4. the IR carries the effective max_iterations ----------------------------------------------------


def test_the_ir_carries_max_iterations_ten_by_default_and_executions_value(tmp_path):
    prog = build(tmp_path, {"desk.agent.abl": DESK,
                            "five.agent.abl": DESK.replace("AGENT: Desk", "AGENT: Five") + "\nEXECUTION:\n"
                            "  max_iterations: 5\n"}, "Desk")
    assert prog.agents["Desk"].max_iterations == 10
    assert prog.agents["Five"].max_iterations == 5
    claim = load_abl(EXAMPLES / "insurance_claim")[0]
    step = claim.agents["Insurance_Claim__describe"]
    assert step.max_iterations == 6  # the flow's EXECUTION max_iterations


def test_the_runtime_reads_the_limit_from_the_ir_only(tmp_path):
    prog = build(tmp_path, {"desk.agent.abl": DESK}, "Desk")
    prog.agents["Desk"].max_iterations = 2  # EXECUTION says nothing: the IR's value is the limit
    looping = book("suite")
    llm = ScriptedProvider([GREETING, looping, looping, {"purpose": "reason", "reply": "later"}])
    eng = Engine(prog, llm, MemorySessionStore())
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "book a suite")
    assert of(result, "max_iterations_exceeded")[0].data["limit"] == 2
    assert len(of(result, "tool_call")) == 2


# ---- 5. a FLOW step's reasoning agent speaks as the flow's agent ---------------------------------------


def test_a_reasoning_step_speaks_as_its_flow_agent_and_the_trace_keeps_the_step(tmp_path):
    from frontdesk.testing import load_conversation, run_conversation, scripted_model

    spec = load_conversation(EXAMPLES / "insurance_claim" / "conversations" / "happy_path.yml")
    prog, _ = load_abl(EXAMPLES / "insurance_claim")
    run = run_conversation(prog, spec["user"], scripted_model(spec), today=spec.get("today"))
    speakers = {m.agent for t in run.turns for m in t.messages}
    assert speakers == {"Insurance_Claim"}
    asked = next(m for t in run.turns for m in t.messages if "in your own words" in m.text)
    assert asked.by == "Insurance_Claim__describe"
    said = [e for e in run.events if e["type"] == "bot_message" and "in your own words" in e["data"]["text"]]
    assert said[0]["agent"] == "Insurance_Claim__describe" and said[0]["data"]["shown_as"] == "Insurance_Claim"
    state = run.engine.store.load(run.session_id)
    assert {h["agent"] for h in state["history"] if h["role"] == "bot"} == {"Insurance_Claim"}


def test_chat_prints_the_flow_agents_name_for_a_reasoning_step(tmp_path):
    from frontdesk.cli import app

    script = EXAMPLES / "insurance_claim" / "conversations" / "happy_path.yml"
    out = CliRunner().invoke(app, ["chat", str(EXAMPLES / "insurance_claim"), "--script", str(script),
                                   "--store", "memory", "--llm", "none", "--no-embeddings"])
    assert out.exit_code == 0, out.output
    assert "Insurance_Claim__" not in out.output
    assert "Insurance_Claim> I'm sorry to hear that." in out.output


def test_the_trace_command_shows_tool_calls_with_their_duration(tmp_path):
    from frontdesk.cli import app

    db = tmp_path / "sessions.sqlite3"
    eng, _ = engine(tmp_path, {"desk.agent.abl": DESK}, "Desk",
                    [GREETING, book("suite"), {"purpose": "reason", "reply": "Booked."}],
                    store=SqliteSessionStore(db))
    sid = eng.start(channel="test").session_id
    eng.send(sid, "a suite please")
    out = CliRunner().invoke(app, ["trace", sid, "--store", str(db)], terminal_width=200)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    call = next(line for line in lines if "tool_call " in line)
    answer = next(line for line in lines if "tool_result " in line)
    assert "call book(" in call and " ms]" in call
    assert "book -> success" in answer and " ms]" in answer


RETRYING = ON_ERROR_DESK.replace('''    RESPOND: "Sorry: {{book.message}} ({{tool.name}}: {{tool.message}})"''',
                                 '''    RESPOND: "Still failing after retries."
    RETRY: 2''').replace('RESPOND: "after: {{book.status}}"', 'RESPOND: "failures={{tool_failures}}"')


def test_each_failed_retry_is_a_failure_in_a_row(tmp_path):
    eng, _ = engine(tmp_path, {"err.agent.abl": RETRYING}, "Err_Desk", None)
    result = eng.start(channel="test")
    assert [e.data.get("attempt") for e in of(result, "tool_call")] == [None, 1, 2]
    assert [m.text for m in result.messages] == ["Still failing after retries.", "failures=3"]


STEPPER = '''AGENT: Stepper
GOAL: "Book rooms"

TOOLS:
  book(kind: string) -> {booked: string}

ON_ERROR:
  book:
    RESPOND: "Booking failed: {{tool.message}}"

FLOW:
  work:
    REASONING: true
    INSTRUCTIONS: "Book the room the user asks for"
    THEN: COMPLETE
'''


def test_a_reasoning_steps_failing_tool_goes_to_its_flow_agents_on_error(tmp_path):
    eng, _ = engine(tmp_path, {"stepper.agent.abl": STEPPER}, "Stepper", [
        {"purpose": "reason", "reply": "Which room would you like?"},
        book("broken"),
        {"purpose": "reason", "reply": "I could not book it."}])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "the broken one")
    failure = of(result, "tool_result")[0].data["message"]
    assert [(m.agent, m.text) for m in result.messages] == [
        ("Stepper", f"Booking failed: {failure}"), ("Stepper", "I could not book it.")]
    assert of(result, "tool_call")[0].agent == "Stepper__work"
    assert eng.store.load(sid)["system"]["tool_failures"] == 1


def test_a_tool_result_holds_only_the_latest_calls_values(tmp_path):
    """`book.booked` after a failed call is not the value an earlier successful call returned."""
    eng, _ = engine(tmp_path, {"desk.agent.abl": DESK}, "Desk",
                    [GREETING, book("suite"), {"purpose": "reason", "reply": "Booked."},
                     book("broken"), {"purpose": "reason", "reply": "That failed."}])
    sid = eng.start(channel="test").session_id
    eng.send(sid, "book a suite")
    assert eng.store.load(sid)["results"]["book"]["values"] == {"booked": "suite"}
    eng.send(sid, "now a broken one")
    record = eng.store.load(sid)["results"]["book"]
    assert record["status"] == "error" and "booked" not in record["values"]
