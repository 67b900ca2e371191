"""No value without evidence (issue 27, runtime/grounding.py): a value a model reads out of the
conversation is kept only when what the user said holds it, in so many words or through a typed
parser; otherwise the field stays unset, is asked for, and the trace says why (`value_refused`)."""

from __future__ import annotations

import textwrap
from datetime import datetime
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.grounding import Evidence, why_not
from frontdesk.store.memory import MemorySessionStore

NOW = datetime(2026, 11, 28, 10)  # a Saturday


def said(*texts: str) -> Evidence:
    return Evidence(said=list(texts), now=NOW)


@pytest.mark.parametrize("value, kind, options, texts", [
    ("RX-1234567", None, None, ["my prescription is rx 1234567"]),
    ("mountain", None, ["road", "mountain", "city"], ["it is a mountain bike"]),
    ("mountain", None, None, ["a mountian bike"]),  # a typo the model mended
    ("2026-12-04", "date", None, ["next friday please"]),
    (2, "number", None, ["a table for two"]),
    (1200, "number", None, ["about 1,200 euros"]),
    ("Ana Costa", None, None, ["it's ana costa"]),
    ("+15551234567", "phone", None, ["call me on 555 123 4567"]),
    (True, "boolean", None, ["yes please"]),
    ("squeaky brakes", None, None, ["my brakes squeak"]),
])
def test_a_value_the_user_gave_is_grounded(value, kind, options, texts):
    assert why_not(value, said(*texts), kind, options) is None


@pytest.mark.parametrize("value, kind, options, texts", [
    ("RX-1234567", None, None, ["I want a refill", "what time do you close today?"]),  # the prompt's example
    ("mountain", None, ["road", "mountain", "city"], ["I want to book a repair"]),
    ("BK-1234", None, None, ["it is a mountain bike"]),
    ("2026-12-01", "date", None, ["sometime next month"]),
    (2, "number", None, ["I have 3 questions"]),
    ("Alex", None, None, ["I'd rather not say"]),
    (True, "boolean", None, ["what time is it?"]),
])
def test_a_value_the_user_did_not_give_is_refused(value, kind, options, texts):
    assert why_not(value, said(*texts), kind, options) is not None


def test_a_composed_query_needs_half_its_words_and_every_identifier():
    evidence = said("can you recommend a fantasy book?")
    assert why_not("fantasy bestsellers", evidence, composed=True) is None
    assert why_not("fantasy bestsellers", evidence) is not None  # a field's value needs all its words
    assert why_not("fantasy ORD-778", evidence, composed=True) is not None  # an identifier nobody gave


# ---- in a running flow: the model invents, the runtime refuses -------------------------------------------

BIKE = """
main:
  type: flow agent
  steps:
    - call: book

book:
  type: flow agent
  description: Books a bike repair.
  args:
    - bike_type
    - ticket_code
  steps:
    - label: ask
    - bot: "What kind of bike is it: road, mountain or city?"
    - user
    - if: bike_type == None
      then:
        - next: ask
          tries: 3
    - bot: "A ${bike_type} bike. Your ticket code, like BK-1234?"
    - user
    - bot: "Booked on ticket ${ticket_code}."
"""


def _chat(tmp_path: Path, text: str, messages: list[str], llm):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error]
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    return engine, sid, [engine.send(sid, m) for m in messages]


def _refused(turn) -> list[dict]:
    return [e.data for e in turn.events if e.type == "value_refused"]


def test_a_flow_keeps_no_value_a_model_invented_and_asks_again(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "understand", "call": "understand", "with": {"args": {"bike_type": "mountain"}}},
        {"purpose": "understand", "call": "understand", "with": {"args": {"bike_type": "mountain",
                                                                         "ticket_code": "BK-1234"}}},
        {"purpose": "understand", "call": "understand", "with": {"args": {"ticket_code": "BK-7781"}}},
    ])
    engine, sid, turns = _chat(tmp_path, BIKE, ["I want to book a repair", "it is a mountain bike", "BK-7781"], llm)
    # "I want to book a repair" names no bike: refused, and asked again
    assert [m.text for m in turns[0].messages] == ["What kind of bike is it: road, mountain or city?"]
    (refused,) = _refused(turns[0])
    assert set(refused["values"]) == {"bike_type"}
    # the bike is kept; the ticket code copied from the bot's own example is not
    assert [m.text for m in turns[1].messages] == ["A mountain bike. Your ticket code, like BK-1234?"]
    assert set(_refused(turns[1])[0]["values"]) == {"ticket_code"}
    assert [m.text for m in turns[2].messages] == ["Booked on ticket BK-7781."]
    assert engine.load_state(sid).variables["book"]["ticket_code"] == "BK-7781"


