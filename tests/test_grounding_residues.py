"""What issue 27's grounding benchmark still found (bench/grounding.md, "What is left"), each fixed by a
mechanism: an e-mail address is no name, a pronoun is no value, a number counts what its field counts, a
date argument takes one day, a skip is no reason, a description of something already done gives no new
request's values; and the values a typed reader can fill without inventing (a party named, "no car",
"on foot", a name put under, a reason in the user's words, later GATHER fields given with an answer,
what was taken or damaged, a code only another agent's field takes)."""

from __future__ import annotations

import textwrap
from datetime import datetime
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.base import LLMResponse, ToolCall
from frontdesk.runtime import extract
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.grounding import Evidence, why_not
from frontdesk.store.memory import MemorySessionStore

NOW = datetime(2026, 11, 28, 10)


def _engine(tmp_path: Path, files: dict[str, str], llm=None, understanding=None):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    engine = Engine(program, llm, MemorySessionStore(), understanding=understanding)
    return engine, engine.start().session_id


def _held(engine, sid) -> dict:
    out: dict = {}
    for scope in engine.load_state(sid).variables.values():
        out.update({k: v for k, v in scope.items() if v is not None})
    return out


class Reader:
    """A model that reads the same values out of every message (as a small model that invents would)."""

    can_classify = True
    name = "reader"

    def __init__(self, values: dict) -> None:
        self.values = values

    def complete(self, request):
        tools = {t.name: t for t in request.tools}
        if "understand" in tools:
            wanted = tools["understand"].parameters.get("properties", {}).get("args", {}).get("properties", {})
            args = {k: v for k, v in self.values.items() if k in wanted}
            return LLMResponse(tool_calls=[ToolCall(id="c1", name="understand", arguments={"args": args})])
        return LLMResponse(content="All right.")


# ---- a model's value the user's words do not hold ----------------------------------------------------

def test_the_name_part_of_an_email_address_is_no_name():
    evidence = Evidence(said=["You can reach me at sam.okoro@example.com if that helps"], now=NOW)
    assert why_not("Sam", evidence, None, name="student_name") is not None
    assert why_not("sam.okoro@example.com", evidence, "email") is None


def test_a_pronoun_is_never_a_value():
    evidence = Evidence(said=["Her name is Ana Costa."], now=NOW)
    assert why_not("Her", evidence, None, name="instrument") is not None
    assert why_not("Ana Costa", evidence, None, name="student_name") is None


TRIAL = """
main:
  type: flow agent
  steps:
    - call: trial

trial:
  type: flow agent
  args:
    - student_name
    - instrument
  steps:
    - label: ask
    - bot: "What is the student's full name?"
    - user
    - if: student_name == None
      then:
        - next: ask
          tries: 3
    - bot: "Which instrument would ${student_name} like to try?"
    - user
    - bot: "Booked ${instrument} for ${student_name}."
"""


def test_a_flow_keeps_no_name_from_an_address_and_no_pronoun_a_model_read(tmp_path):
    engine, sid = _engine(tmp_path, {"agents.yml": TRIAL}, Reader({"student_name": "Sam", "instrument": "Her"}))
    engine.send(sid, "I'd like to book a trial lesson")
    turn = engine.send(sid, "You can reach me at sam.okoro@example.com, her teacher said so")
    assert _held(engine, sid) == {}
    assert [m.text for m in turn.messages] == ["What is the student's full name?"]


CANCEL = """
main:
  type: flow agent
  steps:
    - call: cancel

cancel:
  type: flow agent
  args:
    - booking_ref
    - cancel_reason
  steps:
    - label: ask_ref
    - bot: "What is the booking reference?"
    - user
    - if: booking_ref == None
      then:
        - next: ask_ref
          tries: 3
    - bot: "May I ask why you are cancelling? You can also just say 'skip'."
    - user
    - bot: "Cancelled ${booking_ref}: ${cancel_reason}."
"""

