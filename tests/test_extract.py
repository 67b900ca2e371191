"""Reading typed values without a model (runtime/extract.py), and ABL GATHER's pattern strategy in a
flow that runs with no LLM at all."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.extract import extract_values
from frontdesk.store.memory import MemorySessionStore

NOW = datetime(2026, 11, 25, 10, 0)


def test_values_of_each_type():
    assert extract_values("mail me at ada@example.org", {"email": "email"}) == {"email": "ada@example.org"}
    assert extract_values("call +1 415-555-0134 today", {"phone": "phone"}) == {"phone": "+14155550134"}
    assert extract_values("we are 4 guests", {"guests": "number"}) == {"guests": 4}
    assert extract_values("three of us", {"guests": "number"}) == {"guests": 3}
    assert extract_values("2.5 kg", {"weight": "number"}) == {"weight": 2.5}
    assert extract_values("yes please", {"ok": "boolean"}) == {"ok": True}
    assert extract_values("nope", {"ok": "boolean"}) == {"ok": False}
    assert extract_values("maybe later", {"ok": "boolean"}) == {}
    assert extract_values("tomorrow", {"day": "date"}, NOW) == {"day": "2026-11-26"}
    assert extract_values("I'd like business class", {"cabin": "string"},
                          options={"cabin": ["economy", "business", "first"]}) == {"cabin": "business"}


def test_two_dates_fill_two_date_fields_in_order():
    found = extract_values("from tomorrow until next Friday", {"checkin": "date", "checkout": "date"}, NOW)
    assert found == {"checkin": "2026-11-26", "checkout": "2026-11-27"}


def test_nothing_is_invented():
    assert extract_values("hello there", {"email": "email", "phone": "phone", "guests": "number",
                                          "day": "date"}, NOW) == {}


FLOW = '''AGENT: Table_Booking
GOAL: "Book a table"

GATHER:
  guests:
    prompt: "For how many people?"
    type: number
  day:
    prompt: "Which day?"
    type: date
  email:
    prompt: "Your e-mail for the confirmation?"
    type: email

FLOW:
  ask -> done

  ask:
    GATHER:
      - guests: required
      - day: required
      - email: required
      STRATEGY: pattern
    THEN: done

  done:
    RESPOND: "Table for {{guests}} on {{day}}; confirmation to {{email}}."
    THEN: COMPLETE
'''


def test_a_flow_gathers_typed_fields_with_no_model(tmp_path: Path):
    (tmp_path / "table.agent.abl").write_text(FLOW, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None, [d.format() for d in diags]
    engine = Engine(program, None, MemorySessionStore(), clock=lambda: NOW.timestamp())
    sid = engine.start().session_id
    assert [m.text for m in engine.send(sid, "hi").messages] == ["For how many people?"]
    assert [m.text for m in engine.send(sid, "we are 4, tomorrow").messages] == ["Your e-mail for the confirmation?"]
    result = engine.send(sid, "ada@example.org")
    assert [m.text for m in result.messages] == ["Table for 4 on 2026-11-26; confirmation to ada@example.org."]


def test_the_trace_names_the_turn_the_steps_and_the_extraction_as_abl_does(tmp_path: Path):
    (tmp_path / "table.agent.abl").write_text(FLOW, encoding="utf-8")
    program, _ = load_abl(tmp_path)
    engine = Engine(program, None, MemorySessionStore(), clock=lambda: NOW.timestamp())
    first = engine.start()
    types = [e.type for e in first.events]
    assert types[types.index("execution.started") + 1:].count("flow_transition") >= 1
    assert types[-1] == "execution.completed" or "execution.completed" in types
    result = engine.send(first.session_id, "4 people, tomorrow, ada@example.org")
    extraction = next(e for e in result.events if e.type == "gather_extraction")
    assert extraction.data == {"fields": {"guests": 4, "day": "2026-11-26", "email": "ada@example.org"},
                               "by": "pattern"}
    steps = [e.data["step"] for e in result.events if e.type == "flow_transition"]
    assert steps == ["done"]
    completed = next(e for e in result.events if e.type == "execution.completed")
    assert completed.data["llm_calls"] == 0 and completed.data["messages"] == 1
