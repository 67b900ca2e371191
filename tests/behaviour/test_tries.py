"""Tries: a `next` with `tries: N` jumps at most N times, then the flow goes on after it; with nothing
after it, the agent says its fallback and ends with an error."""

from __future__ import annotations

from .conftest import said


def test_next_with_tries_falls_through_after_the_given_jumps(make_program, converse):
    talk = converse(make_program("tries"), None)  # no model: nothing here needs one
    assert said(talk.start()) == ["Enter the code."]
    for attempt in (1, 2):
        result = talk.send(f"wrong {attempt}")
        assert said(result) == ["Enter the code."]
        jumps = [e.data for e in result.events if e.type == "jump"]
        assert [(j["target"], j["taken"]) for j in jumps] == [("again", attempt)]
        assert [e for e in result.events if e.type == "tries_exhausted"] == []

    gave_up = talk.send("wrong 3")
    assert said(gave_up)[:2] == ["Too many attempts.", "Once more?"]
    exhausted = [(e.agent, e.data["target"], e.data["tries"]) for e in gave_up.events if e.type == "tries_exhausted"]
    assert exhausted == [("main", "again", 2)]
    assert [e for e in gave_up.events if e.type == "jump"] == []
    assert gave_up.active_agent == "stubborn"
    assert [e for e in talk.events if e.type in ("llm_call", "error")] == []
    talk.check_stored()


def test_tries_running_out_with_nothing_after_end_the_agent_with_an_error(make_program, converse):
    talk = converse(make_program("tries"), None)
    talk.start()
    for attempt in (1, 2, 3):
        talk.send(f"wrong {attempt}")
    again = talk.send("no")
    assert said(again) == ["Once more?"]  # its one jump
    last = talk.send("still no")
    assert said(last)[0] == "I give up."  # the agent's fallback text
    assert said(last)[1].startswith("stubborn ended with an error: ")
    assert [(e.agent, e.data["tries"]) for e in last.events if e.type == "tries_exhausted"] == [("stubborn", 1)]
    fallback = [e for e in last.events if e.type == "fallback"]
    assert [e.agent for e in fallback] == ["stubborn"]
    finished = [(e.agent, e.data["status"]) for e in last.events if e.type == "agent_finished"]
    assert finished == [("stubborn", "error"), ("main", "success")]
    assert last.ended
    talk.check_stored()
