"""Exit policy and session end: an agent that finishes successfully starts its exit agent; when main
returns the session ends, and a message sent after that is answered without an exception."""

from __future__ import annotations

from frontdesk.runtime.engine import ENDED_REPLY

from .conftest import said


def test_exit_policy_runs_after_success_only_and_main_ending_ends_the_session(make_program, converse):
    talk = converse(make_program("exit_end"), None)
    first = talk.start()
    assert said(first) == ["Welcome."]
    assert not first.ended
    state = talk.state()
    assert (state.status, state.turn) == ("waiting", 0)

    last = talk.send("order please")
    # the first order succeeds and its exit agent says thanks; the second fails: no exit agent
    assert said(last) == ["Order placed.", "Thanks for your order!", "Main is done (last order: error)."]
    started = [(e.agent, e.data["by"]) for e in last.events if e.type == "agent_started"]
    assert started == [("order", "main"), ("goodbye", "exit policy of order"), ("order", "main")]
    finished = [(e.agent, e.data["status"]) for e in last.events if e.type == "agent_finished"]
    assert finished == [("order", "success"), ("goodbye", "success"), ("order", "error"), ("main", "success")]
    assert [e.type for e in last.events if e.type == "session_ended"] == ["session_ended"]
    assert last.ended and last.active_agent is None
    state = talk.state()
    assert (state.status, state.turn) == ("ended", 1)
    talk.check_stored()


def test_a_message_after_the_end_is_answered_without_an_exception(make_program, converse):
    talk = converse(make_program("exit_end"), None)
    talk.start()
    talk.send("order please")
    for turn, text in enumerate(["hello?", "anyone there?"], start=2):
        after = talk.send(text)  # must not raise
        assert after.ended and [m.text for m in after.messages] == [ENDED_REPLY]
        warnings = [e.data["message"] for e in after.events if e.type == "warning"]
        assert any("conversation has ended" in w for w in warnings), warnings
        assert [e for e in after.events if e.type in ("agent_started", "error")] == []
        state = talk.state()
        assert (state.status, state.turn) == ("ended", turn)
        assert [h.text for h in state.history if h.role == "user"][-1] == text
    talk.check_stored()


def test_the_entry_agents_exit_policy_runs_when_it_finishes(make_program, converse):
    talk = converse(make_program("main_exit"), None)
    first = talk.start()
    assert said(first) == ["Hello.", "Thanks for your order!"]
