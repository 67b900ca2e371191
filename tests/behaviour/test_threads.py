"""Threads: an agent hands the conversation to another and comes back to it, data intact, even when
the user turns to a third agent in between; an LLM agent delegates and goes on with the result."""

from __future__ import annotations

import json

from frontdesk.llm import ScriptedProvider

from .conftest import said


def test_a_handoff_that_returns_survives_a_detour_and_comes_back_with_its_values(make_program, converse):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "booking"}},
        {"purpose": "route", "call": "route", "with": {"agent": "hours"}},
    ])
    talk = converse(make_program("handoff_return"), llm)
    talk.start()
    assert talk.say("I want to book a room") == ["Which date?"]
    handed = talk.send("Friday")
    assert said(handed) == ["Pay 120? (yes/no)"]
    assert [(e.agent, e.data["reason"]) for e in handed.events if e.type == "agent_suspended"] == [
        ("booking", "handoff")]
    back = talk.send("yes")
    assert said(back) == ["Booked for Friday, paid: True."]
    assert [e.agent for e in back.events if e.type == "agent_resumed"] == ["booking"]
    assert back.active_agent == "desk"
    talk.check_stored()


def test_a_delegation_answers_the_tool_call_and_the_loop_goes_on(make_program, converse):
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello, how can I help?"},
        {"purpose": "reason", "calls": [{"name": "delegate_to_lookup", "arguments": {"order_id": "A-7"}}]},
        {"purpose": "reason", "reply": "Order A-7 has shipped."},
    ])
    talk = converse(make_program("delegation"), llm)
    talk.start()
    result = talk.send("Where is order A-7?")
    assert said(result) == ["Order A-7 has shipped."]
    answer = json.loads(llm.calls[-1].messages[-1].content)
    assert answer["values"] == {"order_id": "A-7", "state": "shipped"}
    llm.assert_finished()
    talk.check_stored()
