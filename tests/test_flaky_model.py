"""A flaky model never ends a conversation: an LLM agent whose model call fails, answers nothing or loops says
so and waits, the next message works, and the agent's own ON_ERROR or fallback policy decides when it has one."""

from __future__ import annotations

import json
import textwrap

import pytest
from fastapi.testclient import TestClient

from frontdesk.lang import load_program
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.base import LLMError, LLMResponse
from frontdesk.llm.openai_compat import OpenAICompatibleProvider
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import ENDED_REPLY, Engine
from frontdesk.runtime.policies import DEFAULT_FALLBACK
from frontdesk.runtime.reasoning import APOLOGY, ITERATION_FALLBACK
from frontdesk.server.app import create_app
from frontdesk.server.auth import ServerSettings
from frontdesk.store.memory import MemorySessionStore

from test_llm_openai import completion, tool_call

SINGLE = """
main:
  type: llm agent
  description: helps with orders
  args: [code]
  prompt: Help the user with their order code.
"""
HELLO = {"purpose": "reason", "reply": "Hi! How can I help?"}
LOOP = {"purpose": "reason", "call": "set_args", "with": {"code": "A1"}}


def adl(tmp_path, text: str = SINGLE):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    prog, diags = load_program(tmp_path)
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return prog


def texts(result) -> list[str]:
    return [m.text for m in result.messages]


class FlakyModel:
    """A model that gives each answer of its list in turn: an LLMError is raised, a response returned."""

    name = "flaky"

    def __init__(self, answers: list) -> None:
        self.answers = list(answers)
        self.calls = 0

    def complete(self, request) -> LLMResponse:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, LLMError):
            raise answer
        return answer


@pytest.mark.parametrize("fault", [
    {"purpose": "reason", "error": "HTTP 429: rate limited"},
    {"purpose": "reason", "error": "the model called tool 'set_args' with arguments that are not valid JSON: {"},
])
def test_a_failed_model_call_apologises_and_the_next_message_works(tmp_path, fault):
    # (an unreadable answer is asked for once more in the same call: it fails twice here)
    again = [fault] if "JSON" in fault["error"] else []
    llm = ScriptedProvider([HELLO, fault, *again, {"purpose": "reason", "reply": "Sure: what is your code?"}])
    engine = Engine(adl(tmp_path), llm, MemorySessionStore())
    sid = engine.start().session_id
    failed = engine.send(sid, "hello")
    assert texts(failed) == [APOLOGY] and failed.ended is False
    assert engine.load_state(sid).status == "waiting"
    again = engine.send(sid, "hello again")
    assert texts(again) == ["Sure: what is your code?"] and again.ended is False
    assert ENDED_REPLY not in texts(again)
    llm.assert_finished()


def test_an_empty_or_null_reply_says_the_fallback_and_the_next_message_works(tmp_path):
    empty, null = LLMResponse(content=""), LLMResponse(content=None)
    # (an empty answer is asked for once more: each message gets two here)
    model = FlakyModel([LLMResponse(content="Hi!"), empty, empty, null, null, LLMResponse(content="Here again.")])
    engine = Engine(adl(tmp_path), model, MemorySessionStore())
    sid = engine.start().session_id
    for text in ("one", "two"):
        result = engine.send(sid, text)
        assert texts(result) == [DEFAULT_FALLBACK] and result.ended is False
    assert texts(engine.send(sid, "three")) == ["Here again."]
    # the model's transcript holds what the user was told, never an assistant message with no content
    messages = engine.load_state(sid).stack[-1].data.messages
    assert all(m.get("content") for m in messages if m["role"] == "assistant")


def test_one_empty_or_unreadable_answer_is_asked_for_again_with_what_was_wrong(tmp_path):
    model = FlakyModel([LLMResponse(content="Hi!"), LLMResponse(content=""), LLMResponse(content="Sure: your code?"),
                        LLMError("the model called tool 'set_args' with arguments that are not valid JSON: {"),
                        LLMResponse(content="And the item?")])
    seen = []
    complete = model.complete
    model.complete = lambda request: seen.append(request) or complete(request)
    engine = Engine(adl(tmp_path), model, MemorySessionStore())
    sid = engine.start().session_id
    assert texts(engine.send(sid, "hello")) == ["Sure: your code?"]
    assert "could not be used: the answer was empty" in (seen[-1].messages[-1].content or "")
    assert texts(engine.send(sid, "A1")) == ["And the item?"]
    assert "not valid JSON" in (seen[-1].messages[-1].content or "") and model.calls == 5


