"""fan_out (runtime/fanout.py): tasks run at the same time, each on its own copy of the session, and
are merged in task order; a task that would ask the user comes back as `needs_input`, one that asks
for a person as `escalate`, one that raises as `error`; with an ordered provider (the scripted one)
they run one after another with the same isolation.

Real ABL programs, real Python tools (a file beside the program, sleeping where timing matters) and a
small model that answers by what each request holds (not by call order, so it is not `ordered`)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.base import LLMResponse, ScriptError, ToolCall, Usage
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.fanout import TaskMemory
from frontdesk.store.longterm import DictMemoryStore
from frontdesk.store.memory import MemorySessionStore

OPS = '''"""Lookups: the first one is slow, so the second task ends first."""
import time


def look(x: str) -> dict:
    """Look x up."""
    time.sleep(0.4 if x == "1" else 0.05)
    return {"found": "item-" + x}
'''

TOOLS = '''TOOLS:
  look(x: string) -> {found: string}
    description: "Look up"
    python: ops.py
'''

PLANNER = '''AGENT: Planner
GOAL: "Plan the trip"

DELEGATE:
  - AGENT: Lookup
    PURPOSE: "Look something up"
    INPUT: {x}
  - AGENT: Asker
    PURPOSE: "Ask for the city"
  - AGENT: Broken
    PURPOSE: "Never works"
  - AGENT: Noter
    PURPOSE: "Takes notes with the model"
  - AGENT: Worried
    PURPOSE: "Wants a person"
'''

LOOKUP = '''AGENT: Lookup
GOAL: "Look things up"

TOOLS:
  look(x: string) -> {found: string}

GATHER:
  x:
    prompt: "What?"
    type: string

FLOW:
  first:
    RESPOND: "Looking up {{x}}; found so far: {{found}}."
    THEN: go
  go:
    CALL: look(x)
    SET:
      found = look.found
    RESPOND: "Found {{found}}."
    THEN: COMPLETE
'''

ASKER = '''AGENT: Asker
GOAL: "Find the city"

GATHER:
  city:
    prompt: "Which city?"
    type: string
    required: true

FLOW:
  ask:
    GATHER:
      - city: required
      STRATEGY: pattern
    THEN: done
  done:
    RESPOND: "City {{city}}."
    THEN: COMPLETE
'''

BROKEN = '''AGENT: Broken
GOAL: "Crash the model"
'''

NOTER = '''AGENT: Noter
GOAL: "Take notes"

TOOLS:
  look(x: string) -> {found: string}
'''

WORRIED = '''AGENT: Worried
GOAL: "Worry about the trip"

ESCALATE:
  triggers:
    - WHEN: tool_failures > 5
      REASON: "Too many failures"
'''


class ByRequest:
    """A model that answers by what the request holds, whatever the order of the calls: the Planner
    greets, then fans out `tasks`, then says "All done."; Noter looks "3" up and completes; Worried
    escalates; Broken's model raises. Thread-safe: it only appends to a list."""

    name = "by-request"

    def __init__(self, tasks: list[dict]) -> None:
        self.tasks = tasks
        self.calls: list = []
        self.threads: set[str] = set()

    def complete(self, request):
        self.calls.append(request)
        self.threads.add(threading.current_thread().name)
        system = request.messages[0].content or ""
        last = request.messages[-1]
        usage = Usage(prompt_tokens=10, completion_tokens=1)
        if "Crash the model" in system:
            raise RuntimeError("the model crashed")
        if "Take notes" in system:
            if last.role == "tool":
                return LLMResponse(tool_calls=[ToolCall(id="n2", name="complete", arguments={"message": "noted"})],
                                   usage=usage)
            return LLMResponse(tool_calls=[ToolCall(id="n1", name="look", arguments={"x": "3"})], usage=usage)
        if "Worry about" in system:
            return LLMResponse(tool_calls=[ToolCall(id="w1", name="escalate", arguments={"reason": "the user is upset"})],
                               usage=usage)
        if not any(m.role == "user" for m in request.messages):
            return LLMResponse(content="Hello, where to?", usage=usage)
        if last.role == "user":
            return LLMResponse(tool_calls=[ToolCall(id="fan-1", name="fan_out", arguments={"tasks": self.tasks})],
                               usage=usage)
        return LLMResponse(content="All done.", usage=usage)


