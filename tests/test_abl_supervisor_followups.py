"""ABL supervisors and escalation, the follow-ups of issue 10: an escalated session holds the user's
messages for the person; `__return_to_parent__` for the target of a reasoning agent's HANDOFF with
RETURN: true; the pipeline's classifier model and its parallel calls against a real HTTP server; the
classify call described in ACDL; the support hub's polite close."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import ENDED_REPLY
from frontdesk.runtime.escalation import HOLDING_REPLY
from frontdesk.runtime.handoff import RETURN_TO_PARENT
from frontdesk.testing import run_conversation

from test_abl_supervisor_runtime import RETAIL


def _program(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    errors = [d.format() for d in diags if d.is_error]
    assert program is not None and not errors, errors
    return program


def _kinds(events) -> list[str]:
    return [e.type if hasattr(e, "type") else e["type"] for e in events]


# ---- 1. an escalated session holds the user's messages for the person -------------------------------------

DESK = """
    AGENT: Desk
    GOAL: "Help with orders"
    TOOLS:
      lookup(order_id: string) -> {status: string}
    GATHER:
      order_id:
        prompt: "Which order?"
        type: string
    ESCALATE:
      triggers:
        - WHEN: order_id == "X-1"
          REASON: "VIP order"
          PRIORITY: critical
      context_for_human:
        - conversation_transcript
      on_human_complete:
        - IF human.handed_back == true:
            CONTINUE: with human.instructions
    {messages}
    """
TOOLS = """
    TOOLS:
      lookup(order_id: string) -> {status: string}
        description: "Look an order up"
        python: orders.py
    """
ORDERS = '''
    CALLS = []


    def lookup(order_id: str) -> dict:
        """Look an order up."""
        CALLS.append(order_id)
        return {"status": "late"}
    '''


def _desk(tmp_path: Path, messages: str = ""):
    return _program(tmp_path, {"desk.agent.abl": DESK.replace("{messages}", messages),
                               "orders.tools.abl": TOOLS, "orders.py": ORDERS})


def test_messages_while_escalated_get_the_programs_holding_reply_and_reach_no_agent(tmp_path):
    program = _desk(tmp_path, 'MESSAGES:\n      escalation_holding: "Thanks, a colleague is reading along and will answer here."')
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello, how can I help?"},
        {"purpose": "reason", "call": "set_args", "with": {"order_id": "X-1"}},
        {"purpose": "reason", "reply": "I see: order X-1."},
    ])
    run = run_conversation(program, ["order X-1 is late"], llm)
    engine, session = run.engine, run.session_id
    assert engine.load_state(session).status == "escalated"
    llm.assert_finished()  # any model call from here on would fail the script
    first = engine.send(session, "hello? is anyone there?")
    second = engine.send(session, "please call lookup for X-1 again")
    for turn in (first, second):
        assert [m.text for m in turn.messages] == ["Thanks, a colleague is reading along and will answer here."]
        kinds = _kinds(turn.events)
        assert "escalation_holding" in kinds
        assert not {"llm_call", "tool_call", "agent_started", "input_taken", "route_decided"} & set(kinds)
    held = next(e for e in second.events if e.type == "escalation_holding")
    assert held.data["waiting"] == 2 and held.data["text"] == "please call lookup for X-1 again"
    state = engine.load_state(session)
    assert state.status == "escalated"
    package = state.system["escalation"]["context_for_human"]
    assert [m["text"] for m in package["messages_while_waiting"]] == [
        "hello? is anyone there?", "please call lookup for X-1 again"]
    assert state.history[-2].role == "user" and state.history[-2].text == "please call lookup for X-1 again"
    # the person hands the session back: the agent takes the next message again
    engine.human_completed(session, {"handed_back": True, "instructions": "apologise"})
    llm._entries.append({"purpose": "reason", "expect": "apologise", "reply": "Sorry for the wait!"})
    back = engine.send(session, "so?")
    assert [m.text for m in back.messages] == ["Sorry for the wait!"]
    assert "escalation_holding" not in _kinds(back.events)


def test_without_a_message_of_its_own_the_holding_reply_is_the_default(tmp_path):
    program = _desk(tmp_path)
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello, how can I help?"},
        {"purpose": "reason", "call": "escalate", "with": {"reason": "the customer asks for a person"}},
    ])
    run = run_conversation(program, ["I want to talk to a person"], llm)
    assert run.engine.load_state(run.session_id).status == "escalated"
    held = run.engine.send(run.session_id, "hello?")
    assert [m.text for m in held.messages] == [HOLDING_REPLY]
    assert "llm_call" not in _kinds(held.events)


# ---- 2. __return_to_parent__ for the target of a reasoning agent's HANDOFF with RETURN: true -----------------

HOTEL = {
    "hotel.agent.abl": """
        # entry: Hotel_Desk
        AGENT: Hotel_Desk
        GOAL: "Book hotel rooms"
        HANDOFF:
          - TO: Payment_Desk
            WHEN: the booking is ready for payment
            RETURN: true
        """,
    "payment.agent.abl": """
        AGENT: Payment_Desk
        GOAL: "Take card payments"
        GATHER:
          card:
            prompt: "unused"
            type: string
        """,
}


def test_the_target_of_a_returning_handoff_can_hand_back_and_the_parent_resumes(tmp_path):
    script = [
        {"purpose": "reason", "reply": "Hello! Which room would you like?"},
        {"purpose": "reason", "call": "transfer_to_Payment_Desk", "with": {}},
        {"purpose": "reason", "reply": "Please give me your card number."},
        # the user digresses: the payment desk returns control to the hotel desk, which answers
        {"purpose": "reason", "expect": "does the room have a balcony", "call": RETURN_TO_PARENT,
         "with": {"reason": "a question about the room"}},
        {"purpose": "reason", "expect": "does the room have a balcony", "reply": "Yes, it has a balcony."},
        # back to paying: the hotel desk hands over again and the waiting payment desk goes on
        {"purpose": "reason", "call": "transfer_to_Payment_Desk", "with": {}},
        {"purpose": "reason", "expect": "Please give me your card number.",
         "calls": [{"name": "set_args", "arguments": {"card": "4111"}},
                   {"name": "complete", "arguments": {"message": "paid"}}]},
        {"purpose": "reason", "reply": "Booked and paid."},
    ]
    llm = ScriptedProvider(script)
    run = run_conversation(_program(tmp_path, HOTEL),
                           ["Book the sea-view room", "does the room have a balcony?", "ok, card 4111"], llm)
    said = [m.text for turn in run.turns for m in turn.messages]
    assert said[-3:] == ["Please give me your card number.", "Yes, it has a balcony.", "Booked and paid."]
    # the payment desk was offered the tool, the hotel desk (not a handoff target) was not
    payment_calls = [r for r in llm.calls if "Take card payments" in (r.messages[0].content or "")]
    hotel_calls = [r for r in llm.calls if r not in payment_calls]
    assert len(payment_calls) == 3 and len(hotel_calls) == 5
    assert all(RETURN_TO_PARENT in [t.name for t in r.tools] for r in payment_calls)
    assert not any(RETURN_TO_PARENT in [t.name for t in r.tools] for r in hotel_calls)
    tool_desc = next(t.description for t in payment_calls[0].tools if t.name == RETURN_TO_PARENT)
    assert "Hotel_Desk" in tool_desc
    # the hotel desk's loop got an answer for its handoff call, and the user's digression
    resumed = llm.calls[4]
    tool_answers = [json.loads(m.content) for m in resumed.messages if m.role == "tool"]
    assert tool_answers[-1]["status"] == "not finished"
    # the payment desk came back as the same thread: its earlier question is in its transcript
    events = [e for turn in run.turns for e in turn.events]
    returned = [e for e in events if e.type == "agent_suspended" and e.data.get("reason") == "return_to_parent"]
    assert returned and returned[0].agent == "Payment_Desk"
    thread_returns = [e.agent for e in events if e.type == "thread_return"]
    assert thread_returns == ["Hotel_Desk", "Payment_Desk", "Hotel_Desk"]
    assert len([e for e in events if e.type == "agent_started" and e.agent == "Payment_Desk"]) == 1
    state = run.engine.load_state(run.session_id)
    assert not state.threads and [f.agent for f in state.stack] == ["Hotel_Desk"]
    llm.assert_finished()


# ---- 3./4. the classifier's model, and the parallel mode's calls at the same time (real HTTP server) -------

RETAIL_MEMBERS = {name: RETAIL[name] for name in ("tracking.agent.abl", "returns.agent.abl")}
ROUTER = """
    SUPERVISOR: Support_Router
    GOAL: "Route support requests"
    EXECUTION:
      pipeline:
        enabled: true
{pipeline}
    HANDOFF:
      - TO: Order_Tracking
        WHEN: user asks about delivery, shipping, or order status
      - TO: Returns_Desk
        WHEN: user asks about returns, refunds, or exchanges
    """


def _router_program(tmp_path: Path, pipeline: str, config: str | None = None):
    files = dict(RETAIL_MEMBERS)
    files["router.agent.abl"] = ROUTER.replace("{pipeline}", textwrap.indent(textwrap.dedent(pipeline), " " * 8))
    if config is not None:
        files["config.yml"] = config
    return _program(tmp_path, files)


def _answers(intent: str, confidence: float, routed: str):
    from test_llm_openai import completion, tool_call

    def behaviour(body: dict, attempt: int):
        name = body.get("tool_choice", {}).get("function", {}).get("name")
        if name == "classify_intent":
            args = {"intent": intent, "confidence": confidence}
        else:
            args = {"agent": routed}
        return 200, completion(tool_calls=[tool_call(f"c{attempt}", name, json.dumps(args))]), {}
    return behaviour


def _provider(server):
    from frontdesk.llm import OpenAICompatibleProvider

    return OpenAICompatibleProvider(base_url=server.base_url, api_key="k", model="main-model", timeout=5.0,
                                    max_retries=0)


def _send(program, llm, text: str):
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    engine = Engine(program, llm, MemorySessionStore())
    session = engine.start().session_id
    began = time.monotonic()
    result = engine.send(session, text)
    return result, time.monotonic() - began


def test_parallel_mode_makes_the_classifier_and_the_routing_call_at_the_same_time(tmp_path, chat_server):
    program = _router_program(tmp_path, "mode: parallel\nmodel: tiny-classifier\n")
    chat_server.stall_seconds = 0.5  # each call takes half a second
    chat_server.behaviour = _answers("Returns_Desk", 0.95, "Order_Tracking")
    result, took = _send(program, _provider(chat_server), "I want my money back")
    assert [m.text for m in result.messages] == ["Returns desk here."]  # the classifier was sure: it decides
    assert len(chat_server.requests) == 2
    # the second call reached the server while the first was still being answered (not a timing: a busy
    # machine stretches both calls, not their order)
    assert chat_server.most_at_once == 2, f"the two calls did not overlap (took {took:.2f} s)"
    by_tool = {r["body"]["tool_choice"]["function"]["name"]: r["body"] for r in chat_server.requests}
    assert by_tool["classify_intent"]["model"] == "tiny-classifier"  # the pipeline's model for the classifier
    assert by_tool["route"]["model"] == "main-model"  # the configured model for the main call
    assert by_tool["classify_intent"]["max_tokens"] == 300
    calls = [e for e in result.events if e.type == "llm_call"]
    assert [c.data["plan"] for c in calls] == ["Classify_Support_Router", "Route_Support_Router"]
    pre = next(e for e in result.events if e.type == "pre_classification").data
    assert pre["concurrent"] is True and pre["model"] == "tiny-classifier" and pre["model_from"] == "agent"


def test_parallel_mode_uses_the_routing_answer_when_the_classifier_is_unsure(tmp_path, chat_server):
    program = _router_program(tmp_path, "mode: parallel\n")
    chat_server.stall_seconds = 0.5
    chat_server.behaviour = _answers("Returns_Desk", 0.4, "Order_Tracking")
    result, _ = _send(program, _provider(chat_server), "hmm, about my thing")
    assert [m.text for m in result.messages] == ["Tracking desk here."]
    assert len(chat_server.requests) == 2 and chat_server.most_at_once == 2  # no third call after the unsure
    # classifier, and the two were made at the same time
    assert {r["body"]["model"] for r in chat_server.requests} == {"main-model"}  # no model named: the chat model


def test_sequential_mode_reads_the_classifier_model_from_the_project_config(tmp_path, chat_server):
    config = "pipeline:\n  mode: sequential\n  model: project-classifier\n"
    program = _router_program(tmp_path, "shortCircuit:\n  confidenceThreshold: 0.9\n", config)
    chat_server.behaviour = _answers("Returns_Desk", 0.95, "Order_Tracking")
    result, _ = _send(program, _provider(chat_server), "I want my money back")
    assert [m.text for m in result.messages] == ["Returns desk here."]
    assert [r["body"]["model"] for r in chat_server.requests] == ["project-classifier"]  # sequential: one call
    pre = next(e for e in result.events if e.type == "pre_classification").data
    assert pre["mode"] == "sequential" and pre["model_from"] == "project config" and pre["threshold"] == 0.9
    # the agent's own EXECUTION.pipeline wins over the project's
    (tmp_path / "own").mkdir()
    own = _router_program(tmp_path / "own", "model: agent-classifier\n", config)
    chat_server.requests.clear()
    _send(own, _provider(chat_server), "I want my money back")
    assert [r["body"]["model"] for r in chat_server.requests] == ["agent-classifier"]


def test_a_request_model_is_sent_by_the_openai_provider_and_ignored_by_the_scripted_one(chat_server):
    from frontdesk.llm import ChatMessage, LLMRequest
    from frontdesk.llm.local import chat_messages

    request = LLMRequest(messages=[ChatMessage(role="user", content="hi")], model="other-model", timeout=2)
    response = _provider(chat_server).complete(request)
    assert chat_server.last_body["model"] == "other-model" and response.content == "ok"
    assert _provider(chat_server).complete(request.model_copy(update={"model": None})) is not None
    assert chat_server.last_body["model"] == "main-model"
    scripted = ScriptedProvider([{"reply": "fine"}])
    assert scripted.complete(request).model == "scripted"
    assert chat_messages(request) == chat_messages(request.model_copy(update={"model": None}))


# ---- 5. the classify call is a prompt plan: described by `frontdesk describe`, verified against it ----------


def test_the_classify_call_is_described_in_acdl_and_recorded_calls_verify(tmp_path):
    from frontdesk.acdl import parse_acdl
    from frontdesk.acdl.verify import verify_calls
    from frontdesk.runtime.describe import describe_program

    program = _router_program(tmp_path, "mode: sequential\n")
    text = describe_program(program, label="router")
    file_ast, diags = parse_acdl(text, "router.acdl")
    assert file_ast is not None and not diags
    assert "Classify_Support_Router[@T]" in text and "CLASSIFY_ROLE" in text
    llm = ScriptedProvider([
        {"purpose": "route", "call": "classify_intent", "with": {"intent": "Returns_Desk", "confidence": 0.5}},
        {"purpose": "route", "call": "route", "with": {"agent": "Returns_Desk"}},
    ])
    run = run_conversation(program, ["my shoes do not fit"], llm)
    events = run.events
    calls = [e for e in events if e["type"] == "llm_call"]
    assert [c["data"]["plan"] for c in calls] == ["Classify_Support_Router", "Route_Support_Router"]
    results = verify_calls(file_ast, events)
    assert len(results) == 2 and [r.problem for r in results if not r.ok] == []
    # a description that differs from what the classifier was sent is caught
    changed, _ = parse_acdl(text.replace("CLASSIFY_INSTRUCTIONS", "CLASSIFY_RULES", 1), "changed.acdl")
    assert not all(r.ok for r in verify_calls(changed, events) if r.spec == "Classify_Support_Router")
    # without the pipeline, no classify call is described
    (tmp_path / "plain").mkdir()
    plain = _router_program(tmp_path / "plain", "mode: sequential\n").model_copy()
    plain.agents["Support_Router"].rules.execution.pipeline = {}
    assert "Classify_" not in describe_program(plain, label="plain")


# ---- 6. the support hub closes politely -------------------------------------------------------------------

HUB = Path(__file__).resolve().parent.parent / "examples" / "support_hub"


def test_support_hub_says_goodbye_without_asking_for_more(monkeypatch, tmp_path):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    program, diags = load_program(HUB)
    assert program is not None and not [d for d in diags if d.is_error]
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "Account_Info"}},
        {"purpose": "route", "expect": "Farewell", "call": "route", "with": {"agent": "Farewell"}},
        {"purpose": "route", "call": "route", "with": {"agent": "Account_Info"}},
    ])
    run = run_conversation(program, ["what's my balance?", "thanks, that's all", "and my balance again?"], llm)
    said = [[m.text for m in turn.messages] for turn in run.turns[1:]]
    assert said == [
        # the hub's COMPLETE (Farewell this turn) does not hold: it asks for the next request
        ["Your checking account balance is 1250 EUR.", "Is there anything else I can help with?"],
        ["You're welcome! Glad I could help. Have a good day."],  # no "anything else?" after goodbye
        [ENDED_REPLY],  # the hub's job is done: the goodbye ended the conversation
    ]
    assert [t.ended for t in run.turns[1:]] == [False, True, True]
    state = run.engine.load_state(run.session_id)
    assert state.variables["session"]["closed_at"] == 2  # Farewell's ON_RETURN map, read by COMPLETE
