"""Routing: a router (an ADL ensemble) hands each message to the member the model chose."""

from __future__ import annotations

from frontdesk.llm import ScriptedProvider

from .conftest import said


def route(agent: str) -> dict:
    return {"purpose": "route", "call": "route", "with": {"agent": agent}}


def test_the_router_sends_each_message_to_the_chosen_member(make_program, converse):
    llm = ScriptedProvider([route("weather"), route("billing")])
    talk = converse(make_program("routing"), llm)

    first = talk.start()
    assert said(first) == ["Hello, how can I help?"]
    assert first.active_agent == "desk" and not first.ended

    weather = talk.send("Will it rain today?")
    assert said(weather) == ["Sunny today."]
    decided = [e for e in weather.events if e.type == "route_decided"]
    assert [(e.agent, e.data["agent"], e.data["by"]) for e in decided] == [("desk", "weather", "llm")]
    assert weather.active_agent == "desk"  # the weather flow finished: the desk waits again

    billing = talk.send("I have a question about my invoice")
    assert said(billing) == ["Billing here. Which invoice?"]
    assert [e.data["agent"] for e in billing.events if e.type == "route_decided"] == ["billing"]
    assert billing.active_agent == "billing"  # it waits for the answer to its question

    # the member that waits for an answer takes the next message: no routing call
    assert talk.say("number 42") == ["Invoice noted."]
    llm.assert_finished()
    assert [e for e in talk.turns[-1].events if e.type == "route_decided"] == []

    # the model chose among the members, each offered by name
    route_calls = [c for c in llm.calls if c.purpose == "route"]
    assert len(route_calls) == 2
    offered = route_calls[0].tools[0].parameters["properties"]["agent"]["enum"]
    assert set(offered) >= {"billing", "weather"}
    talk.check_stored()


def test_a_routing_answer_naming_no_member_is_not_obeyed(make_program, converse):
    llm = ScriptedProvider([route("the_moon")])
    talk = converse(make_program("routing"), llm)
    talk.start()
    result = talk.send("Something else entirely")
    llm.assert_finished()
    assert [e.data["agent"] for e in result.events if e.type == "route_decided"] == [None]
    assert [e.type for e in result.events if e.type == "fallback"] == ["fallback"]
    (line,) = said(result)
    assert "Answers questions about invoices" in line and "Tells the weather" in line
    assert result.active_agent == "desk" and not result.ended
    talk.check_stored()
