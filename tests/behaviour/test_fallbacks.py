"""Fallbacks: a `the user claims` chain with no `else` that matches nothing follows the agent's fallback
policy (a text is said and the question asked again; an agent is handed the message), and after
`max_consecutive_fallbacks` in a row the agent ends with an error its caller can test."""

from __future__ import annotations

from frontdesk.llm import ScriptedProvider

from .conftest import said
from .programs import FALLBACK_TEXT, MAX_FALLBACKS


def choice(value: str) -> dict:
    return {"purpose": "understand", "call": "understand", "with": {"choice": value}}


def fallbacks(result):
    return [e for e in result.events if e.type == "fallback"]


def test_a_text_fallback_is_said_and_the_question_stays_open(make_program, converse):
    llm = ScriptedProvider([choice("none"), choice("1")])
    talk = converse(make_program("fallback_text"), llm)
    assert said(talk.start()) == ["Shall I go on?"]
    missed = talk.send("banana")
    assert said(missed) == [FALLBACK_TEXT]
    (event,) = fallbacks(missed)
    assert event.agent == "asker" and event.data["count"] == 1
    assert event.data["policy"] == {"kind": "text", "value": f'Reply with "{FALLBACK_TEXT}"'}
    assert missed.active_agent == "asker"
    answered = talk.send("yes")
    assert said(answered) == ["Going on.", "asker done"]
    assert answered.ended
    llm.assert_finished()
    talk.check_stored()


def test_too_many_text_fallbacks_in_a_row_end_the_agent_with_an_error(make_program, converse):
    llm = ScriptedProvider([choice("none")] * MAX_FALLBACKS)
    talk = converse(make_program("fallback_text"), llm)
    talk.start()
    for count in range(1, MAX_FALLBACKS):
        result = talk.send(f"banana {count}")
        assert said(result) == [FALLBACK_TEXT]
        assert [e.data["count"] for e in fallbacks(result)] == [count]
    last = talk.send("still bananas")
    llm.assert_finished()
    assert said(last) == [FALLBACK_TEXT, f"asker gave up: {MAX_FALLBACKS} fallbacks in a row"]
    assert [e.data["count"] for e in fallbacks(last)] == [MAX_FALLBACKS]
    finished = [(e.agent, e.data["status"]) for e in last.events if e.type == "agent_finished"]
    assert finished == [("asker", "error"), ("main", "success")]
    assert last.ended
    talk.check_stored()


def test_an_answer_between_fallbacks_resets_the_count(make_program, converse):
    # a fallback, then a matching answer: the count starts again (the agent does not give up)
    llm = ScriptedProvider([choice("none"), choice("2")])
    talk = converse(make_program("fallback_text"), llm)
    talk.start()
    talk.send("banana")
    assert talk.say("no") == ["Stopping.", "asker done"]
    llm.assert_finished()


def test_an_agent_fallback_hands_the_message_to_that_agent(make_program, converse):
    llm = ScriptedProvider([choice("none"), choice("1")])
    talk = converse(make_program("fallback_agent"), llm)
    talk.start()
    missed = talk.send("hmm")
    assert said(missed) == ["Just say yes or no, please."]
    (event,) = fallbacks(missed)
    assert event.data["policy"] == {"kind": "agent", "value": "helpdesk"}
    started = [(e.agent, e.data["by"]) for e in missed.events if e.type == "agent_started"]
    assert started == [("helpdesk", "asker")]
    assert missed.active_agent == "asker"  # the helper finished; the question is open again
    assert said(talk.send("yes")) == ["Going on.", "asker done"]
    llm.assert_finished()
    talk.check_stored()


def test_too_many_agent_fallbacks_in_a_row_end_the_agent_with_an_error(make_program, converse):
    llm = ScriptedProvider([choice("none")] * MAX_FALLBACKS)
    talk = converse(make_program("fallback_agent"), llm)
    talk.start()
    for _ in range(MAX_FALLBACKS - 1):
        assert talk.say("hmm") == ["Just say yes or no, please."]
    last = talk.send("hmm")
    assert said(last)[-1] == f"asker gave up: {MAX_FALLBACKS} fallbacks in a row"
    assert last.ended
