"""Issue 25, found by the differential harness: a kb agent or an llm agent as a program's entry (`main`).

Before the fix a kb agent as `main` answered an empty question at the session's opening, said its
fallback and ended the conversation, and after a first answer the session ended too; an llm agent
as `main` whose steps greeted asked its model to answer a message nobody had sent. Each test failed
before its fix (docs/adl-semantics.md, "Entry agents")."""

from __future__ import annotations

import textwrap
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import ENDED_REPLY, Engine
from frontdesk.store.memory import MemorySessionStore

MUSEUM = """
    main:
      type: kb agent
      description: Answers visitor questions about the museum.
      fallback: "Sorry, I don't know that. Please call the ticket desk."
      faq:
        - q: Can I buy tickets online?
          a: Yes, tickets are sold on our website.
        - q: Is there parking at the museum?
          a: The Harbour Gate car park is a 5-minute walk away.
"""

GYM = """
    main:
      type: llm agent
      description: The gym's front desk.
      steps:
        - bot: "Hi, welcome to FitHub!"
      prompt: Help members with classes.
"""


def engine(tmp_path: Path, text: str, llm=None) -> Engine:
    (tmp_path / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    program, diagnostics = load_program(tmp_path)
    assert program is not None, [d.format() for d in diagnostics]
    return Engine(program, llm, MemorySessionStore())


def texts(result) -> list[str]:
    return [m.text for m in result.messages]


def test_kb_entry_waits_for_the_first_question_and_answers_every_one(tmp_path):
    eng = engine(tmp_path, MUSEUM)
    start = eng.start()
    assert texts(start) == [] and not start.ended
    first = eng.send(start.session_id, "Can I buy tickets online?")
    assert texts(first) == ["Yes, tickets are sold on our website."] and not first.ended
    second = eng.send(start.session_id, "Is there parking at the museum?")
    assert texts(second) == ["The Harbour Gate car park is a 5-minute walk away."]
    assert ENDED_REPLY not in texts(second) and not second.ended


def test_kb_entry_without_an_answer_says_its_fallback_and_goes_on(tmp_path):
    eng = engine(tmp_path, MUSEUM)
    session = eng.start().session_id
    missed = eng.send(session, "Do you sell submarines?")
    assert texts(missed) == ["Sorry, I don't know that. Please call the ticket desk."] and not missed.ended
    assert texts(eng.send(session, "Can I buy tickets online?")) == ["Yes, tickets are sold on our website."]


def test_llm_entry_that_greets_waits_for_the_first_message(tmp_path):
    llm = ScriptedProvider([{"reply": "Yoga is on Monday at 9."}])
    eng = engine(tmp_path, GYM, llm)
    start = eng.start()
    assert texts(start) == ["Hi, welcome to FitHub!"] and not start.ended
    assert llm.calls == []  # nothing was asked of the model before the user spoke
    answer = eng.send(start.session_id, "When is yoga?")
    assert texts(answer) == ["Yoga is on Monday at 9."]
    assert any(m.get("content") == "When is yoga?" for m in llm.calls[0].messages if isinstance(m, dict)) or \
        any(getattr(m, "content", None) == "When is yoga?" for m in llm.calls[0].messages)