def test_an_empty_reply_says_the_agents_text_fallback_policy(tmp_path):
    prog = adl(tmp_path, SINGLE + '  fallback: \'Say "Let me put that another way: what is your order code?"\'\n')
    blank = {"purpose": "reason", "reply": "  "}
    engine = Engine(prog, ScriptedProvider([HELLO, blank, blank]), MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "hm")
    assert texts(result) == ["Let me put that another way: what is your order code?"] and not result.ended


def test_the_iteration_limit_says_a_fallback_and_the_session_stays_open(tmp_path):
    llm = ScriptedProvider([HELLO, *[LOOP] * 8, {"purpose": "reason", "reply": "Recovered."}])
    engine = Engine(adl(tmp_path), llm, MemorySessionStore())
    sid = engine.start().session_id
    stuck = engine.send(sid, "my code is A1")
    assert texts(stuck) == [ITERATION_FALLBACK] and stuck.ended is False
    assert [e.data["limit"] for e in stuck.events if e.type == "max_iterations_exceeded"] == [8]
    assert texts(engine.send(sid, "hello?")) == ["Recovered."]


def test_a_fallback_agent_takes_over_when_the_model_fails(tmp_path):
    prog = adl(tmp_path, SINGLE + """  fallback: callback
callback:
  type: flow agent
  steps:
    - bot: "Our assistant is away; leave your number and we will call you."
    - user
    - bot: "Thanks, we will call you."
""")
    llm = ScriptedProvider([HELLO, {"purpose": "reason", "error": "HTTP 500"}])
    engine = Engine(prog, llm, MemorySessionStore())
    sid = engine.start().session_id
    failed = engine.send(sid, "hello")
    assert texts(failed) == ["Our assistant is away; leave your number and we will call you."]
    assert failed.ended is False and failed.active_agent == "callback"
    assert texts(engine.send(sid, "555 0101")) == ["Thanks, we will call you."]


DESK = """AGENT: Help_Desk
GOAL: "Answer questions about orders"

INSTRUCTIONS: |
  Help the customer with their order.
"""
ON_ERROR = """
ON_ERROR:
  llm_error:
    RESPOND: "Our assistant is resting; try again in a minute."
    RETRY: 1
"""
ESCALATING = """
ON_ERROR:
  default:
    RESPOND: "Let me get a person for you."
    THEN: ESCALATE with REASON: "the model is down"
"""


def abl(tmp_path, text: str):
    (tmp_path / "desk.agent.abl").write_text(text, encoding="utf-8")
    prog, diags = load_abl(tmp_path, entry="Help_Desk")
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return prog


def test_an_abl_agent_without_on_error_apologises_and_waits(tmp_path):
    llm = ScriptedProvider([HELLO, {"purpose": "reason", "error": "timed out after 3 s"},
                            {"purpose": "reason", "reply": "Your order ships today."}])
    engine = Engine(abl(tmp_path, DESK), llm, MemorySessionStore())
    sid = engine.start().session_id
    failed = engine.send(sid, "where is my order?")
    assert texts(failed) == [APOLOGY] and failed.ended is False
    assert texts(engine.send(sid, "where is it?")) == ["Your order ships today."]


def test_an_abl_agents_messages_name_its_words_for_a_failed_or_empty_reply(tmp_path):
    desk = DESK + '''
MESSAGES:
  llm_error: "The assistant is offline for a moment."
  fallback: "I lost my words there; could you ask again?"
'''
    llm = ScriptedProvider([HELLO, {"purpose": "reason", "error": "HTTP 502"}, {"purpose": "reason", "reply": ""},
                            {"purpose": "reason", "reply": ""}, {"purpose": "reason", "reply": "Your order ships today."}])
    engine = Engine(abl(tmp_path, desk), llm, MemorySessionStore())
    sid = engine.start().session_id
    assert texts(engine.send(sid, "where is my order?")) == ["The assistant is offline for a moment."]
    assert texts(engine.send(sid, "hello?")) == ["I lost my words there; could you ask again?"]
    assert texts(engine.send(sid, "where is it?")) == ["Your order ships today."]