REASON = """
main:
  type: flow agent
  steps:
    - call: cancel

cancel:
  type: flow agent
  args:
    - cancel_reason
  steps:
    - label: ask
    - bot: "May I ask why you are cancelling? You can also just say 'skip'."
    - user
    - if: cancel_reason == None
      then:
        - next: ask
          tries: 3
    - bot: "Noted: ${cancel_reason}."
"""


def test_a_skip_gives_no_reason_however_a_model_words_it(tmp_path):
    assert extract.declines("skip") and extract.no_answer("Skip.")
    engine, sid = _engine(tmp_path, {"agents.yml": REASON}, Reader({"cancel_reason": "Skipping the lesson"}))
    engine.send(sid, "I need to cancel a lesson")
    turn = engine.send(sid, "skip")
    assert "cancel_reason" not in _held(engine, sid)
    assert any(e.type == "value_refused" and "declines" in str(e.data) for e in turn.events)


# ---- with no model: the typed readers ----------------------------------------------------------------

AGE = """
main:
  type: flow agent
  steps:
    - call: trial

trial:
  type: flow agent
  args:
    - student_age
    - lesson_date
  steps:
    - label: ask_age
    - if: student_age == None
      then:
        - bot: "How old is the student?"
        - user
        - next: ask_age
          tries: 2
    - label: ask_date
    - if: lesson_date == None
      then:
        - bot: "On which date?"
        - user
        - next: ask_date
          tries: 2
    - bot: "Age ${student_age}, on ${lesson_date}."
"""


@pytest.mark.parametrize("message", ["I have 2 other kids who might join later.", "He's in year 5 at Brookside."])
def test_a_number_of_something_else_is_no_age(tmp_path, message):
    engine, sid = _engine(tmp_path, {"agents.yml": AGE})
    turn = engine.send(sid, message)
    assert "student_age" not in _held(engine, sid)
    assert [m.text for m in turn.messages] == ["How old is the student?"]


def test_an_age_in_words_is_an_age_and_no_date(tmp_path):
    engine, sid = _engine(tmp_path, {"agents.yml": AGE})
    engine.send(sid, "hello")
    engine.send(sid, "twelve years old")
    assert _held(engine, sid) == {"student_age": 12}


def test_a_vague_date_leaves_a_date_argument_unset(tmp_path):
    engine, sid = _engine(tmp_path, {"agents.yml": AGE})
    engine.send(sid, "11")
    turn = engine.send(sid, "Sometime next month would be good.")
    assert "lesson_date" not in _held(engine, sid)
    assert [m.text for m in turn.messages] == ["On which date?"]
    assert extract.spans("next Friday", "date", NOW) == ["next Friday"]
    assert extract.spans("twelve years", "date", NOW) == [] and extract.spans("next week", "date", NOW) == []
    assert extract.spans("in 3 days", "date", NOW) == ["in 3 days"]


def test_a_reason_is_the_users_own_words(tmp_path):
    engine, sid = _engine(tmp_path, {"agents.yml": CANCEL})
    engine.send(sid, "I need to cancel a lesson")
    engine.send(sid, "ML-1001")
    engine.send(sid, "We're moving to another city")
    assert _held(engine, sid)["cancel_reason"] == "We're moving to another city"
    engine, sid = _engine(tmp_path, {"agents.yml": CANCEL})
    engine.send(sid, "I need to cancel a lesson")
    engine.send(sid, "It's ML-1001, my son is ill")
    assert _held(engine, sid) == {"booking_ref": "ML-1001", "cancel_reason": "my son is ill"}
    engine, sid = _engine(tmp_path, {"agents.yml": CANCEL})
    engine.send(sid, "I need to cancel a lesson")
    engine.send(sid, "ML-1001")
    engine.send(sid, "skip")
    assert "cancel_reason" not in _held(engine, sid)


# ---- ABL ---------------------------------------------------------------------------------------------

