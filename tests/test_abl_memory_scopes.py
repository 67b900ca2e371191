"""ABL MEMORY scopes at run time, from compiled ABL programs (abl-specification 3.7): session variables
with RESET: per_activation, recall at session:end, project-scope persistent memory written by one user and
read by another (through a store that outlives the engine), user scope kept per user, and execution_tree
memory shared by the agents of one session's tree but not by another session."""

from __future__ import annotations

import textwrap
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.store.longterm import SqliteMemoryStore
from frontdesk.store.memory import MemorySessionStore


def _program(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    errors = [d.format() for d in diags if d.is_error]
    assert program is not None and not errors, errors
    return program


def _said(result) -> list[str]:
    return [m.text for m in result.messages]


# ---- RESET: per_activation -----------------------------------------------------------------------------

COUNTING = {
    "main.agent.abl": """
        AGENT: Main
        GOAL: "Run the counter twice"
        FLOW:
          first:
            REASONING: false
            DELEGATE: Counter
            THEN: second
          second:
            REASONING: false
            DELEGATE: Counter
            THEN: done
          done:
            REASONING: false
            RESPOND: "Finished."
            THEN: COMPLETE
        """,
    "counter.agent.abl": """
        AGENT: Counter
        GOAL: "Count its activations"
        MEMORY:
          session:
            - attempts:
                INITIAL: 0
                RESET: per_activation
            - runs:
                INITIAL: 0
                RESET: per_session
        FLOW:
          bump:
            REASONING: false
            SET:
              attempts = attempts + 1
              runs = runs + 1
            RESPOND: "attempts {{attempts}}, runs {{runs}}"
            THEN: COMPLETE
        """,
}


def test_reset_per_activation_gives_the_initial_value_at_each_activation(tmp_path):
    engine = Engine(_program(tmp_path, COUNTING), None, MemorySessionStore())
    started = engine.start(program_label="counting")
    said = _said(started)
    # per_activation starts again from INITIAL each time Counter starts; per_session keeps counting
    assert said == ["attempts 1, runs 1", "attempts 1, runs 2", "Finished."]
    initial = [e.data for e in started.events if e.type == "arg_set" and str(e.data.get("why", "")).startswith("INITIAL")]
    assert [d["name"] for d in initial].count("attempts") == 2
    assert [d["name"] for d in initial].count("runs") == 1


# ---- recall at session:end -----------------------------------------------------------------------------

FAREWELL = {
    "farewell.agent.abl": """
        AGENT: Farewell
        GOAL: "Say goodbye"
        MEMORY:
          persistent:
            - PATH: user.last_order
              SCOPE: user
              ACCESS: read
          recall:
            - ON: session:end
              ACTION: load_memory
              PATHS: [user.last_order]
        FLOW:
          bye:
            REASONING: false
            RESPOND: "What can I do?"
            ON_INPUT:
              - IF: input.contains("bye")
                RESPOND: "Goodbye."
                THEN: COMPLETE
              - ELSE:
                THEN: bye
        """,
}


def test_recall_runs_when_the_session_ends(tmp_path):
    engine = Engine(_program(tmp_path, FAREWELL), None, MemorySessionStore())
    engine.memory.put("user", "u1", "last_order", "A-100")
    sid = engine.start(user_id="u1", program_label="farewell").session_id
    result = engine.send(sid, "hello")
    assert not [e for e in result.events if e.type == "memory_recall"]  # not yet: the session goes on
    result = engine.send(sid, "bye now")
    assert result.ended and "Goodbye." in _said(result)
    recalls = [e for e in result.events if e.type == "memory_recall"]
    assert [(e.agent, e.data["on"], e.data["values"]) for e in recalls] == [
        ("Farewell", "session:end", {"user.last_order": "A-100"})]
    ended = next(i for i, e in enumerate(result.events) if e.type == "session_ended")
    assert result.events.index(recalls[0]) > ended
    assert engine.load_state(sid).system["_stored_user_last_order"] == "A-100"


# ---- project scope across users; user scope per user --------------------------------------------------

NOTICES = {
    "notices.agent.abl": """
        AGENT: Notices
        GOAL: "Keep the team's notice board"
        GATHER:
          notice:
            prompt: "What should the notice say?"
            type: string
            required: false
        MEMORY:
          session:
            - board
            - nickname
          persistent:
            - PATH: project.board
              SCOPE: project
              ACCESS: readwrite
            - PATH: user.nickname
              SCOPE: user
              ACCESS: readwrite
          remember:
            - WHEN: notice IS SET
              STORE: notice -> project.board
            - WHEN: notice IS SET
              STORE: "poster" -> user.nickname
          recall:
            - ON: session:start
              ACTION: load_memory
              PATHS: [project.board, user.nickname]
        FLOW:
          show:
            REASONING: false
            RESPOND: "Board: {{board}}. You are {{nickname}}."
            ON_INPUT:
              - IF: input.contains("post ")
                SET: notice = REPLACE(input, "post ", "")
                RESPOND: "Posted."
                THEN: show
              - ELSE:
                THEN: show
        """,
}


def test_project_memory_written_by_one_user_is_read_by_another_in_a_later_process(tmp_path):
    program = _program(tmp_path, NOTICES)
    db = tmp_path / "memory.sqlite"
    first = Engine(program, None, MemorySessionStore(), memory=SqliteMemoryStore(db))
    sid = first.start(user_id="ann", program_label="notices").session_id
    result = first.send(sid, "post canteen closed friday")
    assert "Posted." in _said(result)
    # a new engine on the same memory store (another process), another user, a new session
    second = Engine(program, None, MemorySessionStore(), memory=SqliteMemoryStore(db))
    started = second.start(user_id="bob", program_label="notices")
    assert _said(started)[0].startswith("Board: canteen closed friday.")
    recall = next(e for e in started.events if e.type == "memory_recall")
    assert recall.data["values"] == {"project.board": "canteen closed friday"}  # bob has no nickname
    assert "poster" not in _said(started)[0]
    # ann's own user memory is hers
    third = Engine(program, None, MemorySessionStore(), memory=SqliteMemoryStore(db))
    again = third.start(user_id="ann", program_label="notices")
    assert _said(again)[0] == "Board: canteen closed friday. You are poster."
    # another project does not see this project's board
    other = Engine(program, None, MemorySessionStore(), memory=SqliteMemoryStore(db))
    elsewhere = other.start(user_id="bob", program_label="another project")
    assert not [e for e in elsewhere.events if e.type == "memory_recall" and e.data["values"]]


# ---- execution_tree scope from ABL --------------------------------------------------------------------

QUOTES = {
    "quoter.agent.abl": """
        AGENT: Quoter
        GOAL: "Make a quote and hand it to pricing"
        MEMORY:
          persistent:
            - PATH: workflow.current_quote
              SCOPE: execution_tree
              ACCESS: readwrite
        FLOW:
          start:
            REASONING: false
            RESPOND: "Quote or check?"
            ON_INPUT:
              - IF: input.contains("quote")
                SET: workflow.current_quote = 120
                THEN: price
              - ELSE:
                THEN: price
          price:
            REASONING: false
            DELEGATE: Pricing
            THEN: start
        """,
    "pricing.agent.abl": """
        AGENT: Pricing
        GOAL: "Read the tree's quote"
        MEMORY:
          persistent:
            - PATH: workflow.current_quote
              SCOPE: execution_tree
              ACCESS: read
        FLOW:
          read:
            REASONING: false
            RESPOND: "Pricing sees {{workflow.current_quote}}."
            THEN: COMPLETE
        """,
}


def test_execution_tree_memory_is_shared_by_the_tree_of_one_session_only(tmp_path):
    engine = Engine(_program(tmp_path, QUOTES), None, MemorySessionStore())
    sid = engine.start(program_label="quotes").session_id
    result = engine.send(sid, "a quote please")
    assert "Pricing sees 120." in _said(result)  # another agent of the same tree reads it
    assert engine.memory.get("execution_tree", sid, "current_quote") == 120
    other = engine.start(program_label="quotes").session_id
    result = engine.send(other, "just check")
    said = " ".join(_said(result))
    assert "Pricing sees" in said and "120" not in said  # a new session is a new tree