def test_an_abl_agents_on_error_retries_the_call_then_says_its_words(tmp_path):
    error = {"purpose": "reason", "error": "HTTP 503"}
    llm = ScriptedProvider([HELLO, error, error, {"purpose": "reason", "reply": "Your order ships today."}])
    engine = Engine(abl(tmp_path, DESK + ON_ERROR), llm, MemorySessionStore())
    sid = engine.start().session_id
    failed = engine.send(sid, "where is my order?")
    assert texts(failed) == ["Our assistant is resting; try again in a minute."] and failed.ended is False
    assert [e.data["attempt"] for e in failed.events if e.data.get("action") == "retry after a model error"] == [1]
    assert texts(engine.send(sid, "and now?")) == ["Your order ships today."]
    llm.assert_finished()


def test_an_abl_agents_on_error_may_escalate(tmp_path):
    llm = ScriptedProvider([HELLO, {"purpose": "reason", "error": "HTTP 500"}])
    engine = Engine(abl(tmp_path, DESK + ESCALATING), llm, MemorySessionStore())
    sid = engine.start().session_id
    failed = engine.send(sid, "where is my order?")
    assert texts(failed)[0] == "Let me get a person for you." and failed.ended is False
    assert engine.load_state(sid).status == "escalated"
    assert [e.data["reason"] for e in failed.events if e.type == "session_escalated"] == ["the model is down"]


# ---- through the OpenAI-compatible client and the HTTP API, against a real local server -----------------

def _reply(text):
    return lambda body, attempt: (200, completion(content=text), {})