FERRY = """
SUPERVISOR: Desk
GOAL: "Send ferry passengers to ticket booking or booking changes"

HANDOFF:
  - TO: Booking
    WHEN: user wants to buy ferry tickets or book a crossing to an island
    RETURN: true
  - TO: Changes
    WHEN: user wants to move an existing ferry booking to another date
    RETURN: true

ROUTING:
  - INTENT(book a ferry, buy tickets, I need a crossing, book a sailing to Mull) -> Booking
  - INTENT(change my booking, move my sailing, different date for my ticket, rebook my crossing) -> Changes
  - DEFAULT -> Booking
"""

BOOKING = """
AGENT: Booking
GOAL: "Book a crossing"

GATHER:
  island:
    prompt: "Which island: Mull, Islay or Arran?"
    type: string
    required: true
    options: [Mull, Islay, Arran]
  guests:
    prompt: "How many people are travelling?"
    type: number
    required: true
  with_car:
    prompt: "Are you bringing a car? (yes or no)"
    type: boolean
    required: true
  lead_passenger:
    prompt: "What name should the booking be under?"
    type: string
    required: true

FLOW:
  trip -> who -> done

  trip:
    GATHER:
      - island: required
      - guests: required
      - with_car: required
      STRATEGY: pattern
    THEN: who

  who:
    GATHER:
      - lead_passenger: required
      STRATEGY: hybrid
    THEN: done

  done:
    RESPOND: "Booked for {{lead_passenger}}."
    THEN: COMPLETE
"""

CHANGES = """
AGENT: Changes
GOAL: "Move a booking"

GATHER:
  booking_code:
    prompt: "What is your booking code? It looks like FB12345."
    type: string
    required: true
    validate:
      type: pattern
      rule: "^[Ff][Bb]\\\\d{5}$"
      error: "Booking codes are FB and five digits."
  new_date:
    prompt: "Which date instead?"
    type: date
    required: true

FLOW:
  ask -> done

  ask:
    GATHER:
      - booking_code: required
      - new_date: required
      STRATEGY: pattern
    THEN: done

  done:
    RESPOND: "Moved {{booking_code}}."
    THEN: COMPLETE
"""


def _ferry(tmp_path, understanding=None):
    return _engine(tmp_path, {"desk.agent.abl": FERRY, "booking.agent.abl": BOOKING, "changes.agent.abl": CHANGES},
                   understanding=understanding)


def test_a_party_named_no_car_on_foot_and_a_name_put_under(tmp_path):
    assert extract.people_named("Just me and my wife.") == 2 and extract.people_named("I want a room") is None
    assert extract.boolean_for("Mull, 2 of us, no car", "with_car") is False
    assert extract.boolean_for("We're travelling on foot.", "with_car") is False
    assert extract.short_answer("Put it under Morag MacLeod.") == "Morag MacLeod"
    engine, sid = _ferry(tmp_path)
    engine.send(sid, "I'd like to book a ferry")
    engine.send(sid, "Mull")
    engine.send(sid, "Just me and my wife.")
    engine.send(sid, "We're travelling on foot.")
    turn = engine.send(sid, "Put it under Morag MacLeod.")
    held = _held(engine, sid)
    assert {k: held.get(k) for k in ("island", "guests", "with_car", "lead_passenger")} == \
        {"island": "Mull", "guests": 2, "with_car": False, "lead_passenger": "Morag MacLeod"}
    assert [m.text for m in turn.messages][:1] == ["Booked for Morag MacLeod."]


def test_a_code_only_another_agents_field_takes_turns_to_it(tmp_path):
    engine, sid = _ferry(tmp_path)
    engine.send(sid, "I'd like to book a ferry")
    turn = engine.send(sid, "it's FB10001")
    assert _held(engine, sid).get("booking_code") == "FB10001"
    assert [m.text for m in turn.messages][-1] == "Which date instead?"


def test_a_description_of_a_booking_already_made_gives_no_new_booking_its_island(tmp_path, local_model):
    assert extract.describes_done("I booked it last week, it's the one to Mull.")
    assert not extract.describes_done("I'd like to book a crossing to Mull")
    engine, sid = _ferry(tmp_path, local_model[0])
    engine.send(sid, "I need to change my ferry booking")
    turn = engine.send(sid, "I booked it last week, it's the one to Mull.")
    assert "island" not in _held(engine, sid), [(e.type, e.data) for e in turn.events if e.type in
                                                ("arg_set", "route_decided")]