def program(tmp_path: Path):
    files = {"ops.py": OPS, "ops.tools.abl": TOOLS, "planner.agent.abl": PLANNER, "lookup.agent.abl": LOOKUP,
             "asker.agent.abl": ASKER, "broken.agent.abl": BROKEN, "noter.agent.abl": NOTER,
             "worried.agent.abl": WORRIED}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    prog, diags = load_abl(tmp_path, entry="Planner")
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return prog


def run(tmp_path: Path, tasks: list[dict], llm=None):
    llm = llm or ByRequest(tasks)
    eng = Engine(program(tmp_path), llm, MemorySessionStore())
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "plan my trip")
    return eng, sid, result, llm


def of(result, kind: str) -> list:
    return [e for e in result.events if e.type == kind]


def fan_answer(llm) -> dict:
    """The one tool message that answered the fan_out call, as the Planner's model read it."""
    (answer,) = [m for m in llm.calls[-1].messages if m.role == "tool" and m.name == "fan_out"]
    return json.loads(answer.content)


LOOKUPS = [{"agent": "Lookup", "input": {"x": "1"}}, {"agent": "Lookup", "input": {"x": "2"}}]


def test_tasks_run_at_once_each_on_its_own_copy_and_merge_in_task_order(tmp_path):
    eng, sid, result, llm = run(tmp_path, LOOKUPS)
    (fan,) = of(result, "fan_out.started")
    (done,) = of(result, "fan_out.completed")
    assert fan.data["mode"] == "parallel"
    calls, answers = of(result, "tool_call"), of(result, "tool_result")
    assert [c.data["args"]["x"] for c in calls] == ["1", "2"]  # task order in the log ...
    assert answers[1].ts < answers[0].ts  # ... though the second task's lookup answered first
    assert calls[1].ts < answers[0].ts  # and both ran at the same time
    # isolation: each task saw the session as it was when the fan_out started, not the other's writes
    results = done.data["results"]
    assert [r["values"] for r in results] == [{"x": "1"}, {"x": "2"}]
    assert [r["said"] for r in results] == [["Looking up 1; found so far: (none).", "Found item-1."],
                                            ["Looking up 2; found so far: (none).", "Found item-2."]]
    # the user hears the tasks in task order, then the caller
    assert [m.text for m in result.messages] == ["Looking up 1; found so far: (none).", "Found item-1.",
                                                 "Looking up 2; found so far: (none).", "Found item-2.", "All done."]
    history = [h["text"] for h in eng.store.load(sid)["history"] if h["role"] == "bot"]
    assert history[-5:] == [m.text for m in result.messages]
    # merged in task order: where both wrote, the later task's value stands, and the trace says so
    state = eng.store.load(sid)
    assert state["variables"]["session"]["x"] == "2" and state["variables"]["session"]["found"] == "item-2"
    conflicts = {c["name"]: c for c in done.data["conflicts"]}
    assert conflicts["variables.session.found"]["kept"] == 1
    assert [v["value"] for v in conflicts["variables.session.found"]["values"]] == ["item-1", "item-2"]
    assert "variables.session.x" in conflicts and "results.look" in conflicts
    # per task: its status and how long it took (the first one's slow lookup)
    assert [t["status"] for t in done.data["tasks"]] == ["success", "success"]
    assert done.data["tasks"][0]["duration_ms"] > done.data["tasks"][1]["duration_ms"]
    assert fan_answer(llm)["results"] == results  # one answer to the model, all results together
    assert state["stack"][-1]["agent"] == "Planner" and len(state["stack"]) == 1  # no task frame is left