FAULTS = {
    "429": lambda body, attempt: (429, {"error": {"message": "slow down"}}, {}),
    "500": lambda body, attempt: (500, {"error": {"message": "internal error"}}, {}),
    "malformed json": lambda body, attempt: (200, '{"choices": [', {}),
    "html page": lambda body, attempt: (200, "<html><body>Bad gateway</body></html>", {}),
    "no choices": lambda body, attempt: (200, {"id": "x", "choices": []}, {}),
    "echoed 401": lambda body, attempt: (401, {"error": {"message": json.dumps(body)[:200]}}, {}),
    "echoed 400": lambda body, attempt: (400, {"error": {"message": json.dumps(body)[:200]}}, {}),
    "bad tool arguments": lambda body, attempt: (200, completion(tool_calls=[tool_call("c1", "set_args", "{code:")]), {}),
    "empty content": _reply(""),
    "null content": _reply(None),
    "tool loop": lambda body, attempt: (200, completion(tool_calls=[tool_call("c1", "set_args", '{"code": "A1"}')]), {}),
    "timeout": "timeout",
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_no_fault_of_the_model_endpoint_ends_an_http_session(tmp_path, chat_server, fault):
    model = OpenAICompatibleProvider(base_url=chat_server.base_url, api_key="k", model="m", timeout=1.0,
                                     max_retries=0)
    app = create_app({"desk": adl(tmp_path)}, MemorySessionStore(), lambda program: model,
                     ServerSettings(tokens={"t": "alice"}))
    client = TestClient(app, raise_server_exceptions=False)
    headers = {"Authorization": "Bearer t"}
    chat_server.behaviour = _reply("Hi! How can I help?")
    sid = client.post("/v1/sessions", json={"program": "desk"}, headers=headers).json()["session_id"]
    if FAULTS[fault] == "timeout":
        chat_server.stall_seconds = 3.0
    else:
        chat_server.behaviour = FAULTS[fault]
    failed = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hello"}, headers=headers)
    assert failed.status_code == 200, failed.text
    assert failed.json()["ended"] is False and failed.json()["messages"], failed.json()
    assert all(m["text"].strip() for m in failed.json()["messages"])
    chat_server.stall_seconds = 0.0
    chat_server.behaviour = _reply("Back to normal.")
    again = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hello again"}, headers=headers).json()
    assert again["ended"] is False and [m["text"] for m in again["messages"]] == ["Back to normal."]
    assert client.get(f"/v1/sessions/{sid}", headers=headers).json()["status"] == "waiting"


def test_a_fan_out_task_whose_model_fails_is_an_error_result_not_a_question(tmp_path):
    from test_fan_out import ByRequest, program as fan_out_program

    class BrokenModelDown(ByRequest):
        def complete(self, request):
            if "Crash the model" in (request.messages[0].content or ""):
                raise LLMError("HTTP 503: the model is down")
            return super().complete(request)

    llm = BrokenModelDown([{"agent": "Broken"}, {"agent": "Lookup", "input": {"x": "2"}}])
    engine = Engine(fan_out_program(tmp_path), llm, MemorySessionStore())
    sid = engine.start(channel="test").session_id
    result = engine.send(sid, "plan my trip")
    (done,) = [e for e in result.events if e.type == "fan_out.completed"]
    broken, lookup = done.data["results"]
    assert broken["agent"] == "Broken" and broken["status"] == "error", broken
    assert lookup["status"] == "success"
    assert texts(result)[-1] == "All done." and result.ended is False
    assert [f["agent"] for f in engine.store.load(sid)["stack"]] == ["Planner"]


# ---- a model that writes text no session can keep -------------------------------------------------------

def test_a_lone_surrogate_or_nul_a_model_writes_is_cleaned_before_anyone_sees_it(tmp_path, chat_server):
    model = OpenAICompatibleProvider(base_url=chat_server.base_url, api_key="k", model="m", max_retries=0)
    client = TestClient(create_app({"desk": adl(tmp_path)}, MemorySessionStore(), lambda program: model,
                                   ServerSettings(tokens={"t": "alice"})), raise_server_exceptions=False)
    headers = {"Authorization": "Bearer t"}
    chat_server.behaviour = _reply("Hi! How can I help?")
    sid = client.post("/v1/sessions", json={"program": "desk"}, headers=headers).json()["session_id"]
    # the arguments' JSON carries "\ud800" and "\u0000" escapes: json.loads makes them a lone surrogate, a NUL
    answers = [completion(tool_calls=[tool_call("c1", "set_args", '{"code": "A\\ud800B\\u0000"}')]),
               completion(content="Noted."), completion(tool_calls=[tool_call("c2", "set_args", '{"code": "\\udfff"}')]),
               completion(content="Noted again.")]
    chat_server.behaviour = lambda body, attempt: (200, answers.pop(0), {})
    for query in ("", "?stream=true"):
        reply = client.post(f"/v1/sessions/{sid}/messages{query}", json={"text": "my code"}, headers=headers)
        assert reply.status_code == 200 and "Noted" in reply.text, reply.text
    trace = client.get(f"/v1/sessions/{sid}/trace", headers=headers)
    assert trace.status_code == 200, trace.text
    calls = [e for e in trace.json()["events"] if e["type"] == "llm_call" and e["data"].get("response")]
    written = [c["arguments"]["code"] for e in calls for c in e["data"]["response"]["tool_calls"]]
    assert written == ["A\ufffdB", "\ufffd"]


def test_a_session_stored_with_a_lone_surrogate_before_the_check_still_shows_its_trace(tmp_path):
    store = MemorySessionStore()
    client = TestClient(create_app({"desk": adl(tmp_path)}, store, lambda program: ScriptedProvider([HELLO]),
                                   ServerSettings(tokens={"t": "alice"})), raise_server_exceptions=False)
    headers = {"Authorization": "Bearer t"}
    sid = client.post("/v1/sessions", json={"program": "desk"}, headers=headers).json()["session_id"]
    store.append_events(sid, [{"seq": 99, "turn": 1, "type": "user_message", "agent": None,
                               "data": {"text": "a\ud800b"}}])  # as an older version stored it
    trace = client.get(f"/v1/sessions/{sid}/trace", headers=headers)
    assert trace.status_code == 200 and trace.json()["events"][-1]["data"]["text"] == "a\ufffdb"