CLAIM = """
AGENT: Claim
GOAL: "Take a claim"

ENTITIES:
  incident_kind:
    TYPE: enum
    VALUES: [fire, theft, collision]
    SYNONYMS:
      theft: [stole, stolen, robbed]
      collision: [crash, crashed, accident]

GATHER:
  policy_number:
    prompt: "What is your policy number?"
    type: string
    required: true
    validate:
      type: pattern
      rule: "^POL-[A-Z]{2}\\\\d{6}$"
      error: "Policy numbers look like POL-AB123456."
  incident_date:
    prompt: "On what date did it happen?"
    type: date
    required: true
  incident_type:
    prompt: "What happened: fire, theft or collision?"
    ENTITY_REF: incident_kind
    required: true
  incident_description:
    prompt: "Please describe what happened."
    type: string
    required: true
  damaged_items:
    prompt: "What was damaged?"
    type: string
    required: false

FLOW:
  policy -> when -> what -> describe -> done

  policy:
    REASONING: false
    GATHER:
      - policy_number: required
      STRATEGY: pattern
    THEN: when

  when:
    REASONING: false
    GATHER:
      - incident_date: required
      STRATEGY: pattern
    THEN: what

  what:
    REASONING: false
    GATHER:
      - incident_type: required
      STRATEGY: pattern
    THEN: describe

  describe:
    REASONING: true
    INSTRUCTIONS: |
      Record their account as incident_description, and what was damaged. Then complete.
    THEN: done

  done:
    RESPOND: "Claim taken."
    THEN: COMPLETE
"""


def test_an_answer_that_goes_on_gives_the_later_fields_too(tmp_path):
    engine, sid = _engine(tmp_path, {"claim.agent.abl": CLAIM})
    engine.send(sid, "I need to file a claim")
    turn = engine.send(sid, "It's POL-CD654321, another car crashed into mine yesterday")
    held = _held(engine, sid)
    assert held.get("policy_number") == "POL-CD654321" and held.get("incident_type") == "collision"
    assert held.get("incident_date") is not None  # "yesterday"
    assert "On what date did it happen?" not in [m.text for m in turn.messages]


def test_a_description_without_an_answer_gives_no_later_field(tmp_path):
    engine, sid = _engine(tmp_path, {"claim.agent.abl": CLAIM})
    engine.send(sid, "I need to file a claim")
    engine.send(sid, "another car crashed into mine yesterday, I don't have the number")
    assert "incident_type" not in _held(engine, sid)


def test_what_was_taken_is_read_from_the_account(tmp_path):
    assert extract.things_affected("Someone forced the back door and took the TV and a laptop") == \
        "the TV and a laptop"
    engine, sid = _engine(tmp_path, {"claim.agent.abl": CLAIM})
    for text in ["I need to file a claim", "POL-AB123456", "On 20 November.", "theft"]:
        engine.send(sid, text)
    engine.send(sid, "Someone forced the back door at night and took the TV and a laptop")
    assert _held(engine, sid).get("damaged_items") == "the TV and a laptop"


@pytest.mark.parametrize("text, name, expected", [
    ("I'm paying her back for 2 concert tickets.", "amount", []),  # a compound noun counts its last word
    ("I have 2 other kids who might join later.", "student_age", []),
    ("He's in year 5 at Brookside.", "student_age", []),
    ("twelve years old", "student_age", [12]),
    ("room 12 please", "room_number", [12]),
    ("2 adult tickets", "passengers", [2]),
])
def test_a_number_counts_what_its_field_counts(text, name, expected):
    assert extract.numbers_for(text, name, NOW) == expected
    evidence = Evidence(said=[text], now=NOW)
    assert (why_not(expected[0] if expected else 2, evidence, "number", name=name) is None) == bool(expected)
