"""The three GATHER extraction strategies of a FLOW step (abl-specification 3.6 "Extraction
Strategies"): `pattern` reads with no model call, `llm` asks the model, `hybrid` reads by pattern and
asks the model only for what is left. The model is the scripted one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.state import SessionState
from frontdesk.store.memory import MemorySessionStore

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)

CONTACT = '''AGENT: Contact
GOAL: "Take contact details"

FLOW:
  ask -> done

  ask:
    GATHER:
      - name:
          PROMPT: "Your name?"
      - email:
          TYPE: email
          PROMPT: "Your e-mail?"
      - phone:
          TYPE: phone
          PROMPT: "Your phone?"
      - visit:
          TYPE: date
          PROMPT: "When do you visit?"
      - party:
          TYPE: number
          PROMPT: "How many of you?"
      - newsletter:
          TYPE: boolean
          PROMPT: "Newsletter?"
          REQUIRED: false
      STRATEGY: {strategy}
    CORRECTIONS: true
    THEN: done

  done:
    RESPOND: "{{name}} / {{email}} / {{phone}} / {{visit}} / {{party}}"
    THEN: COMPLETE
'''


def start(tmp_path: Path, strategy: str, script: list | None):
    (tmp_path / "contact.agent.abl").write_text(CONTACT.replace("{strategy}", strategy), encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None, [d.format() for d in diags]
    llm = ScriptedProvider(script) if script is not None else None
    engine = Engine(program, llm, MemorySessionStore(), clock=lambda: NOW.timestamp())
    sid = engine.start().session_id
    return engine, sid, llm


def values(engine: Engine, sid: str) -> dict:
    return SessionState.model_validate(engine.store.load(sid)).variables.get("session", {})


def extractions(result) -> list[dict]:
    return [e.data for e in result.events if e.type == "gather_extraction"]


MESSAGE = "I'm at ann@example.com or (415) 555-2671, coming next friday, 3 of us"


def test_pattern_reads_emails_phones_dates_and_numbers_without_calling_the_model(tmp_path):
    engine, sid, llm = start(tmp_path, "pattern", [])  # a model is there, and never asked
    result = engine.send(sid, MESSAGE)
    assert [m.text for m in result.messages] == ["Your name?"]
    assert values(engine, sid) == {"email": "ann@example.com", "phone": "+14155552671", "visit": "2026-11-27",
                                   "party": 3}
    assert extractions(result) == [{"fields": {"email": "ann@example.com", "phone": "+14155552671",
                                               "visit": "2026-11-27", "party": 3}, "by": "pattern"}]
    assert llm.calls == []
    result = engine.send(sid, "Ann Lee")  # a short answer to a text question is the value
    assert [m.text for m in result.messages] == ["Ann Lee / ann@example.com / +14155552671 / 2026-11-27 / 3"]
    assert llm.calls == []


def test_llm_asks_the_model_for_every_field_still_missing(tmp_path):
    script = [{"purpose": "understand", "call": "understand",
               "with": {"args": {"name": "Ann Lee", "email": "ann@example.com", "phone": "+14155552671",
                                 "visit": "2026-11-27", "party": 3}}}]
    engine, sid, llm = start(tmp_path, "llm", script)
    result = engine.send(sid, "Ann Lee here. " + MESSAGE)
    assert [m.text for m in result.messages] == ["Ann Lee / ann@example.com / +14155552671 / 2026-11-27 / 3"]
    [request] = llm.calls
    asked = request.tools[0].parameters["properties"]["args"]["properties"]
    assert set(asked) == {"name", "email", "phone", "visit", "party", "newsletter"}
    assert [e["by"] for e in extractions(result)] == ["llm"]
    llm.assert_finished()


def test_llm_with_no_model_configured_reads_by_pattern(tmp_path):
    engine, sid, _ = start(tmp_path, "llm", None)
    result = engine.send(sid, MESSAGE)
    assert [m.text for m in result.messages] == ["Your name?"]
    assert [e["by"] for e in extractions(result)] == ["pattern"]
    assert not [e for e in result.events if e.type == "error"]


def test_hybrid_reads_by_pattern_first_and_asks_the_model_only_for_the_rest(tmp_path):
    script = [{"purpose": "understand", "call": "understand", "with": {"args": {"name": "Ann Lee"}}}]
    engine, sid, llm = start(tmp_path, "hybrid", script)
    result = engine.send(sid, "Ann Lee here. " + MESSAGE)
    assert [m.text for m in result.messages] == ["Ann Lee / ann@example.com / +14155552671 / 2026-11-27 / 3"]
    [request] = llm.calls
    asked = request.tools[0].parameters["properties"]["args"]["properties"]
    assert set(asked) == {"name", "newsletter"}  # what patterns did not find
    assert [e["by"] for e in extractions(result)] == ["pattern", "llm"]
    llm.assert_finished()


def test_hybrid_corrections_are_read_by_pattern_then_by_the_model(tmp_path):
    script = [
        {"purpose": "understand", "call": "understand", "with": {"args": {}}},
        {"purpose": "understand", "call": "understand", "with": {"args": {"email": "ann@lee.org"}}},
        {"purpose": "understand", "call": "understand", "with": {"args": {"name": "Ann Lee"}}},
    ]
    engine, sid, llm = start(tmp_path, "hybrid", script)
    engine.send(sid, MESSAGE)  # the model is asked for the name and the newsletter, and finds neither

    def corrections(result):
        return [e.data for e in result.events if e.type == "gather_correction"]

    result = engine.send(sid, "sorry, my email is anna@example.com")
    assert corrections(result) == [{"by": "pattern", "invalidated": [],
                                    "fields": {"email": {"from": "ann@example.com", "to": "anna@example.com"}}}]
    assert [m.text for m in result.messages] == ["Your name?"] and len(llm.calls) == 1
    result = engine.send(sid, "actually the email is my work one: ann at lee dot org")
    assert corrections(result) == [{"by": "llm", "invalidated": [],
                                    "fields": {"email": {"from": "anna@example.com", "to": "ann@lee.org"}}}]
    # the model is asked only for the given field the message names
    assert set(llm.calls[1].tools[0].parameters["properties"]["args"]["properties"]) == {"email"}
    result = engine.send(sid, "Ann Lee")
    assert [m.text for m in result.messages] == ["Ann Lee / ann@lee.org / +14155552671 / 2026-11-27 / 3"]
    llm.assert_finished()


# ---- the pattern reader's parts ---------------------------------------------------------------------


def test_numbers_are_not_read_from_dates_phone_numbers_or_codes():
    from frontdesk.runtime.extract import extract_values

    fields = {"guests": "number", "day": "date"}
    assert extract_values("December 5, 3 guests", fields, NOW) == {"day": "2026-12-05", "guests": 3}
    assert extract_values("call (415) 555-2671", {"guests": "number"}, NOW) == {}
    assert extract_values("policy POL-123", {"guests": "number"}, NOW) == {}
    assert extract_values("-4 degrees", {"t": "number"}, NOW) == {"t": -4}


def test_typed_checks_and_correction_words():
    from frontdesk.runtime.extract import check_value, named_fields, says_correction

    assert check_value("range", "1-6", 4) == (True, 4) and check_value("range", "1-6", 7)[0] is False
    assert check_value("range", "1-6", "three")[0] is False
    assert check_value("enum", "economy, business", "BUSINESS") == (True, "business")
    assert check_value("pattern", r"^POL-\d{3}$", "POL-123")[0] and not check_value("pattern", r"^\d+$", "x1")[0]
    assert says_correction("actually 4 guests") and says_correction("no, make it Friday")
    assert not says_correction("4 guests please")
    assert named_fields("change the check-out date", ["checkin", "check_out", "guests"]) == ["check_out"]
    assert named_fields("make it 3 guests", ["number_of_guests", "checkin"]) == ["number_of_guests"]
