"""Suspend and resume: the user leaves a flow mid-question for another member of the router; that
member finishes, and the flow comes back at its question with the values it had gathered."""

from __future__ import annotations

from frontdesk.llm import ScriptedProvider

from .conftest import said


def understand(**answer) -> dict:
    return {"purpose": "understand", "call": "understand", "with": answer}


def test_a_flow_left_mid_question_resumes_there_with_its_values(make_program, converse):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "transfer"}},
        understand(args={}),  # the request that started the flow names no recipient
        understand(args={"recipient": "Bob"}),
        understand(args={"amount": 50}),
        understand(choice="switch:hours"),  # mid-question, the user asks something else
        understand(choice="1"),
    ])
    talk = converse(make_program("suspend_resume"), llm)
    talk.start()
    assert talk.say("I want to send money") == ["Who should receive the money?"]
    assert talk.say("Bob") == ["How much should Bob get?"]
    assert talk.say("fifty pounds") == ["Send 50 to Bob?"]
    assert talk.turns[-1].active_agent == "transfer"

    away = talk.send("Wait, when do you open?")
    # the other member answers, then the flow is back at its question, asking it again
    assert said(away) == ["We open at 9.", "Send 50 to Bob?"]
    assert away.active_agent == "transfer"
    suspended = [e for e in away.events if e.type == "agent_suspended"]
    resumed = [e for e in away.events if e.type == "agent_resumed"]
    assert [(e.agent, e.data["by"]) for e in suspended] == [("transfer", "desk")]
    assert [(e.agent, e.data["by"]) for e in resumed] == [("transfer", "desk")]
    types = [e.type for e in away.events]
    assert types.index("agent_suspended") < types.index("agent_resumed")
    switched = [e.data["agent"] for e in away.events if e.type == "route_decided"]
    assert switched == ["hours"]
    finished = [e.agent for e in away.events if e.type == "agent_finished"]
    assert finished == ["hours"]  # the transfer was suspended, not finished

    # the answer to the re-asked question reaches the resumed flow, whose values are intact
    assert talk.say("yes") == ["Sent 50 to Bob."]
    llm.assert_finished()
    last = talk.turns[-1]
    assert [e.agent for e in last.events if e.type == "agent_finished"] == ["transfer"]
    assert last.active_agent == "desk"
    # the switch was decided by the flow's own understand call: no extra routing call
    assert [c.purpose for c in llm.calls].count("route") == 1
    talk.check_stored()


def test_a_resumed_flow_that_is_declined_takes_its_else_branch(make_program, converse):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "transfer"}},
        understand(args={"recipient": "Ann"}),  # the first message already names her
        understand(args={"amount": 20}),
        understand(choice="switch:hours"),
        understand(choice="none"),
    ])
    talk = converse(make_program("suspend_resume"), llm)
    talk.start()
    assert talk.say("Send money to Ann") == ["Who should receive the money?", "How much should Ann get?"]
    assert talk.say("20") == ["Send 20 to Ann?"]
    assert talk.say("opening hours?") == ["We open at 9.", "Send 20 to Ann?"]
    assert talk.say("no, forget it") == ["Transfer cancelled."]
    llm.assert_finished()
    talk.check_stored()
