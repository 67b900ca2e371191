"""Threads and the new outcomes: handoffs that return, transfers, escalation, delegation from a
reasoning loop that resumes, the turn pipeline's hooks, and loading sessions stored by version 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontdesk.lang import build as b
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.state import STATE_VERSION, load_state
from frontdesk.runtime.tools import StubToolRunner, ToolResult
from frontdesk.store.memory import MemorySessionStore


def texts(result) -> list[str]:
    return [m.text for m in result.messages]


def types(result) -> list[str]:
    return [e.type for e in result.events]


# ---- handoffs in flows ------------------------------------------------------------------------


def test_a_handoff_that_returns_suspends_the_thread_and_brings_it_back_with_its_data():
    program = b.program(
        b.flow("main", [
            b.say("Order number?"),
            b.listen(),
            b.set_(order='"A-7"'),
            b.handoff("verify", resume=True, code='"1234"'),
            b.say("Back with order ${order}, verified: ${verify.ok}."),
            b.listen(),
        ], args=["order"]),
        b.flow("verify", [
            b.say("Please confirm the code ${code}."),
            b.listen(),
            b.set_(ok="True"),
            b.ret("success"),
        ], args=["code", "ok"]),
    )
    store = MemorySessionStore()
    engine = Engine(program, None, store)
    sid = engine.start().session_id
    first = engine.send(sid, "A-7")
    assert texts(first) == ["Please confirm the code 1234."]
    suspended = [e for e in first.events if e.type == "agent_suspended"]
    assert suspended and suspended[0].agent == "main" and suspended[0].data["reason"] == "handoff"
    state = engine.load_state(sid)
    assert [f.agent for f in state.stack] == ["verify"]
    [thread] = state.threads.values()
    assert thread.reason == "handoff" and thread.base.agent == "main"
    # a new engine over the same store: the thread survives storage
    second = Engine(program, None, store).send(sid, "yes")
    assert texts(second) == ["Back with order A-7, verified: True."]
    assert "agent_resumed" in types(second)
    state = engine.load_state(sid)
    assert [f.agent for f in state.stack] == ["main"] and not state.threads


def test_a_handoff_for_good_ends_the_agent_and_the_other_takes_over():
    program = b.program(
        b.flow("main", [b.say("Hi."), b.listen(), b.handoff("billing", summary="User asked: billing"),
                        b.say("never said")]),
        b.flow("billing", [b.say("Billing here. Invoice number?"), b.listen(), b.say("Thanks."), b.listen()]),
    )
    engine = Engine(program, None, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "billing question")
    assert texts(result) == ["Billing here. Invoice number?"]
    finished = next(e for e in result.events if e.type == "agent_finished" and e.agent == "main")
    assert finished.data["handed_off_to"] == "billing"
    handoff = next(e for e in result.events if e.type == "step" and e.data.get("action") == "handoff")
    assert handoff.data["summary"] == "User asked: billing"
    state = engine.load_state(sid)
    assert [f.agent for f in state.stack] == ["billing"] and state.stack[0].parent is None
    assert texts(engine.send(sid, "42")) == ["Thanks."]


def test_escalation_marks_the_session_and_the_flow_goes_on_after_the_person():
    program = b.program(b.flow("main", [
        b.say("How can I help?"), b.listen(),
        b.escalate("the user asked for a person", message="I am passing you to a colleague."),
        b.listen(), b.say("Still here."), b.listen(),
    ]))
    engine = Engine(program, None, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "I want a human")
    assert texts(result) == ["I am passing you to a colleague."]
    escalated = next(e for e in result.events if e.type == "session_escalated")
    assert escalated.data["reason"] == "the user asked for a person"
    assert engine.load_state(sid).status == "escalated"
    later = engine.send(sid, "hello?")  # the person has it: a holding reply, the flow does not move
    assert texts(later) == ["A member of our team will reply here shortly."]
    assert engine.load_state(sid).status == "escalated"  # stays with the person
    engine.human_completed(sid, {"resolved": True})
    assert texts(engine.send(sid, "thanks")) == ["Still here."]


# ---- a reasoning loop that delegates and resumes ----------------------------------------------


def delegating_program():
    return b.program(
        b.reasoning("main", "Help with orders.", delegates=[("lookup", ["order_id"])], args=["order_id"],
                    handoffs=[("survey", True)], can_escalate=True),
        b.flow("lookup", [
            b.call("find_order", "tool", order_id="order_id"),
            b.set_(state="find_order.state"),
            b.ret("success"),
        ], args=["order_id", "state"]),
        b.flow("survey", [b.say("One question: how did we do?"), b.listen(), b.say("Thanks!"), b.ret("success")]),
    )


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def test_a_delegation_pauses_the_loop_runs_the_agent_and_feeds_its_result_back_in_the_same_turn():
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello! How can I help?"},
        {"purpose": "reason", "calls": [call("delegate_to_lookup", order_id="A-7")]},
        {"purpose": "reason", "reply": "Your order A-7 has shipped."},
    ])
    tools = StubToolRunner({"find_order": {"state": "shipped"}})
    engine = Engine(delegating_program(), llm, MemorySessionStore(), tools=tools)
    sid = engine.start().session_id
    result = engine.send(sid, "Where is my order A-7?")
    assert texts(result) == ["Your order A-7 has shipped."]
    assert tools.calls == [("find_order", {"order_id": "A-7"})]
    # the model's third call saw the delegated agent's result as the answer to its tool call
    tool_message = llm.calls[2].messages[-1]
    assert tool_message.role == "tool"
    answer = json.loads(tool_message.content)
    assert answer["status"] == "success" and answer["values"]["state"] == "shipped"
    started = [e.agent for e in result.events if e.type == "agent_started"]
    assert started == ["lookup"]
    llm.assert_finished()


def test_a_reasoning_handoff_that_returns_gets_the_other_agents_result_when_it_ends():
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hi!"},
        {"purpose": "reason", "calls": [call("transfer_to_survey")]},
        {"purpose": "reason", "reply": "Thanks for the feedback. Anything else?"},
    ])
    engine = Engine(delegating_program(), llm, MemorySessionStore())
    sid = engine.start().session_id
    assert texts(engine.send(sid, "I'd like to leave feedback")) == ["One question: how did we do?"]
    state = engine.load_state(sid)
    assert [f.agent for f in state.stack] == ["survey"]
    assert [t.base.agent for t in state.threads.values()] == ["main"]
    result = engine.send(sid, "Great service")
    assert texts(result) == ["Thanks!", "Thanks for the feedback. Anything else?"]
    assert llm.calls[2].messages[-1].role == "tool"
    llm.assert_finished()


def test_a_reasoning_agent_can_escalate():
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hi!"},
        {"purpose": "reason", "reply": "Let me get a colleague.", "calls": [call("escalate_to_human", reason="angry")]},
    ])
    engine = Engine(delegating_program(), llm, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "This is useless, get me a person")
    assert "session_escalated" in types(result)
    assert engine.load_state(sid).status == "escalated"


def test_an_llm_agent_without_delegates_is_not_offered_their_tools():
    llm = ScriptedProvider([{"purpose": "reason", "reply": "Hi!"}])
    program = b.program(b.reasoning("main", "Chat."))
    Engine(program, llm, MemorySessionStore()).start()
    names = [t.name for t in llm.calls[0].tools]
    assert not any(n.startswith(("delegate_to_", "transfer_to_", "escalate")) for n in names)


# ---- the turn pipeline ------------------------------------------------------------------------


def pipeline_program():
    return b.program(b.flow("main", [
        b.say("Card number?"), b.listen(),
        b.call("charge", "tool", card='"4242"'),
        b.say("Charged card 4111 1111 1111 1111: ${charge.message}"), b.listen(),
    ]))


class Guard:
    name = "guard"

    def __init__(self):
        self.ends = 0

    def input_received(self, ctx, message):
        if "badword" in message.text:
            message.block("Let's keep it polite.")
        message.text = message.text.replace("please ", "")

    def before_tool(self, ctx, call):
        if call.tool == "charge" and ctx.last_user_message() == "refused":
            call.answer(ToolResult(status="error", message="refused by policy"))

    def after_tool(self, ctx, call, result):
        return ToolResult(status=result.status, message=result.message.upper())

    def output_ready(self, ctx, out):
        for message in out.messages:
            message.text = message.text.replace("4111 1111 1111 1111", "**** 1111")

    def turn_end(self, ctx):
        self.ends += 1


def test_hooks_see_the_input_the_tool_calls_and_the_output_before_it_is_sent():
    guard = Guard()
    tools = StubToolRunner({"charge": lambda card=None: [{"status": "success", "msg": f"ok {card}"}]})
    engine = Engine(pipeline_program(), None, MemorySessionStore(), tools=tools, hooks=[guard])
    sid = engine.start().session_id
    blocked = engine.send(sid, "badword")
    assert texts(blocked) == ["Let's keep it polite."]
    assert "input_blocked" in types(blocked) and not tools.calls
    result = engine.send(sid, "please 4242")
    assert texts(result) == ["Charged card **** 1111: OK 4242"]
    assert tools.calls == [("charge", {"card": "4242"})]
    assert {"input_changed", "tool_result_changed", "output_changed"} <= set(types(result))
    # the stored history holds what the user saw, not the draft
    history = [h.text for h in engine.load_state(sid).history if h.role == "bot"]
    assert history[-1] == "Charged card **** 1111: OK 4242"
    users = [h.text for h in engine.load_state(sid).history if h.role == "user"]
    assert users == ["badword", "4242"]  # as the input hook left it
    assert guard.ends == 3


def test_a_hook_can_answer_a_tool_call_itself():
    tools = StubToolRunner({"charge": {"x": 1}})
    engine = Engine(pipeline_program(), None, MemorySessionStore(), tools=tools, hooks=[Guard()])
    sid = engine.start().session_id
    result = engine.send(sid, "refused")
    assert not tools.calls
    assert "tool_intercepted" in types(result)
    assert texts(result) == ["Charged card **** 1111: REFUSED BY POLICY"]


def test_a_failing_hook_is_an_error_event_and_the_turn_goes_on():
    class Broken:
        def output_ready(self, ctx, out):
            raise RuntimeError("boom")

    engine = Engine(pipeline_program(), None, MemorySessionStore(), hooks=[Broken()])
    result = engine.start()
    assert texts(result) == ["Card number?"]
    error = next(e for e in result.events if e.type == "error")
    assert "Broken" in error.data["where"] and "boom" in error.data["message"]


# ---- sessions stored by version 2 -------------------------------------------------------------


def v2_session() -> dict:
    """A session as version 2 stored it: flat frames, and a router holding the member it interrupted
    (with the agent that member had called) inside itself."""
    return {
        "version": 2, "session_id": "old", "status": "waiting", "turn": 3, "event_seq": 40,
        "records": {"checkout": {"item": "Blue Kettle", "__status": "error", "__message": "no stock"},
                    "stock": {"count": 3, "message": "3 left", "__status": "success", "__message": "3 left"},
                    "main/confirm": {"__status": "success", "__message": ""}},
        "history": [{"role": "user", "text": "I want the kettle", "turn": 1}],
        "next_frame": 6,
        "stack": [
            {"id": "f1", "agent": "main", "kind": "flow", "node": "n2", "started": True, "returns": []},
            {"id": "f2", "agent": "desk", "kind": "router", "started": True, "waiting": False,
             "decisions": {"clarify": "a|b"},
             "suspended": [{"id": "f3", "agent": "checkout", "kind": "flow", "node": "n5", "started": True,
                            "waiting": True, "last_listen": "n5", "tries": {"n9": 1}, "suspended_at": 2,
                            "offered": False, "last_prompt": "Shall I order it?",
                            "called": [{"id": "f4", "agent": "helper", "kind": "reasoning", "started": True,
                                        "waiting": True, "messages": [{"role": "user", "content": "hi"}]}]}]},
            {"id": "f5", "agent": "advisor", "kind": "reasoning", "started": True, "waiting": True,
             "messages": [{"role": "assistant", "content": "How about a kettle?"}]},
        ],
    }


def test_a_session_stored_by_version_2_loads_with_its_interrupted_task_as_a_thread():
    state = load_state(v2_session(), tools=["stock"])
    assert state.version == STATE_VERSION
    assert [(f.agent, f.parent) for f in state.stack] == [("main", None), ("desk", "f1"), ("advisor", "f2")]
    assert state.stack[0].data.node == "n2" and state.stack[0].status == "running"
    assert state.stack[1].data.decisions == {"clarify": "a|b"}
    assert state.stack[2].waiting and state.stack[2].data.messages[0]["content"] == "How about a kettle?"
    [tid] = state.stack[1].data.suspended
    thread = state.threads[tid]
    assert thread.agents() == ["checkout", "helper"] and thread.owner == "f2" and thread.suspended_at == 2
    assert thread.base.data.tries == {"n9": 1} and thread.base.last_prompt == "Shall I order it?"
    assert thread.top.parent == "f3" and thread.top.data.messages == [{"role": "user", "content": "hi"}]
    assert state.next_frame == 6
    # records became variables and results
    assert state.variables == {"checkout": {"item": "Blue Kettle"}}
    assert state.results["checkout"].status == "error" and state.results["checkout"].message == "no stock"
    assert state.results["stock"].values == {"count": 3} and state.results["stock"].message == "3 left"
    assert state.results["main/confirm"].status == "success"


def test_a_state_from_a_newer_version_is_refused():
    with pytest.raises(ValueError, match="newer"):
        load_state({**v2_session(), "version": STATE_VERSION + 1})


def test_a_session_stored_by_the_previous_version_goes_on_after_an_upgrade(tmp_path):
    """tests/fixtures/session_v2_shop.json was stored by Frontdesk before issue 8 (state version 2):
    checkout was interrupted for the advisor, who asked a question; the conversation goes on."""
    from test_turn_input import shop

    raw = json.loads((Path(__file__).parent / "fixtures" / "session_v2_shop.json").read_text(encoding="utf-8"))
    assert raw["version"] == 2 and raw["stack"][1]["suspended"][0]["agent"] == "checkout"
    store = MemorySessionStore()
    store.save_turn("stored-by-v2", raw, [])
    llm = ScriptedProvider([
        {"purpose": "reason", "calls": [call("set_args", picked=["Blue Kettle"]), call("finish", rest="")]},
        {"purpose": "understand", "call": "understand", "with": {"choice": "2"}},
    ])
    engine = Engine(shop(tmp_path), llm, store)
    result = engine.send("stored-by-v2", "Yes, I'll take it")
    assert "agent_resumed" in types(result) and result.active_agent == "checkout"
    assert texts(result)[-1] == "In your basket: Blue Kettle. Anything else?"
    state = engine.load_state("stored-by-v2")
    assert state.version == STATE_VERSION and not state.threads
    assert state.variables["desk"]["item"] == ["Blue Kettle"]  # `ref` bound: the advisor's pick is the desk's
    assert engine.send("stored-by-v2", "No, that's all").messages[-1].text == "Order placed for Blue Kettle."