def test_a_task_that_would_ask_the_user_comes_back_as_needs_input(tmp_path):
    eng, sid, result, llm = run(tmp_path, [{"agent": "Asker"}, {"agent": "Lookup", "input": {"x": "2"}}])
    (done,) = of(result, "fan_out.completed")
    asker, lookup = done.data["results"]
    assert asker == {"agent": "Asker", "status": "needs_input", "question": "Which city?", "waiting": "Asker"}
    assert lookup["status"] == "success"
    # the task did not wait and its question was not sent: the caller decides what to ask
    assert "Which city?" not in [m.text for m in result.messages]
    assert [m.text for m in result.messages][-1] == "All done."
    state = eng.store.load(sid)
    assert [f["agent"] for f in state["stack"]] == ["Planner"] and not state["threads"]
    assert fan_answer(llm)["results"][0]["question"] == "Which city?"


def test_a_failing_task_becomes_an_error_result_and_the_others_still_merge(tmp_path):
    eng, sid, result, _ = run(tmp_path, [{"agent": "Broken"}, {"agent": "Lookup", "input": {"x": "2"}},
                                         {"agent": "Nobody"}])
    (done,) = of(result, "fan_out.completed")
    results = done.data["results"]
    assert results[0] == {"agent": "Nobody", "status": "error",
                          "message": "Nobody is not an agent Planner delegates to"}
    assert results[1] == {"agent": "Broken", "status": "error", "message": "RuntimeError: the model crashed"}
    assert results[2]["status"] == "success"
    errors = [e for e in of(result, "error") if e.data.get("where") == "fan_out task"]
    assert [(e.agent, e.data["task"]) for e in errors] == [("Broken", 0)]
    assert eng.store.load(sid)["variables"]["session"]["found"] == "item-2"
    assert [m.text for m in result.messages][-1] == "All done."


def test_a_task_asking_for_a_person_does_not_escalate_the_session(tmp_path):
    eng, sid, result, _ = run(tmp_path, [{"agent": "Worried"}])
    (done,) = of(result, "fan_out.completed")
    assert done.data["results"] == [{"agent": "Worried", "status": "escalate", "reason": "the user is upset"}]
    assert eng.store.load(sid)["status"] == "waiting"
    assert not of(result, "session_escalated")


def test_the_tasks_model_calls_run_in_worker_threads_and_are_counted(tmp_path):
    eng, sid, result, llm = run(tmp_path, [{"agent": "Noter"}, {"agent": "Lookup", "input": {"x": "2"}}])
    (done,) = of(result, "fan_out.completed")
    assert done.data["results"][0]["status"] == "success" and done.data["results"][0]["message"] == "noted"
    assert any(name.startswith("frontdesk-fan-out") for name in llm.threads)
    noter_calls = [e for e in of(result, "llm_call") if e.agent == "Noter"]
    assert len(noter_calls) == 2
    (completed,) = of(result, "execution.completed")
    assert completed.data["llm_calls"] == 4 and completed.data["prompt_tokens"] == 40  # Planner 2, Noter 2
    assert eng.store.load(sid)["tokens"]["calls"] == 5  # with the greeting of the first turn


def test_an_ordered_provider_runs_the_tasks_one_after_another_with_the_same_isolation(tmp_path):
    script = [{"purpose": "reason", "reply": "Hello, where to?"},
              {"purpose": "reason", "call": "fan_out", "with": {"tasks": LOOKUPS}},
              {"purpose": "reason", "reply": "All done."}]
    eng, sid, result, llm = run(tmp_path, LOOKUPS, ScriptedProvider(script))
    (fan,) = of(result, "fan_out.started")
    (done,) = of(result, "fan_out.completed")
    assert fan.data["mode"] == "sequential" and "order" in fan.data["why"]
    calls, answers = of(result, "tool_call"), of(result, "tool_result")
    assert answers[0].ts <= calls[1].ts  # the second task started after the first had ended
    # the second task did not see the first one's `found`: the same copy of the session for both
    assert [r["said"][0] for r in done.data["results"]] == ["Looking up 1; found so far: (none).",
                                                           "Looking up 2; found so far: (none)."]
    assert eng.store.load(sid)["variables"]["session"]["found"] == "item-2"
    llm.assert_finished()


