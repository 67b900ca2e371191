"""The `preemptive` strategy in the engine: a turn superseded by a newer message keeps only its message
(in the history, for the next turn to see); a turn in which a tool ran is never superseded."""

from __future__ import annotations

import textwrap

from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

AGENTS = """
main:
  type: flow agent
  steps:
    - label: top
    - user
    - call: record
    - bot: "Recorded."
    - next: top
"""
TOOLS = '''
CALLS = []


def record():
    """Remembers that it ran."""
    CALLS.append(1)
    return {"ok": True}
'''


def engine_for(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(AGENTS), encoding="utf-8")
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None, [d.format() for d in diags]
    return Engine(program, None, MemorySessionStore())


def test_a_superseded_turn_keeps_only_its_message(tmp_path):
    engine = engine_for(tmp_path)
    session = engine.start().session_id
    result = engine.send(session, "first thought", preempt=lambda: True)
    assert result.preempted and result.messages == []
    types = [e.type for e in result.events]
    assert types[-2:] == ["turn_preempted", "execution.completed"]
    assert result.events[-1].data["status"] == "preempted"
    assert "tool_call" not in types and "bot_message" not in types
    state = engine.store.load(session)
    assert [h["text"] for h in state["history"] if h["role"] == "user"] == ["first thought"]
    assert state["status"] == "waiting"
    seqs = [e["seq"] for e in engine.store.events(session)]
    assert seqs == list(range(1, len(seqs) + 1))  # the dropped events left no gap
    after = engine.send(session, "second thought")  # the next turn runs as usual
    assert [m.text for m in after.messages] == ["Recorded."]
    state = engine.store.load(session)
    assert [h["text"] for h in state["history"] if h["role"] == "user"] == ["first thought", "second thought"]


def test_a_turn_whose_tool_ran_is_not_superseded(tmp_path):
    engine = engine_for(tmp_path)
    session = engine.start().session_id
    ran = []

    def newer_message_arrived() -> bool:
        return bool(ran)  # a newer message arrives only once the tool is running

    original = engine.tools.call

    def call(*args, **kwargs):
        ran.append(1)
        return original(*args, **kwargs)

    engine.tools.call = call
    result = engine.send(session, "please record", preempt=newer_message_arrived)
    assert ran and not result.preempted
    assert [m.text for m in result.messages] == ["Recorded."]


def test_without_preempt_nothing_changes(tmp_path):
    engine = engine_for(tmp_path)
    session = engine.start().session_id
    result = engine.send(session, "hello")
    assert not result.preempted and [m.text for m in result.messages] == ["Recorded."]