AGENT = """
AGENT: Refills
GOAL: "Refill a prescription"

TOOLS:
  refill(rx_number: string) -> {ok: boolean}
    description: "Refill a prescription"

GATHER:
  rx_number:
    prompt: "What is your prescription number? It looks like RX-1234567."
    type: string
    required: true
"""


def test_set_args_keeps_no_value_the_user_did_not_give(tmp_path):
    (tmp_path / "refills.agent.abl").write_text(textwrap.dedent(AGENT).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "What is your prescription number? It looks like RX-1234567."},
        {"purpose": "reason", "call": "set_args", "with": {"rx_number": "RX-1234567"}},
        {"purpose": "reason", "reply": "What is your prescription number?"},
    ])
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    turn = engine.send(sid, "what time do you close today?")
    assert engine.load_state(sid).variables.get("Refills", {}).get("rx_number") is None
    assert set(_refused(turn)[0]["values"]) == {"rx_number"}
    result = next(e.data for e in turn.events if e.type == "gather_extraction")
    assert "did not say" in result["rejected"]["rx_number"]


# ---- what the typed readers take (they feed both the offline reading and the grounding check) ---------

@pytest.mark.parametrize("text, fields, expected", [
    ("We have 2 bikes and a dog", {"passengers": "number"}, {}),  # 2 of something else
    ("I've got 2 questions first", {"guests": "number"}, {}),
    ("3 adults please", {"passengers": "number"}, {"passengers": 3}),
    ("I'd like 2 books", {"quantity": "number"}, {"quantity": 2}),  # a count field takes any noun
    ("2.5 kg", {"weight": "number"}, {"weight": 2.5}),
    ("I have 2 cards, which one is it?", {"amount": "number"}, {}),  # "which one" is no number
    ("a table for two please", {"guests": "number"}, {"guests": 2}),
    ("fifty pounds", {"amount": "number"}, {"amount": 50}),
    ("It happened at 3 in the morning.", {"incident_date": "date"}, {}),  # a time alone is no day
    ("What's the weather like in Rome in December?", {"checkin": "date"}, {}),  # a month alone is no day
    ("The day after tomorrow.", {"sailing_date": "date"}, {"sailing_date": "2026-11-30"}),
    ("On 20 November.", {"incident_date": "date"}, {"incident_date": "2026-11-20"}),  # it already happened
    ("On 20 November.", {"sailing_date": "date"}, {"sailing_date": "2027-11-20"}),
])
def test_the_typed_readers_take_only_what_the_message_gives(text, fields, expected):
    from frontdesk.runtime.extract import extract_values

    assert extract_values(text, fields, now=NOW) == expected


@pytest.mark.parametrize("text, expected", [
    ("Not Paris, I've been there twice already.", None),
    ("It wasn't a fire, thank goodness.", None),
    ("How long is the crossing to Mull?", None),  # asked about, not chosen
    ("Porto, not Lisbon", "Porto"),
    ("Mull please", "Mull"),
])
def test_a_listed_value_ruled_out_or_asked_about_is_not_chosen(text, expected):
    from frontdesk.runtime.extract import named_option

    assert named_option(text, ["Paris", "fire", "Mull", "Porto", "Lisbon"]) == expected


def test_an_identifier_in_a_question_is_still_given():
    assert why_not("O-123", said("where is my order O-123?")) is None


@pytest.mark.parametrize("text, expected", [
    ("I'd rather not go into detail.", True), ("Do I need a police report for this?", True),
    ("Someone broke the back window and took my laptop.", False), ("not sure", True), ("Lisbon", False),
])
def test_a_question_a_refusal_or_a_shrug_is_no_free_text_value(text, expected):
    from frontdesk.runtime.extract import no_answer

    assert no_answer(text) is expected