def test_a_script_that_goes_off_its_script_inside_a_task_is_reported_loudly(tmp_path):
    script = [{"purpose": "reason", "reply": "Hello, where to?"},
              {"purpose": "reason", "call": "fan_out", "with": {"tasks": [{"agent": "Noter"}]}},
              {"purpose": "route", "reply": "not a reason call"}]
    with pytest.raises(ScriptError) as raised:
        run(tmp_path, [], ScriptedProvider(script))
    assert any(entry.name == "run_task" for entry in raised.traceback)  # from the task, not swallowed there


def test_task_memory_keeps_a_tasks_writes_aside_until_the_merge():
    shared = DictMemoryStore()
    shared.put("user", "u1", "prefs.hotel", "Ritz")
    shared.put("user", "u1", "prefs.seat", "aisle")
    mine = TaskMemory(shared)
    mine.put("user", "u1", "prefs.hotel", "Hilton")
    mine.delete("user", "u1", "prefs.seat")
    mine.put("user", "u1", "prefs.meal", "veg")
    assert mine.get("user", "u1", "prefs.hotel") == "Hilton" and mine.get("user", "u1", "prefs.seat") is None
    assert mine.items("user", "u1", "prefs") == {"prefs.hotel": "Hilton", "prefs.meal": "veg"}
    assert shared.items("user", "u1") == {"prefs.hotel": "Ritz", "prefs.seat": "aisle"}  # untouched
    with pytest.raises(ValueError):
        mine.put("user", "u1", "bad..path", 1)
    mine.apply()
    assert shared.items("user", "u1") == {"prefs.hotel": "Hilton", "prefs.meal": "veg"}


class DelegatesFirst(ByRequest):
    """The Planner delegates to Asker (the normal, one-agent delegation) instead of fanning out."""

    def complete(self, request):
        if request.messages[-1].role == "user" and len(self.calls) == 1:
            self.calls.append(request)
            return LLMResponse(tool_calls=[ToolCall(id="d1", name="delegate", arguments={"agent": "Asker"})])
        return super().complete(request)


def test_a_fan_out_stored_mid_way_by_the_sequential_version_finishes_with_the_rest_in_isolation(tmp_path):
    # a session stored while a fan_out of the earlier version ran on the stack: its first task (Asker)
    # waits for the user, the second (Lookup) is still to run
    eng, sid, result, llm = run(tmp_path, [], DelegatesFirst([]))
    assert [m.text for m in result.messages] == ["Which city?"]
    state = eng.store.load(sid)
    planner = state["stack"][0]["data"]
    call = {"id": "fan-1", "name": "fan_out", "arguments": {"tasks": [{"agent": "Asker"}] + LOOKUPS[1:]}}
    planner.update(awaiting="fan-1", awaiting_tool="fan_out", pending=[call], messages=planner["messages"][:-1]
                   + [{"role": "assistant", "tool_calls": [call]}],
                   fan_out={"id": "fan-1", "tasks": LOOKUPS[1:], "results": []})
    eng.store.save_turn(sid, state, [])
    result = eng.send(sid, "Paris")
    (done,) = of(result, "fan_out.completed")
    assert [(r["agent"], r["status"]) for r in done.data["results"]] == [("Asker", "success"), ("Lookup", "success")]
    assert [m.text for m in result.messages] == ["City Paris.", "Looking up 2; found so far: (none).",
                                                 "Found item-2.", "All done."]
    assert fan_answer(llm)["results"] == done.data["results"]
