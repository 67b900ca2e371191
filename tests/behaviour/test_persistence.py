"""Persistence: a session continued by a new Engine each turn, from a SQLite file alone, goes exactly as
it does on one engine that keeps running, and its stored state says where the conversation is."""

from __future__ import annotations

from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

from .test_suspend_resume import understand

SCRIPT = [
    {"purpose": "route", "call": "route", "with": {"agent": "transfer"}},
    understand(args={"recipient": "Bob"}),
    understand(args={"amount": 50}),
    understand(choice="switch:hours"),
    understand(choice="1"),
]
USER = ["Send money to Bob", "50", "when do you open?", "yes"]


def shape(events):
    return [(e.type, e.agent) for e in events if e.type != "llm_call"]


def test_a_new_engine_per_turn_continues_the_session_as_one_engine_would(make_program, converse):
    program = make_program("suspend_resume")

    one = Engine(program, ScriptedProvider(SCRIPT), MemorySessionStore())
    sid = one.start().session_id
    kept = [one.send(sid, text) for text in USER]

    llm = ScriptedProvider(SCRIPT)
    talk = converse(program, llm)
    talk.start()
    for turn, text in enumerate(USER, start=1):
        talk.send(text)
        state = talk.state()
        assert state.turn == turn
        assert state.status == "waiting"  # between turns the session waits for the user
        assert [h.text for h in state.history if h.role == "user"] == USER[:turn]
    llm.assert_finished()

    assert [[m.text for m in t.messages] for t in talk.turns[1:]] == [[m.text for m in t.messages] for t in kept]
    assert [t.active_agent for t in talk.turns[1:]] == [t.active_agent for t in kept]
    assert shape(talk.events[len(talk.turns[0].events):]) == shape(e for t in kept for e in t.events)
    assert talk.turns[-1].messages[-1].text == "Sent 50 to Bob."
    history = talk.state().history
    assert [(h.role, h.text) for h in history][-2:] == [("user", "yes"), ("bot", "Sent 50 to Bob.")]
    talk.check_stored()
